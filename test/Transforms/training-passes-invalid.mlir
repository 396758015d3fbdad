// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-differentiate --dlgraph-apply-optimizer

// Each training pass needs what the one before it leaves.

// expected-error @+1 {{--dlgraph-differentiate expects a func.func @train_step with one block; run --dlgraph-append-loss first}}
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{--dlgraph-differentiate expects @train_step to return only the loss; it returns 2 values}}
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    return %x, %x : tensor<f32>, tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{--dlgraph-differentiate expects a loss of type tensor<f32>, got 'tensor<4xf32>'}}
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
