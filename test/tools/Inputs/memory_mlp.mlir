// An MLP (gemm + relu + gemm, batch 16) for the --memory-report tests: its
// training step has library calls, so its plan has a workspace.
module {
  dlgraph.variable @fc1.weight : tensor<64x32xf32> = dense<0.01> : tensor<64x32xf32>
  dlgraph.variable @fc1.bias : tensor<64xf32> = dense<0.0> : tensor<64xf32>
  dlgraph.variable @fc2.weight : tensor<10x64xf32> = dense<0.02> : tensor<10x64xf32>
  dlgraph.variable @fc2.bias : tensor<10xf32> = dense<0.0> : tensor<10xf32>
  func.func @main(%x: tensor<16x32xf32> {dlgraph.name = "x"}) -> (tensor<16x10xf32> {dlgraph.name = "logits"}) {
    %w1 = dlgraph.read_variable @fc1.weight : tensor<64x32xf32>
    %b1 = dlgraph.read_variable @fc1.bias : tensor<64xf32>
    %w2 = dlgraph.read_variable @fc2.weight : tensor<10x64xf32>
    %b2 = dlgraph.read_variable @fc2.bias : tensor<10xf32>
    %h = dlgraph.gemm %x, %w1, %b1 {trans_b = true} : (tensor<16x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %r = dlgraph.relu %h : tensor<16x64xf32>
    %y = dlgraph.gemm %r, %w2, %b2 {trans_b = true} : (tensor<16x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<16x10xf32>
    return %y : tensor<16x10xf32>
  }
}
