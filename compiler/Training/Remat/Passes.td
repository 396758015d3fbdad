//===- Passes.td - activation checkpointing (rematerialization) -*- tablegen -*-===//
#ifndef DLC_COMPILER_TRAINING_REMAT_PASSES_TD
#define DLC_COMPILER_TRAINING_REMAT_PASSES_TD

include "mlir/Pass/PassBase.td"

def RematerializationPass : Pass<"dlgraph-remat", "mlir::ModuleOp"> {
  let summary = "Recomputes forward activations in the backward pass of @train_step instead of keeping them";
  let description = [{
    Activation checkpointing (docs/remat.md). Runs on `@train_step` after the
    training step is built (and after mixed precision and loss scaling).
    A *held activation* is a value computed in the forward pass (before the
    op that computes the `"loss"` result) that the backward pass reads; it
    stays in the arena from the forward to its last backward use. The pass
    chooses a set of forward values to drop: each backward use of a dropped
    value reads a copy recomputed from kept values, cloned right before the
    first backward op that needs it; the forward keeps its original.

    What may be dropped comes from each op's RecomputeCostOpInterface: ops
    of cost `never` (side effects), ops with regions and values the function
    returns are never recomputed; `free` ops (reshape, identity, variable
    reads, constants) are views or persistent and are cloned along with what
    they view. Recomputation is exact: a clone is the same op on the same
    operands (dropout's mask comes from its (seed, step, index) Philox
    stream, so the clone draws the same mask; BatchNorm's running-statistic
    updates are `write_variable`s, which are never cloned, so they happen
    once). Clones carry the unit attribute `dlgraph.recomputed`, which also
    keeps CSE from merging them back into the originals.

    Modes:
    * `none`: nothing changes.
    * `sqrt`: Chen et al. 2016 ("Training Deep Nets with Sublinear Memory
      Cost", section 4): the forward ops are cut into ceil(sqrt(n))
      segments of about equal output bytes (n = forward ops that compute);
      values read by a later segment (the segment outputs), the last
      segment (its backward follows at once) and values that cannot be
      recomputed are kept; every other forward value is dropped.
    * `auto`: greedy rematerialization to a memory target, in the manner of
      XLA's HloRematerialization: the pass simulates the step's activation
      memory over the program order (every value that is not a view,
      variable or input, live from its definition to its last use; clones
      live from their insertion to their last use), and while the peak
      exceeds `arena-target` bytes it drops, among the held activations
      live across the peak, the one (with the forward values its
      recomputation needs that would otherwise be kept past the peak) that
      adds the fewest FLOPs per byte it frees, when the simulation confirms
      that the peak does not rise and the memory summed over the step falls.
      It stops when the peak fits or no candidate helps, then undoes the
      choices (latest first) the final peak does not need.

    The pass records on `@train_step`: `dlgraph.remat.recomputed_ops` (ops
    cloned, views not counted), `dlgraph.remat.added_flops` and
    `dlgraph.remat.step_flops` (the FLOPs of the step before the pass, from
    getRecomputeFlops), and `dlgraph.remat.simulated_peak_before` /
    `_after` (bytes, the pass's own model, not the planned arena).

    ```mlir
    // before (held: %h is read by the backward gemm)
    %h = dlgraph.relu %a : tensor<64x128xf32>
    ...                                         // forward, loss
    %dw = dlgraph.gemm %h, %dy {trans_a = true} : ...
    // after
    %h = dlgraph.relu %a : tensor<64x128xf32>
    ...
    %h2 = dlgraph.relu %a {dlgraph.recomputed} : tensor<64x128xf32>
    %dw = dlgraph.gemm %h2, %dy {trans_a = true} : ...
    ```
    Errors: an unknown `mode`; `sqrt`/`auto` on a module without
    `@train_step` or without a `"loss"` result.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"none\"",
           "none, sqrt or auto">,
    Option<"arenaTarget", "arena-target", "int64_t", /*default=*/"0",
           "auto: the simulated activation peak to reach, in bytes "
           "(0: drop everything held that can be recomputed)">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

def ScheduleUpdatesPass : Pass<"dlgraph-schedule-updates", "mlir::ModuleOp"> {
  let summary = "Moves each optimizer update of @train_step to right after its gradient is final";
  let description = [{
    `--dlgraph-apply-optimizer` appends the updates after the whole backward
    pass, so every weight gradient stays in the arena until the end of the
    step. This pass moves each *update* (a pure op without regions whose
    results only `dlgraph.write_variable` reads, e.g. `dlgraph.sgd_update`,
    `dlgraph.adam_update`) to right after the last of: the definitions of its
    operands, and every reader of a value read from a variable it writes (so
    that the lowering can still write the variable in place: nothing reads
    its old value afterwards). Single-use `dlgraph.read_variable`s of its
    optimizer state move with it. Pure ops that compute only from variables
    and constants and feed an update (the step counter `@__step + 1`) move to
    the start of the body first. The gradient then dies at its update, as in
    PyTorch's optimizer-in-backward hooks; the values computed are the same.

    Runs on `@train_step` before rematerialization; `dlc` runs it for every
    training step without loss scaling (with loss scaling every update waits
    for the step's overflow check, so nothing can move). A module without
    `@train_step` is left alone.
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_TRAINING_REMAT_PASSES_TD
