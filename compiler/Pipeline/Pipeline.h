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
};

/// The dlgraph -> dlgraph stage. Adds to |pm| (on a builtin.module): with
/// `train`, buildTrainingStepPipeline (@main becomes @forward, plus
/// @train_step); without it, dlgraph-rename-main-to-forward (packages call
/// the inference function `forward`).
void buildGraphPipeline(mlir::OpPassManager &pm,
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
