// dlgraph.attention and dlgraph.attention_grad: the assembly format round
// trips, and the result types follow from the operands and layouts
// (grouped-query heads, the [B, S, H, D] layouts of seq_first, masks,
// dropout).
// RUN: dlc-opt %s --split-input-file | dlc-opt --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @gqa_causal
func.func @gqa_causal(%q: tensor<2x8x16x32xf32>, %k: tensor<2x2x16x32xf32>, %v: tensor<2x2x16x24xf32>) -> (tensor<2x8x16x24xf32>, tensor<2x8x16xf32>) {
  // CHECK: dlgraph.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.250000e-01 : f64}
  // CHECK-SAME: -> (tensor<2x8x16x24xf32>, tensor<2x8x16xf32>)
  %o, %lse = dlgraph.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : (tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x24xf32>) -> (tensor<2x8x16x24xf32>, tensor<2x8x16xf32>)
  return %o, %lse : tensor<2x8x16x24xf32>, tensor<2x8x16xf32>
}

// -----

// Q and O stored [B, S, H, D], a padding mask over the keys, bf16 data with
// an f32 log-sum-exp.
// CHECK-LABEL: func.func @seq_first_mask
func.func @seq_first_mask(%q: tensor<2x16x4x32xbf16>, %k: tensor<2x4x20x32xbf16>, %v: tensor<2x4x20x32xbf16>, %m: tensor<2x1x1x20xi1>) -> tensor<2x16x4x32xbf16> {
  // CHECK: dlgraph.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {scale = 1.000000e+00 : f64, seq_first = array<i1: true, false, false, true>}
  // CHECK-SAME: -> (tensor<2x16x4x32xbf16>, tensor<2x4x16xf32>)
  %o, %lse = dlgraph.attention %q, %k, %v mask %m {scale = 1.0 : f64, seq_first = array<i1: true, false, false, true>} : (tensor<2x16x4x32xbf16>, tensor<2x4x20x32xbf16>, tensor<2x4x20x32xbf16>, tensor<2x1x1x20xi1>) -> (tensor<2x16x4x32xbf16>, tensor<2x4x16xf32>)
  return %o : tensor<2x16x4x32xbf16>
}

// -----

// CHECK-LABEL: func.func @dropout_and_grad
func.func @dropout_and_grad(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>, %s: tensor<f32>, %do: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) {
  // CHECK: dlgraph.attention %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} {dropout_ratio = 1.000000e-01 : f32, scale = 2.500000e-01 : f64, seed = 7 : i64}
  %o, %lse = dlgraph.attention %q, %k, %v step %s {scale = 0.25 : f64, dropout_ratio = 0.1 : f32, seed = 7 : i64} : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<f32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  // CHECK: dlgraph.attention_grad
  // CHECK-SAME: -> (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
  %dq, %dk, %dv = dlgraph.attention_grad %q, %k, %v, %o, %lse, %do step %s {scale = 0.25 : f64, dropout_ratio = 0.1 : f32, seed = 7 : i64} : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>, tensor<f32>) -> (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
  return %dq, %dk, %dv : tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>
}
