// 3-D convolution lowers to the conv3d_* library calls with the dlgraph
// attributes (pads = [front, top, left, back, bottom, right]).
// RUN: dlc-opt %s --dlgraph-lower-to-dlexec | FileCheck %s

// D = (4 + 1 + 0 - 2) / 2 + 1 = 2, H = (5 + 0 + 1 - 3) / 1 + 1 = 4,
// W = (3 + 0 + 1 - 2) / 1 + 1 = 3.
// CHECK-LABEL: func @conv3d_ok
// CHECK: dlexec.library_call "conv3d_forward"
// CHECK-SAME: pads = array<i64: 1, 0, 0, 0, 1, 1>
// CHECK: dlexec.library_call "conv3d_backward_data"
func.func @conv3d_ok(%x: tensor<2x2x4x5x3xf32>, %w: tensor<4x1x2x2x2xf32>, %b: tensor<4xf32>, %dy: tensor<2x4x2x4x3xf32>) -> (tensor<2x4x2x4x3xf32>, tensor<2x2x4x5x3xf32>) {
  %y = dlgraph.conv %x, %w, %b {strides = array<i64: 2, 1, 1>, pads = array<i64: 1, 0, 0, 0, 1, 1>, dilations = array<i64: 1, 2, 1>, group = 2 : i64} : (tensor<2x2x4x5x3xf32>, tensor<4x1x2x2x2xf32>, tensor<4xf32>) -> tensor<2x4x2x4x3xf32>
  %dx = dlgraph.conv_backward_data %dy, %w {strides = array<i64: 2, 1, 1>, pads = array<i64: 1, 0, 0, 0, 1, 1>, dilations = array<i64: 1, 2, 1>, group = 2 : i64} : (tensor<2x4x2x4x3xf32>, tensor<4x1x2x2x2xf32>) -> tensor<2x2x4x5x3xf32>
  return %y, %dx : tensor<2x4x2x4x3xf32>, tensor<2x2x4x5x3xf32>
}

