// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s

// A last-two-dims transpose of an activation read only by batched matmuls
// becomes the batched_gemm's trans_a / trans_b flag: no transpose kernel,
// the call reads the transpose's input (an attention's Q K^T, and its
// gradients dQ = dS K and dK = dS^T Q, which read K^T and dS transposed).

module {
  func.func @attention(%q0: tensor<2x3x6x4xf32>, %k0: tensor<2x3x6x4xf32>, %s0: tensor<2x3x6x6xf32>) -> (tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>) {
    %q = dlgraph.exp %q0 : tensor<2x3x6x4xf32>
    %k = dlgraph.exp %k0 : tensor<2x3x6x4xf32>
    %ds = dlgraph.exp %s0 : tensor<2x3x6x6xf32>
    %kt = dlgraph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x6x4xf32> -> tensor<2x3x4x6xf32>
    %s = dlgraph.matmul %q, %kt : (tensor<2x3x6x4xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x6x6xf32>
    %dst = dlgraph.transpose %ds {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x6x6xf32> -> tensor<2x3x6x6xf32>
    %dk = dlgraph.matmul %dst, %q : (tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>) -> tensor<2x3x6x4xf32>
    return %s, %dk : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32>
  }
}

// CHECK-LABEL: dlexec.func @attention {
// CHECK: %[[Q:.+]] = dlexec.alloc : memref<2x3x6x4xf32>
// CHECK: %[[K:.+]] = dlexec.alloc : memref<2x3x6x4xf32>
// CHECK: %[[DS:.+]] = dlexec.alloc : memref<2x3x6x6xf32>
// CHECK-NOT: transpose
// CHECK: %[[S:.+]] = dlexec.alloc : memref<36x6xf32>
// CHECK: %[[QV:.+]] = dlexec.reshape %[[Q]] : memref<2x3x6x4xf32> to memref<144xf32>
// CHECK: %[[KV:.+]] = dlexec.reshape %[[K]] : memref<2x3x6x4xf32> to memref<144xf32>
// CHECK: dlexec.library_call "batched_gemm" ins(%[[QV]], %[[KV]] : memref<144xf32>, memref<144xf32>) outs(%[[S]] : memref<36x6xf32>) {batch = array<i64: 6>, k = 4 : i64, m = 6 : i64, n = 6 : i64, stride_a = array<i64: 24>, stride_b = array<i64: 24>, trans_b = true}
// CHECK: %[[DK:.+]] = dlexec.alloc : memref<36x4xf32>
// CHECK: %[[DSV:.+]] = dlexec.reshape %[[DS]] : memref<2x3x6x6xf32> to memref<216xf32>
// CHECK: dlexec.library_call "batched_gemm" ins(%[[DSV]], %{{.+}} : memref<216xf32>, memref<144xf32>) outs(%[[DK]] : memref<36x4xf32>) {batch = array<i64: 6>, k = 6 : i64, m = 6 : i64, n = 4 : i64, stride_a = array<i64: 36>, stride_b = array<i64: 24>, trans_a = true}
// CHECK-NOT: transpose
// CHECK: dlexec.output

// -----

// A transpose of a [B, T, H, D] view that also moves a batch dim (K^T of a
// multi-head attention written as one permutation [0, 2, 3, 1]) is not a
// swap of the last two dims of a contiguous batch of matrices: it keeps its
// copy kernel and the call takes no flag.

module {
  func.func @moves_batch_dim(%q0: tensor<2x3x6x4xf32>, %k0: tensor<2x6x3x4xf32>) -> tensor<2x3x6x6xf32> {
    %q = dlgraph.exp %q0 : tensor<2x3x6x4xf32>
    %k = dlgraph.exp %k0 : tensor<2x6x3x4xf32>
    %kt = dlgraph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<2x6x3x4xf32> -> tensor<2x3x4x6xf32>
    %s = dlgraph.matmul %q, %kt : (tensor<2x3x6x4xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x6x6xf32>
    return %s : tensor<2x3x6x6xf32>
  }
}

// CHECK-LABEL: dlexec.func @moves_batch_dim {
// CHECK: dlexec.kernel @moves_batch_dim_k{{[0-9]+}}_transpose
// CHECK: dlexec.library_call "batched_gemm"
// CHECK-NOT: trans_
// CHECK-SAME: stride_b = array<i64: 24>}

// -----

// Last-two-dims transposes that stay copies: one with a second reader that
// needs the transposed values, one whose matmul is a single gemm (a 2-D rhs:
// the lhs matrices stack into the rows, which no flag transposes one by
// one), and one of a function input (not an activation written once in the
// step, as for slice views).

module {
  func.func @kept(%a0: tensor<2x3x6x4xf32>, %b0: tensor<2x3x6x4xf32>, %w: tensor<6x5xf32>, %x: tensor<2x3x6x4xf32>, %y: tensor<2x3x6x6xf32>) -> (tensor<2x3x6x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x5xf32>, tensor<2x3x6x6xf32>) {
    %a = dlgraph.exp %a0 : tensor<2x3x6x4xf32>
    %b = dlgraph.exp %b0 : tensor<2x3x6x4xf32>
    %at = dlgraph.transpose %a {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x6x4xf32> -> tensor<2x3x4x6xf32>
    %s = dlgraph.matmul %b, %at : (tensor<2x3x6x4xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x6x6xf32>
    %bt = dlgraph.transpose %b {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x6x4xf32> -> tensor<2x3x4x6xf32>
    %g = dlgraph.matmul %bt, %w : (tensor<2x3x4x6xf32>, tensor<6x5xf32>) -> tensor<2x3x4x5xf32>
    %xt = dlgraph.transpose %x {perm = array<i64: 0, 1, 3, 2>} : tensor<2x3x6x4xf32> -> tensor<2x3x4x6xf32>
    %r = dlgraph.matmul %a, %xt : (tensor<2x3x6x4xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x6x6xf32>
    return %s, %at, %g, %r : tensor<2x3x6x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x5xf32>, tensor<2x3x6x6xf32>
  }
}

// CHECK-LABEL: dlexec.func @kept {
// CHECK: dlexec.kernel @kept_k{{[0-9]+}}_transpose
// CHECK: dlexec.library_call "batched_gemm"
// CHECK-NOT: trans_
// CHECK-SAME: }
// CHECK: dlexec.kernel @kept_k{{[0-9]+}}_transpose
// CHECK: dlexec.library_call "gemm"
// CHECK-SAME: trans_a = false
// CHECK: dlexec.kernel @kept_k{{[0-9]+}}_transpose
// CHECK: dlexec.library_call "batched_gemm"
// CHECK-NOT: trans_
// CHECK-SAME: }
