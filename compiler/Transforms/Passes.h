//===- Passes.h - dlgraph graph transforms ----------------------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_PASSES_H
#define DLC_COMPILER_TRANSFORMS_PASSES_H

#include "compiler/Transforms/BuildTrainingStep.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace dlc {
/// Declares `create<Name>Pass()` (and, for passes with options,
/// `create<Name>Pass(const <Name>PassOptions &)`) for every pass of
/// Passes.td: RenameMainToForward, AppendLoss, DecomposeBatchNormForTraining,
/// Differentiate, ApplyOptimizer. The options' defaults are TrainingOptions'.
#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

/// Registers every pass of DLCTransforms (`registerDLCTransformsPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"
} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_PASSES_H
