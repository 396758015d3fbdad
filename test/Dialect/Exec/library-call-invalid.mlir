// dlexec.library_call verifier errors: the callee table
// (runtime/schema/LibraryCalls.def) and each call's operand count, shapes,
// dtypes and attributes: everything the package writer needs of a call.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

dlexec.func @unknown_callee {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{unknown library call 'fft'; expected one of gemm, batched_gemm, conv2d_forward, conv2d_backward_data, conv2d_backward_filter, conv3d_forward, conv3d_backward_data, conv3d_backward_filter}}
  dlexec.library_call "fft" ins(%a : memref<2x2xf32>) outs(%y : memref<2x2xf32>)
}

// -----

dlexec.func @two_outputs {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{gemm with epilogue "none" expects 1 output(s) (Y), got 2}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xf32>, memref<2x2xf32>) outs(%y, %y : memref<2x2xf32>, memref<2x2xf32>)
}

// -----

dlexec.func @gemm_one_input {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{'gemm' expects ins(A, B[, C/Aux]), got 1 inputs}}
  dlexec.library_call "gemm" ins(%a : memref<2x2xf32>) outs(%y : memref<2x2xf32>)
}

// -----

// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @dynamic_operand(%a: memref<?x2xf32>, %y: memref<2x2xf32>) {
  // expected-error @+1 {{operand #0 of type 'memref<?x2xf32>' must have a static shape and the identity layout}}
  dlexec.library_call "gemm" ins(%a, %y : memref<?x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>)
  return
}

// -----

dlexec.func @integer_gemm {
  %a = dlexec.input "a" : memref<2x2xi32>
  %y = dlexec.alloc : memref<2x2xi32>
  // expected-error @+1 {{'gemm' supports f32, f16, bf16 and f64, got 'i32'}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xi32>, memref<2x2xi32>) outs(%y : memref<2x2xi32>)
}

// -----

dlexec.func @mixed_types {
  %a = dlexec.input "a" : memref<2x2xf32>
  %b = dlexec.input "b" : memref<2x2xf64>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{operand #1 has element type 'f64', but operand #0 has 'f32'; all operands share one}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x2xf32>, memref<2x2xf64>) outs(%y : memref<2x2xf32>)
}

// -----

dlexec.func @gemm_rank {
  %a = dlexec.input "a" : memref<2x2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{gemm expects ins(A, B[, C]) of rank 2 and a rank-2 output}}
  dlexec.library_call "gemm" ins(%a, %y : memref<2x2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>)
}

// -----

dlexec.func @gemm_shapes {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<4x5xf32>
  %y = dlexec.alloc : memref<2x5xf32>
  // expected-error @+1 {{gemm shapes do not agree: op(A) is 2x3, op(B) is 4x5, Y is 2x5}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<4x5xf32>) outs(%y : memref<2x5xf32>)
}

// -----

dlexec.func @gemm_c_shape {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x5xf32>
  %c = dlexec.input "c" : memref<2xf32>
  %y = dlexec.alloc : memref<2x5xf32>
  // expected-error @+1 {{gemm C must be [N], [1, N] or [M, N] with M = 2, N = 5, got 'memref<2xf32>'}}
  dlexec.library_call "gemm" ins(%a, %b, %c : memref<2x3xf32>, memref<3x5xf32>, memref<2xf32>) outs(%y : memref<2x5xf32>)
}

// -----

dlexec.func @gemm_trans_attr {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{attribute 'trans_a' must be an integer or a boolean}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>) {trans_a = "yes"}
}

// -----

dlexec.func @gemm_alpha_attr {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{attribute 'alpha' must be a number}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>) {alpha = "one"}
}

// -----

dlexec.func @batched_gemm_f64 {
  %a = dlexec.input "a" : memref<8xf64>
  %y = dlexec.alloc : memref<8xf64>
  // expected-error @+1 {{'batched_gemm' supports f32, f16 and bf16, got 'f64'}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xf64>, memref<8xf64>) outs(%y : memref<8xf64>) {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: 4>, stride_b = array<i64: 4>}
}

