//===- Pool.cpp - gradients of the pooling ops ----------------------------===//
//
// max_pool and average_pool (to their *_grad ops) and global_average_pool.
//
//===----------------------------------------------------------------------===//
#include "compiler/Transforms/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

template <typename PoolOp, typename GradOp>
static LogicalResult poolGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  auto pool = cast<PoolOp>(op);
  dx[0] = GradOp::create(b, op->getLoc(), pool.getInput().getType(),
                         pool.getInput(), dy[0], pool.getKernelShapeAttr(),
                         pool.getStridesAttr(), pool.getPadsAttr(),
                         pool.getDilationsAttr(), pool.getCeilModeAttr(),
                         pool.getCountIncludePadAttr());
  return success();
}

static LogicalResult globalAveragePoolGrad(OpBuilder &b, Operation *op,
                                           RGrads dy, Grads dx) {
  Location loc = op->getLoc();
  auto xt = tensorType(op->getOperand(0));
  int64_t count = 1;
  for (int64_t i = 2; i < xt.getRank(); ++i)
    count *= xt.getDimSize(i);
  Value g = broadcastTo(b, loc, dy[0], xt);
  dx[0] = binary<MulOp>(b, loc, xt, g, splat(b, loc, xt, 1.0 / count));
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerPoolGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<MaxPoolOp, poolGrad<MaxPoolOp, MaxPoolGradOp>>(ctx);
    attachGradient<AveragePoolOp, poolGrad<AveragePoolOp, AveragePoolGradOp>>(
        ctx);
    attachGradient<GlobalAveragePoolOp, globalAveragePoolGrad>(ctx);
  });
}
