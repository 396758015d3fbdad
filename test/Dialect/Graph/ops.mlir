// RUN: dlc-opt %s --split-input-file | dlc-opt --split-input-file | FileCheck %s
// Round trip of dlgraph ops through the printer and parser.

// CHECK-LABEL: func.func @mlp
// CHECK: %[[W:.+]] = dlgraph.read_variable @fc1.weight : tensor<4x3xf32>
// CHECK: %[[Y:.+]] = dlgraph.gemm %{{.+}}, %[[W]], %{{.+}} {trans_b = true}
// CHECK: dlgraph.relu %[[Y]] : tensor<2x4xf32>
dlgraph.variable @fc1.weight : tensor<4x3xf32> = dense<0.5> : tensor<4x3xf32> {trainable}
func.func @mlp(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = dlgraph.read_variable @fc1.weight : tensor<4x3xf32>
  %c = dlgraph.constant dense<1.0> : tensor<4xf32>
  %y = dlgraph.gemm %x, %w, %c {trans_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = dlgraph.relu %y : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv_pool
// CHECK: dlgraph.conv {{.+}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK: dlgraph.max_pool
func.func @conv_pool(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %p = dlgraph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return %p : tensor<2x4x4x4xf32>
}
