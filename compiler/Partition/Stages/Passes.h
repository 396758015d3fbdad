//===- Passes.h - per-stage functions of a pipeline -------------*- C++ -*-===//
//
// dlgraph-split-pipeline-stages (docs/pipeline.md, "Running a pipeline"):
// the staged training step cut into the functions each pipeline stage runs.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PARTITION_STAGES_PASSES_H
#define DLC_COMPILER_PARTITION_STAGES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <string>

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Partition/Stages/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Partition/Stages/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_PARTITION_STAGES_PASSES_H
