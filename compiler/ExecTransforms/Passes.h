//===- Passes.h - the dlexec transforms -------------------------*- C++ -*-===//
//
// Passes on dlexec step functions (Passes.td): fusion and epilogues, then
// memory planning.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_EXECTRANSFORMS_PASSES_H
#define DLC_COMPILER_EXECTRANSFORMS_PASSES_H

#include "dialects/Exec/ExecOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/ExecTransforms/Passes.h.inc"

/// Registers the phase's passes (`registerDLCExecTransformsPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/ExecTransforms/Passes.h.inc"

/// Checks the memory plan of |func| (offsets of its `dlexec.alloc`s and its
/// `arena_bytes`): every alloc has an offset that is a multiple of
/// |alignment| bytes, lies inside the arena, and does not overlap in bytes
/// any alloc that is live at the same time. Emits an error at the offending
/// alloc and fails otherwise.
mlir::LogicalResult verifyMemoryPlan(exec::FuncOp func,
                                     int64_t alignment = 256);

/// The dlexec transforms: elementwise fusion, canonicalize, GEMM epilogues,
/// multi-tensor updates, reduction epilogues, layer norm, persistent-kernel
/// remat, sibling reductions, split reductions.
void buildExecTransformsPipeline(mlir::OpPassManager &pm);

/// Memory planning: dlexec-plan-memory (arena offsets, `arena_bytes`).
void buildMemoryPlanningPipeline(mlir::OpPassManager &pm);

} // namespace dlc

#endif // DLC_COMPILER_EXECTRANSFORMS_PASSES_H
