// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-apply-optimizer

module {
  // expected-error @+1 {{--dlgraph-apply-optimizer expects @train_step to return the gradients of the trainable parameters after the loss; run --dlgraph-differentiate first}}
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    return %x : tensor<f32>
  }
}

// -----

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  // expected-error @+1 {{--dlgraph-apply-optimizer expects result 1 of @train_step to be the gradient "<parameter>.grad" of a dlgraph.variable, got 'v.grad'}}
  func.func @train_step(%x: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "v.grad"}) {
    return %x, %g : tensor<f32>, tensor<3xf32>
  }
}

// -----

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  // expected-error @+1 {{@train_step returns a gradient for @"w" but never reads it}}
  func.func @train_step(%x: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}) {
    return %x, %g : tensor<f32>, tensor<3xf32>
  }
}

// -----

// expected-error @+1 {{cannot create optimizer state @"w.momentum_buffer": the symbol already exists}}
module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  dlgraph.variable @w.momentum_buffer : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  func.func @train_step(%x: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    return %x, %g : tensor<f32>, tensor<3xf32>
  }
}
