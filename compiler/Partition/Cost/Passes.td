//===- Passes.td - pipeline stage split ------------------------*- tablegen -*-===//
#ifndef DLC_COMPILER_PARTITION_COST_PASSES_TD
#define DLC_COMPILER_PARTITION_COST_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    `split` gives the split points by hand: each name (an op's NameLoc) is
    the last op of a stage.

    Every op of @main gets `dlgraph.stage = i : i64` (reads and constants
    take their first user's stage); @main gets `dlgraph.pipeline.stages`, an
    array of dictionaries {ops, cost (seconds: forward + backward +
    transfer), forward and backward (seconds per micro-batch, the sums of
    its ops'), transfer (seconds, its outgoing boundary; 0 for the last
    stage), param_bytes, activation_bytes, first, last}.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "number of pipeline stages (>= 1)">,
    Option<"deviceModel", "device-model", "std::string", "\"h100\"",
           "h100, host or FILE.json (DeviceModel.h)">,
    ListOption<"split", "split", "std::string",
               "node names ending each stage but the last (stages-1 of them)">,
    Option<"memoryBudget", "memory-budget", "int64_t", "0",
           "bytes per stage of parameters + activations; 0: none">,
  ];
}

#endif // DLC_COMPILER_PARTITION_COST_PASSES_TD
