// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-loss-scaling
// RUN: not dlc-opt %s --split-input-file --dlgraph-loss-scaling="loss-scale-growth-factor=1" 2>&1 | FileCheck %s --check-prefix=GROWTH
// RUN: not dlc-opt %s --split-input-file --dlgraph-loss-scaling="loss-scale-backoff-factor=1.5" 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not dlc-opt %s --split-input-file --dlgraph-loss-scaling="loss-scale-growth-interval=0" 2>&1 | FileCheck %s --check-prefix=INTERVAL
// RUN: not dlc-opt %s --split-input-file --dlgraph-loss-scaling="loss-scale-init=1e39" 2>&1 | FileCheck %s --check-prefix=INIT

// GROWTH: error: --dlgraph-loss-scaling: --loss-scale-growth-factor must be greater than 1, got 1
// BACKOFF: error: --dlgraph-loss-scaling: --loss-scale-backoff-factor must be in (0, 1), got 1.5
// INTERVAL: error: --dlgraph-loss-scaling: --loss-scale-growth-interval must be in [1, 2^24] (the tracker counts in f32), got 0
// INIT: error: --dlgraph-loss-scaling: --loss-scale-init must be positive and finite in f32, got 1e+39

// expected-error @+1 {{--dlgraph-loss-scaling expects a func.func @train_step with one block; run --dlgraph-append-loss first}}
module {
}

// -----

module {
  // expected-error @+1 {{--dlgraph-loss-scaling expects @train_step to return the loss, a tensor<f32> named "loss"}}
  func.func @train_step(%x: tensor<2xf32>) -> (tensor<2xf32> {dlgraph.name = "loss"}) {
    return %x : tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{--dlgraph-loss-scaling expects @train_step with optimizer updates (dlgraph.sgd_update / dlgraph.adam_update); run --dlgraph-apply-optimizer first}}
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{--dlgraph-loss-scaling: cannot create @__loss_scale: the symbol already exists (was loss scaling applied twice?)}}
module {
  dlgraph.variable @__loss_scale : tensor<f32>
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    return %x : tensor<f32>
  }
}

// -----

// The gradient does not come from a backward seed (a rank-0 constant 1.0
// that the loss does not depend on): here it is the input itself.
module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
  dlgraph.variable @w.momentum_buffer : tensor<3xf32> {dlgraph.optimizer_state}
  // expected-error @+1 {{--dlgraph-loss-scaling cannot find the backward seed of @train_step (a rank-0 constant 1.0 that the gradients depend on and the loss does not; --dlgraph-differentiate creates it)}}
  func.func @train_step(%l: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %b = dlgraph.read_variable @w.momentum_buffer : tensor<3xf32>
    %s = dlgraph.read_variable @__step : tensor<f32>
    %lr = dlgraph.constant dense<1.0e-01> : tensor<f32>
    %p, %nb = dlgraph.sgd_update %w, %g, %b, %s, %lr {momentum = 0.0 : f32, weight_decay = 0.0 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>)
    dlgraph.write_variable @w, %p : tensor<3xf32>
    return %l : tensor<f32>
  }
}

// -----

// A gradient computed after the first update.
module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  dlgraph.variable @v : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  func.func @train_step(%l: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %s = dlgraph.constant dense<1.0> : tensor<f32>
    %lr1 = dlgraph.constant dense<1.0e-01> : tensor<f32>
    %p, %nb = dlgraph.sgd_update %w, %g, %w, %s, %lr1 {momentum = 0.0 : f32, weight_decay = 0.0 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>)
    %g2 = dlgraph.mul %g, %g : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %lr2 = dlgraph.constant dense<1.0e-01> : tensor<f32>
    // expected-error @+1 {{--dlgraph-loss-scaling expects every gradient to be computed in @train_step before the first optimizer update}}
    %q, %nb2 = dlgraph.sgd_update %w, %g2, %w, %s, %lr2 {momentum = 0.0 : f32, weight_decay = 0.0 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>)
    return %l : tensor<f32>
  }
}
