//===- Pipeline.cpp - dlc's import-independent pass pipeline --------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Lowering/Pipelines.h"
#include "compiler/Partition/Cost/Passes.h"
#include "compiler/Pipeline/MemoryBudget.h"
#include "compiler/Partition/Stages/Passes.h"
#include "compiler/Training/DataParallel/Passes.h"
#include "compiler/Training/MixedPrecision/Passes.h"
#include "compiler/Transforms/Passes.h"
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
      // ranks; compiler/Training/DataParallel.
      if (options.dataParallel) {
        DataParallelPassOptions dp;
        dp.bucketSize = options.bucketBytes();
        gradients.addPass(createDataParallelPass(dp));
      }
    });
  else
    pm.addPass(createRenameMainToForwardPass());
  // Pipeline stages (--pipeline-stages): the staged step cut into each
  // stage's forward, backward and update; compiler/Partition/Stages.
  if (options.pipelined()) {
    SplitPipelineStagesPassOptions sp;
    sp.microBatches = options.microbatches;
    sp.schedule = options.schedule;
    pm.addPass(createSplitPipelineStagesPass(sp));
  }
}

/// Phase::MixedPrecision: the cast policy on every function, then loss
/// scaling of @train_step (it scales the backward seed and unscales the f32
/// gradients the updates read); compiler/Training/MixedPrecision.
static void buildMixedPrecisionPhase(OpPassManager &pm,
                                     const PipelineOptions &options) {
  if (options.precision != "fp32") {
    MixedPrecisionPassOptions mp;
    mp.precision = options.precision;
    pm.addPass(createMixedPrecisionPass(mp));
  }
  if (!options.train)
    return;
  std::string scale = resolveLossScale(options);
  // Each update right after its gradient is final (the gradients leave the
  // arena early); with loss scaling every update waits for the overflow
  // check instead.
  if (scale == "none" && !options.pipelined())
    pm.addPass(createScheduleUpdatesPass());
  if (scale != "none") {
    LossScalingPassOptions ls;
    ls.dynamic = scale == "dynamic";
    ls.initScale =
        ls.dynamic ? double(options.lossScaleInit) : std::stod(scale);
    ls.growthFactor = options.lossScaleGrowthFactor;
    ls.backoffFactor = options.lossScaleBackoffFactor;
    ls.growthInterval = options.lossScaleGrowthInterval;
    pm.addPass(createLossScalingPass(ls));
  }
}

void dlc::buildPhase(OpPassManager &pm, Phase phase,
                     const PipelineOptions &options) {
  switch (phase) {
  case Phase::Partitioning:
    if (options.pipelineStages < 1)
      return;
    {
      PartitionPipelinePassOptions po;
      po.stages = options.pipelineStages;
      po.deviceModel = options.deviceModel;
      if (!options.pipelineSplit.empty())
        for (llvm::StringRef name :
             llvm::split(llvm::StringRef(options.pipelineSplit), ','))
          po.split.push_back(name.str());
      pm.addPass(createPartitionPipelinePass(po));
    }
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
      Phase::Partitioning,      Phase::TrainingStep, Phase::MixedPrecision,
      Phase::Rematerialization, Phase::GraphToExec,  Phase::ExecTransforms,
      Phase::MemoryPlanning};
  return phases;
}

