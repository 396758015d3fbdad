//===- Pipelines.h - the dlgraph -> planned dlexec pipeline -----*- C++ -*-===//
#ifndef DLC_COMPILER_LOWERING_PIPELINES_H
#define DLC_COMPILER_LOWERING_PIPELINES_H

#include "dialects/Exec/Analysis/PlanStats.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace dlc {

/// Conversion to dlexec (on a builtin.module): dlgraph-fold-data-movement,
/// canonicalize, dlgraph-lower-to-dlexec. Every dlgraph op becomes dlexec
/// kernels, library calls and buffers.
void buildGraphToExecPipeline(mlir::OpPassManager &pm);

/// The dlexec transforms: elementwise fusion, canonicalize, GEMM epilogues,
/// multi-tensor updates, reduction epilogues, layer norm, persistent-kernel
/// remat, sibling reductions, split reductions.
void buildExecTransformsPipeline(mlir::OpPassManager &pm);

/// Memory planning: dlexec-plan-memory (arena offsets, `arena_bytes`).
void buildMemoryPlanningPipeline(mlir::OpPassManager &pm);

/// The three lowering phases in order: buildGraphToExecPipeline,
/// buildExecTransformsPipeline, buildMemoryPlanningPipeline. The result is a
/// module of dlexec variables and planned dlexec functions. Registered as the
/// pipeline `dlc-lowering-pipeline`; the last phases of `dlc-pipeline`
/// (compiler/Pipeline).
void buildLoweringPipeline(mlir::OpPassManager &pm);

/// Registers the `dlc-lowering-pipeline` pipeline with the global pass
/// registry.
void registerLoweringPipeline();

} // namespace dlc

#endif
