// RUN: dlc-opt %s --split-input-file --dlgraph-rename-main-to-forward | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: @main
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A module that already has @forward keeps both functions as they are.
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @main(
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
