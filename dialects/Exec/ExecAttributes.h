//===- ExecAttributes.h - dlexec.* attributes of a plan ---------*- C++ -*-===//
//
// What the dlgraph phases record for codegen and `dlc --stats`, carried onto
// the dlexec module by the conversion to dlexec (dlgraph-lower-to-dlexec):
// the pipeline record, the gradient buckets and the remat summary. Declared
// here with typed readers; ExecDialect::verifyOperationAttribute checks each
// one (its fields are declared in dialects/PhaseRecords.h) and rejects any
// other `dlexec.`-prefixed discardable attribute.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_EXEC_EXECATTRIBUTES_H
#define DLC_DIALECTS_EXEC_EXECATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc::exec {

/// Dictionary on the module: the pipeline record of
/// dlgraph-split-pipeline-stages (`dlgraph.pipeline`, moved here by the
/// conversion; fields in records::kPipelineFields). Read by the package
/// writer, which adds the Pipeline table and the step function `train_step`.
constexpr llvm::StringLiteral kPipelineAttr = "dlexec.pipeline";

/// Array of dictionaries on a `dlexec.func` (@train_step): the gradient
/// buckets of dlgraph-data-parallel (`dlgraph.data_parallel.buckets`, carried
/// by the conversion). Read by `dlc --stats`.
constexpr llvm::StringLiteral kBucketsAttr = "dlexec.data_parallel.buckets";

/// The prefix of the remat summary on a `dlexec.func` (@train_step): one i64
/// per key of records::kRematSummaryKeys (`dlgraph.remat.<key>`, carried by
/// the conversion). Read by `dlc --stats`.
constexpr llvm::StringLiteral kRematSummaryPrefix = "dlexec.remat.";

/// One gradient bucket as dlgraph-data-parallel recorded it.
struct GradientBucket {
  int64_t bytes = 0;                  ///< the bucket's size
  std::vector<std::string> gradients; ///< "<parameter>.grad", packing order
};

/// What dlgraph-remat recorded (all 0 when it did not run).
struct RematSummary {
  int64_t recomputedOps = 0;       ///< ops cloned into the backward (not views)
  int64_t addedFlops = 0;          ///< FLOPs of those clones
  int64_t stepFlops = 0;           ///< FLOPs of @train_step before the pass
  int64_t simulatedPeakBefore = 0; ///< the pass's model of the arena, bytes
  int64_t simulatedPeakAfter = 0;
};

/// The pipeline record of the planned |module|; null when it is not a
/// pipeline.
mlir::DictionaryAttr getPipelineRecord(mlir::ModuleOp module);

/// The gradient buckets on the planned |module|'s step function, in issue
/// order (empty without --data-parallel).
std::vector<GradientBucket> readGradientBuckets(mlir::ModuleOp module);

/// The remat summary on the planned |module|'s step function.
RematSummary readRematSummary(mlir::ModuleOp module);

} // namespace dlc::exec

#endif // DLC_DIALECTS_EXEC_EXECATTRIBUTES_H
