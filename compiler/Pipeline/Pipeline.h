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

#include "compiler/GraphFusion/Passes.h"
#include "compiler/Partition/Passes.h"
#include "compiler/Support/OptionsBinder.h"
#include "compiler/Training/Passes.h"
#include "mlir/Pass/PassManager.h"

#include <optional>

namespace dlc {

/// Options of the pipeline: whether to train, and each phase's options.
/// bindOptions declares every one of them once, for `dlc`'s flags and the
/// `dlc-pipeline` pipeline's options (the same names).
struct PipelineOptions : FusionOptions,
                         TrainingOptions,
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
  /// dlgraph fusions the training step builds on: attention
  /// (dlgraph-fuse-attention, unless `fuse-attention=false`).
  GraphFusion,
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
/// "graph-fusion", "partitioning", "training-step", "mixed-precision", "rematerialization",
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

/// The three lowering phases in order: GraphToExec, ExecTransforms,
/// MemoryPlanning. The result is a module of dlexec variables and planned
/// dlexec functions. Registered as the pipeline `dlc-lowering-pipeline`.
void buildLoweringPipeline(mlir::OpPassManager &pm);

/// Registers the `dlc-lowering-pipeline` pipeline with the global pass
/// registry.
void registerLoweringPipeline();

/// Registers the `dlc-pipeline` pipeline (options of PipelineOptions) with
/// the global pass registry.
void registerPipeline();

} // namespace dlc

#endif // DLC_COMPILER_PIPELINE_PIPELINE_H
