//===- InitAll.h - dialect and pass registration ----------------*- C++ -*-===//
#ifndef DLC_COMPILER_INITALL_INITALL_H
#define DLC_COMPILER_INITALL_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace dlc {
/// Adds every dialect dlc produces or consumes (dlgraph, dlexec, func, arith,
/// math, memref) to |registry|, with the dlgraph ops' gradient rules
/// (DifferentiableOpInterface external models, compiler/Training/Gradients).
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers every dlc pass and, through registerAllPipelines, every
/// pipeline with the global pass registry, so that `dlc-opt --dlgraph-...`
/// flags exist. Idempotent.
void registerAllPasses();
/// Registers the pass pipelines: `dlgraph-build-training-step`,
/// `dlc-lowering-pipeline` and `dlc-pipeline`. Called by registerAllPasses.
void registerAllPipelines();
} // namespace dlc

#endif
