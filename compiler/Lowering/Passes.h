//===- Passes.h - dlgraph -> dlexec lowering passes ----------------*- C++
//-*-===//
#ifndef DLC_COMPILER_LOWERING_PASSES_H
#define DLC_COMPILER_LOWERING_PASSES_H

#include "dialects/Exec/ExecOps.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/Passes.h.inc"

/// Registers the lowering passes (the pipeline: Pipelines.h).
void registerLoweringPasses();

/// The rewrites of `--dlgraph-fold-data-movement` (see Passes.td): zero-pad
/// sums that tile an axis as concats, 2-D transposes as gemm flags.
void populateFoldDataMovementPatterns(mlir::RewritePatternSet &patterns);

/// Checks the memory plan of |func| (offsets of its `dlexec.alloc`s and its
/// `arena_bytes`): every alloc has an offset that is a multiple of
/// |alignment| bytes, lies inside the arena, and does not overlap in bytes
/// any alloc that is live at the same time. Emits an error at the offending
/// alloc and fails otherwise.
mlir::LogicalResult verifyMemoryPlan(exec::FuncOp func,
                                     int64_t alignment = 256);

} // namespace dlc

#endif