// -----

dlexec.func @batched_gemm_no_batch {
  %a = dlexec.input "a" : memref<8xf32>
  %y = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{batched_gemm needs a 'batch' array<i64>}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>) {m = 2 : i64, n = 2 : i64, k = 2 : i64}
}

// -----

dlexec.func @batched_gemm_strides {
  %a = dlexec.input "a" : memref<8xf32>
  %y = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{attribute 'stride_b' has 2 values, expected 1}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>) {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: 4>, stride_b = array<i64: 4, 0>}
}

// -----

dlexec.func @batched_gemm_sizes {
  %a = dlexec.input "a" : memref<8xf32>
  %y = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{batched_gemm needs positive m, n, k, got 0, 2, 2}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>) {m = 0 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: 4>, stride_b = array<i64: 4>}
}

// -----

dlexec.func @batched_gemm_negative_stride {
  %a = dlexec.input "a" : memref<8xf32>
  %y = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{batched_gemm batch dims must be positive and strides non-negative}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>) {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: -4>, stride_b = array<i64: 4>}
}

// -----

dlexec.func @batched_gemm_too_small {
  %a = dlexec.input "a" : memref<6xf32>
  %b = dlexec.input "b" : memref<8xf32>
  %y = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{batched_gemm operands do not hold 2 batches of 2x2 * 2x2}}
  dlexec.library_call "batched_gemm" ins(%a, %b : memref<6xf32>, memref<8xf32>) outs(%y : memref<8xf32>) {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: 4>, stride_b = array<i64: 4>}
}

// -----

dlexec.func @conv2d_rank {
  %x = dlexec.input "x" : memref<1x1x4x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3x3xf32>
  %y = dlexec.alloc : memref<1x1x2x2x2xf32>
  // expected-error @+1 {{conv2d_forward expects rank-4 X [N,C,H,W], W [K,C/group,R,S] and Y [N,K,P,Q]}}
  dlexec.library_call "conv2d_forward" ins(%x, %w : memref<1x1x4x4x4xf32>, memref<1x1x3x3x3xf32>) outs(%y : memref<1x1x2x2x2xf32>)
}

// -----

dlexec.func @conv2d_group {
  %x = dlexec.input "x" : memref<1x4x4x4xf32>
  %w = dlexec.input "w" : memref<2x4x3x3xf32>
  %y = dlexec.alloc : memref<1x2x2x2xf32>
  // expected-error @+1 {{conv2d_forward shapes do not agree}}
  dlexec.library_call "conv2d_forward" ins(%x, %w : memref<1x4x4x4xf32>, memref<2x4x3x3xf32>) outs(%y : memref<1x2x2x2xf32>) {group = 2 : i64}
}

// -----

dlexec.func @conv2d_strides_count {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{attribute 'strides' has 3 values, expected 2}}
  dlexec.library_call "conv2d_forward" ins(%x, %w : memref<1x1x4x4xf32>, memref<1x1x3x3xf32>) outs(%y : memref<1x1x2x2xf32>) {strides = array<i64: 1, 1, 1>}
}

// -----

dlexec.func @conv2d_negative_pad {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{conv2d_backward_filter needs positive strides and dilations and non-negative pads}}
  dlexec.library_call "conv2d_backward_filter" ins(%x, %y : memref<1x1x4x4xf32>, memref<1x1x2x2xf32>) outs(%w : memref<1x1x3x3xf32>) {pads = array<i64: -1, 0, 0, 0>}
}

// -----

