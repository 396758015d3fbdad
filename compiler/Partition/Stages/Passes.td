//===- Passes.td - per-stage functions of a pipeline ----------*- tablegen -*-===//
#ifndef DLC_COMPILER_PARTITION_STAGES_PASSES_TD
#define DLC_COMPILER_PARTITION_STAGES_PASSES_TD

include "mlir/Pass/PassBase.td"

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
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches M per step (>= 1)">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe or 1f1b (recorded for the runtime)">,
  ];
}

#endif // DLC_COMPILER_PARTITION_STAGES_PASSES_TD
