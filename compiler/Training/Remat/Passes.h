//===- Passes.h - activation checkpointing (rematerialization) --*- C++ -*-===//
//
// The rematerialization pass family (docs/remat.md): `--remat none|sqrt|auto`
// on the training step, and what it records for `dlc --stats`.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_REMAT_PASSES_H
#define DLC_COMPILER_TRAINING_REMAT_PASSES_H

#include "dialects/Exec/ExecAttributes.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>

namespace dlc {

/// The values `--remat` accepts: "none", "sqrt", "auto".
llvm::ArrayRef<llvm::StringLiteral> supportedRematModes();

/// What dlgraph-remat recorded on @train_step (all 0 when it did not run);
/// the conversion to dlexec carries it to the planned module.
using RematSummary = exec::RematSummary;

/// Reads the summary from |module|'s @train_step.
RematSummary readRematSummary(mlir::ModuleOp module);

#define GEN_PASS_DECL
#include "compiler/Training/Remat/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Training/Remat/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_REMAT_PASSES_H
