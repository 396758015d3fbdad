//===- Passes.h - dlgraph graph transforms ------------------------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_PASSES_H
#define DLC_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace dlc {
/// Declares `createBuildTrainingStepPass()` and
/// `createBuildTrainingStepPass(const BuildTrainingStepPassOptions &)`
/// (options: loss, lossOutput, optimizer, lr, momentum, weightDecay (< 0 =
/// the optimizer's PyTorch default), beta1, beta2, epsilon).
#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

/// Registers every pass of DLCTransforms (`registerDLCTransformsPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"
} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_PASSES_H
