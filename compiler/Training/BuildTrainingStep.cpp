//===- BuildTrainingStep.cpp - the training passes as one pipeline --------===//
#include "compiler/Training/BuildTrainingStep.h"
#include "compiler/Training/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedOptimizers() {
  static constexpr llvm::StringLiteral kOptimizers[] = {"sgd", "adam", "adamw"};
  return kOptimizers;
}

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedLosses() {
  static constexpr llvm::StringLiteral kLosses[] = {"softmax-cross-entropy"};
  return kLosses;
}

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedLrSchedules() {
  static constexpr llvm::StringLiteral kSchedules[] = {"constant", "linear",
                                                       "cosine", "step"};
  return kSchedules;
}

void dlc::TrainingOptions::bindOptions(OptionsBinder &b) {
  using llvm::cl::value_desc;
  b.opt("loss", loss,
        "Loss added by --train: softmax-cross-entropy (over the last axis of "
        "the first output, against int64 class ids in a new input 'labels')");
  b.opt("loss-output", lossOutput,
        "Use this scalar model output as the loss instead", value_desc("name"));
  b.opt("optimizer", optimizer,
        "Optimizer for --train: sgd, adam or adamw (torch.optim semantics; "
        "default {default})");
  b.opt("lr", lr, "Learning rate (default {default})");
  b.opt("momentum", momentum, "SGD momentum (default {default})");
  b.opt("weight-decay", weightDecay,
        "Weight decay (default " +
            OptionsBinder::formatNumber(resolveWeightDecay("sgd", weightDecay)) +
            "; adamw: " +
            OptionsBinder::formatNumber(
                resolveWeightDecay("adamw", weightDecay)) +
            ")");
  b.opt("beta1", beta1, "Adam beta1 (default {default})");
  b.opt("beta2", beta2, "Adam beta2 (default {default})");
  b.opt("adam-epsilon", adamEpsilon, "Adam epsilon (default {default})");
  b.opt("expose-gradients", exposeGradients,
        "With --train: train_step also returns each trainable parameter's "
        "gradient as output '<parameter>.grad' (for dlrt train "
        "--save-gradients; costs their memory and a copy per step)");
  b.opt("lr-schedule", lrSchedule,
        "With --train: the learning rate of update t = 1, 2, ... (counted in "
        "the step, so --resume continues it): constant, linear, cosine or "
        "step, after a linear warm-up of --warmup-steps; train_step returns "
        "it as output 'lr' (docs/dlc.md, Training recipes)",
        value_desc("constant|linear|cosine|step"));
  b.opt("warmup-steps", warmupSteps,
        "With --lr-schedule: lr = lr * t / W for the first W updates "
        "(default {default})",
        value_desc("W"));
  b.opt("total-steps", totalSteps,
        "With --lr-schedule linear or cosine: the update T at which the lr "
        "reaches --min-lr (and stays)",
        value_desc("T"));
  b.opt("min-lr", minLr,
        "With --lr-schedule linear or cosine: the final lr (default "
        "{default})",
        value_desc("M"));
  b.opt("step-size", stepSize,
        "With --lr-schedule step: lr = lr * gamma^floor(t / K)",
        value_desc("K"));
  b.opt("gamma", gamma,
        "With --lr-schedule step: the decay factor (default {default})");
  b.opt("clip-grad-norm", clipGradNorm,
        "With --train: scale the gradients by MAX / (norm + 1e-6) when their "
        "global L2 norm exceeds MAX (torch.nn.utils.clip_grad_norm_); "
        "train_step returns the norm as output 'grad_norm'",
        value_desc("MAX"));
  b.opt("accumulate", accumulate,
        "With --train: each call of train_step adds its gradients to "
        "persistent accumulators and the optimizer applies their mean on "
        "every N-th call (one step on the N-times batch; the step counter "
        "and --lr-schedule count updates; default {default})",
        value_desc("N"));
  b.opt("no-weight-decay", noWeightDecay,
        "With --train: initializers whose name matches REGEX (POSIX "
        "extended, anywhere in the name) get weight decay 0",
        value_desc("REGEX"));
  b.opt("freeze", freeze,
        "With --train: initializers whose name matches REGEX are not trained "
        "(no gradient, no optimizer state)",
        value_desc("REGEX"));
  b.opt("no-freeze", noFreeze,
        "With --train: initializers whose name matches REGEX are trained "
        "even when dlc's rule takes them for buffers (non-finite values, "
        "attention masks, sin/cos position frequencies)",
        value_desc("REGEX"));
  b.opt("trainable", trainable,
        "With --train: train exactly the initializers FILE names, one per "
        "line (PyTorch's named_parameters()); the others are constants",
        value_desc("FILE"));
  b.opt("label-smoothing", labelSmoothing,
        "With --train: label smoothing E in [0, 1] of the "
        "softmax-cross-entropy loss (PyTorch's label_smoothing; default "
        "{default})",
        value_desc("E"));
}