dlexec.func @conv2d_output_size {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3xf32>
  %y = dlexec.alloc : memref<1x1x3x2xf32>
  // expected-error @+1 {{conv2d_forward output dim 2 is 3, but input 4, kernel 3, stride 1, pads 0/0 and dilation 1 give 2}}
  dlexec.library_call "conv2d_forward" ins(%x, %w : memref<1x1x4x4xf32>, memref<1x1x3x3xf32>) outs(%y : memref<1x1x3x2xf32>)
}

// -----

dlexec.func @conv2d_backward_data_inputs {
  %dy = dlexec.input "dy" : memref<1x1x2x2xf32>
  %w = dlexec.input "w" : memref<1x1x3x3xf32>
  %b = dlexec.input "b" : memref<1xf32>
  %dx = dlexec.alloc : memref<1x1x4x4xf32>
  // expected-error @+1 {{'conv2d_backward_data' expects ins(dY, W), got 3 inputs}}
  dlexec.library_call "conv2d_backward_data" ins(%dy, %w, %b : memref<1x1x2x2xf32>, memref<1x1x3x3xf32>, memref<1xf32>) outs(%dx : memref<1x1x4x4xf32>)
}

// -----

dlexec.func @conv2d_bias {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %w = dlexec.input "w" : memref<2x1x3x3xf32>
  %b = dlexec.input "b" : memref<3xf32>
  %y = dlexec.alloc : memref<1x2x2x2xf32>
  // expected-error @+1 {{conv2d_forward bias must hold K = 2 values, got 'memref<3xf32>'}}
  dlexec.library_call "conv2d_forward" ins(%x, %w, %b : memref<1x1x4x4xf32>, memref<2x1x3x3xf32>, memref<3xf32>) outs(%y : memref<1x2x2x2xf32>)
}

// -----

dlexec.func @conv3d_pads_count {
  %x = dlexec.input "x" : memref<1x1x4x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3x3xf32>
  %y = dlexec.alloc : memref<1x1x2x2x2xf32>
  // expected-error @+1 {{attribute 'pads' has 4 values, expected 6}}
  dlexec.library_call "conv3d_forward" ins(%x, %w : memref<1x1x4x4x4xf32>, memref<1x1x3x3x3xf32>) outs(%y : memref<1x1x2x2x2xf32>) {pads = array<i64: 0, 0, 0, 0>}
}

// -----

dlexec.func @conv3d_output_depth {
  %x = dlexec.input "x" : memref<1x1x4x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3x3xf32>
  %y = dlexec.alloc : memref<1x1x3x2x2xf32>
  // expected-error @+1 {{conv3d_forward output dim 2 is 3, but input 4, kernel 3, stride 1, pads 0/0 and dilation 1 give 2}}
  dlexec.library_call "conv3d_forward" ins(%x, %w : memref<1x1x4x4x4xf32>, memref<1x1x3x3x3xf32>) outs(%y : memref<1x1x3x2x2xf32>)
}

// -----

dlexec.func @conv3d_rank {
  %x = dlexec.input "x" : memref<1x1x4x4xf32>
  %w = dlexec.input "w" : memref<1x1x3x3xf32>
  %y = dlexec.alloc : memref<1x1x2x2xf32>
  // expected-error @+1 {{conv3d_backward_data expects rank-5 X [N,C,D,H,W], W [K,C/group,T,R,S] and Y [N,K,O,P,Q]}}
  dlexec.library_call "conv3d_backward_data" ins(%y, %w : memref<1x1x2x2xf32>, memref<1x1x3x3xf32>) outs(%x : memref<1x1x4x4xf32>)
}

// -----

