// f16 and bf16 gemm, matmul and convolutions lower to library calls of that
// type (LibraryCalls.h ElementType: f32 accumulation, one rounding). A C
// the gemm call cannot broadcast (a column, a splat) is copied to [M, N]
// first (exact) and passed to the call, so that beta * C joins the f32 sum;
// f32 adds it in a gemm_bias kernel after the call instead, which in 16 bits
// would round twice.
// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s

// CHECK-LABEL: dlexec.func @gemm_bias
// CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<4x8xbf16>, memref<6x8xbf16>, memref<6xbf16>) outs(%{{.+}} : memref<4x6xbf16>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
// CHECK-NOT: dlexec.kernel
func.func @gemm_bias(%a: tensor<4x8xbf16>, %b: tensor<6x8xbf16>, %c: tensor<6xbf16>) -> tensor<4x6xbf16> {
  %y = dlgraph.gemm %a, %b, %c {trans_b = true} : (tensor<4x8xbf16>, tensor<6x8xbf16>, tensor<6xbf16>) -> tensor<4x6xbf16>
  return %y : tensor<4x6xbf16>
}

// -----

// CHECK-LABEL: dlexec.func @gemm_column_c
// CHECK: %[[C:.+]] = dlexec.input "arg2" : memref<4x1xf16>
// CHECK: %[[FULL:.+]] = dlexec.alloc : memref<4x6xf16>
// CHECK: dlexec.kernel @{{.+}}_gemm_broadcast_c ins(%[[C]] : memref<4x1xf16>) outs(%[[FULL]] : memref<4x6xf16>)
// CHECK-NEXT: ^bb0(%[[V:.+]]: f16, %{{.+}}: f16):
// CHECK-NEXT: dlexec.yield %[[V]] : f16
// CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %[[FULL]] : memref<4x8xf16>, memref<8x6xf16>, memref<4x6xf16>) outs(%{{.+}} : memref<4x6xf16>) {alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32
// CHECK-NOT: gemm_bias
func.func @gemm_column_c(%a: tensor<4x8xf16>, %b: tensor<8x6xf16>, %c: tensor<4x1xf16>) -> tensor<4x6xf16> {
  %y = dlgraph.gemm %a, %b, %c {beta = 0.5 : f32} : (tensor<4x8xf16>, tensor<8x6xf16>, tensor<4x1xf16>) -> tensor<4x6xf16>
  return %y : tensor<4x6xf16>
}

// -----

// CHECK-LABEL: dlexec.func @matmuls
// CHECK: dlexec.library_call "batched_gemm" ins(%{{.+}}, %{{.+}} : memref<24xbf16>, memref<40xbf16>) outs(%{{.+}} : memref<6x5xbf16>) {batch = array<i64: 2>, k = 4 : i64, m = 3 : i64, n = 5 : i64, stride_a = array<i64: 12>, stride_b = array<i64: 20>}
// CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<6x4xbf16>, memref<4x5xbf16>) outs(%{{.+}} : memref<6x5xbf16>)
func.func @matmuls(%a: tensor<2x3x4xbf16>, %b: tensor<2x4x5xbf16>, %w: tensor<4x5xbf16>) -> (tensor<2x3x5xbf16>, tensor<2x3x5xbf16>) {
  %y = dlgraph.matmul %a, %b : (tensor<2x3x4xbf16>, tensor<2x4x5xbf16>) -> tensor<2x3x5xbf16>
  %z = dlgraph.matmul %a, %w : (tensor<2x3x4xbf16>, tensor<4x5xbf16>) -> tensor<2x3x5xbf16>
  return %y, %z : tensor<2x3x5xbf16>, tensor<2x3x5xbf16>
}

// -----

// CHECK-LABEL: dlexec.func @convs
// CHECK: dlexec.library_call "conv2d_forward" ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x1x8x8xf16>, memref<4x1x3x3xf16>, memref<4xf16>) outs(%{{.+}} : memref<2x4x8x8xf16>)
// CHECK: dlexec.library_call "conv2d_backward_data" ins(%{{.+}}, %{{.+}} : memref<2x4x8x8xf16>, memref<4x1x3x3xf16>) outs(%{{.+}} : memref<2x1x8x8xf16>)
// CHECK: dlexec.library_call "conv2d_backward_filter" ins(%{{.+}}, %{{.+}} : memref<2x1x8x8xf16>, memref<2x4x8x8xf16>) outs(%{{.+}} : memref<4x1x3x3xf16>)
func.func @convs(%x: tensor<2x1x8x8xf16>, %w: tensor<4x1x3x3xf16>, %b: tensor<4xf16>, %dy: tensor<2x4x8x8xf16>) -> (tensor<2x4x8x8xf16>, tensor<2x1x8x8xf16>, tensor<4x1x3x3xf16>) {
  %c = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x8x8xf16>, tensor<4x1x3x3xf16>, tensor<4xf16>) -> tensor<2x4x8x8xf16>
  %dx = dlgraph.conv_backward_data %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x8x8xf16>, tensor<4x1x3x3xf16>) -> tensor<2x1x8x8xf16>
  %dw = dlgraph.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x8x8xf16>, tensor<2x4x8x8xf16>) -> tensor<4x1x3x3xf16>
  return %c, %dx, %dw : tensor<2x4x8x8xf16>, tensor<2x1x8x8xf16>, tensor<4x1x3x3xf16>
}

// -----

// A 3-D bf16 convolution.
// CHECK-LABEL: dlexec.func @conv3d
// CHECK: dlexec.library_call "conv3d_forward" ins(%{{.+}}, %{{.+}} : memref<1x2x4x4x4xbf16>, memref<3x2x3x3x3xbf16>) outs(%{{.+}} : memref<1x3x2x2x2xbf16>)
func.func @conv3d(%x: tensor<1x2x4x4x4xbf16>, %w: tensor<3x2x3x3x3xbf16>) -> tensor<1x3x2x2x2xbf16> {
  %y = dlgraph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1 : i64} : (tensor<1x2x4x4x4xbf16>, tensor<3x2x3x3x3xbf16>) -> tensor<1x3x2x2x2xbf16>
  return %y : tensor<1x3x2x2x2xbf16>
}
