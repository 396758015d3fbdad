// Well-formed library calls verify and print back unchanged: one per row of
// runtime/schema/LibraryCalls.def, with the optional operands and the
// attribute spellings the lowering uses.
// RUN: dlc-opt %s | FileCheck %s
// RUN: dlc-opt %s | dlc-opt | FileCheck %s

// CHECK-LABEL: dlexec.func @calls
dlexec.func @calls {
  %a = dlexec.input "a" : memref<2x3xf32>
  %b = dlexec.input "b" : memref<4x3xf32>
  %c = dlexec.input "c" : memref<1x4xf32>
  %y = dlexec.alloc : memref<2x4xf32>
  // CHECK: dlexec.library_call "gemm" ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x3xf32>, memref<4x3xf32>, memref<1x4xf32>) outs(%{{.*}} : memref<2x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
  dlexec.library_call "gemm" ins(%a, %b, %c : memref<2x3xf32>, memref<4x3xf32>, memref<1x4xf32>) outs(%y : memref<2x4xf32>) {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32}
  %d = dlexec.input "d" : memref<2x2xf64>
  %e = dlexec.alloc : memref<2x2xf64>
  // CHECK: dlexec.library_call "gemm" ins({{.*}} : memref<2x2xf64>, memref<2x2xf64>)
  dlexec.library_call "gemm" ins(%d, %d : memref<2x2xf64>, memref<2x2xf64>) outs(%e : memref<2x2xf64>)
  // A [2, 2x3] times a B [3x4] broadcast over the batch (stride 0).
  %ba = dlexec.input "ba" : memref<12xf32>
  %bb = dlexec.input "bb" : memref<12xf32>
  %by = dlexec.alloc : memref<4x4xf32>
  // CHECK: dlexec.library_call "batched_gemm"
  dlexec.library_call "batched_gemm" ins(%ba, %bb : memref<12xf32>, memref<12xf32>) outs(%by : memref<4x4xf32>) {m = 2 : i64, n = 4 : i64, k = 3 : i64, batch = array<i64: 2>, stride_a = array<i64: 6>, stride_b = array<i64: 0>}
  %x = dlexec.input "x" : memref<2x4x5x5xf32>
  %w = dlexec.input "w" : memref<6x2x3x3xf32>
  %bias = dlexec.input "bias" : memref<6xf32>
  %cy = dlexec.alloc : memref<2x6x3x3xf32>
  %dx = dlexec.alloc : memref<2x4x5x5xf32>
  %dw = dlexec.alloc : memref<6x2x3x3xf32>
  // Grouped, strided and padded: (5 + 1 + 1 - 3) / 2 + 1 = 3.
  // CHECK: dlexec.library_call "conv2d_forward"
  dlexec.library_call "conv2d_forward" ins(%x, %w, %bias : memref<2x4x5x5xf32>, memref<6x2x3x3xf32>, memref<6xf32>) outs(%cy : memref<2x6x3x3xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64}
  // CHECK: dlexec.library_call "conv2d_backward_data"
  dlexec.library_call "conv2d_backward_data" ins(%cy, %w : memref<2x6x3x3xf32>, memref<6x2x3x3xf32>) outs(%dx : memref<2x4x5x5xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, group = 2 : i64}
  // CHECK: dlexec.library_call "conv2d_backward_filter"
  dlexec.library_call "conv2d_backward_filter" ins(%x, %cy : memref<2x4x5x5xf32>, memref<2x6x3x3xf32>) outs(%dw : memref<6x2x3x3xf32>) {strides = [2, 2], pads = [1, 1, 1, 1], group = 2 : i64}
  %x3 = dlexec.input "x3" : memref<1x1x4x4x4xf32>
  %w3 = dlexec.input "w3" : memref<1x1x3x3x3xf32>
  %y3 = dlexec.alloc : memref<1x1x2x2x2xf32>
  %dx3 = dlexec.alloc : memref<1x1x4x4x4xf32>
  %dw3 = dlexec.alloc : memref<1x1x3x3x3xf32>
  // CHECK: dlexec.library_call "conv3d_forward"
  dlexec.library_call "conv3d_forward" ins(%x3, %w3 : memref<1x1x4x4x4xf32>, memref<1x1x3x3x3xf32>) outs(%y3 : memref<1x1x2x2x2xf32>) {group = 1 : i64}
  // CHECK: dlexec.library_call "conv3d_backward_data"
  dlexec.library_call "conv3d_backward_data" ins(%y3, %w3 : memref<1x1x2x2x2xf32>, memref<1x1x3x3x3xf32>) outs(%dx3 : memref<1x1x4x4x4xf32>)
  // CHECK: dlexec.library_call "conv3d_backward_filter"
  dlexec.library_call "conv3d_backward_filter" ins(%x3, %y3 : memref<1x1x4x4x4xf32>, memref<1x1x2x2x2xf32>) outs(%dw3 : memref<1x1x3x3x3xf32>)
}
