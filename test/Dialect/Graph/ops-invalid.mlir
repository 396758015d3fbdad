// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @gemm_inner_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inner dimensions differ: op(A) is [2, 3], op(B) is [4, 5]}}
  %y = dlgraph.gemm %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape [2, 3] (6 elements) to [7] (7 elements)}}
  %y = dlgraph.reshape %a : tensor<2x3xf32> to tensor<7xf32>
  return %y : tensor<7xf32>
}

// -----

func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{group 2 does not divide input channels 3 and output channels 4}}
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @read_unknown() -> tensor<2xf32> {
  // expected-error @+1 {{'missing' does not name a dlgraph.variable}}
  %w = dlgraph.read_variable @missing : tensor<2xf32>
  return %w : tensor<2xf32>
}

// -----

func.func @xent_labels(%x: tensor<4x10xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{labels must be i64 class ids, got 'i32'}}
  %l = dlgraph.softmax_cross_entropy %x, %t : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{batch dimensions [2] and [3] do not broadcast}}
  %y = dlgraph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

func.func @matmul_vector_result(%a: tensor<4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x1x5xf32> {
  // expected-error @+1 {{'dlgraph.matmul' op result shape is [2, 1, 5], expected [2, 5]}}
  %y = dlgraph.matmul %a, %b : (tensor<4xf32>, tensor<2x4x5xf32>) -> tensor<2x1x5xf32>
  return %y : tensor<2x1x5xf32>
}
