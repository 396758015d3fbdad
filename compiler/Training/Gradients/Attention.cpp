//===- Attention.cpp - gradient of the fused attention --------------------===//
// dlgraph.attention's backward is dlgraph.attention_grad, which reads the
// forward's output and row log-sum-exp and recomputes the probabilities
// tile by tile (FlashAttention-2's backward), never reading a stored
// [B, H, Sq, Skv] tensor.
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

static LogicalResult attentionGrad(OpBuilder &b, Operation *op, RGrads dy,
                                   Grads dx) {
  auto a = cast<AttentionOp>(op);
  // lse is the backward's input only: nothing differentiates through it.
  if (!matchPattern(dy[1], m_AnyZeroFloat()))
    return op->emitError()
           << "the gradient through dlgraph.attention's log-sum-exp result "
              "is not supported; only its output O may reach the loss";
  // The mask gets no gradient: dlgraph-fuse-attention leaves attention
  // whose additive mask may be trained (a score bias) unfused.
  Value mask = a.getMask();
  auto g = AttentionGradOp::create(
      b, op->getLoc(), a.getQuery(), a.getKey(), a.getValue(), a.getResult(),
      a.getLse(), dy[0], mask, a.getStep(), a.getScaleAttr(),
      a.getCausalAttr(), a.getSeqFirstAttr(), a.getDropoutRatioAttr(),
      a.getSeedAttr());
  dx[0] = g.getQueryGrad();
  dx[1] = g.getKeyGrad();
  dx[2] = g.getValueGrad();
  return success();
}

void dlc::gradients::registerAttentionGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<AttentionOp, attentionGrad>(ctx);
  });
}