// Low precision: every operand shares the one type (no f32 output of a bf16
// product; the mixed-precision pass casts around the call instead).
dlexec.func @bf16_gemm_f32_output {
  %a = dlexec.input "a" : memref<2x2xbf16>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{operand #2 has element type 'f32', but operand #0 has 'bf16'; all operands share one}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xbf16>, memref<2x2xbf16>) outs(%y : memref<2x2xf32>)
}

// -----

// The one f32 operand a bf16 gemm may take is a bias row C with beta 1
// (GemmParams::f32_bias): not a full C, not a scaled row.
dlexec.func @bf16_gemm_f32_full_c {
  %a = dlexec.input "a" : memref<2x2xbf16>
  %c = dlexec.input "c" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xbf16>
  // expected-error @+1 {{an f32 C of an f16/bf16 gemm is a bias row ([N] or [1, N]) with beta 1 (not with relu_aux), got 'memref<2x2xf32>' with beta 1}}
  dlexec.library_call "gemm" ins(%a, %a, %c : memref<2x2xbf16>, memref<2x2xbf16>, memref<2x2xf32>) outs(%y : memref<2x2xbf16>)
}

// -----

dlexec.func @bf16_gemm_f32_scaled_row {
  %a = dlexec.input "a" : memref<2x2xbf16>
  %c = dlexec.input "c" : memref<2xf32>
  %y = dlexec.alloc : memref<2x2xbf16>
  // expected-error @+1 {{an f32 C of an f16/bf16 gemm is a bias row ([N] or [1, N]) with beta 1 (not with relu_aux), got 'memref<2xf32>' with beta 5.000000e-01}}
  dlexec.library_call "gemm" ins(%a, %a, %c : memref<2x2xbf16>, memref<2x2xbf16>, memref<2xf32>) outs(%y : memref<2x2xbf16>) {beta = 0.5 : f32}
}

// -----

// An f32 dBias is legal only for bgrad_a/bgrad_b without C (the f32 column
// sum of a 16-bit operand, GemmParams::f32_bias): not with a C.
dlexec.func @bf16_bgrad_f32_dbias_with_c {
  %a = dlexec.input "a" : memref<2x2xbf16>
  %c = dlexec.input "c" : memref<2x2xbf16>
  %y = dlexec.alloc : memref<2x2xbf16>
  %db = dlexec.alloc : memref<2xf32>
  // expected-error @+1 {{operand #4 has element type 'f32', but operand #0 has 'bf16'; all operands share one}}
  dlexec.library_call "gemm" ins(%a, %a, %c : memref<2x2xbf16>, memref<2x2xbf16>, memref<2x2xbf16>) outs(%y, %db : memref<2x2xbf16>, memref<2xf32>) {epilogue = "bgrad_b", beta = 1.0 : f32}
}

// -----

dlexec.func @conv_f16_filter_bf16 {
  %x = dlexec.input "x" : memref<1x1x3x3xf16>
  %w = dlexec.input "w" : memref<1x1x2x2xbf16>
  %y = dlexec.alloc : memref<1x1x2x2xf16>
  // expected-error @+1 {{operand #1 has element type 'bf16', but operand #0 has 'f16'; all operands share one}}
  dlexec.library_call "conv2d_forward" ins(%x, %w : memref<1x1x3x3xf16>, memref<1x1x2x2xbf16>) outs(%y : memref<1x1x2x2xf16>) {group = 1 : i64}
}

// -----

dlexec.func @i32_batched_gemm {
  %a = dlexec.input "a" : memref<8xi32>
  %y = dlexec.alloc : memref<8xi32>
  // expected-error @+1 {{'batched_gemm' supports f32, f16 and bf16, got 'i32'}}
  dlexec.library_call "batched_gemm" ins(%a, %a : memref<8xi32>, memref<8xi32>) outs(%y : memref<8xi32>) {m = 2 : i64, n = 2 : i64, k = 2 : i64, batch = array<i64: 2>, stride_a = array<i64: 4>, stride_b = array<i64: 4>}
}

// -----

dlexec.func @gemm_unknown_epilogue {
  %a = dlexec.input "a" : memref<2x2xf32>
  %y = dlexec.alloc : memref<2x2xf32>
  // expected-error @+1 {{gemm epilogue must be one of "none", "relu", "bgrad_a", "bgrad_b", "relu_aux", "drelu", "drelu_bgrad", got "gelu"}}
  dlexec.library_call "gemm" ins(%a, %a : memref<2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>) {epilogue = "gelu"}
}

// -----

dlexec.func @gemm_bgrad_needs_dbias {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<2x4xf32>
  %y = dlexec.alloc : memref<3x4xf32>
  // expected-error @+1 {{gemm with epilogue "bgrad_a" expects 2 output(s) (Y, dBias), got 1}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<2x4xf32>) outs(%y : memref<3x4xf32>) {trans_a = true, epilogue = "bgrad_a"}
}

// -----

dlexec.func @gemm_bgrad_length {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<2x4xf32>
  %y = dlexec.alloc : memref<3x4xf32>
  %db = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{gemm epilogue "bgrad_a" writes dBias of shape [3] (M), got 'memref<4xf32>'}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<2x4xf32>) outs(%y, %db : memref<3x4xf32>, memref<4xf32>) {trans_a = true, epilogue = "bgrad_a"}
}

