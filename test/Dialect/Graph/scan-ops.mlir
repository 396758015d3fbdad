// RUN: dlc-opt %s --split-input-file | dlc-opt --split-input-file | FileCheck %s
// Round trip of dlgraph.cumsum and dlgraph.one_hot through the printer and
// parser; their result types are inferred (a wrong one is rejected, see
// scan-ops-invalid.mlir).

// CHECK-LABEL: func.func @cumsum
// CHECK-SAME: (%[[X:.+]]: tensor<2x5xf32>, %[[I:.+]]: tensor<7xi64>)
// CHECK: %[[A:.+]] = dlgraph.cumsum %[[X]] {axis = 1 : i64} : tensor<2x5xf32>
// CHECK: %[[B:.+]] = dlgraph.cumsum %[[A]] {axis = 0 : i64, exclusive, reverse} : tensor<2x5xf32>
// CHECK: %[[C:.+]] = dlgraph.cumsum %[[I]] {axis = 0 : i64, reverse} : tensor<7xi64>
// CHECK: return %[[B]], %[[C]]
func.func @cumsum(%x: tensor<2x5xf32>, %i: tensor<7xi64>) -> (tensor<2x5xf32>, tensor<7xi64>) {
  %a = dlgraph.cumsum %x {axis = 1 : i64} : tensor<2x5xf32>
  %b = dlgraph.cumsum %a {axis = 0 : i64, exclusive, reverse} : tensor<2x5xf32>
  %c = dlgraph.cumsum %i {axis = 0 : i64, reverse} : tensor<7xi64>
  return %b, %c : tensor<2x5xf32>, tensor<7xi64>
}

// -----

// The new axis goes anywhere from 0 to the rank of the indices; the element
// type is that of on_value/off_value, whatever the indices' type.
// CHECK-LABEL: func.func @one_hot
// CHECK: dlgraph.one_hot %{{.+}} {axis = 0 : i64, depth = 5 : i64, off_value = 0.000000e+00 : f32, on_value = 1.000000e+00 : f32} : tensor<2x3xi64> -> tensor<5x2x3xf32>
// CHECK: dlgraph.one_hot %{{.+}} {axis = 2 : i64, depth = 4 : i64, off_value = -1 : i32, on_value = 7 : i32} : tensor<2x3xi32> -> tensor<2x3x4xi32>
// CHECK: dlgraph.one_hot %{{.+}} {axis = 0 : i64, depth = 3 : i64, off_value = false, on_value = true} : tensor<f64> -> tensor<3xi1>
func.func @one_hot(%i: tensor<2x3xi64>, %j: tensor<2x3xi32>, %f: tensor<f64>) -> (tensor<5x2x3xf32>, tensor<2x3x4xi32>, tensor<3xi1>) {
  %a = dlgraph.one_hot %i {axis = 0 : i64, depth = 5 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<2x3xi64> -> tensor<5x2x3xf32>
  %b = dlgraph.one_hot %j {axis = 2 : i64, depth = 4 : i64, off_value = -1 : i32, on_value = 7 : i32} : tensor<2x3xi32> -> tensor<2x3x4xi32>
  %c = dlgraph.one_hot %f {axis = 0 : i64, depth = 3 : i64, off_value = false, on_value = true} : tensor<f64> -> tensor<3xi1>
  return %a, %b, %c : tensor<5x2x3xf32>, tensor<2x3x4xi32>, tensor<3xi1>
}
