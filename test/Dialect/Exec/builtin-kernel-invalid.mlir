// dlexec.builtin_kernel verifier errors: the template table
// (runtime/schema/BuiltinTemplates.def) and each family's shapes, dtypes and
// attributes, which codegen (codegen/BuiltinKernels.cpp) relies on.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

dlexec.func @unknown_template {
  %x = dlexec.input "x" : memref<4xf32>
  %y = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{unknown kernel template 'lp_pool'; expected one of max_pool2d, max_pool2d_grad}}
  dlexec.builtin_kernel @k "lp_pool" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
}

// -----

dlexec.func @operand_count {
  %x = dlexec.input "x" : memref<2x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{template 'max_pool2d_grad' expects 2 inputs and 1 outputs (x, dy -> dx), got 1 and 1}}
  dlexec.builtin_kernel @k "max_pool2d_grad" ins(%x : memref<2x4xf32>) outs(%y : memref<2x4xf32>)
}

// -----

// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @dynamic_operand(%x: memref<?x4xf32>, %y: memref<2x4xf32>) {
  // expected-error @+1 {{operand of type 'memref<?x4xf32>' must have a static shape and the identity layout}}
  dlexec.builtin_kernel @k "softmax" ins(%x : memref<?x4xf32>) outs(%y : memref<2x4xf32>) {axis = 1 : i64}
  return
}

// -----

// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @f16_operand(%x: memref<2x4xf16>, %y: memref<2x4xf16>) {
  // expected-error @+1 {{template 'softmax' does not support element type 'f16' (expected f32, f64, i64, i32 or i1; f16 and bf16 in dlexec.kernel, pooling, dropout and the forward gathers only)}}
  dlexec.builtin_kernel @k "softmax" ins(%x : memref<2x4xf16>) outs(%y : memref<2x4xf16>) {axis = 1 : i64}
  return
}

// -----

dlexec.func @pool_rank {
  %x = dlexec.input "x" : memref<2x4x4xf32>
  %y = dlexec.alloc : memref<2x2x2xf32>
  // expected-error @+1 {{pooling expects [N, C, H, W] operands with equal N and C}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<2x4x4xf32>) outs(%y : memref<2x2x2xf32>) {kernel_shape = array<i64: 2, 2>}
}

// -----

dlexec.func @pool_no_kernel_shape {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{attribute 'kernel_shape' has 0 values, expected 2}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf32>)
}

// -----

dlexec.func @pool_kernel_shape_not_a_list {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{attribute 'kernel_shape' must be a list of integers}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf32>) {kernel_shape = "2x2"}
}

// -----

dlexec.func @pool_count_include_pad_not_a_bool {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{attribute 'count_include_pad' must be an integer or a boolean}}
  dlexec.builtin_kernel @k "average_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf32>) {kernel_shape = array<i64: 2, 2>, count_include_pad = "yes"}
}

// -----

dlexec.func @pool_zero_stride {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{pooling needs positive kernel_shape, strides and dilations and non-negative pads}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf32>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 0, 2>}
}

// -----

dlexec.func @pool_integer {
  %x = dlexec.input "x" : memref<1x1x4x4xi32>
  %y = dlexec.alloc : memref<1x1x2x2xi32>
  // expected-error @+1 {{template 'max_pool2d' supports f32, f64, f16 and bf16, got 'i32'}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<1x1x4x4xi32>) outs(%y : memref<1x1x2x2xi32>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}

// -----

dlexec.func @average_pool_dilation {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{average pooling supports dilations 1 only}}
  dlexec.builtin_kernel @k "average_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf32>) {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2, 1>}
}

// -----

dlexec.func @pool_grad_dx_type {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %dy = dlexec.input "dy" : memref<1x1x2x2xf32>
  %dx = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{dx must have the type of x, 'memref<1x1x4x4xf32>'}}
  dlexec.builtin_kernel @k "max_pool2d_grad" ins(%x, %dy : memref<1x1x4x4xf32>, memref<1x1x2x2xf32>) outs(%dx : memref<1x1x2x2xf32>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}

// -----

dlexec.func @pool_mixed_types {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf64>
  // expected-error @+1 {{operands must share the element type}}
  dlexec.builtin_kernel @k "max_pool2d" ins(%x : memref<1x1x4x4xf32>) outs(%y : memref<1x1x2x2xf64>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}

// -----

dlexec.func @softmax_result_type {
  %x = dlexec.input "x" : memref<2x4xf32>
  %y = dlexec.alloc : memref<2x3xf32>
  // expected-error @+1 {{y must have the type of x, 'memref<2x4xf32>'}}
  dlexec.builtin_kernel @k "softmax" ins(%x : memref<2x4xf32>) outs(%y : memref<2x3xf32>) {axis = 1 : i64}
}

// -----

dlexec.func @softmax_axis {
  %x = dlexec.input "x" : memref<2x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{axis 2 is out of range for 'memref<2x4xf32>'}}
  dlexec.builtin_kernel @k "log_softmax" ins(%x : memref<2x4xf32>) outs(%y : memref<2x4xf32>) {axis = 2 : i64}
}

