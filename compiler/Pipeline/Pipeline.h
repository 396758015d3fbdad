//===- Pipeline.h - dlc's import-independent pass pipeline ------*- C++ -*-===//
//
// The one pipeline that `dlc`, `dlc-opt --dlc-pipeline` and the tests run on
// an imported dlgraph module: the graph stage (training, then the slots of
// the coming pass families) followed by lowering to dlexec, fusion and
// memory planning.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PIPELINE_PIPELINE_H
#define DLC_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/Training/MixedPrecision/Passes.h"
#include "compiler/Training/Remat/Passes.h"
#include "compiler/Transforms/BuildTrainingStep.h"
#include "mlir/Pass/PassManager.h"

namespace dlc {

/// Options of the pipeline: whether to train, and the training options (with
/// their defaults, TrainingOptions' constants). `dlc`'s flags of the same
/// names fill them.
struct PipelineOptions : TrainingOptions {
  Option<bool> train{*this, "train",
                     llvm::cl::desc("Build @train_step (forward, loss, "
                                    "backward, optimizer update)"),
                     llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, bf16 or fp16 (docs/mixed-precision.md)"),
      llvm::cl::init(MixedPrecisionDefaults::kPrecision)};
  /// "dynamic", "none", a positive number (a static scale), or empty: dynamic
  /// for fp16 training, none otherwise.
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("dynamic, none or a number (static scale); default: "
                     "dynamic for fp16 training, none otherwise")};
  Option<double> lossScaleInit{
      *this, "loss-scale-init", llvm::cl::desc("Initial dynamic loss scale"),
      llvm::cl::init(MixedPrecisionDefaults::kInitScale)};
  Option<double> lossScaleGrowthFactor{
      *this, "loss-scale-growth-factor",
      llvm::cl::desc("Dynamic loss scale growth factor"),
      llvm::cl::init(MixedPrecisionDefaults::kGrowthFactor)};
  Option<double> lossScaleBackoffFactor{
      *this, "loss-scale-backoff-factor",
      llvm::cl::desc("Dynamic loss scale backoff factor"),
      llvm::cl::init(MixedPrecisionDefaults::kBackoffFactor)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("Finite steps between loss scale growths"),
      llvm::cl::init(MixedPrecisionDefaults::kGrowthInterval)};
  /// Data-parallel training (dlgraph-data-parallel; docs/distributed.md).
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Average the gradients over the ranks with bucketed "
                     "all-reduces (as PyTorch DDP)"),
      llvm::cl::init(false)};
  Option<int64_t> bucketSize{
      *this, "bucket-size",
      llvm::cl::desc("With data-parallel: the most bytes of one gradient "
                     "bucket (default 25 MiB)"),
      llvm::cl::init(int64_t(25) << 20)};
  /// Pipeline execution (dlgraph-split-pipeline-stages; docs/pipeline.md):
  /// with a @main split by dlgraph-partition-pipeline, the training step is
  /// cut into per-stage functions for this many micro-batches; 0: no cut.
  Option<int64_t> pipelineMicroBatches{
      *this, "pipeline-micro-batches",
      llvm::cl::desc("Cut the staged training step into per-stage "
                     "functions for M micro-batches (0: do not)"),
      llvm::cl::init(0)};
  Option<std::string> pipelineSchedule{
      *this, "pipeline-schedule",
      llvm::cl::desc("The pipeline schedule the package records: gpipe or "
                     "1f1b"),
      llvm::cl::init("1f1b")};
  /// Rematerialization of @train_step (dlgraph-remat; docs/remat.md).
  Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("Activation checkpointing: none, sqrt or auto"),
      llvm::cl::init("none")};
  Option<int64_t> rematArenaTarget{
      *this, "remat-arena-target",
      llvm::cl::desc("With remat=auto: the simulated activation peak to "
                     "reach, bytes (0: recompute all it can); `dlc "
                     "--memory-budget` searches for it"),
      llvm::cl::init(0)};
};

/// What `loss-scale` means for |options|: "dynamic", "none" or the static
/// scale as written; empty `loss-scale` resolves to "dynamic" for fp16
/// training and "none" otherwise.
std::string resolveLossScale(const PipelineOptions &options);

/// The dlgraph -> dlgraph stage. Adds to |pm| (on a builtin.module): with
/// `train`, buildTrainingStepPipeline (@main becomes @forward, plus
/// @train_step); without it, dlgraph-rename-main-to-forward (packages call
/// the inference function `forward`). Then the graph pass families: mixed
/// precision, loss scaling and (unless |withRemat| is false)
/// rematerialization, as the options ask.
void buildGraphPipeline(mlir::OpPassManager &pm,
                        const PipelineOptions &options, bool withRemat);
inline void buildGraphPipeline(mlir::OpPassManager &pm,
                               const PipelineOptions &options) {
  buildGraphPipeline(pm, options, /*withRemat=*/true);
}

/// Adds dlgraph-remat with |options|' remat and remat-arena-target when
/// `train` is set and remat is not "none".
void buildRematPipeline(mlir::OpPassManager &pm,
                        const PipelineOptions &options);

/// The whole pipeline: buildGraphPipeline, then buildLoweringPipeline
/// (compiler/Lowering/Pipelines.h). The result is a planned dlexec module,
/// ready for codegen. Registered as `dlc-pipeline`.
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers the `dlc-pipeline` pipeline (options of PipelineOptions) with
/// the global pass registry.
void registerPipeline();

} // namespace dlc

#endif // DLC_COMPILER_PIPELINE_PIPELINE_H