// -----

// The ReLU bit-mask of a 2x130 result: 130 bits round up to 256, 8 words.
dlexec.func @gemm_relu_aux_mask_shape {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x130xf32>
  %y = dlexec.alloc : memref<2x130xf32>
  %aux = dlexec.alloc : memref<2x5xi32>
  // expected-error @+1 {{gemm epilogue "relu_aux" takes the ReLU bit-mask Aux as memref<2x8xi32> (M x N rounded up to 128 bits), got 'memref<2x5xi32>'}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<3x130xf32>) outs(%y, %aux : memref<2x130xf32>, memref<2x5xi32>) {epilogue = "relu_aux"}
}

// -----

dlexec.func @gemm_relu_aux_needs_mask {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{gemm with epilogue "relu_aux" expects 2 output(s) (Y, Aux), got 1}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<3x4xf32>) outs(%y : memref<2x4xf32>) {epilogue = "relu_aux"}
}

// -----

dlexec.func @gemm_relu_aux_full_c {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x4xf32>
  %c = dlexec.input "c" : memref<2x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  %aux = dlexec.alloc : memref<2x4xi32>
  // expected-error @+1 {{gemm epilogue "relu_aux" adds C as a bias row ([N] or [1, N]), got 'memref<2x4xf32>'}}
  dlexec.library_call "gemm" ins(%a, %b, %c : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>) outs(%y, %aux : memref<2x4xf32>, memref<2x4xi32>) {epilogue = "relu_aux"}
}

// -----

dlexec.func @gemm_drelu_needs_mask {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{gemm epilogue "drelu" expects ins(A, B, Aux), got 2 inputs}}
  dlexec.library_call "gemm" ins(%a, %b : memref<2x3xf32>, memref<3x4xf32>) outs(%y : memref<2x4xf32>) {epilogue = "drelu"}
}

// -----

dlexec.func @gemm_drelu_bgrad_mask_type {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x4xf32>
  %aux = dlexec.input "aux" : memref<2x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  %db = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{gemm epilogue "drelu_bgrad" takes the ReLU bit-mask Aux as memref<2x4xi32> (M x N rounded up to 128 bits), got 'memref<2x4xf32>'}}
  dlexec.library_call "gemm" ins(%a, %b, %aux : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>) outs(%y, %db : memref<2x4xf32>, memref<4xf32>) {epilogue = "drelu_bgrad"}
}

// -----

dlexec.func @gemm_drelu_beta {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<3x4xf32>
  %aux = dlexec.input "aux" : memref<2x4xi32>
  %y = dlexec.alloc : memref<2x4xf32>
  // expected-error @+1 {{gemm epilogue "drelu" needs beta 0, got 1.000000e+00}}
  dlexec.library_call "gemm" ins(%a, %b, %aux : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xi32>) outs(%y : memref<2x4xf32>) {epilogue = "drelu", beta = 1.0 : f32}
}
