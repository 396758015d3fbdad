//===- Pipeline.cpp - dlc's import-independent pass pipeline --------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Conversion/GraphToExec/Passes.h"
#include "compiler/ExecTransforms/Passes.h"
#include "compiler/Partition/Passes.h"
#include "compiler/Pipeline/MemoryBudget.h"
#include "compiler/Training/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace dlc;

/// Phase::TrainingStep.
static void buildTrainingStepPhase(OpPassManager &pm,
                                   const PipelineOptions &options) {
  if (options.train)
    buildTrainingStepPipeline(pm, options, [&](OpPassManager &gradients) {
      // Data parallelism (--data-parallel): the gradients' mean over the
      // ranks; compiler/Partition.
      if (options.dataParallel)
        gradients.addPass(createDataParallelPass(options));
    });
  else
    pm.addPass(createRenameMainToForwardPass());
  // Pipeline stages (--pipeline-stages): the staged step cut into each
  // stage's forward, backward and update; compiler/Partition.
  if (options.pipelined())
    pm.addPass(createSplitPipelineStagesPass(options));
}

/// Phase::MixedPrecision: the cast policy on every function, then loss
/// scaling of @train_step (it scales the backward seed and unscales the f32
/// gradients the updates read); compiler/Training.
static void buildMixedPrecisionPhase(OpPassManager &pm,
                                     const PipelineOptions &options) {
  if (options.precision != "fp32")
    pm.addPass(createMixedPrecisionPass(options));
  if (!options.train)
    return;
  std::string scale = resolveLossScale(options);
  // Each update right after its gradient is final (the gradients leave the
  // arena early); with loss scaling every update waits for the overflow
  // check instead.
  if (scale == "none" && !options.pipelined())
    pm.addPass(createScheduleUpdatesPass());
  if (scale != "none") {
    PrecisionOptions resolved = options;
    resolved.lossScale = scale;
    pm.addPass(createLossScalingPass(resolved));
  }
}

void dlc::buildPhase(OpPassManager &pm, Phase phase,
                     const PipelineOptions &options) {
  switch (phase) {
  case Phase::GraphFusion:
    if (options.fuseAttention)
      pm.addPass(createFuseAttentionPass());
    return;
  case Phase::Partitioning:
    if (options.pipelineStages < 1)
      return;
    pm.addPass(createPartitionPipelinePass(options));
    return;
  case Phase::TrainingStep:
    return buildTrainingStepPhase(pm, options);
  case Phase::MixedPrecision:
    return buildMixedPrecisionPhase(pm, options);
  case Phase::Rematerialization:
    // With a budget, the search plans clones of the module and runs
    // dlgraph-remat at the target that fits (MemoryBudget.h).
    if (options.train && !options.memoryBudget.empty()) {
      if (std::optional<int64_t> budget = parseByteSize(options.memoryBudget))
        pm.addPass(createFitMemoryBudgetPass(*budget));
      return;
    }
    return buildRematPipeline(pm, options);
  case Phase::GraphToExec:
    return buildGraphToExecPipeline(pm);
  case Phase::ExecTransforms:
    return buildExecTransformsPipeline(pm);
  case Phase::MemoryPlanning:
    return buildMemoryPlanningPipeline(pm);
  }
}

llvm::ArrayRef<Phase> dlc::allPhases() {
  static const Phase phases[] = {
      Phase::GraphFusion,       Phase::Partitioning,
      Phase::TrainingStep,      Phase::MixedPrecision,
      Phase::Rematerialization, Phase::GraphToExec,  Phase::ExecTransforms,
      Phase::MemoryPlanning};
  return phases;
}

llvm::StringRef dlc::phaseName(Phase phase) {
  switch (phase) {
  case Phase::GraphFusion:
    return "graph-fusion";
  case Phase::Partitioning:
    return "partitioning";
  case Phase::TrainingStep:
    return "training-step";
  case Phase::MixedPrecision:
    return "mixed-precision";
  case Phase::Rematerialization:
    return "rematerialization";
  case Phase::GraphToExec:
    return "graph-to-exec";
  case Phase::ExecTransforms:
    return "exec-transforms";
  case Phase::MemoryPlanning:
    return "memory-planning";
  }
  return "";
}

std::optional<Phase> dlc::parsePhase(llvm::StringRef name) {
  for (Phase p : allPhases())
    if (phaseName(p) == name)
      return p;
  return std::nullopt;
}

void dlc::buildPipeline(OpPassManager &pm, const PipelineOptions &options,
                        Phase first, Phase last) {
  for (Phase p : allPhases())
    if (p >= first && p <= last)
      buildPhase(pm, p, options);
}

void dlc::buildGraphPipeline(OpPassManager &pm,
                             const PipelineOptions &options, bool withRemat) {
  buildPipeline(pm, options, Phase::TrainingStep,
                withRemat ? Phase::Rematerialization : Phase::MixedPrecision);
}

void dlc::buildRematPipeline(OpPassManager &pm,
                             const PipelineOptions &options) {
  if (!options.train || options.remat == "none")
    return;
  pm.addPass(createRematerializationPass(options));
}

std::string dlc::resolveLossScale(const PipelineOptions &options) {
  if (!options.lossScale.empty())
    return options.lossScale;
  return options.train && options.precision == "fp16" ? "dynamic" : "none";
}

void dlc::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  buildPipeline(pm, options, Phase::GraphFusion, Phase::MemoryPlanning);
}

void dlc::buildLoweringPipeline(OpPassManager &pm) {
  buildPipeline(pm, PipelineOptions(), Phase::GraphToExec,
                Phase::MemoryPlanning);
}

void dlc::registerLoweringPipeline() {
  PassPipelineRegistration<>(
      "dlc-lowering-pipeline",
      "canonicalize, lower dlgraph to dlexec, fuse elementwise kernels, "
      "canonicalize, fuse gemm epilogues, plan memory",
      [](OpPassManager &pm) { buildLoweringPipeline(pm); });
}

void dlc::registerPipeline() {
  PassPipelineRegistration<BoundOptions<PipelineOptions>>(
      "dlc-pipeline",
      "dlc's pipeline on an imported module: pipeline partitioning "
      "(pipeline-stages), the training step (train=true) or @main renamed "
      "@forward, mixed precision, rematerialization, then "
      "dlc-lowering-pipeline; its options are dlc's flags of the same names",
      [](OpPassManager &pm, const BoundOptions<PipelineOptions> &options) {
        buildPipeline(pm, options.get());
      });
}

void dlc::PipelineOptions::bindOptions(OptionsBinder &b) {
  b.opt("train", train,
        "Compile a training step (forward, loss, backward, optimizer "
        "update)");
  FusionOptions::bindOptions(b);
  TrainingOptions::bindOptions(b);
  PrecisionOptions::bindOptions(b);
  PartitionOptions::bindOptions(b);
  RematOptions::bindOptions(b);
}
