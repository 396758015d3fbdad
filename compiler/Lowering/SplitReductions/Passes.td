//===- Passes.td - splitting reductions over the grid ----------------------===//
#ifndef DLC_COMPILER_LOWERING_SPLITREDUCTIONS_PASSES_TD
#define DLC_COMPILER_LOWERING_SPLITREDUCTIONS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif
