// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s

// A negative-step slice reads input[(i, 7 - 2 j)]; consumers see it through a
// view (so fusion cannot move the strided read). Concat writes each input
// into its part: the first part at (i, j) of a wider buffer is written
// `j mod 5` so that codegen sizes loop j from the input, the second at j + 2.
// CHECK-DAG: #[[STRIDED:.+]] = affine_map<(d0, d1) -> (d0, d1 * -2 + 7)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[FIRST:.+]] = affine_map<(d0, d1) -> (d0, d1 mod 5)>
// CHECK-DAG: #[[SECOND:.+]] = affine_map<(d0, d1) -> (d0, d1 + 2)>
// CHECK-LABEL: dlexec.func @slice_concat
// CHECK: %[[X:.+]] = dlexec.input "arg0"
// CHECK: %[[S:.+]] = dlexec.alloc : memref<4x3xf32>
// CHECK: %[[SV:.+]] = dlexec.reshape %[[S]]
// CHECK: dlexec.kernel @{{.*}}slice ins(%[[X]] : memref<4x8xf32>) outs(%[[S]] : memref<4x3xf32>) attributes {indexing_maps = [#[[STRIDED]], #[[ID]]]
// CHECK: %[[C:.+]] = dlexec.alloc : memref<4x5xf32>
// CHECK: dlexec.kernel @{{.*}}concat ins({{.*}} : memref<4x2xf32>) outs(%[[C]] : memref<4x5xf32>) attributes {indexing_maps = [#[[ID]], #[[FIRST]]]
// CHECK: %[[SV2:.+]] = dlexec.reshape %[[SV]]
// CHECK: dlexec.kernel @{{.*}}concat ins(%[[SV2]] : memref<4x3xf32>) outs(%[[C]] : memref<4x5xf32>) attributes {indexing_maps = [#[[ID]], #[[SECOND]]]
// CHECK: dlexec.output "result0", %[[C]]
func.func @slice_concat(%x: tensor<4x8xf32>, %y: tensor<4x2xf32>) -> tensor<4x5xf32> {
  %s = dlgraph.slice %x {starts = array<i64: 0, 7>, steps = array<i64: 1, -2>} : tensor<4x8xf32> -> tensor<4x3xf32>
  %c = dlgraph.concat %y, %s {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// -----

// Pad (and slice gradients): a fill kernel with the value, then a copy of the
// input to rows 1 + 2 i.
// CHECK-DAG: #[[PID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1) -> (d0 * 2 + 1, d1)>
// CHECK-LABEL: dlexec.func @pad_strided
// CHECK: %[[P:.+]] = dlexec.alloc : memref<5x3xf32>
// CHECK: dlexec.kernel @{{.*}}pad_fill outs(%[[P]] : memref<5x3xf32>) attributes {indexing_maps = [#[[PID]]]
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: dlexec.kernel @{{.*}}pad ins({{.*}} : memref<2x3xf32>) outs(%[[P]] : memref<5x3xf32>) attributes {indexing_maps = [#[[PID]], #[[ROWS]]]
func.func @pad_strided(%x: tensor<2x3xf32>) -> tensor<5x3xf32> {
  %y = dlgraph.pad %x {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>, value = 0.25 : f64} : tensor<2x3xf32> -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// -----

// Gather and its gradient are builtin kernels with the axis.
// CHECK-LABEL: dlexec.func @gather
// CHECK: dlexec.builtin_kernel @{{.*}} "gather" ins({{.*}} : memref<10x4xf32>, memref<2x3xi64>) outs({{.*}} : memref<2x3x4xf32>) {axis = 0 : i64}
// CHECK: dlexec.builtin_kernel @{{.*}} "gather_grad" ins({{.*}} : memref<2x3xi64>, memref<2x3x4xf32>) outs({{.*}} : memref<10x4xf32>) {axis = 0 : i64}
func.func @gather(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3x4xf32>, tensor<10x4xf32>) {
  %y = dlgraph.gather %w, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %g = dlgraph.gather_grad %i, %y {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
  return %y, %g : tensor<2x3x4xf32>, tensor<10x4xf32>
}
