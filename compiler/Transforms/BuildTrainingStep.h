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

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace dlc {

/// Options of the training step. The `kDefault*` constants are the only
/// defaults of these options: the training passes' options (Passes.td), this
/// struct's members and `dlc`'s flags all start from them.
struct TrainingOptions : mlir::PassPipelineOptions<TrainingOptions> {
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

  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("Loss applied to the first output: softmax-cross-entropy"),
      llvm::cl::init(kDefaultLoss)};
  Option<std::string> lossOutput{
      *this, "loss-output",
      llvm::cl::desc("Name (dlgraph.name) of a scalar model output to use as "
                     "the loss instead")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, adam or adamw (torch.optim semantics)"),
      llvm::cl::init(kDefaultOptimizer)};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(kDefaultLearningRate)};
  Option<double> momentum{
      *this, "momentum",
      llvm::cl::desc("SGD momentum (torch.optim.SGD, no dampening, no "
                     "Nesterov)"),
      llvm::cl::init(kDefaultMomentum)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay; negative means the optimizer's PyTorch "
                     "default (0 for sgd and adam, 0.01 for adamw)"),
      llvm::cl::init(kDefaultWeightDecay)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"),
                       llvm::cl::init(kDefaultBeta1)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"),
                       llvm::cl::init(kDefaultBeta2)};
  Option<double> adamEpsilon{*this, "adam-epsilon",
                             llvm::cl::desc("Adam epsilon"),
                             llvm::cl::init(kDefaultAdamEpsilon)};
  Option<bool> exposeGradients{
      *this, "expose-gradients",
      llvm::cl::desc("Also return each trainable parameter's gradient from "
                     "@train_step, named \"<parameter>.grad\""),
      llvm::cl::init(false)};
  /// Training recipes (issue 16; docs/dlc.md "Training recipes").
  Option<double> labelSmoothing{
      *this, "label-smoothing",
      llvm::cl::desc("Label smoothing of softmax-cross-entropy in [0, 1] "
                     "(torch.nn.functional.cross_entropy's label_smoothing)"),
      llvm::cl::init(0.0)};
  Option<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("Regex (POSIX extended, matched anywhere in the name) of "
                     "the variables that are not trained")};
  Option<std::string> noFreeze{
      *this, "no-freeze",
      llvm::cl::desc("Regex of the variables the buffer rule (non-finite "
                     "values, attention masks, sin/cos frequencies) must not "
                     "freeze")};
  Option<std::string> trainable{
      *this, "trainable",
      llvm::cl::desc("File naming the variables to train, one per line "
                     "(PyTorch's named_parameters()); the others are frozen")};
  Option<std::string> noWeightDecay{
      *this, "no-weight-decay",
      llvm::cl::desc("Regex of the trained parameters updated without weight "
                     "decay")};
  Option<std::string> lrSchedule{
      *this, "lr-schedule",
      llvm::cl::desc("constant, linear, cosine or step; empty: a constant lr "
                     "and no `lr` result")};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("Linear warm-up updates"),
                              llvm::cl::init(0)};
  Option<int64_t> totalSteps{
      *this, "total-steps",
      llvm::cl::desc("Update at which linear/cosine decay reaches min-lr"),
      llvm::cl::init(0)};
  Option<double> minLr{*this, "min-lr",
                       llvm::cl::desc("Final lr of linear/cosine decay"),
                       llvm::cl::init(0.0)};
  Option<int64_t> stepSize{
      *this, "step-size",
      llvm::cl::desc("step schedule: updates between lr decays"),
      llvm::cl::init(0)};
  Option<double> gamma{*this, "gamma",
                       llvm::cl::desc("step schedule: lr decay factor"),
                       llvm::cl::init(kDefaultGamma)};
  Option<int64_t> accumulate{
      *this, "accumulate",
      llvm::cl::desc("Accumulate the gradients of N calls; the optimizer "
                     "applies on every N-th call"),
      llvm::cl::init(1)};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the global L2 norm of the gradients to this value "
                     "(torch.nn.utils.clip_grad_norm_); 0: no clipping"),
      llvm::cl::init(0.0)};
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
