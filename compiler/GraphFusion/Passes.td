//===- Passes.td - the graph fusion phase's passes ---------*- tablegen -*-===//
//
// Fusions on dlgraph, before the training step: an op recognized here gets
// its own gradient rule, so the backward is fused too.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_GRAPHFUSION_PASSES_TD
#define DLC_COMPILER_GRAPHFUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAttentionPass : Pass<"dlgraph-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Replaces decomposed scaled dot-product attention by dlgraph.attention";
  let description = [{
    Finds, in every function, the attention that exporters write as
    separate ops and replaces it by one `dlgraph.attention` (FlashAttention:
    the scores are never stored, and the gradient rule's backward is fused
    too). Each `dlgraph.softmax` over the last axis of rank-4 scores (or
    rank-3 [B·H, Sq, Skv] scores, torch.nn.MultiheadAttention's, read as
    [1, B·H, ...]) is a candidate when a chain of single-use ops links it
    to a `dlgraph.matmul` on each side:

    - scores: matmul(Q, Kᵀ), then in any order scalings by splat constants
      (`mul`, `div`; also on Q and Kᵀ before the product, as PyTorch's
      SDPA export splits the scale onto both), additive masks (`add` of a
      value that does not depend on the scores) and boolean masks
      (`select(keep, s, fill)` or `select(drop, fill, s)` with a splat fill
      <= -1e4 or -inf);
    - probabilities: the softmax, optionally ONNX Attention's zeroing of
      NaN rows (`select(p == p, p, 0)`) and `dlgraph.dropout` (whose mask
      result is unused), then matmul(P, V).

    Q, K and V are read through transposes: Kᵀ as transpose(K [B, H, S,
    D]) or transpose(K [B, S, H, D]) (`seq_first`), Q and V as [B, H, S, D]
    or transpose(x [B, S, H, D]); grouped-query K/V repeated by
    reshape → broadcast_to → reshape are read unrepeated; a result whose
    only user is the head-merge transpose is written [B, S, H, D]. A
    constant mask over [Sq, Skv] (every other dim 1) that keeps exactly
    j <= i + Skv - Sq becomes `causal`; other masks are operands.

    Guarantees: the function computes the same values (up to rounding:
    the kernels sum in another order; a query row whose every key is
    masked by a -inf or boolean mask gives 0 instead of NaN or the
    decomposition's average). The module gets `dlgraph.attention_fusion`
    {candidates, fused, unfused: "<node>: <reason>"} for `dlc --stats`;
    a candidate left alone (a form above not met) keeps its ops.

    Before:
    ```mlir
    %kt = dlgraph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : ...
    %s = dlgraph.matmul %q, %kt : ...
    %t = dlgraph.mul %s, %c : ...
    %p = dlgraph.softmax %t {axis = 3 : i64} : ...
    %o = dlgraph.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.250000e-01 : f64} : ...
    ```
  }];
  let dependentDialects = ["dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_GRAPHFUSION_PASSES_TD