std::string dlc::formatOptionValue(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  return s;
}

std::string dlc::TrainingOptions::check() const {
  const auto &num = formatOptionValue;
  if (!llvm::is_contained(supportedOptimizers(), optimizer))
    return "unknown --optimizer '" + optimizer +
           "'; supported: " + llvm::join(supportedOptimizers(), ", ");
  if (!llvm::is_contained(supportedLosses(), loss))
    return "unknown --loss '" + loss +
           "'; supported: " + llvm::join(supportedLosses(), ", ");
  if (lr < 0)
    return "--lr must be >= 0, got " + num(lr);
  if (momentum < 0)
    return "--momentum must be >= 0, got " + num(momentum);
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    return "--beta1 and --beta2 must be in [0, 1), got " + num(beta1) +
           " and " + num(beta2);
  if (adamEpsilon < 0)
    return "--adam-epsilon must be >= 0, got " + num(adamEpsilon);
  if (!trainable.empty() && !noFreeze.empty())
    return "--no-freeze does not combine with --trainable, which names "
           "every trained initializer";
  if (std::string problem = checkTrainingRecipe(recipeOf(*this));
      !problem.empty())
    return problem;
  if (labelSmoothing != 0 && !lossOutput.empty())
    return "--label-smoothing applies to softmax-cross-entropy, not to a "
           "model-computed --loss-output";
  if (accumulate < 1 || accumulate > (int64_t(1) << 24))
    return "--accumulate must be in [1, 2^24] (the call count is f32), got " +
           std::to_string(accumulate);
  return "";
}

dlc::TrainingRecipe dlc::recipeOf(const TrainingOptions &o) {
  TrainingRecipe r;
  r.lrSchedule = o.lrSchedule;
  r.lr = o.lr;
  r.warmupSteps = o.warmupSteps;
  r.totalSteps = o.totalSteps;
  r.stepSize = o.stepSize;
  r.minLr = o.minLr;
  r.gamma = o.gamma;
  r.clipGradNorm = o.clipGradNorm;
  r.labelSmoothing = o.labelSmoothing;
  return r;
}

