//===- Passes.h - dlgraph to dlexec -----------------------------*- C++ -*-===//
//
// The conversion phase (Passes.td): dlgraph functions become dlexec step
// functions of kernels, library calls and buffers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_H
#define DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_H

#include "dialects/Exec/ExecOps.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace dlc {

#define GEN_PASS_DECL
#include "compiler/Conversion/GraphToExec/Passes.h.inc"

/// Registers the phase's passes (`registerDLCGraphToExecPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/GraphToExec/Passes.h.inc"

/// The rewrites of `--dlgraph-fold-data-movement` (see Passes.td): zero-pad
/// sums that tile an axis as concats, 2-D transposes as gemm flags.
void populateFoldDataMovementPatterns(mlir::RewritePatternSet &patterns);

/// Conversion to dlexec (on a builtin.module): dlgraph-fold-data-movement,
/// canonicalize, dlgraph-lower-to-dlexec. Every dlgraph op becomes dlexec
/// kernels, library calls and buffers.
void buildGraphToExecPipeline(mlir::OpPassManager &pm);

} // namespace dlc

#endif // DLC_COMPILER_CONVERSION_GRAPHTOEXEC_PASSES_H