// -----

dlexec.func @cross_entropy_shapes {
  %l = dlexec.input "logits" : memref<2x4xf32>
  %t = dlexec.input "labels" : memref<3xi64>
  %loss = dlexec.alloc : memref<f32>
  // expected-error @+1 {{expects logits [..., C] and labels [...], got 'memref<2x4xf32>' and 'memref<3xi64>'}}
  dlexec.builtin_kernel @k "softmax_cross_entropy" ins(%l, %t : memref<2x4xf32>, memref<3xi64>) outs(%loss : memref<f32>)
}

// -----

dlexec.func @cross_entropy_float_labels {
  %l = dlexec.input "logits" : memref<2x4xf32>
  %t = dlexec.input "labels" : memref<2xf32>
  %loss = dlexec.alloc : memref<f32>
  // expected-error @+1 {{labels must be i64 or i32, got 'f32'}}
  dlexec.builtin_kernel @k "softmax_cross_entropy" ins(%l, %t : memref<2x4xf32>, memref<2xf32>) outs(%loss : memref<f32>)
}

// -----

dlexec.func @cross_entropy_loss_rank {
  %l = dlexec.input "logits" : memref<2x4xf32>
  %t = dlexec.input "labels" : memref<2xi64>
  %loss = dlexec.alloc : memref<2xf32>
  // expected-error @+1 {{loss must be a rank-0 'f32' memref, got 'memref<2xf32>'}}
  dlexec.builtin_kernel @k "softmax_cross_entropy" ins(%l, %t : memref<2x4xf32>, memref<2xi64>) outs(%loss : memref<2xf32>)
}

// -----

dlexec.func @cross_entropy_grad_loss_grad {
  %l = dlexec.input "logits" : memref<2x4xf32>
  %t = dlexec.input "labels" : memref<2xi64>
  %g = dlexec.input "g" : memref<1xf32>
  %d = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{loss_grad must be a rank-0 'f32' memref, got 'memref<1xf32>'}}
  dlexec.builtin_kernel @k "softmax_cross_entropy_grad" ins(%l, %t, %g : memref<2x4xf32>, memref<2xi64>, memref<1xf32>) outs(%d : memref<2x4xf32>)
}

// -----

dlexec.func @cross_entropy_grad_dlogits {
  %l = dlexec.input "logits" : memref<2x4xf32>
  %t = dlexec.input "labels" : memref<2xi64>
  %g = dlexec.input "g" : memref<f32>
  %d = dlexec.alloc : memref<2x4xf64>
  // expected-error @+1 {{dlogits must have the type of logits, 'memref<2x4xf32>'}}
  dlexec.builtin_kernel @k "softmax_cross_entropy_grad" ins(%l, %t, %g : memref<2x4xf32>, memref<2xi64>, memref<f32>) outs(%d : memref<2x4xf64>)
}

// -----

dlexec.func @dropout_mask_type {
  %x = dlexec.input "x" : memref<8xf32>
  %s = dlexec.input "step" : memref<f32>
  %y = dlexec.alloc : memref<8xf32>
  %m = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{expects X, a rank-0 f32 step, Y of X's type and an i1 mask of X's shape}}
  dlexec.builtin_kernel @k "dropout" ins(%x, %s : memref<8xf32>, memref<f32>) outs(%y, %m : memref<8xf32>, memref<8xf32>) {ratio = 0.5 : f32, seed = 1 : i64}
}

// -----

dlexec.func @dropout_no_seed {
  %x = dlexec.input "x" : memref<8xf32>
  %s = dlexec.input "step" : memref<f32>
  %y = dlexec.alloc : memref<8xf32>
  %m = dlexec.alloc : memref<8xi1>
  // expected-error @+1 {{needs attributes 'ratio' (f32) and 'seed' (i64)}}
  dlexec.builtin_kernel @k "dropout" ins(%x, %s : memref<8xf32>, memref<f32>) outs(%y, %m : memref<8xf32>, memref<8xi1>) {ratio = 0.5 : f32}
}

// -----

dlexec.func @dropout_ratio {
  %x = dlexec.input "x" : memref<8xf32>
  %s = dlexec.input "step" : memref<f32>
  %y = dlexec.alloc : memref<8xf32>
  %m = dlexec.alloc : memref<8xi1>
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  dlexec.builtin_kernel @k "dropout" ins(%x, %s : memref<8xf32>, memref<f32>) outs(%y, %m : memref<8xf32>, memref<8xi1>) {ratio = 1.0 : f32, seed = 1 : i64}
}