llvm::StringRef dlc::phaseName(Phase phase) {
  switch (phase) {
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
  buildPipeline(pm, options, Phase::Partitioning, Phase::MemoryPlanning);
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

int64_t dlc::PartitionOptions::bucketBytes() const {
  if (bucketSize.empty())
    return kDefaultBucketBytes;
  std::optional<int64_t> bytes = parseByteSize(bucketSize);
  return bytes && *bytes > 0 ? *bytes : kDefaultBucketBytes;
}

void dlc::PrecisionOptions::bindOptions(OptionsBinder &b) {
  b.opt("precision", precision,
        "Compute precision of the training step and forward: fp32, bf16 or "
        "fp16 (mixed precision: f32 master weights, GEMM and convolution in "
        "the low type, reductions and the loss in f32; "
        "docs/mixed-precision.md; default {default})");
  b.opt("loss-scale", lossScale,
        "Loss scaling for --train: dynamic (torch.cuda.amp.GradScaler's "
        "rules), none, or a number (a static scale); default dynamic with "
        "--precision fp16, none otherwise",
        llvm::cl::value_desc("dynamic|none|N"));
  b.opt("loss-scale-init", lossScaleInit,
        "Initial dynamic loss scale (default {default})");
  b.opt("loss-scale-growth-factor", lossScaleGrowthFactor,
        "Dynamic loss scale growth factor (default {default})");
  b.opt("loss-scale-backoff-factor", lossScaleBackoffFactor,
        "Dynamic loss scale backoff factor on inf/NaN gradients (default "
        "{default})");
  b.opt("loss-scale-growth-interval", lossScaleGrowthInterval,
        "Finite steps between loss scale growths (default {default})");
}

void dlc::PartitionOptions::bindOptions(OptionsBinder &b) {
  using llvm::cl::value_desc;
  b.opt("data-parallel", dataParallel,
        "With --train: a step for data-parallel training on any number of "
        "ranks (dlrt launch, torchrun, mpirun): the gradients are averaged "
        "over the ranks with all-reduces in buckets, issued while the "
        "backward runs, as PyTorch DDP; docs/distributed.md");
  b.opt("bucket-size", bucketSize,
        "With --data-parallel: the most bytes of one gradient bucket, in "
        "bytes or with KiB, MiB or GiB (default 25MiB, DDP's)",
        value_desc("SIZE"));
  b.opt("pipeline-stages", pipelineStages,
        "With --train: split the training step into S pipeline stages (by a "
        "roofline cost model, or --pipeline-split); the package runs on S x "
        "D ranks under a launcher, each stage's forward and backward per "
        "micro-batch in --schedule order (docs/pipeline.md)",
        value_desc("S"));
  b.opt("device-model", deviceModel,
        "With --pipeline-stages: the device the cost model assumes: h100 "
        "(H100 SXM5 datasheet), host (this machine, one core per stage, "
        "measured) or FILE.json (default {default})",
        value_desc("h100|host|FILE.json"));
  b.opt("pipeline-split", pipelineSplit,
        "With --pipeline-stages: the ONNX node names ending each stage but "
        "the last, comma-separated, instead of the cost model's split",
        value_desc("NODE[,NODE...]"));
  b.opt("microbatches", microbatches,
        "With --pipeline-stages: micro-batches per step; the global batch is "
        "M x --batch-size",
        value_desc("M"));
  b.opt("schedule", schedule,
        "With --pipeline-stages: the pipeline schedule, gpipe (all "
        "forwards, then all backwards) or 1f1b (PipeDream-Flush; default)",
        value_desc("gpipe|1f1b"));
}

void dlc::RematOptions::bindOptions(OptionsBinder &b) {
  b.opt("remat", remat,
        "Activation checkpointing for --train: none, sqrt (Chen et al. "
        "2016's sqrt(n) segments) or auto (recompute the cheapest "
        "activations to a memory target; docs/remat.md; default {default})",
        llvm::cl::value_desc("none|sqrt|auto"));
  b.opt("memory-budget", memoryBudget,
        "With --train: the planned peak memory (persistent + inputs + arena "
        "+ workspace) the step must fit, in bytes or with KiB, MiB or GiB; "
        "recomputes the activations that add the fewest FLOPs (implies "
        "--remat auto); an unreachable budget is an error naming the "
        "smallest reachable one",
        llvm::cl::value_desc("SIZE"));
}

void dlc::PipelineOptions::bindOptions(OptionsBinder &b) {
  b.opt("train", train,
        "Compile a training step (forward, loss, backward, optimizer "
        "update)");
  TrainingOptions::bindOptions(b);
  PrecisionOptions::bindOptions(b);
  PartitionOptions::bindOptions(b);
  RematOptions::bindOptions(b);
}
