//===- Passes.h - activation checkpointing (rematerialization) --*- C++ -*-===//
//
// The rematerialization pass family (docs/remat.md): `--remat none|sqrt|auto`
// on the training step, and what it records for `dlc --stats`.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_REMAT_PASSES_H
#define DLC_COMPILER_TRAINING_REMAT_PASSES_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>

namespace dlc {

/// The values `--remat` accepts: "none", "sqrt", "auto".
llvm::ArrayRef<llvm::StringLiteral> supportedRematModes();

/// What dlgraph-remat recorded on @train_step (all 0 when it did not run).
struct RematSummary {
  int64_t recomputedOps = 0;  ///< ops cloned into the backward (not views)
  int64_t addedFlops = 0;     ///< FLOPs of those clones
  int64_t stepFlops = 0;      ///< FLOPs of @train_step before the pass
  int64_t simulatedPeakBefore = 0; ///< the pass's model of the arena, bytes
  int64_t simulatedPeakAfter = 0;
};

/// Reads the summary from |module|'s @train_step.
RematSummary readRematSummary(mlir::ModuleOp module);

#define GEN_PASS_DECL
#include "compiler/Training/Remat/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Training/Remat/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_REMAT_PASSES_H
