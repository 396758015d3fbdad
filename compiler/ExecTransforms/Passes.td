//===- Passes.td - the dlexec transforms --------------------*- tablegen -*-===//
//
// Passes on dlexec step functions: elementwise fusion, GEMM and reduction
// epilogues, multi-tensor updates, layer norm and sibling reductions in one
// kernel, split reductions, recomputed persistent kernels, and activation-
// arena memory planning with its verifier.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_EXECTRANSFORMS_PASSES_TD
#define DLC_COMPILER_EXECTRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion and epilogues
//===----------------------------------------------------------------------===//

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

def MultiTensorPass : Pass<"dlexec-multi-tensor", "mlir::ModuleOp"> {
  let summary = "Merge same-bodied updates of persistent tensors into "
                "dlexec.multi_tensor_kernel launches";
  let description = [{
    Horizontal fusion of the per-parameter update kernels of a step (one
    `dlexec.kernel` per parameter for SGD / Adam / AdamW, the gradient
    accumulators, BatchNorm running statistics) into one
    `dlexec.multi_tensor_kernel` per group, as PyTorch's `foreach` and
    fused optimizers and NVIDIA apex's `multi_tensor_apply` launch one
    kernel over a list of tensors.

    A kernel is a candidate when its iterators are all parallel, its body
    reads no `dlexec.index`, every output is a persistent variable
    (`dlexec.variable_ref`, through reshapes), and every operand is either
    indexed by the identity map of the iteration space (a per-tensor
    operand, a whole dense buffer: a variable, an arena buffer or an input)
    or, for an input, by a map without results (a single element every
    tensor reads: the step count, a scheduled learning rate). Candidates
    join a group when their bodies are equivalent (same ops, same constants:
    different hyper-parameters, e.g. `--no-weight-decay` groups, form
    different groups), their operand element types match and they read the
    same shared operands.

    A group is merged where its last member is; the earlier members move
    down to it. The walk closes a group (it takes no further members)
    before any op that reads or writes what a member writes or writes what
    a member reads, and before a member that would touch another member's
    buffers, so the merged kernel computes what the members computed, each
    element by the same operations in the same order (bit for bit).
    The arena buffers members read (gradients) stay live until the merge
    point: a member joins a group only if that keeps the live arena bytes
    at every position of the schedule (buffers from their alloc to their
    last use, the deferrals of earlier groups included) at or below the
    schedule's own peak, so that the updates run where the gradients are
    ready while memory is tight and in few launches where it is not (the
    planner's arena may still differ by fragmentation). `max-pending-bytes`
    (default 4 MiB) also closes a group once the arena buffers its members
    read exceed it (0: no limit), which bounds what the planner must fit
    around the held gradients (without it, ResNet-18 under `--remat auto`
    planned 258 -> 300 MiB). Each dlexec.func (a pipeline stage's step) is grouped on
    its own.

    Assumes unplanned buffers (run before `--dlexec-plan-memory`);
    guarantees the same results. A group of one kernel is left as it is.

    Before (two updates, interleaved with the backward pass):
    ```mlir
    dlexec.kernel @k1 ins(%w, %dw, %lr : memref<4x8xf32>, memref<4x8xf32>, memref<f32>)
        outs(%w : memref<4x8xf32>) {...} { p - lr * g }
    dlexec.library_call "gemm" ...
    dlexec.kernel @k2 ins(%b, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>)
        outs(%b : memref<8xf32>) {...} { p - lr * g }
    ```
    After:
    ```mlir
    dlexec.library_call "gemm" ...
    dlexec.multi_tensor_kernel @k1_multi_tensor ins(%lr, %w, %dw, %b, %db : ...)
        outs(%w, %b : ...) attributes {num_shared = 1, sizes = array<i64: 32, 8>} {...}
    ```
  }];
  let options = [
    Option<"maxPendingBytes", "max-pending-bytes", "int64_t",
           /*default=*/"4194304",
           "close a group once the arena buffers its members read exceed "
           "this many bytes (0: no limit)">,
  ];
  let dependentDialects = ["dlc::exec::ExecDialect"];
}

def FuseReductionEpiloguesPass
    : Pass<"dlexec-fuse-reduction-epilogues", "mlir::ModuleOp"> {
  let summary = "Fold elementwise kernels over a reduction's outputs into "
                "the reduction kernel's epilogue region";
  let description = [{
    Reduction epilogue fusion, as XLA's reduction and multi-output fusion
    do: an all-parallel `dlexec.kernel` whose iteration space is the output
    space of a reduction kernel (the per-channel kernels of a BatchNorm:
    rsqrt(var + eps) * gamma after the variance, the gradient's per-channel
    products after sum(dy) and sum(dy * xhat), the running-variance update)
    and that reads at least one of the reduction's outputs (or of the
    epilogue outputs fused before it) becomes part of the reduction
    kernel's `epilogue` region: evaluated once per output element, by the
    thread that stores the reduced values, after the reduction (on CUDA,
    after the cooperative combine). Its outputs become extra outputs of the
    kernel; the reduction keeps all its own outputs.

    A candidate kernel has only `parallel` loops, no epilogue, no
    `dlexec.index`, no f16 / bf16 operand, and every operand indexed by the
    identity map with as many elements as the reduction has outputs, laid
    out as the reduction's output points (the same sizes once unit
    dimensions are dropped: `1xCx1x1` against `C`). An operand on memory
    the group writes must be a whole view (reshapes only) of it; the
    kernel's outputs may share memory with nothing the group reads, except
    its own input at the same element (an in-place update). The
    reduction's outputs must be indexed the same way (their points in the
    order of the parallel loops).

    The fused kernel takes the place of the last kernel it absorbs: the ops
    it moves past must not read or write what the group writes, nor write
    what it reads. The scan from a reduction stops at the first op that
    conflicts so, or after `window` ops.

    Guarantees the same values bit for bit: the reduction's accumulators
    and order are unchanged, the epilogue reads each reduced value back as
    stored and runs the absorbed kernels' ops in their order. Runs before
    `--dlexec-plan-memory` (it reads unplanned buffers).

    Before:
    ```mlir
    dlexec.kernel @var ins(%d : memref<2x8xf32>) outs(%v : memref<8xf32>) {
        indexing_maps = [(i, c) -> (i, c), (i, c) -> (c)], init = [0.0],
        iterator_types = ["reduction", "parallel"]} { acc + x * x }
    dlexec.kernel @rsqrt ins(%v4 : memref<1x8xf32>) outs(%r : memref<1x8xf32>) {...}
    ```
    After:
    ```mlir
    dlexec.kernel @var ins(%d : memref<2x8xf32>) outs(%v, %r : memref<8xf32>, memref<1x8xf32>) {
        indexing_maps = [(i, c) -> (i, c), (i, c) -> (c), (i, c) -> (0, c)], init = [0.0],
        iterator_types = ["reduction", "parallel"]} { acc + x * x }
      epilogue { ^bb0(%x, %var, %old): rsqrt(%var) }
    ```
  }];
  let options = [
    Option<"window", "window", "unsigned", /*default=*/"64",
           "How many ops after a reduction the pass looks at for epilogue "
           "kernels">,
  ];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def FuseLayerNormPass : Pass<"dlexec-fuse-layer-norm", "mlir::ModuleOp"> {
  let summary = "Replace the kernels of a decomposed LayerNorm over the last "
                "axis with one layer_norm builtin kernel";
  let description = [{
    The importer decomposes LayerNormalization into dlgraph reductions and
    elementwise ops (autodiff works on those), and after elementwise and
    reduction-epilogue fusion a LayerNorm over the last axis of x [R..., N]
    is four kernels and six passes over the tensor:

    1. `mean = sum(x * c)` over the last loop (c = 1/N), into [R..., 1];
    2. `d = x - mean`, all-parallel;
    3. `var = sum(d * d * c)` with the epilogue `rstd = rsqrt(var + eps)`;
    4. `y = d * rstd * scale + bias`, all-parallel, scale and bias [N].

    This pass recognises that chain by the kernels' structure (iterator
    types, indexing maps, the arithmetic of their bodies) and replaces it
    with one `dlexec.builtin_kernel "layer_norm"` (x, scale, bias -> y,
    mean, rstd) that reads x once and writes y once (codegen: one warp or
    block per row, the row in registers, as PyTorch's and Apex's layer_norm
    kernels). The builtin computes the same two-pass formula with the same
    roundings, so the host device's results keep their bits; the CUDA
    kernel's sums combine in another order (last bits, as any reduction).

    A training step keeps d and u = d * rstd for its backward, so there
    the chain is five kernels: 4 is `u = d * rstd` and 5 is
    `y = u * scale + bias`. That form becomes one
    `dlexec.builtin_kernel "layer_norm_train"` (x, scale, bias -> y, mean,
    rstd, d, u), which writes d and u from the same pass over the row (the
    benchmark GPT's train_step: 9 LayerNorms, 229 -> 193 kernel launches).

    It folds only when: the reductions run over the last loop only; the
    constant c is 1/N rounded to the element type (f32 or f64); `var` is
    read by nothing else, nor is `d` in the four-kernel form (mean and rstd
    may have other readers: the builtin still writes them; in the
    five-kernel form d and u may have readers after the last kernel); the
    affine is exactly ((d * rstd) * scale) + bias, or u * scale + bias
    after u = d * rstd (operands of each op in either order); no output
    shares memory with an input or another output; and no op between the
    first and the last kernel writes x, scale or bias or touches an output.
    The builtin takes the place of the last kernel.
    Runs after `--dlexec-fuse-reduction-epilogues` and before
    `--dlexec-plan-memory`.

    Before:
    ```mlir
    dlexec.kernel @mean ins(%x) outs(%m) { acc + x * 9.765625E-4 }
    dlexec.kernel @sub ins(%x, %m) outs(%d) { x - m }
    dlexec.kernel @var ins(%d) outs(%v, %r) { acc + d * d * 9.765625E-4 }
        epilogue { rsqrt(v + 1.0E-5) }
    dlexec.kernel @affine ins(%b, %w, %d, %r) outs(%y) { d * r * w + b }
    ```
    After:
    ```mlir
    dlexec.builtin_kernel @affine "layer_norm" ins(%x, %w, %b)
        outs(%y, %m, %r) {epsilon = 1.0E-5 : f32}
    ```
  }];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def RematPersistentKernelsPass
    : Pass<"dlexec-remat-persistent-kernels", "mlir::ModuleOp"> {
  let summary = "Recompute a low-precision copy of persistent variables "
                "before each later reader instead of keeping it";
  let description = [{
    A kernel whose every input is a persistent variable (a parameter, an
    optimizer state) computes something that can be recomputed at any
    point of the step for the cost of reading those variables, while
    keeping its result costs arena bytes for as long as its last reader is
    away. The typical case is the bf16/fp16 cast of a weight under
    `--precision bf16|fp16`: one cast is shared by the forward gemm and the
    backward gemm of the input gradient, so the low-precision copy of every
    weight is live from the forward pass to the backward pass, across the
    step's peak. This pass gives each later reader its own copy, computed
    right before it (rematerialization of an op whose operands stay live
    anyway, as XLA's rematerialization pass does for cheap instructions;
    Chen et al. 2016 for recomputation in training): one extra launch per
    extra reader, the same values bit for bit.

    A kernel is a candidate when its iterators are all parallel (no
    reduction), it has one output, an arena buffer (`dlexec.alloc`, not a
    view) of a float type narrower than one of its inputs (a low-precision
    copy, whose bytes are a weight's; a kernel that only rearranges or
    compares persistent state, such as a causal mask, would cost a launch
    per reader for a few bytes) that no other op writes, every input is (a
    reshape of) a `dlexec.variable_ref`, and every reader of the output
    reads it as an input of a kernel, builtin kernel, library call or
    multi-tensor kernel.
    A later reader gets its copy only if no op between the kernel and that
    reader writes one of the variables the kernel reads (an optimizer
    update scheduled in between), so the copy computes the same values.

    Assumes unplanned buffers (run before `--dlexec-plan-memory`).

    Before:
    ```mlir
    %w = dlexec.variable_ref @fc.weight : memref<128x32xf32>
    %c = dlexec.alloc : memref<128x32xbf16>
    dlexec.kernel @k1_cast ins(%w : ...) outs(%c : ...) {...}
    dlexec.library_call "gemm" ins(%x, %c : ...) outs(%y : ...)   // forward
    ...
    dlexec.library_call "gemm" ins(%dy, %c : ...) outs(%dx : ...) // backward
    ```
    After:
    ```mlir
    dlexec.kernel @k1_cast ins(%w : ...) outs(%c : ...) {...}
    dlexec.library_call "gemm" ins(%x, %c : ...) outs(%y : ...)
    ...
    %c2 = dlexec.alloc : memref<128x32xbf16>
    dlexec.kernel @k1_cast_remat1 ins(%w : ...) outs(%c2 : ...) {...}
    dlexec.library_call "gemm" ins(%dy, %c2 : ...) outs(%dx : ...)
    ```
  }];
  let dependentDialects = ["dlc::exec::ExecDialect"];
}

def FuseSiblingReductionsPass
    : Pass<"dlexec-fuse-sibling-reductions", "mlir::ModuleOp"> {
  let summary = "Merge reduction kernels over the same loops that read a "
                "common input into one kernel with both kernels' outputs";
  let description = [{
    Two reductions that read the same tensor over the same iteration space
    are two launches and two passes over that tensor, though one pass could
    feed both accumulators. A LayerNorm's backward has such a pair: the
    bias gradient sum(dy) and the weight gradient sum(dy * u), both column
    sums over the rows of dy. As XLA's sibling multi-output fusion does,
    this pass merges such siblings into one `dlexec.kernel` whose inputs
    are both kernels' (a common input with the same indexing map read
    once), whose outputs, indexing maps, `init` values and yields are the
    first kernel's then the second's, and whose body computes both bodies.

    Two kernels merge when: both are reductions (they have an `init`) with
    no epilogue region; they have the same iterator types and loop sizes;
    they read at least one common buffer value with the same indexing map;
    neither reads or writes the other's outputs, nor do their outputs
    share memory; and the ops between them neither write the first
    kernel's inputs nor read or write its outputs (the merged kernel takes
    the second kernel's place). A merged kernel may take in a third
    sibling, up to `max-operands` operands.

    Each output keeps its own accumulator and the order of its additions,
    so the results are bit for bit those of the separate kernels on every
    target. Runs before `--dlexec-split-reductions` (which splits the
    merged kernel as one: one kernel of partials and one combining kernel
    for both outputs) and `--dlexec-plan-memory`.
  }];
  let options = [
    Option<"maxOperands", "max-operands", "int64_t", /*default=*/"12",
           "Merge only while the merged kernel has at most this many "
           "operands">,
  ];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

def SplitReductionsPass
    : Pass<"dlexec-split-reductions", "mlir::ModuleOp"> {
  let summary = "Split a reduction with few outputs and a long reduction "
                "into partial sums over its outermost reduction loop and a "
                "second kernel that combines them";
  let description = [{
    A cooperative reduction kernel gives each output (or 32 adjacent
    outputs, for a column reduction) one thread block, so a reduction with
    few outputs occupies few multiprocessors: a LayerNorm weight gradient
    (256 outputs, each the sum over 2,048 rows) runs as 8 blocks of an
    H100's 132 multiprocessors. As XLA's tree reduction rewriter does, such
    a kernel becomes two: the first is the same kernel with its outermost
    reduction loop made parallel, writing one partial result per value of
    that loop into a new buffer (`[E] + output shape`); the second reduces
    those E partials per output with the same combiner and init, and
    carries the original epilogue region, if any.

    A kernel is split when it has at least two reduction loops, at most
    `max-outputs` outputs, at least `min-steps` reduction steps per
    output, an outermost reduction loop of at least 4 iterations (and 32
    steps per partial), and every body output updated only by
    `acc = combine(acc, x)` with an `init`: an f32 sum (`arith.addf`), or
    an f32 / f64 maximum or minimum (`maximumf`, `minimumf`). The body's
    epilogue outputs must not be read in the body.

    An f32 sum keeps its partials in f64 (the first kernel adds the body's
    f32 values to an f64 accumulator, as codegen accumulates an unsplit f32
    sum) and combines them in f64; the combining kernel's epilogue rounds
    the sum once to the f32 output and then runs the original epilogue on
    that value. The result equals the unsplit kernel's unless the two
    association orders of the double sum round to different floats; maxima
    and minima are exact. Deterministic on every target. Runs before
    `--dlexec-plan-memory` (it adds unplanned buffers).
  }];
  let options = [
    Option<"maxOutputs", "max-outputs", "int64_t", /*default=*/"4096",
           "Split only reductions with at most this many outputs">,
    Option<"minSteps", "min-steps", "int64_t", /*default=*/"1024",
           "Split only reductions of at least this many steps per output">,
  ];
  let dependentDialects = ["::dlc::exec::ExecDialect",
                           "::mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

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

#endif // DLC_COMPILER_EXECTRANSFORMS_PASSES_TD
