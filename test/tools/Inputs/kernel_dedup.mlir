// Three outputs: exp of two [4, 8] inputs (kernels identical up to their
// name) and exp of a [2, 8] input (the same code on another shape: a
// different kernel).
module {
  func.func @main(%x: tensor<4x8xf32> {dlgraph.name = "x"},
                  %z: tensor<4x8xf32> {dlgraph.name = "z"},
                  %w: tensor<2x8xf32> {dlgraph.name = "w"})
      -> (tensor<4x8xf32> {dlgraph.name = "a"},
          tensor<4x8xf32> {dlgraph.name = "b"},
          tensor<2x8xf32> {dlgraph.name = "c"}) {
    %a = dlgraph.exp %x : tensor<4x8xf32>
    %b = dlgraph.exp %z : tensor<4x8xf32>
    %c = dlgraph.exp %w : tensor<2x8xf32>
    return %a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>
  }
}
