// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-build-training-step

module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  // expected-error @+1 {{the first output has rank 0; softmax-cross-entropy needs logits of rank >= 1}}
  func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = dlgraph.reduce_sum %p {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// The output does not depend on any variable.
// expected-error @+1 {{no trainable parameters: the loss does not depend on any f32 dlgraph.variable}}
module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %r = dlgraph.relu %x : tensor<2x4xf32>
    return %r : tensor<2x4xf32>
  }
}

// -----

// Only a non-differentiable path (compare) leads from the variable to the loss.
// expected-error @+1 {{no trainable parameters}}
module {
  dlgraph.variable @t : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %t = dlgraph.read_variable @t : tensor<2x4xf32>
    %c = dlgraph.compare "gt", %x, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %f = dlgraph.cast %c : tensor<2x4xi1> to tensor<2x4xf32>
    return %f : tensor<2x4xf32>
  }
}

// -----

// A running mean that is a variable beside a running variance that is not
// (statistics computed in the graph, with neither a variable, are a
// functional batch norm and train: decompose-batch-norm-for-training-
// functional.mlir).
module {
  dlgraph.variable @s : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  dlgraph.variable @b : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dlgraph.variable @rm : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  func.func @main(%x: tensor<4x2xf32>, %v: tensor<2xf32>) -> tensor<4x2xf32> {
    %s = dlgraph.read_variable @s : tensor<2xf32>
    %b = dlgraph.read_variable @b : tensor<2xf32>
    %m = dlgraph.read_variable @rm : tensor<2xf32>
    // expected-error @+1 {{running variance is computed while the running mean is a variable}}
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
}

// -----

// An op without a gradient rule on the path from a parameter to the loss.
module {
  dlgraph.variable @s : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  dlgraph.variable @b : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %s = dlgraph.read_variable @s : tensor<2xf32>
    %b = dlgraph.read_variable @b : tensor<2xf32>
    %xs = dlgraph.mul %x, %s : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    %xb = dlgraph.add %xs, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    // expected-error @+1 {{no gradient rule for 'dlgraph.resize_grad', which is on a path from a trainable parameter to the loss}}
    %y = dlgraph.resize_grad %xb {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f64: 1.0, 1.0>} : tensor<4x2xf32> -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
}

// -----

module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  // expected-error @+1 {{@main already has an input named 'labels'}}
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "labels"}) -> tensor<2x4xf32> {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %p : tensor<2x4xf32>
  }
}

// -----

// expected-error @+1 {{training expects a func.func @main with a body}}
module {
  func.func @predict(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

module {
  dlgraph.variable @s : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  dlgraph.variable @b : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dlgraph.variable @rm : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dlgraph.variable @rv : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %s = dlgraph.read_variable @s : tensor<2xf32>
    %b = dlgraph.read_variable @b : tensor<2xf32>
    %m = dlgraph.read_variable @rm : tensor<2xf32>
    %v = dlgraph.read_variable @rv : tensor<2xf32>
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    // expected-error @+1 {{running statistic @"rm" is shared with another batch_norm}}
    %z = dlgraph.batch_norm %y, %s, %b, %m, %v : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    return %z : tensor<4x2xf32>
  }
}

// -----

module {
  dlgraph.variable @s : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  dlgraph.variable @b : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dlgraph.variable @rm : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dlgraph.variable @rv : tensor<2xf32> = dense<1.0> : tensor<2xf32>
  func.func @main(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
    %s = dlgraph.read_variable @s : tensor<2xf32>
    %b = dlgraph.read_variable @b : tensor<2xf32>
    %m = dlgraph.read_variable @rm : tensor<2xf32>
    %v = dlgraph.read_variable @rv : tensor<2xf32>
    // expected-error @+1 {{training needs more than 1 value per channel to compute batch statistics, got 1}}
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
    return %y : tensor<1x2xf32>
  }
}