std::string dlc::checkTrainingRecipe(const TrainingRecipe &o) {
  const auto &num = formatOptionValue;
  const std::string kind = o.lrSchedule;
  if (!(o.labelSmoothing >= 0 && o.labelSmoothing <= 1))
    return "--label-smoothing must be in [0, 1], got " + num(o.labelSmoothing);
  if (!(o.clipGradNorm >= 0) || !std::isfinite(o.clipGradNorm))
    return "--clip-grad-norm must be a positive number (0: no clipping), "
           "got " +
           num(o.clipGradNorm);
  if (kind.empty()) {
    const char *flag = o.warmupSteps != 0                ? "--warmup-steps"
                       : o.totalSteps != 0               ? "--total-steps"
                       : o.minLr != 0                    ? "--min-lr"
                       : o.stepSize != 0                 ? "--step-size"
                       : o.gamma != TrainingOptions::kDefaultGamma ? "--gamma"
                                                                   : nullptr;
    if (flag)
      return std::string(flag) + " needs --lr-schedule";
    return "";
  }
  if (!llvm::is_contained(supportedLrSchedules(), kind))
    return "unknown --lr-schedule '" + kind +
           "'; supported: " + llvm::join(supportedLrSchedules(), ", ");
  if (o.warmupSteps < 0)
    return "--warmup-steps must be >= 0, got " + std::to_string(o.warmupSteps);
  if (o.totalSteps < 0)
    return "--total-steps must be >= 0, got " + std::to_string(o.totalSteps);
  if (o.stepSize < 0)
    return "--step-size must be >= 1, got " + std::to_string(o.stepSize);
  if (!(o.minLr >= 0) || !std::isfinite(o.minLr))
    return "--min-lr must be >= 0, got " + num(o.minLr);
  // The schedule counts updates in f32 (the step counter): exact to 2^24.
  for (int64_t v : {o.warmupSteps, o.totalSteps, o.stepSize})
    if (v > (int64_t(1) << 24))
      return "--warmup-steps, --total-steps and --step-size must be at most "
             "2^24 (the step counter is f32), got " +
             std::to_string(v);
  bool decays = kind == "linear" || kind == "cosine";
  if (decays) {
    if (o.totalSteps == 0)
      return "--lr-schedule " + kind + " needs --total-steps T";
    if (o.warmupSteps > o.totalSteps)
      return "--warmup-steps " + std::to_string(o.warmupSteps) +
             " must not exceed --total-steps " + std::to_string(o.totalSteps);
    if (o.minLr > o.lr)
      return "--min-lr " + num(o.minLr) + " must not exceed --lr " +
             num(o.lr);
  } else {
    if (o.totalSteps != 0)
      return "--total-steps applies to --lr-schedule linear and cosine, not " +
             kind;
    if (o.minLr != 0)
      return "--min-lr applies to --lr-schedule linear and cosine, not " +
             kind;
  }
  if (kind == "step") {
    if (o.stepSize < 1)
      return "--lr-schedule step needs --step-size K >= 1";
    if (!(o.gamma > 0) || !std::isfinite(o.gamma))
      return "--gamma must be positive, got " + num(o.gamma);
  } else {
    if (o.stepSize != 0)
      return "--step-size applies to --lr-schedule step, not " + kind;
    if (o.gamma != TrainingOptions::kDefaultGamma)
      return "--gamma applies to --lr-schedule step, not " + kind;
  }
  return "";
}

double dlc::resolveWeightDecay(llvm::StringRef optimizer, double weightDecay) {
  if (weightDecay >= 0)
    return weightDecay;
  return optimizer == "adamw" ? 0.01 : 0.0;
}

void dlc::buildTrainingStepPipeline(
    OpPassManager &pm, const TrainingOptions &options,
    llvm::function_ref<void(OpPassManager &)> beforeOptimizer) {
  pm.addPass(createAppendLossPass(options));
  pm.addPass(createDecomposeBatchNormForTrainingPass());
  pm.addPass(createDifferentiatePass(options));
  if (beforeOptimizer)
    beforeOptimizer(pm);
  pm.addPass(createApplyOptimizerPass(options));
}

void dlc::registerTrainingStepPipeline() {
  PassPipelineRegistration<BoundOptions<TrainingOptions>>(
      "dlgraph-build-training-step",
      "Builds @train_step (forward, loss, reverse-mode gradients, optimizer "
      "update) next to @forward: dlgraph-append-loss, "
      "dlgraph-decompose-batch-norm-for-training, dlgraph-differentiate, "
      "dlgraph-apply-optimizer",
      [](OpPassManager &pm, const BoundOptions<TrainingOptions> &options) {
        buildTrainingStepPipeline(pm, options.get());
      });
}
