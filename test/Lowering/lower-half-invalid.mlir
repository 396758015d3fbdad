// f16 and bf16 tensors: the ops that accumulate (reductions, softmax, losses,
// matmul, conv) are rejected with the element type and what is supported.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-lower-to-dlexec

func.func @reduce(%x: tensor<2x4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{cannot lower 'dlgraph.reduce_sum': element type f16 is not supported by this op yet (f16 and bf16 tensors support elementwise ops, casts and data movement; cast to f32 for this op)}}
  %y = dlgraph.reduce_sum %x {axes = array<i64: 0>} : tensor<2x4xf16> -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @matmul(%x: tensor<2x3xbf16>, %w: tensor<3x5xbf16>) -> tensor<2x5xbf16> {
  // expected-error @+1 {{cannot lower 'dlgraph.matmul': element type bf16 is not supported by this op yet}}
  %y = dlgraph.matmul %x, %w : (tensor<2x3xbf16>, tensor<3x5xbf16>) -> tensor<2x5xbf16>
  return %y : tensor<2x5xbf16>
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
