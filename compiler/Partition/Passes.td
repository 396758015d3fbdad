//===- Passes.td - the partitioning phase's passes ----------*- tablegen -*-===//
//
// Partitioning a training step over devices: data parallelism (the gradients'
// mean over the ranks; docs/distributed.md) and pipeline stages (the cost
// model's split of @main and the cut of the step into per-stage functions;
// docs/pipeline.md).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PARTITION_PASSES_TD
#define DLC_COMPILER_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

def DataParallelPass : Pass<"dlgraph-data-parallel", "mlir::ModuleOp"> {
  let summary = "Averages @train_step's gradients over the ranks with bucketed all-reduces, as PyTorch DDP";
  let description = [{
    Data-parallel training (docs/distributed.md): every rank runs the same
    step on its shard of the global batch, and the optimizer reads the mean
    of the ranks' gradients, as `torch.nn.parallel.DistributedDataParallel`
    computes it (Li et al. 2020, "PyTorch Distributed: Experiences on
    Accelerating Data Parallel Training", section 3.2: gradient bucketing and
    overlap with the backward).

    Assumes `@train_step` after `--dlgraph-differentiate` and before the
    optimizer is applied: it returns the loss, then the gradients named
    `"<parameter>.grad"`. Guarantees: each returned gradient is replaced by
    the mean over the ranks of its value. Gradients are taken in the order
    the backward finishes them (the position of their defining op; the
    reverse of the forward's order, as DDP's reversed parameter order) and
    packed into buckets of at most `bucket-size` bytes of one element type
    (a larger gradient is a bucket of its own). Each bucket is flattened and
    concatenated right after its last gradient is computed, all-reduced
    (`dlgraph.all_reduce`, "avg") at once, so the communication overlaps
    the rest of the backward, and sliced back into the gradients just before
    the return, where the optimizer's updates go, so nothing waits for a
    bucket before the backward is done. BatchNorm running statistics are
    not gradients: they stay per rank, as in DDP. On one rank each
    all-reduce is the identity, so the same step runs on any number of
    ranks.

    Records on `@train_step` the attribute `dlgraph.data_parallel.buckets`:
    one dictionary per bucket, in issue order, with its `bytes` and the
    names of its `gradients`.

    Before / after (bucket-size large enough for both gradients):
    ```mlir
    %gw = dlgraph.gemm ...                       // fc.weight.grad
    %gb = dlgraph.reduce_sum ...                 // fc.bias.grad
    ...                                          // the rest of the backward
    return %loss, %gw, %gb
    // becomes
    %gw = dlgraph.gemm ...
    %gb = dlgraph.reduce_sum ...
    %f0 = dlgraph.reshape %gw : tensor<10x4xf32> to tensor<40xf32>
    %f1 = dlgraph.reshape %gb : tensor<10xf32> to tensor<10xf32>
    %c = dlgraph.concat %f0, %f1 {axis = 0 : i64}
    %r = dlgraph.all_reduce %c {reduction = "avg"} : tensor<50xf32>
    ...                                          // the rest of the backward
    %s0 = dlgraph.slice %r {starts = array<i64: 0>, steps = array<i64: 1>}
    %g0 = dlgraph.reshape %s0 : tensor<40xf32> to tensor<10x4xf32>
    %g1 = dlgraph.slice %r {starts = array<i64: 40>, steps = array<i64: 1>}
    return %loss, %g0, %g1
    ```
    Errors: no `@train_step`, a `bucket-size` that is not a positive size, no gradient results.

    Options: the fields of `dlc::PartitionOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Pipeline stages
//===----------------------------------------------------------------------===//

def PartitionPipelinePass : Pass<"dlgraph-partition-pipeline", "mlir::ModuleOp"> {
  let summary = "Splits the forward function @main into pipeline stages by a roofline cost model";
  let description = [{
    Analysis only (docs/pipeline.md, "Partitioning and the cost model").
    Runs on `@main` as the importer gives it (before the training step).
    The ops that compute (every op but `dlgraph.read_variable` and
    `dlgraph.constant`) are taken in program order. Each costs
    forward = max(FLOPs / peak, bytes / memory bandwidth) seconds (FLOPs
    from RecomputeCostOpInterface::getRecomputeFlops, peak by the result's
    element type: bf16/f16 use the half peak, others fp32; bytes = operand +
    result tensor bytes) and backward = 2 x forward when an operand is a
    variable read (a parameter), 1 x forward otherwise. A stage costs the sum
    of its ops' forward + backward plus its outgoing boundary transfer
    (bytes of values crossing the boundary / link bandwidth + latency).
    A dynamic program over split points minimises the slowest stage; with a
    `memory-budget`, each stage's parameter bytes (variables its ops read)
    plus activation bytes (all its ops' result bytes) must fit.
    `pipeline-split` gives the split points by hand: each name (an op's NameLoc) is
    the last op of a stage.

    Every op of @main gets `dlgraph.stage = i : i64` (reads and constants
    take their first user's stage); @main gets `dlgraph.pipeline.stages`, an
    array of dictionaries {ops, cost (seconds: forward + backward +
    transfer), forward and backward (seconds per micro-batch, the sums of
    its ops'), transfer (seconds, its outgoing boundary; 0 for the last
    stage), param_bytes, activation_bytes, first, last}.

    Options: the fields of `dlc::PartitionOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
}

def SplitPipelineStagesPass
    : Pass<"dlgraph-split-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Cuts a staged @train_step into per-stage forward, backward "
                "and update functions";
  let description = [{
    Runs on the @train_step that dlgraph-build-training-step built from a
    @main split by dlgraph-partition-pipeline: forward ops carry
    `dlgraph.stage`, the ops the backward created carry the stage of the op
    they differentiate and `dlgraph.backward`; the optimizer's ops come
    last. For every stage s it builds

    - `@stage<s>_forward`: the stage's forward ops on one micro-batch. Its
      inputs are the model inputs it reads (named as in @train_step, at the
      micro-batch size) and the forward values it receives (`x.<k>`); its
      results are the values later stages or its own backward need
      (`x.<k>`) and, on the last stage, `loss`.
    - `@stage<s>_backward`: the stage's backward ops on one micro-batch.
      Inputs: model inputs, the forward values it reads (`x.<k>`: its own
      forward's, or received by its forward), the gradients later stages
      send (`g.<k>`). Results: the gradients earlier stages need (`g.<k>`).
      Each gradient the optimizer reads is added, times 1/M, to a new
      variable `<parameter>.grad_accumulator`, so that after the M
      micro-batches it holds the gradient of the mean loss over the global
      batch.
    - `@stage<s>_update`: the optimizer's ops for the stage's parameters,
      reading the accumulators, then zeroing them; the step counter is
      counted by every stage.

    Constants and variable reads are copied into every function that uses
    them. @train_step is erased; @forward is kept. The module gets
    `dlgraph.pipeline`: `micro_batches`, `schedule`, `stages` (per stage the
    three function names and its accumulators), `transfers` (per value sent
    from one stage to another: name, from, to, backward) and `inputs` (the
    model inputs, split along dim 0 into micro-batches). Errors: no staged
    @train_step, a parameter read by two stages (tied weights), a value that
    flows against the schedule, results besides the loss.

    Options: the fields of `dlc::PartitionOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
}

#endif // DLC_COMPILER_PARTITION_PASSES_TD
