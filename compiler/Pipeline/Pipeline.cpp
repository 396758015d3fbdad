//===- Pipeline.cpp - dlc's import-independent pass pipeline --------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Lowering/Pipelines.h"
#include "compiler/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void dlc::buildGraphPipeline(OpPassManager &pm,
                             const PipelineOptions &options) {
  if (options.train)
    buildTrainingStepPipeline(pm, options);
  else
    pm.addPass(createRenameMainToForwardPass());

  // Slots for the coming graph pass families, in this order (DESIGN.md):
  //  1. mixed precision (--precision): cast policy, f32 master weights, loss
  //     scaling; compiler/Training/MixedPrecision. It needs the gradients and
  //     updates of @train_step, so it runs after the training passes.
  //  2. rematerialization (--remat / --memory-budget): recompute activations
  //     in the backward pass under a memory budget; compiler/Training/Remat.
  //  3. partitioning: pipeline stages, micro-batches, data/tensor-parallel
  //     collectives; compiler/Partition.
  // Each adds its passes here when its option asks for it.
}

void dlc::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  buildGraphPipeline(pm, options);
  buildLoweringPipeline(pm);
}

void dlc::registerPipeline() {
  PassPipelineRegistration<PipelineOptions>(
      "dlc-pipeline",
      "dlc's pipeline on an imported module: the training step (train=true) "
      "or @main renamed @forward, then dlc-lowering-pipeline",
      buildPipeline);
}
