//===- Passes.h - data-parallel training ------------------------*- C++ -*-===//
//
// The data-parallel pass family (docs/distributed.md): `--data-parallel`
// averages the training step's gradients over the ranks in buckets.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H
#define DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

/// One gradient bucket as dlgraph-data-parallel recorded it.
struct GradientBucket {
  int64_t bytes = 0;                  ///< the bucket's size
  std::vector<std::string> gradients; ///< "<parameter>.grad", packing order
};

/// The buckets recorded on |module|'s @train_step, in issue order (empty
/// when the pass did not run).
std::vector<GradientBucket> readGradientBuckets(mlir::ModuleOp module);

#define GEN_PASS_DECL
#include "compiler/Training/DataParallel/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Training/DataParallel/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_DATAPARALLEL_PASSES_H
