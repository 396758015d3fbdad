// The gradient of a gather accumulates: not available for f16.
module {
  func.func @main(%idx: tensor<2xi64> {dlgraph.name = "idx"}, %dy: tensor<2x3xf16> {dlgraph.name = "dy"}) -> tensor<4x3xf16> {
    %dx = dlgraph.gather_grad %idx, %dy {axis = 0 : i64, data_shape = array<i64: 4, 3>} : (tensor<2xi64>, tensor<2x3xf16>) -> tensor<4x3xf16>
    return %dx : tensor<4x3xf16>
  }
}
