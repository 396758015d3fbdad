// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-build-training-step="loss-output=loss"

module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  // expected-error @+1 {{loss-output 'loss' is not an output of @main (outputs: 'pred', 'total')}}
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32> {dlgraph.name = "pred"}, tensor<f32> {dlgraph.name = "total"}) {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = dlgraph.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %p, %s : tensor<4xf32>, tensor<f32>
  }
}

// -----

module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  // expected-error @+1 {{loss-output 'loss' must be a scalar tensor<f32>, got 'tensor<4xf32>'}}
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %p : tensor<4xf32>
  }
}
