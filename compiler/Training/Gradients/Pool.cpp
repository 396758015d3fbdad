//===- Pool.cpp - gradients of the pooling ops ----------------------------===//
//
// max_pool and average_pool (to their *_grad ops) and global_average_pool.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"
#include "compiler/Training/Gradients/Gradients.h"

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

//===----------------------------------------------------------------------===//
// The argmax form of max pooling's gradient
//===----------------------------------------------------------------------===//

int64_t dlc::useMaxPoolIndices(Operation *root) {
  SmallVector<MaxPoolGradOp> grads;
  root->walk([&](MaxPoolGradOp g) { grads.push_back(g); });
  auto sameWindow = [](MaxPoolOp p, MaxPoolGradOp g) {
    return p.getKernelShape() == g.getKernelShape() &&
           p.getStrides() == g.getStrides() && p.getPads() == g.getPads() &&
           p.getDilations() == g.getDilations() &&
           p.getCeilMode() == g.getCeilMode();
  };
  for (MaxPoolGradOp g : grads) {
    Value x = g.getInput();
    OpBuilder b(g);
    if (Operation *def = x.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
    // The forward pooling reads x after its definition: its indices go
    // right after it, where the forward's last read of x is.
    for (Operation *user : x.getUsers())
      if (auto pool = dyn_cast<MaxPoolOp>(user))
        if (pool->getBlock() == b.getInsertionBlock() && sameWindow(pool, g))
          b.setInsertionPointAfter(pool);
    Value indices = MaxPoolIndicesOp::create(
        b, g.getLoc(), x, g.getKernelShapeAttr(), g.getStridesAttr(),
        g.getPadsAttr(), g.getDilationsAttr(), g.getCeilModeAttr(),
        g.getCountIncludePadAttr());
    b.setInsertionPoint(g);
    Value dx = MaxPoolIndicesGradOp::create(
        b, g.getLoc(), g.getType(), indices, g.getResultGrad(),
        g.getKernelShapeAttr(), g.getStridesAttr(), g.getPadsAttr(),
        g.getDilationsAttr(), g.getCeilModeAttr(), g.getCountIncludePadAttr());
    g.replaceAllUsesWith(dx);
    g.erase();
  }
  return static_cast<int64_t>(grads.size());
}
