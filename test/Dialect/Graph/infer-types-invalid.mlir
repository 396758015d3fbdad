// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// Declared result types that differ from the inferred ones: the message
// names the shapes or element types, once per op.

func.func @compare_result_not_i1(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlgraph.compare' op result element type is 'f32', expected 'i1'}}
  %c = dlgraph.compare "gt", %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @dropout_mask_shape(%x: tensor<8x16xf32>, %s: tensor<f32>) -> tensor<8xi1> {
  // expected-error @+1 {{'dlgraph.dropout' op result #1 shape is [8], expected [8, 16]}}
  %y, %m = dlgraph.dropout %x, %s {ratio = 5.0e-01 : f32, seed = 7 : i64} : (tensor<8x16xf32>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8xi1>)
  return %m : tensor<8xi1>
}

// -----

func.func @arg_max_not_i64(%x: tensor<8x10xf32>) -> tensor<8xi32> {
  // expected-error @+1 {{'dlgraph.arg_max' op result element type is 'i32', expected 'i64'}}
  %i = dlgraph.arg_max %x {axis = 1 : i64} : tensor<8x10xf32> -> tensor<8xi32>
  return %i : tensor<8xi32>
}

// -----

// Ceil mode keeps the last window only when it starts inside the input or
// the left padding: 5 wide, kernel 2, stride 2 gives 3 windows.
func.func @max_pool_ceil(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlgraph.max_pool' op result shape is [1, 1, 2, 2], expected [1, 1, 3, 3]}}
  %y = dlgraph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode} : tensor<1x1x5x5xf32> -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

func.func @conv_kernel_too_large(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+1 {{the kernel (3 with dilation 1) does not fit the padded input 2 + 0 + 0 along spatial axis 0}}
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return %y : tensor<1x1x1x1xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlgraph.transpose' op result shape is [2, 3], expected [3, 2]}}
  %y = dlgraph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @loss_not_scalar(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{'dlgraph.softmax_cross_entropy' op result shape is [1], expected []}}
  %l = dlgraph.softmax_cross_entropy %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<1xf32>
  return %l : tensor<1xf32>
}

// -----

func.func @sgd_types(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) -> tensor<2xf32> {
  %lr = dlgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{all of {momentum_buffer, new_momentum_buffer} have same type}}
  %np, %nb = dlgraph.sgd_update %p, %g, %b, %s, %lr {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>)
  return %nb : tensor<2xf32>
}
