// 3-D convolution (rank-5 NCDHW) verifier errors: 3 strides, 3 dilations and
// 6 pads ([front, top, left, back, bottom, right]), the output size per axis,
// and no rank above 5.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @conv3d_pads(%x: tensor<1x1x4x4x4xf32>, %w: tensor<1x1x3x3x3xf32>) -> tensor<1x1x2x2x2xf32> {
  // expected-error @+1 {{expects 3 strides, 3 dilations and 6 pads, got 3, 3 and 4}}
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1 : i64} : (tensor<1x1x4x4x4xf32>, tensor<1x1x3x3x3xf32>) -> tensor<1x1x2x2x2xf32>
  return %y : tensor<1x1x2x2x2xf32>
}


// -----

func.func @conv3d_depth(%x: tensor<1x1x4x4x4xf32>, %w: tensor<1x1x3x3x3xf32>) -> tensor<1x1x3x2x2xf32> {
  // expected-error @+1 {{'dlgraph.conv' op result shape is [1, 1, 3, 2, 2], expected [1, 1, 2, 2, 2]}}
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1 : i64} : (tensor<1x1x4x4x4xf32>, tensor<1x1x3x3x3xf32>) -> tensor<1x1x3x2x2xf32>
  return %y : tensor<1x1x3x2x2xf32>
}


// -----

func.func @conv4d(%x: tensor<1x1x4x4x4x4xf32>, %w: tensor<1x1x3x3x3x3xf32>) -> tensor<1x1x2x2x2x2xf32> {
  // expected-error @+1 {{supports 2-D and 3-D convolution only}}
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x1x4x4x4x4xf32>, tensor<1x1x3x3x3x3xf32>) -> tensor<1x1x2x2x2x2xf32>
  return %y : tensor<1x1x2x2x2x2xf32>
}