// -----

dlexec.func @gather_float_indices {
  %d = dlexec.input "data" : memref<5x3xf32>
  %i = dlexec.input "indices" : memref<2xf32>
  %y = dlexec.alloc : memref<2x3xf32>
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  dlexec.builtin_kernel @k "gather" ins(%d, %i : memref<5x3xf32>, memref<2xf32>) outs(%y : memref<2x3xf32>) {axis = 0 : i64}
}

// -----

dlexec.func @gather_axis {
  %d = dlexec.input "data" : memref<5x3xf32>
  %i = dlexec.input "indices" : memref<2xi64>
  %y = dlexec.alloc : memref<2x3xf32>
  // expected-error @+1 {{axis 2 is out of range for 'memref<5x3xf32>'}}
  dlexec.builtin_kernel @k "gather" ins(%d, %i : memref<5x3xf32>, memref<2xi64>) outs(%y : memref<2x3xf32>) {axis = 2 : i64}
}

// -----

dlexec.func @gather_grad_shape {
  %i = dlexec.input "indices" : memref<2xi64>
  %dy = dlexec.input "dy" : memref<3x3xf32>
  %dx = dlexec.alloc : memref<5x3xf32>
  // expected-error @+1 {{expects dy of shape data[:axis] + indices + data[axis+1:]}}
  dlexec.builtin_kernel @k "gather_grad" ins(%i, %dy : memref<2xi64>, memref<3x3xf32>) outs(%dx : memref<5x3xf32>) {axis = 0 : i64}
}

// -----

dlexec.func @gather_elements_rank {
  %d = dlexec.input "data" : memref<5x3xf32>
  %i = dlexec.input "indices" : memref<2xi64>
  %y = dlexec.alloc : memref<2xf32>
  // expected-error @+1 {{expects data, indices and y of equal rank (indices within data outside axis 0)}}
  dlexec.builtin_kernel @k "gather_elements" ins(%d, %i : memref<5x3xf32>, memref<2xi64>) outs(%y : memref<2xf32>) {axis = 0 : i64}
}

// -----

dlexec.func @resize_attributes {
  %x = dlexec.input "x" : memref<1x1x2x2xf32>
  %y = dlexec.alloc : memref<1x1x4x4xf32>
  // expected-error @+1 {{expects operands of one rank and element type and the string attributes mode, coordinate_transformation_mode, nearest_mode and one f64 scale per axis}}
  dlexec.builtin_kernel @k "resize" ins(%x : memref<1x1x2x2xf32>) outs(%y : memref<1x1x4x4xf32>) {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f64: 1.0, 2.0, 2.0>}
}

// -----

