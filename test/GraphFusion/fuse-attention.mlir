// dlgraph-fuse-attention: the decompositions real exporters write become
// one dlgraph.attention: Q, K and V read through the head-split transposes
// (seq_first), scales on the scores or split onto Q and Kᵀ, constant causal
// masks as `causal`, other masks as operands, grouped-query repeats read
// unrepeated; a candidate that does not fit is left alone and named, with
// its reason, in the module's record.
// RUN: dlc-opt %s --split-input-file --dlgraph-fuse-attention | FileCheck %s

// GPT-2 style: heads split by transposes of [B, S, H, D], Kᵀ by one
// transpose, the scale a division of the scores, a causal select with
// finfo.min, the head merge a transpose of the result.
// CHECK-LABEL: func.func @causal_seq_first
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x2x8xf32>, %[[K:.+]]: tensor<1x4x2x8xf32>, %[[V:.+]]: tensor<1x4x2x8xf32>)
// CHECK: %[[O:.+]], %{{.+}} = dlgraph.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 0.3535533{{[0-9]*}} : f64, seq_first = array<i1: true, true, true, true>}
// CHECK-NOT: dlgraph.softmax
// CHECK-NOT: dlgraph.transpose
// CHECK: return %[[O]] : tensor<1x4x2x8xf32>
module {
func.func @causal_seq_first(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32> {
  %qt = dlgraph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
  %kt = dlgraph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x2x8xf32> -> tensor<1x2x8x4xf32>
  %vt = dlgraph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
  %s = dlgraph.matmul %qt, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = dlgraph.constant dense<2.82842712> : tensor<f32>
  %sc = dlgraph.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = dlgraph.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %fill = dlgraph.constant dense<-3.40282347e+38> : tensor<f32>
  %sm = dlgraph.select %m, %sc, %fill : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = dlgraph.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = dlgraph.matmul %p, %vt : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ot = dlgraph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
  return %ot : tensor<1x4x2x8xf32>
}
}

// -----

// Llama style: grouped-query K and V repeated by reshape, broadcast_to and
// reshape (read unrepeated), Kᵀ a transpose of the repeat, the scale a
// multiplication, an additive padding mask from an input.
// CHECK: module attributes {dlgraph.attention_fusion = {candidates = 1 : i64, fused = 1 : i64, unfused = []}}
// CHECK-LABEL: func.func @gqa_additive_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x6x8xf32>, %[[K:.+]]: tensor<2x2x6x8xf32>, %[[V:.+]]: tensor<2x2x6x8xf32>, %[[M:.+]]: tensor<2x1x1x6xf32>)
// CHECK: %[[O:.+]], %{{.+}} = dlgraph.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {scale = 0.3535533{{[0-9]*}} : f64}
// CHECK-NOT: dlgraph.broadcast_to
// CHECK: return %[[O]]
module {
func.func @gqa_additive_mask(%q: tensor<2x4x6x8xf32>, %k: tensor<2x2x6x8xf32>, %v: tensor<2x2x6x8xf32>, %mask: tensor<2x1x1x6xf32>) -> tensor<2x4x6x8xf32> {
  %k5 = dlgraph.reshape %k : tensor<2x2x6x8xf32> to tensor<2x2x1x6x8xf32>
  %kb = dlgraph.broadcast_to %k5 : tensor<2x2x1x6x8xf32> to tensor<2x2x2x6x8xf32>
  %kr = dlgraph.reshape %kb : tensor<2x2x2x6x8xf32> to tensor<2x4x6x8xf32>
  %v5 = dlgraph.reshape %v : tensor<2x2x6x8xf32> to tensor<2x2x1x6x8xf32>
  %vb = dlgraph.broadcast_to %v5 : tensor<2x2x1x6x8xf32> to tensor<2x2x2x6x8xf32>
  %vr = dlgraph.reshape %vb : tensor<2x2x2x6x8xf32> to tensor<2x4x6x8xf32>
  %kt = dlgraph.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x6x8xf32> -> tensor<2x4x8x6xf32>
  %s = dlgraph.matmul %q, %kt : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %c = dlgraph.constant dense<0.353553385> : tensor<f32>
  %sc = dlgraph.mul %s, %c : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %sm = dlgraph.add %sc, %mask : (tensor<2x4x6x6xf32>, tensor<2x1x1x6xf32>) -> tensor<2x4x6x6xf32>
  %p = dlgraph.softmax %sm {axis = 3 : i64} : tensor<2x4x6x6xf32>
  %o = dlgraph.matmul %p, %vr : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  return %o : tensor<2x4x6x8xf32>
}
}

// -----

// PyTorch's SDPA export: the scale split onto Q and Kᵀ as sqrt(scale)
// each, a boolean padding mask as select(mask, 0, -inf) added to the scores.
// CHECK-LABEL: func.func @split_scale
// CHECK: dlgraph.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {scale = 2.500000e-01 : f64}
// CHECK-NOT: dlgraph.softmax
module {
func.func @split_scale(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>, %keep: tensor<1x1x1x5xi1>) -> tensor<1x2x5x16xf32> {
  %r = dlgraph.constant dense<0.5> : tensor<f32>
  %qs = dlgraph.mul %q, %r : (tensor<1x2x5x16xf32>, tensor<f32>) -> tensor<1x2x5x16xf32>
  %kt = dlgraph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x5x16xf32> -> tensor<1x2x16x5xf32>
  %ks = dlgraph.mul %kt, %r : (tensor<1x2x16x5xf32>, tensor<f32>) -> tensor<1x2x16x5xf32>
  %s = dlgraph.matmul %qs, %ks : (tensor<1x2x5x16xf32>, tensor<1x2x16x5xf32>) -> tensor<1x2x5x5xf32>
  %zero = dlgraph.constant dense<0.0> : tensor<f32>
  %ninf = dlgraph.constant dense<0xFF800000> : tensor<f32>
  %bias = dlgraph.select %keep, %zero, %ninf : (tensor<1x1x1x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x5xf32>
  %sm = dlgraph.add %s, %bias : (tensor<1x2x5x5xf32>, tensor<1x1x1x5xf32>) -> tensor<1x2x5x5xf32>
  %p = dlgraph.softmax %sm {axis = -1 : i64} : tensor<1x2x5x5xf32>
  %o = dlgraph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  return %o : tensor<1x2x5x16xf32>
}
}

// -----

// The probabilities are an output (attention weights): left alone, named.
// CHECK: module attributes {dlgraph.attention_fusion = {candidates = 1 : i64, fused = 0 : i64, unfused = ["layer0/attn/Softmax: the probabilities are also used outside the attention (an output or another op)"]}}
// CHECK-LABEL: func.func @weights_returned
// CHECK: dlgraph.softmax
// CHECK-NOT: dlgraph.attention
module {
func.func @weights_returned(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x16x5xf32>, %v: tensor<1x2x5x16xf32>) -> (tensor<1x2x5x16xf32>, tensor<1x2x5x5xf32>) {
  %s = dlgraph.matmul %q, %k : (tensor<1x2x5x16xf32>, tensor<1x2x16x5xf32>) -> tensor<1x2x5x5xf32>
  %p = dlgraph.softmax %s {axis = 3 : i64} : tensor<1x2x5x5xf32> loc("layer0/attn/Softmax")
  %o = dlgraph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32>
  return %o, %p : tensor<1x2x5x16xf32>, tensor<1x2x5x5xf32>
}
}

// -----

// torch.nn.MultiheadAttention's [B·H, S, D] batched products (rank-3
// scores): read as [1, B·H, S, D], the result reshaped back.
// CHECK: module attributes {dlgraph.attention_fusion = {candidates = 1 : i64, fused = 1 : i64, unfused = []}}
// CHECK-LABEL: func.func @rank3_heads_merged
// CHECK-SAME: (%[[Q:.+]]: tensor<8x6x16xf32>, %[[K:.+]]: tensor<8x6x16xf32>, %[[V:.+]]: tensor<8x6x16xf32>)
// CHECK-DAG: %[[Q4:.+]] = dlgraph.reshape %[[Q]] : tensor<8x6x16xf32> to tensor<1x8x6x16xf32>
// CHECK-DAG: %[[K4:.+]] = dlgraph.reshape %[[K]] : tensor<8x6x16xf32> to tensor<1x8x6x16xf32>
// CHECK-DAG: %[[V4:.+]] = dlgraph.reshape %[[V]] : tensor<8x6x16xf32> to tensor<1x8x6x16xf32>
// CHECK: %[[O:.+]], %{{.+}} = dlgraph.attention %[[Q4]], %[[K4]], %[[V4]] {scale = 2.500000e-01 : f64}
// CHECK: %[[O3:.+]] = dlgraph.reshape %[[O]] : tensor<1x8x6x16xf32> to tensor<8x6x16xf32>
// CHECK: return %[[O3]]
module {
func.func @rank3_heads_merged(%q: tensor<8x6x16xf32>, %k: tensor<8x6x16xf32>, %v: tensor<8x6x16xf32>) -> tensor<8x6x16xf32> {
  %kt = dlgraph.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<8x6x16xf32> -> tensor<8x16x6xf32>
  %s = dlgraph.matmul %q, %kt : (tensor<8x6x16xf32>, tensor<8x16x6xf32>) -> tensor<8x6x6xf32>
  %c = dlgraph.constant dense<0.25> : tensor<f32>
  %sc = dlgraph.mul %s, %c : (tensor<8x6x6xf32>, tensor<f32>) -> tensor<8x6x6xf32>
  %p = dlgraph.softmax %sc {axis = 2 : i64} : tensor<8x6x6xf32>
  %o = dlgraph.matmul %p, %v : (tensor<8x6x6xf32>, tensor<8x6x16xf32>) -> tensor<8x6x16xf32>
  return %o : tensor<8x6x16xf32>
}
}
