//===- Passes.h - the partitioning phase's passes ---------------*- C++ -*-===//
//
// Partitioning a training step over devices (Passes.td): data parallelism
// (docs/distributed.md) and pipeline stages (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PARTITION_PASSES_H
#define DLC_COMPILER_PARTITION_PASSES_H

#include "compiler/Partition/DeviceModel.h"
#include "compiler/Support/OptionsBinder.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

/// Roofline cost of one op on |model|, seconds: forward =
/// max(FLOPs / peak, bytes / memory bandwidth); backward = 2x forward for an
/// op reading a parameter, 1x otherwise. |flops| in FLOPs, |bytes| in bytes.
struct OpCost {
  double forward = 0;  ///< seconds
  double backward = 0; ///< seconds
};

/// Costs |op| (see OpCost) on |model|.
OpCost costOp(mlir::Operation *op, const DeviceModel &model);

/// Transfer time of |bytes| across a stage boundary, seconds.
double transferTime(int64_t bytes, const DeviceModel &model);

/// Partitioning: data parallelism (docs/distributed.md) and pipeline stages (compiler/Partition;
/// docs/pipeline.md).
struct PartitionOptions {
  bool dataParallel = false;
  /// The most bytes of one gradient bucket as written (parseByteSize);
  /// empty: kDefaultBucketBytes.
  std::string bucketSize;
  /// PyTorch DDP's bucket_cap_mb, 25 MiB.
  static constexpr int64_t kDefaultBucketBytes = int64_t(25) << 20;
  /// Pipeline stages to split @main into; 0: no split. With more than one,
  /// the training step is cut into per-stage functions for `microbatches`
  /// micro-batches.
  int64_t pipelineStages = 0;
  /// Comma-separated node names ending each stage but the last; empty: the
  /// cost model's split.
  std::string pipelineSplit;
  /// The device the cost model assumes: h100 or FILE.json
  /// (compiler/Partition/DeviceModel.h).
  std::string deviceModel = "h100";
  /// Micro-batches M per step of a pipeline (>= 1).
  int64_t microbatches = 4;
  /// The pipeline schedule, gpipe or 1f1b (runtime/schema/PipelineSchedule.h).
  std::string schedule = "1f1b";


  void bindOptions(OptionsBinder &binder);
  /// The one validation of these values, which `dlc` (checkCompileOptions)
  /// and the phase's passes both run. Returns the first problem as one line
  /// naming dlc's flag, or "".
  std::string check() const;
};

/// dlgraph-data-parallel (`bucket-size`), dlgraph-partition-pipeline
/// (`pipeline-stages`, `device-model`, `pipeline-split`) and
/// dlgraph-split-pipeline-stages (`microbatches`, `schedule`) with |options|.
std::unique_ptr<mlir::Pass>
createDataParallelPass(const PartitionOptions &options);
std::unique_ptr<mlir::Pass>
createPartitionPipelinePass(const PartitionOptions &options);
std::unique_ptr<mlir::Pass>
createSplitPipelineStagesPass(const PartitionOptions &options);

#define GEN_PASS_DECL
#include "compiler/Partition/Passes.h.inc"

/// Registers every pass of the phase (`registerDLCPartitionPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/Partition/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_PARTITION_PASSES_H
