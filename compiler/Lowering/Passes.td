//===- Passes.td - dlgraph -> dlexec lowering passes -------*- tablegen -*-===//
// Lowering of dlgraph functions to dlexec step functions, elementwise kernel
// fusion and activation-arena memory planning.
#ifndef DLC_COMPILER_LOWERING_PASSES_TD
#define DLC_COMPILER_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def FuseElementwisePass : Pass<"dlexec-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fold all-parallel producer kernels into their single consumer kernel";
  let description = [{
    A `dlexec.kernel` P with only `parallel` iterators whose every output is
    a `dlexec.alloc` read by exactly one other kernel C, through one
    permutation indexing map (the identity, or a transpose) of C's loops, is
    folded into C: P's body is cloned in front of C's, C's block arguments
    for P's outputs are replaced by P's yielded values, P's inputs become C's
    inputs (their maps composed with C's, duplicates merged), and P and its
    allocs are erased. A P read by up to 4 kernels (and nothing else), when
    P or one of them is a cast (an `arith.extf`/`arith.truncf` kernel, or a
    kernel whose every output is a float narrower than P's outputs, such as
    a LayerNorm's affine rounded to bf16) and P's body has at most 32 ops,
    is recomputed in each of them the same way, so that a mixed-precision
    cast never stores its input or its result. It does not fuse when an op
    between P and C writes a buffer that P reads.
    Sibling reductions (XLA's multi-output fusion): two reduction kernels
    with the same loops, the same first input read through the same map
    that uses every loop, the same output maps and initial values become
    one kernel with both outputs at the second one's place (BatchNorm
    backward's sum(dy) and sum(dy * x-hat)); each output keeps its own
    accumulator and summation order.
    The other way round, a P with several outputs whose every output is read
    only by all-parallel kernels through identity maps over P's loops (the
    guards `select(found_inf, old, new)` that loss scaling puts on each
    result of an optimizer update) absorbs those readers: one kernel at the
    last reader's place writes their outputs, when no op in between touches
    what they read or write. Repeats until nothing changes, so chains
    collapse into one kernel.
    ```mlir
    // before: bias add kernel -> %t -> relu kernel;  after: one kernel
    ```
  }];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def FuseGemmEpiloguesPass : Pass<"dlexec-fuse-gemm-epilogues", "::mlir::ModuleOp"> {
  let summary = "Fold ReLU, ReLU-gradient and bias-gradient kernels into gemm library-call epilogues";
  let description = [{
    Runs after `--dlexec-fuse-elementwise`, so only kernels that fusion left
    on their own qualify. Four patterns, per `dlexec.func`:
    - ReLU: a kernel whose body is `arith.maximumf(x, +0.0)` over identity
      maps, whose input is an alloc written by a `gemm` call (no C, or a
      bias row with beta 1) and read by nothing else, becomes the call's
      `epilogue = "relu"` (cuBLASLt RELU_BIAS / RELU); the call writes the
      kernel's output and the kernel and the intermediate alloc go. A ReLU
      already fused into a larger elementwise kernel is not split out.
    - Bias add: a kernel computing `addf(x, bias)` (optionally then
      `maximumf(., +0.0)`), x the result of a `gemm` without C (or one
      reshape of it) read by nothing else, bias [N] broadcast along the last
      dim: the bias becomes the call's C row (beta 1) and the ReLU its
      epilogue (cuBLASLt BIAS / RELU_BIAS); the call writes the kernel's
      buffer (through a reshape to [M, N]). ONNX MatMul + Add layers lower
      to this.
    - Bias gradient: a kernel summing D [..., C] over every dim but the last
      (init 0, body one `arith.addf`) next to a `gemm` without C that reads
      the same D as op(A) = D^T (A = D viewed as [K, M] with `trans_a`) or
      op(B) = D (B = D as [K, N] without `trans_b`) gets
      `epilogue = "bgrad_a"` / `"bgrad_b"` and the sum's output as its
      second output (cuBLASLt BGRADB / BGRADA on the column-major problem).
      The fused call runs at the gemm's place, or at the sum's when the sum
      comes first and something (the bias's optimizer update) reads its
      result before the gemm. The sum must read and write the gemm's
      element type: with mixed precision it sums a bf16/f16 dY into the f32
      gradient of the master bias, which a library call of one element type
      cannot write, and stays a kernel.
    - ReLU gradient (after the three above): a kernel
      `select(cmpf ogt H, +0.0, dH, +0.0)` (or `0 < H`) over identity maps,
      f32, where H is written by a `relu` gemm and dH (read by nothing else)
      by a `gemm` without C: the relu gemm becomes `epilogue = "relu_aux"`
      with a second output, a new `memref<M x reluMaskWords(N) x i32>` alloc
      (the ReLU bit-mask, planned like any buffer, live until the backward
      gemm); the dH gemm takes the mask as a third input and writes the
      kernel's dZ, `epilogue = "drelu"` (cuBLASLt RELU_AUX(_BIAS) and
      DRELU). When a column sum of dZ (a kernel, or the `bgrad_a`/`bgrad_b`
      epilogue of the gemm reading dZ) follows, it moves there as
      `"drelu_bgrad"`'s dBias (DRELU_BGRAD) and the kernel or epilogue goes.
      Not for bf16/f16 (the mask is taken before Y is rounded). A recomputed
      forward (rematerialization) is the gemm whose H the select reads, so
      it is the one that writes the mask. H, dH, dZ and the sum's input may
      be reshapes that only merge or split the leading dims of the gemms'
      [M, N] (a transformer's [B, T, D] flattened to [B*T, D]); the dH gemm
      then writes a [M, N] reshape of dZ. A reshape that changes the last
      dim is not matched.
    Neither applies when an op between the two writes what they read or
    touches what the moved work writes. GELU is not folded: cuBLASLt's GELU
    epilogue is the tanh approximation, and no model here computes it.
    ```mlir
    dlexec.library_call "gemm" ins(%x, %w, %b : ...) outs(%t : memref<16x64xf32>) {...}
    dlexec.kernel @relu ins(%t : ...) outs(%y : ...)   // max(x, 0)
    // becomes
    dlexec.library_call "gemm" ins(%x, %w, %b : ...) outs(%y : ...) {epilogue = "relu", ...}
    ```
  }];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def PlanMemoryPass : Pass<"dlexec-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Assign arena offsets to every dlexec.alloc";
  let description = [{
    First removes every `dlexec.subview` (a slice, or a concatenation that
    is a run of a larger one's inputs): a kernel that reads a view reads its
    source through the composed indexing map (a reshape of a view that only
    splits or merges dims becomes a view of a reshape first); any other
    reader (a library call, an output, a kernel the composed map would leave
    without a plain dim for some loop) reads one copy made before it.
    Then a generated kernel whose result is only copied whole into part of
    another buffer (a concatenation's slot) writes it there itself, when
    nothing between the two touches that part. A library call or builtin
    kernel whose row accepts strided outputs (conv2d_forward, max_pool2d,
    average_pool2d) does the same through a `dlexec.subview` of the slot,
    and the kernels that also read its result read the slot instead (XLA's
    buffer assignment of a concatenate's operands): a DenseNet block's
    convolutions and pooled input are written straight into the block's
    buffer. The copy stays where the slot is touched between the producer
    and the copy, or overwritten while the result is still read.
    Before / after:
    ```mlir
    %v = dlexec.subview %a {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>} : memref<4x8xf32> to memref<4x3xf32>
    dlexec.kernel @k ins(%v : memref<4x3xf32>) ... {indexing_maps = [(d0, d1) -> (d0, d1), ...]}
    // becomes
    dlexec.kernel @k ins(%a : memref<4x8xf32>) ... {indexing_maps = [(d0, d1) -> (d0, d1 * 2 + 2), ...]}
    ```
    Liveness over each `dlexec.func`'s straight-line schedule: a buffer lives
    from its first use to its last use (`dlexec.reshape` views extend their
    source's life; a buffer passed to `dlexec.output` lives to the end).
    Offsets come from greedy-by-size best-fit placement (Pisarchyk & Lee
    2020, "Efficient Memory Management for Deep Neural Net Inference"):
    largest buffers first, each in the smallest gap between the placed
    buffers whose lifetimes overlap its own. Offsets and sizes are aligned to
    `alignment` bytes. Sets `offset` on every alloc and `arena_bytes` on the
    function; buffers whose lifetimes overlap never overlap in the arena.
  }];
  let options = [Option<"alignment", "alignment", "int64_t", "256",
                        "Byte alignment of every offset in the arena">];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def VerifyMemoryPlanPass : Pass<"dlexec-verify-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Check a memory plan: offsets set, aligned, in the arena, no live overlap";
  let description = [{
    Recomputes liveness as `--dlexec-plan-memory` does and reports, at the
    alloc, any buffer without an offset, with a misaligned offset, outside
    `arena_bytes`, or overlapping in bytes a buffer that is live at the same
    time (naming both). Changes nothing.
  }];
  let options = [Option<"alignment", "alignment", "int64_t", "256",
                        "Byte alignment every offset must have">];
}

#endif
