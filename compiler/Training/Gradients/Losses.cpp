//===- Losses.cpp - gradients of the loss ops -----------------------------===//
//
// softmax_cross_entropy: its fused gradient op, (softmax(logits) -
// one_hot(labels)) * dy / count(labels), as in torch's cross_entropy.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

static LogicalResult softmaxCrossEntropyGrad(OpBuilder &b, Operation *op,
                                             RGrads dy, Grads dx) {
  auto sce = cast<SoftmaxCrossEntropyOp>(op);
  dx[0] = SoftmaxCrossEntropyGradOp::create(
      b, op->getLoc(), sce.getLogits().getType(), sce.getLogits(),
      sce.getLabels(), dy[0], sce.getLabelSmoothingAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerLossGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<SoftmaxCrossEntropyOp, softmaxCrossEntropyGrad>(ctx);
  });
}
