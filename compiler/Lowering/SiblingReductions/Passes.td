//===- Passes.td - sibling reductions in one kernel ------------------------===//
#ifndef DLC_COMPILER_LOWERING_SIBLINGREDUCTIONS_PASSES_TD
#define DLC_COMPILER_LOWERING_SIBLINGREDUCTIONS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif
