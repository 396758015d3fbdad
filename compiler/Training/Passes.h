//===- Passes.h - the training phase's passes --------------------*- C++ -*-===//
//
// The training phase on dlgraph (Passes.td): the training step (loss,
// autodiff, optimizer; BuildTrainingStep.h), mixed precision and loss scaling
// (docs/mixed-precision.md) and rematerialization (docs/remat.md).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_PASSES_H
#define DLC_COMPILER_TRAINING_PASSES_H

#include "compiler/Support/OptionsBinder.h"
#include "compiler/Training/BuildTrainingStep.h"
#include "dialects/Exec/ExecAttributes.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <string>

namespace dlc {

/// Defaults of mixed precision. The loss-scaling ones are
/// torch.cuda.amp.GradScaler's (init_scale=2**16, growth_factor=2.0,
/// backoff_factor=0.5, growth_interval=2000).
struct MixedPrecisionDefaults {
  static constexpr const char *kPrecision = "fp32";
  static constexpr double kInitScale = 65536.0;
  static constexpr double kGrowthFactor = 2.0;
  static constexpr double kBackoffFactor = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;
};

/// The values `--precision` accepts: "fp32", "bf16", "fp16".
llvm::ArrayRef<llvm::StringLiteral> supportedPrecisions();

/// The values `--remat` accepts: "none", "sqrt", "auto".
llvm::ArrayRef<llvm::StringLiteral> supportedRematModes();

/// What dlgraph-remat recorded on @train_step (all 0 when it did not run);
/// the conversion to dlexec carries it to the planned module.
using RematSummary = exec::RematSummary;

/// Reads the summary from |module|'s @train_step.
RematSummary readRematSummary(mlir::ModuleOp module);

/// Mixed precision and loss scaling (compiler/Training;
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
  /// The one validation of these values, which `dlc` (checkCompileOptions)
  /// and the phase's passes both run. Returns the first problem as one line
  /// naming dlc's flag, or "".
  std::string check() const;
};

/// Rematerialization (compiler/Training; docs/remat.md).
struct RematOptions {
  /// none, sqrt or auto.
  std::string remat = "none";
  /// The planned peak the step must fit, as parseByteSize reads it; empty:
  /// no budget. `dlc` searches remat auto's target for it (MemoryBudget.h).
  std::string memoryBudget;
  /// With remat auto: the simulated activation peak to reach, bytes (0:
  /// recompute all it can); the memory-budget search sets it. Not a flag:
  /// dlgraph-remat's option `arena-target`.
  int64_t rematArenaTarget = 0;

  void bindOptions(OptionsBinder &binder);
  /// The one validation of these values, which `dlc` (checkCompileOptions)
  /// and the phase's passes both run. Returns the first problem as one line
  /// naming dlc's flag, or "".
  std::string check() const;
  /// Binds only `memory-budget` to |memoryBudget| (for a pass that reads the
  /// budget, not remat's other options).
  static void bindMemoryBudget(OptionsBinder &binder, std::string &memoryBudget);
};

/// The training step's passes with their options (the pipeline's
/// buildTrainingStepPipeline and dlc-opt's `--dlgraph-append-loss="..."`).
std::unique_ptr<mlir::Pass> createAppendLossPass(const TrainingOptions &options);
std::unique_ptr<mlir::Pass>
createDifferentiatePass(const TrainingOptions &options);
std::unique_ptr<mlir::Pass>
createApplyOptimizerPass(const TrainingOptions &options);
/// dlgraph-mixed-precision (`precision`) and dlgraph-loss-scaling
/// (`loss-scale` "dynamic" or a static scale, and the dynamic scale's
/// `loss-scale-*` options) with |options|.
std::unique_ptr<mlir::Pass>
createMixedPrecisionPass(const PrecisionOptions &options);
std::unique_ptr<mlir::Pass>
createLossScalingPass(const PrecisionOptions &options);
/// dlgraph-remat (`remat` and `arena-target`) with |options|.
std::unique_ptr<mlir::Pass>
createRematerializationPass(const RematOptions &options);

/// Declares `create<Name>Pass()` for every pass of Passes.td (the passes
/// above with their phase struct's defaults).
#define GEN_PASS_DECL
#include "compiler/Training/Passes.h.inc"

/// Registers every pass of the phase (`registerDLCTrainingPasses()`).
#define GEN_PASS_REGISTRATION
#include "compiler/Training/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_PASSES_H
