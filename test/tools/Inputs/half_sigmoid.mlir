module {
  func.func @main(%x: tensor<8xf16> {dlgraph.name = "x"}, %b: tensor<8xbf16> {dlgraph.name = "b"}) -> (tensor<8xf16> {dlgraph.name = "y"}, tensor<8xbf16> {dlgraph.name = "z"}) {
    %y = dlgraph.sigmoid %x : tensor<8xf16>
    %z = dlgraph.sigmoid %b : tensor<8xbf16>
    return %y, %z : tensor<8xf16>, tensor<8xbf16>
  }
}
