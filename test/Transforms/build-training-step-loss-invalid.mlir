// RUN: dlc-opt %s --verify-diagnostics --dlgraph-build-training-step="loss=mse"

// expected-error @+1 {{--dlgraph-append-loss: unknown --loss 'mse'; supported: softmax-cross-entropy}}
module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %p : tensor<2x4xf32>
  }
}
