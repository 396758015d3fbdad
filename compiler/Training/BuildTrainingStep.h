//===- BuildTrainingStep.h - the training-step pipeline ---------*- C++ -*-===//
//
// The options of compiled training (loss, optimizer and its hyper-parameters)
// with their one set of defaults, and the pipeline that turns an imported
// @main into @forward + @train_step out of the training passes declared in
// Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRANSFORMS_BUILDTRAININGSTEP_H
#define DLC_COMPILER_TRANSFORMS_BUILDTRAININGSTEP_H

#include "compiler/Support/OptionsBinder.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace dlc {

/// Options of the training step. The member initializers (from the
/// `kDefault*` constants) are the only defaults of these options:
/// bindOptions declares each one once, for `dlc`'s flags, the
/// `dlgraph-build-training-step` and `dlc-pipeline` pipelines; the training
/// passes' options (Passes.td) start from the same constants.
struct TrainingOptions {
  static constexpr const char *kDefaultLoss = "softmax-cross-entropy";
  static constexpr const char *kDefaultOptimizer = "sgd";
  /// What `dlc --train` has always used; `torch.optim.SGD` has no default.
  static constexpr double kDefaultLearningRate = 0.01;
  static constexpr double kDefaultMomentum = 0.0;
  /// Negative: the optimizer's PyTorch default (0 for sgd and adam, 0.01 for
  /// adamw), see `resolveWeightDecay`.
  static constexpr double kDefaultWeightDecay = -1.0;
  static constexpr double kDefaultBeta1 = 0.9;
  static constexpr double kDefaultBeta2 = 0.999;
  static constexpr double kDefaultAdamEpsilon = 1.0e-8;
  /// StepLR's default decay factor (torch.optim.lr_scheduler.StepLR).
  static constexpr double kDefaultGamma = 0.1;

  std::string loss = kDefaultLoss;
  std::string lossOutput;
  std::string optimizer = kDefaultOptimizer;
  double lr = kDefaultLearningRate;
  double momentum = kDefaultMomentum;
  double weightDecay = kDefaultWeightDecay;
  double beta1 = kDefaultBeta1;
  double beta2 = kDefaultBeta2;
  double adamEpsilon = kDefaultAdamEpsilon;
  bool exposeGradients = false;
  /// Training recipes (issue 16; docs/dlc.md "Training recipes").
  double labelSmoothing = 0.0;
  std::string freeze;
  std::string noFreeze;
  std::string trainable;
  std::string noWeightDecay;
  std::string lrSchedule;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;
  double minLr = 0.0;
  int64_t stepSize = 0;
  double gamma = kDefaultGamma;
  int64_t accumulate = 1;
  double clipGradNorm = 0.0;

  /// Declares each option (flag name, help) once; see OptionsBinder.
  void bindOptions(OptionsBinder &binder);
  /// The one validation of these values, which `dlc` (checkCompileOptions)
  /// and the training passes both run: the loss and optimizer names, the
  /// optimizer's hyperparameters, the recipe (checkTrainingRecipe),
  /// --accumulate, and the combinations inside these options. Returns the
  /// first problem as one line naming dlc's flag, or "".
  std::string check() const;
};

/// The learning-rate schedules of `lr-schedule`, in the order messages list
/// them: "constant", "linear", "cosine", "step" (docs/dlc.md).
llvm::ArrayRef<llvm::StringLiteral> supportedLrSchedules();

/// The plain values of the recipe options that --dlgraph-apply-optimizer and
/// --dlgraph-append-loss take (TrainingOptions' members of the same names).
struct TrainingRecipe {
  std::string lrSchedule;
  double lr = TrainingOptions::kDefaultLearningRate;
  int64_t warmupSteps = 0, totalSteps = 0, stepSize = 0;
  double minLr = 0, gamma = TrainingOptions::kDefaultGamma;
  double clipGradNorm = 0, labelSmoothing = 0;
};

/// |v| as the options' messages print a number (printf's %g: "0.01",
/// "1e+39").
std::string formatOptionValue(double v);

/// The recipe values of |o|.
TrainingRecipe recipeOf(const TrainingOptions &o);

/// Checks a recipe: the learning-rate schedule (lr-schedule, warmup-steps,
/// total-steps, min-lr, step-size, gamma, with lr), clip-grad-norm and
/// label-smoothing. Returns the first problem as one line naming dlc's flag
/// (e.g. "--lr-schedule cosine needs --total-steps T"), or "" when there is
/// none. The one check both `dlc` and the training passes run.
std::string checkTrainingRecipe(const TrainingRecipe &o);

/// The optimizers the training step supports, in the order messages list
/// them: "sgd", "adam", "adamw" (torch.optim semantics).
llvm::ArrayRef<llvm::StringLiteral> supportedOptimizers();

/// The losses `loss` may name: "softmax-cross-entropy".
llvm::ArrayRef<llvm::StringLiteral> supportedLosses();

/// The weight decay the update uses: |weightDecay| when >= 0, else the
/// PyTorch default of |optimizer| (0.01 for adamw, 0 otherwise).
double resolveWeightDecay(llvm::StringRef optimizer, double weightDecay);

/// Adds the training passes to |pm| (on a builtin.module), in order:
/// dlgraph-append-loss, dlgraph-decompose-batch-norm-for-training,
/// dlgraph-differentiate, what |beforeOptimizer| adds (passes on the
/// gradients, e.g. data-parallel averaging), dlgraph-apply-optimizer, each
/// with its part of |options|. Registered as the pipeline
/// `dlgraph-build-training-step`.
void buildTrainingStepPipeline(
    mlir::OpPassManager &pm, const TrainingOptions &options,
    llvm::function_ref<void(mlir::OpPassManager &)> beforeOptimizer = {});

/// Registers the `dlgraph-build-training-step` pipeline (with the options of
/// TrainingOptions) with the global pass registry.
void registerTrainingStepPipeline();

} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_BUILDTRAININGSTEP_H
