//===- Pipeline.cpp - dlc's import-independent pass pipeline --------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Lowering/Pipelines.h"
#include "compiler/Partition/Stages/Passes.h"
#include "compiler/Training/DataParallel/Passes.h"
#include "compiler/Training/MixedPrecision/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void dlc::buildGraphPipeline(OpPassManager &pm,
                             const PipelineOptions &options, bool withRemat) {
  if (options.train)
    buildTrainingStepPipeline(pm, options, [&](OpPassManager &gradients) {
      // Data parallelism (--data-parallel): the gradients' mean over the
      // ranks; compiler/Training/DataParallel.
      if (options.dataParallel) {
        DataParallelPassOptions dp;
        dp.bucketSize = options.bucketSize;
        gradients.addPass(createDataParallelPass(dp));
      }
    });
  else
    pm.addPass(createRenameMainToForwardPass());
  // Pipeline stages (--pipeline-stages): the staged step cut into each
  // stage's forward, backward and update; compiler/Partition/Stages.
  const bool pipelined = options.train && options.pipelineMicroBatches > 0;
  if (pipelined) {
    SplitPipelineStagesPassOptions sp;
    sp.microBatches = options.pipelineMicroBatches;
    sp.schedule = options.pipelineSchedule;
    pm.addPass(createSplitPipelineStagesPass(sp));
  }

  // The graph pass families, in this order (DESIGN.md):
  //  1. mixed precision (--precision, --loss-scale): the cast policy on every
  //     function, then loss scaling of @train_step (it scales the backward
  //     seed and unscales the f32 gradients the updates read);
  //     compiler/Training/MixedPrecision.
  if (options.precision != "fp32") {
    MixedPrecisionPassOptions mp;
    mp.precision = options.precision;
    pm.addPass(createMixedPrecisionPass(mp));
  }
  if (options.train) {
    std::string scale = resolveLossScale(options);
    // Each update right after its gradient is final (the gradients leave the
    // arena early); with loss scaling every update waits for the overflow
    // check instead.
    if (scale == "none" && !pipelined)
      pm.addPass(createScheduleUpdatesPass());
    if (scale != "none") {
      LossScalingPassOptions ls;
      ls.dynamic = scale == "dynamic";
      ls.initScale = ls.dynamic ? double(options.lossScaleInit)
                                : std::stod(scale);
      ls.growthFactor = options.lossScaleGrowthFactor;
      ls.backoffFactor = options.lossScaleBackoffFactor;
      ls.growthInterval = options.lossScaleGrowthInterval;
      pm.addPass(createLossScalingPass(ls));
    }
  }
  //  2. rematerialization (--remat / --memory-budget): recompute activations
  //     in the backward pass under a memory budget; compiler/Training/Remat.
  //     `dlc --memory-budget` runs it separately (MemoryBudget.h).
  if (withRemat)
    buildRematPipeline(pm, options);
  //  3. partitioning: the pipeline stages are cut right after the training
  //     step is built (above; compiler/Partition), data-parallel
  //     collectives with the gradients (compiler/Training/DataParallel).
}

void dlc::buildRematPipeline(OpPassManager &pm,
                             const PipelineOptions &options) {
  if (!options.train || options.remat == "none")
    return;
  RematerializationPassOptions rp;
  rp.mode = options.remat;
  rp.arenaTarget = options.rematArenaTarget;
  pm.addPass(createRematerializationPass(rp));
}

std::string dlc::resolveLossScale(const PipelineOptions &options) {
  if (!options.lossScale.empty())
    return options.lossScale;
  return options.train && options.precision == "fp16" ? "dynamic" : "none";
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
