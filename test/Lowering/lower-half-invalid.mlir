// f16 and bf16 tensors: the ops that accumulate in f32 only (reductions,
// softmax, losses) and the optimizer updates are rejected with the element
// type and what is supported (matmul, gemm and conv lower to f16/bf16
// library calls: lower-lowp-libcalls.mlir).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-lower-to-dlexec

func.func @reduce(%x: tensor<2x4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{cannot lower 'dlgraph.reduce_sum': element type f16 is not supported by this op yet (f16 and bf16 tensors support elementwise ops, casts and data movement; cast to f32 for this op)}}
  %y = dlgraph.reduce_sum %x {axes = array<i64: 0>} : tensor<2x4xf16> -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

// A cast to f32 first is the way: the reduction of the cast lowers, the
// softmax of the f16 tensor does not.
func.func @softmax(%x: tensor<2x4xf16>) -> (tensor<f32>, tensor<2x4xf16>) {
  %c = dlgraph.cast %x : tensor<2x4xf16> to tensor<2x4xf32>
  %m = dlgraph.reduce_mean %c {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
  // expected-error @+1 {{cannot lower 'dlgraph.softmax': element type f16 is not supported by this op yet}}
  %s = dlgraph.softmax %x {axis = -1 : i64} : tensor<2x4xf16>
  return %m, %s : tensor<f32>, tensor<2x4xf16>
}

// -----

// Optimizer updates keep f32: an f16 or bf16 parameter needs f32 master
// weights (not yet).
func.func @sgd(%w: tensor<4xf16>, %g: tensor<4xf16>, %buf: tensor<4xf16>, %step: tensor<f32>) -> tensor<4xf16> {
  %lr = dlgraph.constant dense<0.1> : tensor<f32>
  // expected-error @+1 {{cannot lower 'dlgraph.sgd_update': element type f16 is not supported by optimizer updates (supported: f32, f64)}}
  %np, %nb = dlgraph.sgd_update %w, %g, %buf, %step, %lr {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<f32>, tensor<f32>) -> (tensor<4xf16>, tensor<4xf16>)
  return %np : tensor<4xf16>
}

// -----

func.func @adam(%w: tensor<4xbf16>, %m: tensor<4xbf16>, %v: tensor<4xbf16>, %step: tensor<f32>) -> tensor<4xbf16> {
  %lr1 = dlgraph.constant dense<1.0e-03> : tensor<f32>
  // expected-error @+1 {{cannot lower 'dlgraph.adam_update': element type bf16 is not supported by optimizer updates (supported: f32, f64)}}
  %p:3 = dlgraph.adam_update %w, %w, %m, %v, %step, %lr1 {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-08 : f32, weight_decay = 0.0 : f32} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return %p#0 : tensor<4xbf16>
}
