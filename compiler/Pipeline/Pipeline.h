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
#include "compiler/Support/OptionsBinder.h"
#include "compiler/Transforms/BuildTrainingStep.h"
#include "mlir/Pass/PassManager.h"

#include <optional>

namespace dlc {

/// Mixed precision and loss scaling (compiler/Training/MixedPrecision;
/// docs/mixed-precision.md).
struct PrecisionOptions {
  std::string precision = MixedPrecisionDefaults::kPrecision;
  /// "dynamic", "none", a positive number (a static scale), or empty: dynamic
  /// for fp16 training, none otherwise (resolveLossScale).
  std::string lossScale;
  double lossScaleInit = MixedPrecisionDefaults::kInitScale;
  double lossScaleGrowthFactor = MixedPrecisionDefaults::kGrowthFactor;
  double lossScaleBackoffFactor = MixedPrecisionDefaults::kBackoffFactor;
  int64_t lossScaleGrowthInterval = MixedPrecisionDefaults::kGrowthInterval;

  void bindOptions(OptionsBinder &binder);
};

/// Partitioning: data parallelism (compiler/Training/DataParallel;
/// docs/distributed.md) and pipeline stages (compiler/Partition;
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
  /// (compiler/Partition/Cost).
  std::string deviceModel = "h100";
  /// Micro-batches M per step of a pipeline (>= 1).
  int64_t microbatches = 4;
  /// The pipeline schedule, gpipe or 1f1b (runtime/schema/PipelineSchedule.h).
  std::string schedule = "1f1b";

  /// The gradient bucket size in bytes (kDefaultBucketBytes when
  /// `bucketSize` is empty or malformed: the driver rejects the latter).
  int64_t bucketBytes() const;

  void bindOptions(OptionsBinder &binder);
};

/// Rematerialization (compiler/Training/Remat; docs/remat.md).
struct RematOptions {
  /// none, sqrt or auto.
  std::string remat = "none";
  /// The planned peak the step must fit, as parseByteSize reads it; empty:
  /// no budget. `dlc` searches remat auto's target for it (MemoryBudget.h).
  std::string memoryBudget;
  /// With remat auto: the simulated activation peak to reach, bytes (0:
  /// recompute all it can); the memory-budget search sets it. Not a flag.
  int64_t rematArenaTarget = 0;

  void bindOptions(OptionsBinder &binder);
};

/// Options of the pipeline: whether to train, and each phase's options.
/// bindOptions declares every one of them once, for `dlc`'s flags and the
/// `dlc-pipeline` pipeline's options (the same names).
struct PipelineOptions : TrainingOptions,
                         PrecisionOptions,
                         PartitionOptions,
                         RematOptions {
  bool train = false;

  void bindOptions(OptionsBinder &binder);
  /// Whether the training step is cut into pipeline stages.
  bool pipelined() const { return train && pipelineStages > 1; }
};

/// What `loss-scale` means for |options|: "dynamic", "none" or the static
/// scale as written; empty `loss-scale` resolves to "dynamic" for fp16
/// training and "none" otherwise.
std::string resolveLossScale(const PipelineOptions &options);

/// The phases of dlc's pipeline, in order. Each is built by buildPhase from
/// the same options; `dlc`, `dlc-opt --dlc-pipeline` and the C++ API all run
/// them through it, and `dlc --compile-to=PHASE` stops after one.
enum class Phase {
  /// Pipeline partitioning (dlgraph-partition-pipeline, an analysis of
  /// @main): with `pipeline-stages` >= 1, records the stages the training
  /// step is later cut into. Before the training step: it reads @main.
  Partitioning,
  /// The training step (buildTrainingStepPipeline, with data-parallel
  /// averaging of the gradients) and, for a pipeline, its cut into per-stage
  /// functions; without `train`, @main renamed @forward.
  TrainingStep,
  /// Mixed precision (the cast policy), then either loss scaling or the
  /// early scheduling of each update after its gradient.
  MixedPrecision,
  /// Rematerialization: dlgraph-remat as `remat` asks, or, with
  /// `memory-budget`, the search for the remat target that fits it
  /// (MemoryBudget.h) followed by dlgraph-remat at that target.
  Rematerialization,
  /// Conversion to dlexec (buildGraphToExecPipeline).
  GraphToExec,
  /// The dlexec transforms: fusion and epilogues
  /// (buildExecTransformsPipeline).
  ExecTransforms,
  /// Memory planning (buildMemoryPlanningPipeline).
  MemoryPlanning,
};

/// The phases in order, and their names as `--compile-to` spells them:
/// "partitioning", "training-step", "mixed-precision", "rematerialization",
/// "graph-to-exec", "exec-transforms", "memory-planning".
llvm::ArrayRef<Phase> allPhases();
llvm::StringRef phaseName(Phase phase);
/// The phase named |name|; nullopt for any other name.
std::optional<Phase> parsePhase(llvm::StringRef name);

/// Adds the passes of |phase| to |pm| (on a builtin.module) as |options| ask;
/// a phase with nothing to do adds nothing.
void buildPhase(mlir::OpPassManager &pm, Phase phase,
                const PipelineOptions &options);

/// Adds the phases |first| to |last| (inclusive) in order.
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                   Phase first, Phase last);

/// The whole pipeline: every phase. The result is a planned dlexec module,
/// ready for codegen. Registered as `dlc-pipeline`.
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// The dlgraph -> dlgraph phases from the training step on: TrainingStep,
/// MixedPrecision and, unless |withRemat| is false, Rematerialization.
void buildGraphPipeline(mlir::OpPassManager &pm,
                        const PipelineOptions &options, bool withRemat);

/// Adds dlgraph-remat with |options|' remat and rematArenaTarget when
/// `train` is set and remat is not "none" (no budget search).
void buildRematPipeline(mlir::OpPassManager &pm,
                        const PipelineOptions &options);

/// Registers the `dlc-pipeline` pipeline (options of PipelineOptions) with
/// the global pass registry.
void registerPipeline();

} // namespace dlc

#endif // DLC_COMPILER_PIPELINE_PIPELINE_H
