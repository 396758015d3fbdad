// RUN: dlc-opt %s --split-input-file --dlgraph-mixed-precision=precision=bf16 | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-mixed-precision=precision=fp16 | FileCheck %s --check-prefix=F16

// A GEMM reads a parameter twice (forward and backward): one shared cast.
// The loss reads the bf16 logits and computes (and returns) f32; its
// gradient is bf16 for the backward GEMMs; the weight gradient reaches the
// update in f32; the variable and the signature stay f32.
dlgraph.variable @w : tensor<10x64xf32> = dense<0.5> : tensor<10x64xf32> {trainable}
dlgraph.variable @buf : tensor<10x64xf32> {dlgraph.optimizer_state}
dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:.+]]: tensor<4x64xf32>, %[[L:.+]]: tensor<4xi64>) -> tensor<f32>
// F16-LABEL: func.func @step
func.func @step(%x: tensor<4x64xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // CHECK: %[[XB:.+]] = dlgraph.cast %[[X]] : tensor<4x64xf32> to tensor<4x64xbf16>
  // CHECK: %[[W:.+]] = dlgraph.read_variable @w : tensor<10x64xf32>
  // CHECK: %[[WB:.+]] = dlgraph.cast %[[W]] : tensor<10x64xf32> to tensor<10x64xbf16>
  // CHECK: %[[Y:.+]] = dlgraph.gemm %[[XB]], %[[WB]] {trans_b = true} : (tensor<4x64xbf16>, tensor<10x64xbf16>) -> tensor<4x10xbf16>
  // CHECK-NEXT: dlgraph.softmax_cross_entropy %[[Y]], %[[L]] : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<f32>
  // F16: dlgraph.gemm {{.*}} : (tensor<4x64xf16>, tensor<10x64xf16>) -> tensor<4x10xf16>
  %w = dlgraph.read_variable @w : tensor<10x64xf32>
  %y = dlgraph.gemm %x, %w {trans_b = true} : (tensor<4x64xf32>, tensor<10x64xf32>) -> tensor<4x10xf32>
  %loss = dlgraph.softmax_cross_entropy %y, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %one = dlgraph.constant dense<1.0> : tensor<f32>
  // The backward GEMMs read the same bf16 weight copy as the forward one.
  // CHECK: %[[DYB:.+]] = dlgraph.softmax_cross_entropy_grad %[[Y]], %[[L]], %{{.+}} : (tensor<4x10xbf16>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xbf16>
  // CHECK: dlgraph.gemm %[[DYB]], %[[WB]] : (tensor<4x10xbf16>, tensor<10x64xbf16>) -> tensor<4x64xbf16>
  // CHECK: %[[DW:.+]] = dlgraph.gemm %[[DYB]], %[[XB]] {trans_a = true} : (tensor<4x10xbf16>, tensor<4x64xbf16>) -> tensor<10x64xbf16>
  // CHECK: %[[DWF:.+]] = dlgraph.cast %[[DW]] : tensor<10x64xbf16> to tensor<10x64xf32>
  // CHECK: %[[NEW:.+]], %{{.+}} = dlgraph.sgd_update %[[W]], %[[DWF]], %{{.+}}, %{{.+}}, %{{.+}} {{.*}} : (tensor<10x64xf32>, tensor<10x64xf32>, tensor<10x64xf32>, tensor<f32>, tensor<f32>)
  // CHECK: dlgraph.write_variable @w, %[[NEW]] : tensor<10x64xf32>
  %dy = dlgraph.softmax_cross_entropy_grad %y, %labels, %one : (tensor<4x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xf32>
  %dx = dlgraph.gemm %dy, %w : (tensor<4x10xf32>, tensor<10x64xf32>) -> tensor<4x64xf32>
  %dw = dlgraph.gemm %dy, %x {trans_a = true} : (tensor<4x10xf32>, tensor<4x64xf32>) -> tensor<10x64xf32>
  %b0 = dlgraph.read_variable @buf : tensor<10x64xf32>
  %s = dlgraph.read_variable @__step : tensor<f32>
  %lr = dlgraph.constant dense<0.1> : tensor<f32>
  %new, %nb = dlgraph.sgd_update %w, %dw, %b0, %s, %lr {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<10x64xf32>, tensor<10x64xf32>, tensor<10x64xf32>, tensor<f32>, tensor<f32>) -> (tensor<10x64xf32>, tensor<10x64xf32>)
  dlgraph.write_variable @w, %new : tensor<10x64xf32>
  dlgraph.write_variable @buf, %nb : tensor<10x64xf32>
  // CHECK-NOT: dlgraph.cast
  // CHECK: return %{{.+}} : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Elementwise ops follow their operands. A full-shape low operand with an
// f32 per-channel operand broadcast into it computes in f32 and is rounded
// once; the chain between such ops stays f32 (no round trip); an exact
// constant takes the low type, an inexact one makes the op compute in f32.
// The function's f32 result type is kept.
// CHECK-LABEL: func.func @norm
func.func @norm(%a: tensor<2x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %mean: tensor<1x8x1x1xf32>, %gamma: tensor<1x8x1x1xf32>) -> tensor<2x8x4x4xf32> {
  // CHECK: %[[C:.+]] = dlgraph.conv {{.*}} -> tensor<2x8x4x4xbf16>
  // CHECK: %[[CF:.+]] = dlgraph.cast %[[C]] : tensor<2x8x4x4xbf16> to tensor<2x8x4x4xf32>
  // CHECK: %[[S:.+]] = dlgraph.sub %[[CF]], %{{.+}} : (tensor<2x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x4x4xf32>
  // CHECK-NEXT: %[[M:.+]] = dlgraph.mul %[[S]], %{{.+}} : (tensor<2x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x4x4xf32>
  // CHECK-NEXT: %[[MB:.+]] = dlgraph.cast %[[M]] : tensor<2x8x4x4xf32> to tensor<2x8x4x4xbf16>
  // CHECK: %[[R:.+]] = dlgraph.relu %[[MB]] : tensor<2x8x4x4xbf16>
  // CHECK: %[[H:.+]] = dlgraph.constant dense<5.000000e-01> : tensor<f32>
  // CHECK-NEXT: %[[HB:.+]] = dlgraph.cast %[[H]] : tensor<f32> to tensor<bf16>
  // CHECK-NEXT: %[[P:.+]] = dlgraph.mul %[[R]], %[[HB]] : (tensor<2x8x4x4xbf16>, tensor<bf16>) -> tensor<2x8x4x4xbf16>
  // CHECK: %[[K:.+]] = dlgraph.constant dense<1.41421354> : tensor<f32>
  // CHECK-NEXT: %[[PF:.+]] = dlgraph.cast %[[P]] : tensor<2x8x4x4xbf16> to tensor<2x8x4x4xf32>
  // CHECK-NEXT: %[[D:.+]] = dlgraph.div %[[PF]], %[[K]] : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  // Rounding %d to bf16 for a return that widens it again is skipped.
  // CHECK-NEXT: return %[[D]] : tensor<2x8x4x4xf32>
  %c = dlgraph.conv %a, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<2x8x4x4xf32>
  %s = dlgraph.sub %c, %mean : (tensor<2x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x4x4xf32>
  %m = dlgraph.mul %s, %gamma : (tensor<2x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x4x4xf32>
  %r = dlgraph.relu %m : tensor<2x8x4x4xf32>
  %h = dlgraph.constant dense<0.5> : tensor<f32>
  %p = dlgraph.mul %r, %h : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  %k = dlgraph.constant dense<1.41421354> : tensor<f32>
  %d = dlgraph.div %p, %k : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  return %d : tensor<2x8x4x4xf32>
}

// -----

// Widest wins between full-shape operands: a residual f32 stream plus a low
// GEMM output stays f32. Data movement follows its operand.
// CHECK-LABEL: func.func @residual
func.func @residual(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x4xf32> {
  // CHECK: %[[MM:.+]] = dlgraph.matmul {{.*}} -> tensor<4x16xbf16>
  // CHECK-NEXT: %[[MMF:.+]] = dlgraph.cast %[[MM]] : tensor<4x16xbf16> to tensor<4x16xf32>
  // CHECK-NEXT: %[[A:.+]] = dlgraph.add %{{.+}}, %[[MMF]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT: %[[T:.+]] = dlgraph.transpose %[[MM]] {{.*}} : tensor<4x16xbf16> -> tensor<16x4xbf16>
  %mm = dlgraph.matmul %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %a = dlgraph.add %x, %mm : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = dlgraph.transpose %mm {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %u = dlgraph.transpose %a {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %o = dlgraph.add %t, %u : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  return %o : tensor<16x4xf32>
}
