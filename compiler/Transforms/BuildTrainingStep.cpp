//===- BuildTrainingStep.cpp - the training passes as one pipeline --------===//
#include "compiler/Transforms/BuildTrainingStep.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedOptimizers() {
  static constexpr llvm::StringLiteral kOptimizers[] = {"sgd", "adam", "adamw"};
  return kOptimizers;
}

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedLosses() {
  static constexpr llvm::StringLiteral kLosses[] = {"softmax-cross-entropy"};
  return kLosses;
}

double dlc::resolveWeightDecay(llvm::StringRef optimizer, double weightDecay) {
  if (weightDecay >= 0)
    return weightDecay;
  return optimizer == "adamw" ? 0.01 : 0.0;
}

void dlc::buildTrainingStepPipeline(
    OpPassManager &pm, const TrainingOptions &options,
    llvm::function_ref<void(OpPassManager &)> beforeOptimizer) {
  AppendLossPassOptions loss;
  loss.loss = options.loss;
  loss.lossOutput = options.lossOutput;
  pm.addPass(createAppendLossPass(loss));
  pm.addPass(createDecomposeBatchNormForTrainingPass());
  pm.addPass(createDifferentiatePass());
  if (beforeOptimizer)
    beforeOptimizer(pm);
  ApplyOptimizerPassOptions optimizer;
  optimizer.optimizer = options.optimizer;
  optimizer.lr = options.lr;
  optimizer.momentum = options.momentum;
  optimizer.weightDecay = options.weightDecay;
  optimizer.beta1 = options.beta1;
  optimizer.beta2 = options.beta2;
  optimizer.adamEpsilon = options.adamEpsilon;
  optimizer.exposeGradients = options.exposeGradients;
  pm.addPass(createApplyOptimizerPass(optimizer));
}

void dlc::registerTrainingStepPipeline() {
  PassPipelineRegistration<TrainingOptions>(
      "dlgraph-build-training-step",
      "Builds @train_step (forward, loss, reverse-mode gradients, optimizer "
      "update) next to @forward: dlgraph-append-loss, "
      "dlgraph-decompose-batch-norm-for-training, dlgraph-differentiate, "
      "dlgraph-apply-optimizer",
      [](OpPassManager &pm, const TrainingOptions &options) {
        buildTrainingStepPipeline(pm, options);
      });
}
