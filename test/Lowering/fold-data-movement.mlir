// RUN: dlc-opt %s --split-input-file --dlgraph-fold-data-movement | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-fold-data-movement --canonicalize --dlgraph-lower-to-dlexec --dlexec-plan-memory --dlexec-verify-memory-plan | FileCheck %s --check-prefix=PLAN

// The gradient of a fused QKV split: three zero pads that tile the last axis,
// summed in any order, become one concat in slot order.

// CHECK-LABEL: func.func @split_grad
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8xf32>, %[[K:.+]]: tensor<2x4x8xf32>, %[[V:.+]]: tensor<2x4x8xf32>)
// CHECK-NOT: dlgraph.pad
// CHECK-NOT: dlgraph.add
// CHECK: %[[C:.+]] = dlgraph.concat %[[Q]], %[[K]], %[[V]] {axis = 2 : i64}
// CHECK: return %[[C]]
// Lowered: the three function inputs copied into their slots of one buffer,
// no fill, pad or add kernel.
// PLAN-LABEL: dlexec.func @split_grad
// PLAN-NOT: pad
// PLAN-COUNT-3: _concat ins
// PLAN-NOT: _add
// PLAN: dlexec.output
func.func @split_grad(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x24xf32> {
  %pv = dlgraph.pad %v {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pq = dlgraph.pad %q {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pk = dlgraph.pad %k {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %s = dlgraph.add %pv, %pq : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  %t = dlgraph.add %pk, %s : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  return %t : tensor<2x4x24xf32>
}

// -----

// The pieces are attention heads ([2,2,4,4] transposed to [2,4,2,4] and
// merged into [2,4,8] by a reshape): each transpose writes its piece
// straight into its slot of one buffer viewed as [2,4,6,4]: no pad, add or
// concat kernel is left.

// CHECK-LABEL: func.func @head_merge_split_grad
// CHECK: dlgraph.concat
// PLAN-LABEL: dlexec.func @head_merge_split_grad
// PLAN: %[[OUT:.+]] = dlexec.alloc {{.*}} : memref<2x4x24xf32>
// PLAN: %[[VIEW:.+]] = dlexec.reshape %[[OUT]] : memref<2x4x24xf32> to memref<2x4x6x4xf32>
// PLAN: transpose ins({{.*}} : memref<2x2x4x4xf32>) outs(%[[VIEW]] : memref<2x4x6x4xf32>)
// PLAN: transpose ins({{.*}} : memref<2x2x4x4xf32>) outs(%[[VIEW]] : memref<2x4x6x4xf32>)
// PLAN: transpose ins({{.*}} : memref<2x2x4x4xf32>) outs(%[[VIEW]] : memref<2x4x6x4xf32>)
// PLAN-NOT: concat
func.func @head_merge_split_grad(%q: tensor<2x2x4x4xf32>, %k: tensor<2x2x4x4xf32>, %v: tensor<2x2x4x4xf32>) -> tensor<2x4x24xf32> {
  %tq = dlgraph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %tk = dlgraph.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %tv = dlgraph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %rq = dlgraph.reshape %tq : tensor<2x4x2x4xf32> to tensor<2x4x8xf32>
  %rk = dlgraph.reshape %tk : tensor<2x4x2x4xf32> to tensor<2x4x8xf32>
  %rv = dlgraph.reshape %tv : tensor<2x4x2x4xf32> to tensor<2x4x8xf32>
  %pq = dlgraph.pad %rq {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pk = dlgraph.pad %rk {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pv = dlgraph.pad %rv {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %s = dlgraph.add %pq, %pk : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  %t = dlgraph.add %s, %pv : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  return %t : tensor<2x4x24xf32>
}

// -----

// Left as they are: a gap in the tiling (slot [8, 16) is zero), another
// contribution to the sum, a pad value other than zero.

// CHECK-LABEL: func.func @not_a_tiling
// CHECK-NOT: dlgraph.concat
// CHECK-COUNT-2: dlgraph.pad
// CHECK: dlgraph.add
func.func @not_a_tiling(%q: tensor<2x8xf32>, %v: tensor<2x8xf32>) -> tensor<2x24xf32> {
  %pq = dlgraph.pad %q {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x24xf32>
  %pv = dlgraph.pad %v {starts = array<i64: 0, 16>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x24xf32>
  %s = dlgraph.add %pq, %pv : (tensor<2x24xf32>, tensor<2x24xf32>) -> tensor<2x24xf32>
  return %s : tensor<2x24xf32>
}

// CHECK-LABEL: func.func @other_contribution
// CHECK-NOT: dlgraph.concat
// CHECK-COUNT-2: dlgraph.add
func.func @other_contribution(%q: tensor<2x8xf32>, %k: tensor<2x8xf32>, %g: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %pq = dlgraph.pad %q {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x16xf32>
  %pk = dlgraph.pad %k {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x16xf32>
  %s = dlgraph.add %pq, %pk : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %t = dlgraph.add %s, %g : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %t : tensor<2x16xf32>
}

// CHECK-LABEL: func.func @nonzero_pad
// CHECK-NOT: dlgraph.concat
func.func @nonzero_pad(%q: tensor<2x8xf32>, %k: tensor<2x8xf32>) -> tensor<2x16xf32> {
  %pq = dlgraph.pad %q {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>, value = 1.0 : f64} : tensor<2x8xf32> -> tensor<2x16xf32>
  %pk = dlgraph.pad %k {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x16xf32>
  %s = dlgraph.add %pq, %pk : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// -----

// An exported nn.Linear, X W^T with a 3-D X: a gemm with trans_b on the
// weight itself (X's rows flattened); the transpose goes.

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<16x8xf32>)
// CHECK-NOT: dlgraph.transpose
// CHECK: %[[X2:.+]] = dlgraph.reshape %[[X]] : tensor<2x4x8xf32> to tensor<8x8xf32>
// CHECK: %[[Y:.+]] = dlgraph.gemm %[[X2]], %[[W]] {trans_b = true} : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
// CHECK: dlgraph.reshape %[[Y]] : tensor<8x16xf32> to tensor<2x4x16xf32>
// PLAN-LABEL: dlexec.func @linear
// PLAN-NOT: transpose
// PLAN: dlexec.library_call "gemm"{{.*}}trans_a = false, trans_b = true
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x16xf32> {
  %wt = dlgraph.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = dlgraph.matmul %x, %wt : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// Transposes of both gemm operands flip both flags (the transposed A of a
// weight gradient and a B already read transposed), keeping C and alpha.

// CHECK-LABEL: func.func @gemm_flags
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4x16xf32>, %[[C:.+]]: tensor<16xf32>)
// CHECK-NOT: dlgraph.transpose
// CHECK: dlgraph.gemm %[[A]], %[[B]], %[[C]] {alpha = 2.000000e+00 : f32, trans_a = true} : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
func.func @gemm_flags(%a: tensor<4x8xf32>, %b: tensor<4x16xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  %at = dlgraph.transpose %a {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %bt = dlgraph.transpose %b {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %y = dlgraph.gemm %at, %bt, %c {alpha = 2.0 : f32, trans_b = true} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A batched matmul's transposed operand is not a 2-D transpose: unchanged.

// CHECK-LABEL: func.func @batched
// CHECK: dlgraph.transpose
// CHECK: dlgraph.matmul
func.func @batched(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x4x4xf32> {
  %kt = dlgraph.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %s = dlgraph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}
