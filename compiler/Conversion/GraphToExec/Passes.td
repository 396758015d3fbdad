//===- Passes.td - dlgraph to dlexec ------------------------*- tablegen -*-===//
//
// The conversion of dlgraph functions to dlexec step functions: data movement
// folded on dlgraph first, then every dlgraph op lowered to dlexec kernels,
// library calls and buffers (one file per op family in this folder).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_TD
#define DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

def LowerToExecPass : Pass<"dlgraph-lower-to-dlexec", "::mlir::ModuleOp"> {
  let summary = "Lower dlgraph variables and func.func graphs to dlexec";
  let description = [{
    Assumes static shapes and straight-line `func.func` bodies (training
    batch norm is already decomposed by
    `--dlgraph-decompose-batch-norm-for-training`).
    Guarantees: every `dlgraph.variable` becomes a `dlexec.variable` (kind
    `parameter` when `trainable`, `optimizer_state` when it carries the unit
    attribute `dlgraph.optimizer_state`, else `buffer`; same initial value);
    every function becomes a `dlexec.func` whose intermediate tensors are
    `dlexec.alloc`s without offsets. Elementwise ops, batch_norm
    (inference), broadcasts and transposes become `dlexec.kernel`s with
    arith/math bodies; splat constants are inlined into kernel bodies, other
    constants become variables of kind `constant`; reductions become kernels
    with `reduction` iterators; gemm/matmul and convolutions become
    `dlexec.library_call`s; pooling, softmax and the cross-entropy loss
    become `dlexec.builtin_kernel`s; each optimizer update is one
    multi-output kernel. A slice of an activation is a `dlexec.subview` of
    it; concatenations whose inputs are a run of a larger one's (a
    DenseNet block's growing feature maps) share the largest one's buffer:
    each input is copied into its slot once and the smaller ones are
    `dlexec.subview`s of it. A transpose of the last two dims of an
    activation that only batched matmuls read (an attention's K^T, the
    operands of its gradients) is no kernel: each `batched_gemm` reads the
    activation with its `trans_a`/`trans_b` flag; transposes that move a
    batch dim, or that another op reads, stay copies.
    A `dlgraph.write_variable` makes the producer write
    into the variable's buffer when no later op reads the old value, else
    appends a copy kernel at the end of the function.
    Before / after:
    ```mlir
    %y = dlgraph.relu %x : tensor<4xf32>
    // becomes
    %y = dlexec.alloc : memref<4xf32>
    dlexec.kernel @main_k0_relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) ...
    ```
    An unsupported op is an error at its location.
  }];
  let dependentDialects = ["::dlc::exec::ExecDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FoldDataMovementPass : Pass<"dlgraph-fold-data-movement", "::mlir::ModuleOp"> {
  let summary = "Fold split gradients into concats and 2-D transposes into gemm flags";
  let description = [{
    Runs on dlgraph just before `--dlgraph-lower-to-dlexec`, after training
    (autodiff) has built the step. Two rewrites:
    - A sum (tree of same-shape `dlgraph.add`s read only by the sum) of zero
      `dlgraph.pad`s along one axis with step 1, each read only by the sum,
      whose slots tile that axis without overlap (the gradient of a split,
      e.g. of a fused QKV projection) becomes a `dlgraph.concat` of the pads'
      inputs in slot order: exact (x + 0 = x), and the concat lowering writes
      each piece into its slot of one buffer (XLA/TVM buffer assignment)
      instead of a fill and a copy kernel per piece plus an add kernel. Any
      other contribution to the sum, overlapping or missing slots, or
      strided pads leave it unchanged.
    - A 2-D `dlgraph.transpose` (perm [1, 0]) read by a `dlgraph.gemm`
      becomes the gemm's `trans_a`/`trans_b` flag; a `dlgraph.matmul` whose
      2-D rhs (or, with a 2-D lhs, whose lhs) is such a transpose first
      becomes a gemm (the lhs's leading dims reshaped into its rows). The
      transpose goes when nothing else reads it.
    ```mlir
    %p = dlgraph.pad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x2xf32> -> tensor<4x6xf32>
    %q = dlgraph.pad %b {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<4x6xf32>
    %s = dlgraph.add %p, %q : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    // becomes
    %s = dlgraph.concat %a, %b {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
    ```
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_TD
