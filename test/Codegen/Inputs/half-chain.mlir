// f16 and bf16 elementwise chains and casts between every float type.
module {
  func.func @main(%x: tensor<2x4xf16> {dlgraph.name = "x"}, %y: tensor<4xf16> {dlgraph.name = "y"},
                  %b: tensor<2x4xbf16> {dlgraph.name = "b"}, %f: tensor<2x4xf32> {dlgraph.name = "f"})
      -> (tensor<2x4xf16> {dlgraph.name = "h"}, tensor<2x4xbf16> {dlgraph.name = "g"},
          tensor<2x4xf32> {dlgraph.name = "w"}, tensor<2x4xi1> {dlgraph.name = "c"}) {
    %m = dlgraph.mul %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
    %a = dlgraph.add %m, %x : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
    %h = dlgraph.relu %a : tensor<2x4xf16>
    %fb = dlgraph.cast %f : tensor<2x4xf32> to tensor<2x4xbf16>
    %s = dlgraph.sub %b, %fb : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
    %hb = dlgraph.cast %h : tensor<2x4xf16> to tensor<2x4xbf16>
    %g = dlgraph.div %s, %hb : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
    %w = dlgraph.cast %g : tensor<2x4xbf16> to tensor<2x4xf32>
    %c = dlgraph.compare "gt", %h, %x : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xi1>
    return %h, %g, %w, %c : tensor<2x4xf16>, tensor<2x4xbf16>, tensor<2x4xf32>, tensor<2x4xi1>
  }
}
