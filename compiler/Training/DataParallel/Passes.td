//===- Passes.td - data-parallel training ------------------*- tablegen -*-===//
#ifndef DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_TD
#define DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    Errors: no `@train_step`, a `bucket-size` below 1, no gradient results.
  }];
  let options = [
    Option<"bucketSize", "bucket-size", "int64_t", /*default=*/"26214400",
           "the most bytes of one bucket (default 25 MiB, DDP's bucket_cap_mb)">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_TD