// Pooling takes f16 / bf16, but all of its operands share one element type.
dlexec.func @pool_half_mixed {
  %x = dlexec.input "x" : memref<1x1x4x4xbf16>
  %dy = dlexec.input "dy" : memref<1x1x2x2xf16>
  %dx = dlexec.alloc : memref<1x1x4x4xbf16>
  // expected-error @+1 {{operands must share the element type}}
  dlexec.builtin_kernel @k "max_pool2d_grad" ins(%x, %dy : memref<1x1x4x4xbf16>, memref<1x1x2x2xf16>) outs(%dx : memref<1x1x4x4xbf16>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}

// -----

// A gradient gather accumulates, so it takes no f16 / bf16 (its forward,
// which copies, does).
dlexec.func @gather_grad_half {
  %i = dlexec.input "i" : memref<2xi64>
  %dy = dlexec.input "dy" : memref<2x3xbf16>
  %dx = dlexec.alloc : memref<4x3xbf16>
  // expected-error @+1 {{template 'gather_grad' does not support element type 'bf16'}}
  dlexec.builtin_kernel @k "gather_grad" ins(%i, %dy : memref<2xi64>, memref<2x3xbf16>) outs(%dx : memref<4x3xbf16>) {axis = 0 : i64}
}

// -----

// Dropout on f16 still needs its step counter in f32.
dlexec.func @dropout_half_step {
  %x = dlexec.input "x" : memref<4xf16>
  %s = dlexec.input "s" : memref<f16>
  %y = dlexec.alloc : memref<4xf16>
  %m = dlexec.alloc : memref<4xi1>
  // expected-error @+1 {{expects X, a rank-0 f32 step, Y of X's type and an i1 mask of X's shape}}
  dlexec.builtin_kernel @k "dropout" ins(%x, %s : memref<4xf16>, memref<f16>) outs(%y, %m : memref<4xf16>, memref<4xi1>) {ratio = 5.000000e-01 : f32, seed = 1 : i64}
}

// -----

// layer_norm: scale and bias are [N] of x's element type.
dlexec.func @layer_norm_scale_shape {
  %x = dlexec.input "x" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<4xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<4x8xf32>
  %m = dlexec.alloc : memref<4x1xf32>
  %r = dlexec.alloc : memref<4x1xf32>
  // expected-error @+1 {{scale and bias must be [8] of 'f32', got 'memref<4xf32>'}}
  dlexec.builtin_kernel @k "layer_norm" ins(%x, %w, %b : memref<4x8xf32>, memref<4xf32>, memref<8xf32>) outs(%y, %m, %r : memref<4x8xf32>, memref<4x1xf32>, memref<4x1xf32>) {epsilon = 1.0e-5 : f32}
}

// -----

// layer_norm: one mean and one rstd a row.
dlexec.func @layer_norm_stats_per_row {
  %x = dlexec.input "x" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<8xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<4x8xf32>
  %m = dlexec.alloc : memref<8xf32>
  %r = dlexec.alloc : memref<4x1xf32>
  // expected-error @+1 {{mean and rstd must hold 4 elements of 'f32' (one a row), got 'memref<8xf32>'}}
  dlexec.builtin_kernel @k "layer_norm" ins(%x, %w, %b : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y, %m, %r : memref<4x8xf32>, memref<8xf32>, memref<4x1xf32>) {epsilon = 1.0e-5 : f32}
}

// -----

// layer_norm: epsilon is an f32 >= 0.
dlexec.func @layer_norm_epsilon {
  %x = dlexec.input "x" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<8xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<4x8xf32>
  %m = dlexec.alloc : memref<4x1xf32>
  %r = dlexec.alloc : memref<4x1xf32>
  // expected-error @+1 {{needs an f32 attribute 'epsilon' >= 0}}
  dlexec.builtin_kernel @k "layer_norm" ins(%x, %w, %b : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y, %m, %r : memref<4x8xf32>, memref<4x1xf32>, memref<4x1xf32>) {epsilon = -1.0 : f32}
}

// -----

// layer_norm: f32 and f64 only (an f16 LayerNorm stays decomposed).
dlexec.func @layer_norm_dtype {
  %x = dlexec.input "x" : memref<4x8xi32>
  %w = dlexec.input "w" : memref<8xi32>
  %b = dlexec.input "b" : memref<8xi32>
  %y = dlexec.alloc : memref<4x8xi32>
  %m = dlexec.alloc : memref<4x1xi32>
  %r = dlexec.alloc : memref<4x1xi32>
  // expected-error @+1 {{template 'layer_norm' supports f32 and f64, got 'i32'}}
  dlexec.builtin_kernel @k "layer_norm" ins(%x, %w, %b : memref<4x8xi32>, memref<8xi32>, memref<8xi32>) outs(%y, %m, %r : memref<4x8xi32>, memref<4x1xi32>, memref<4x1xi32>) {epsilon = 1.0e-5 : f32}
}

// -----

// layer_norm_train: the centered and normalized values have x's type.
dlexec.func @layer_norm_train_centered {
  %x = dlexec.input "x" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<8xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<4x8xf32>
  %m = dlexec.alloc : memref<4x1xf32>
  %r = dlexec.alloc : memref<4x1xf32>
  %d = dlexec.alloc : memref<4x4xf32>
  %u = dlexec.alloc : memref<4x8xf32>
  // expected-error @+1 {{the centered and normalized values must have the type of x, 'memref<4x8xf32>', got 'memref<4x4xf32>'}}
  dlexec.builtin_kernel @k "layer_norm_train" ins(%x, %w, %b : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y, %m, %r, %d, %u : memref<4x8xf32>, memref<4x1xf32>, memref<4x1xf32>, memref<4x4xf32>, memref<4x8xf32>) {epsilon = 1.0e-5 : f32}
}

// -----

// layer_norm_train writes five outputs.
dlexec.func @layer_norm_train_arity {
  %x = dlexec.input "x" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<8xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<4x8xf32>
  %m = dlexec.alloc : memref<4x1xf32>
  %r = dlexec.alloc : memref<4x1xf32>
  // expected-error @+1 {{template 'layer_norm_train' expects 3 inputs and 5 outputs (x, scale, bias -> y, mean, rstd, centered, normalized), got 3 and 3}}
  dlexec.builtin_kernel @k "layer_norm_train" ins(%x, %w, %b : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y, %m, %r : memref<4x8xf32>, memref<4x1xf32>, memref<4x1xf32>) {epsilon = 1.0e-5 : f32}
}
