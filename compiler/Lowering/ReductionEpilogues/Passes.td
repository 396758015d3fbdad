//===- Passes.td - reduction epilogue fusion -------------------------------===//
#ifndef DLC_COMPILER_LOWERING_REDUCTIONEPILOGUES_PASSES_TD
#define DLC_COMPILER_LOWERING_REDUCTIONEPILOGUES_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif
