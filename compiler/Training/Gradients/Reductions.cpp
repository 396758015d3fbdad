//===- Reductions.cpp - gradients of reductions and softmax ---------------===//
//
// reduce_sum/mean/max/prod and softmax/log_softmax: the gradient at the
// keepdims shape, broadcast back to the input; cumsum: the reversed scan.
// dlgraph.one_hot has no rule: its only operand is the (integer) indices,
// which get no gradient, and nothing else flows through it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

// Softmax family.

static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

static LogicalResult softmaxGrad(OpBuilder &b, Operation *op, RGrads dy,
                                 Grads dx) {
  // y * (grad - sum(grad * y, axis))
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  int64_t axis =
      normalizeAxis(cast<SoftmaxOp>(op).getAxisAttr().getInt(), t.getRank());
  Value gy = binary<MulOp>(b, loc, t, dy[0], y);
  Value s = ReduceSumOp::create(b, loc, keepDimsType(t, {axis}), gy,
                                ArrayRef<int64_t>{axis}, /*keepdims=*/true);
  Value d = binary<SubOp>(b, loc, t, dy[0], s);
  dx[0] = binary<MulOp>(b, loc, t, y, d);
  return success();
}

static LogicalResult logSoftmaxGrad(OpBuilder &b, Operation *op, RGrads dy,
                                    Grads dx) {
  // grad - exp(y) * sum(grad, axis)
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  int64_t axis =
      normalizeAxis(cast<LogSoftmaxOp>(op).getAxisAttr().getInt(), t.getRank());
  Value s = ReduceSumOp::create(b, loc, keepDimsType(t, {axis}), dy[0],
                                ArrayRef<int64_t>{axis}, /*keepdims=*/true);
  Value e = ExpOp::create(b, loc, t, y);
  Value es = binary<MulOp>(b, loc, t, e, s);
  dx[0] = binary<SubOp>(b, loc, t, dy[0], es);
  return success();
}

// Reductions: the gradient at keepdims shape, broadcast back to the input.

/// |dy| reshaped to the keepdims form of a reduction of |xt| over |axes|.
static Value keepDims(OpBuilder &b, Location loc, Value dy, RankedTensorType xt,
                      ArrayRef<int64_t> axes) {
  auto kt = keepDimsType(xt, axes);
  if (tensorType(dy) == kt)
    return dy;
  return ReshapeOp::create(b, loc, kt, dy);
}

template <typename ReduceOp>
static LogicalResult reduceSumMeanGrad(OpBuilder &b, Operation *op, RGrads dy,
                                       Grads dx, bool mean) {
  auto red = cast<ReduceOp>(op);
  Location loc = op->getLoc();
  auto xt = tensorType(red.getInput());
  Value g = broadcastTo(b, loc, keepDims(b, loc, dy[0], xt, red.getAxes()), xt);
  if (mean) {
    int64_t count = 1;
    for (int64_t a : red.getAxes())
      count *= xt.getDimSize(a);
    g = binary<MulOp>(b, loc, xt, g, splat(b, loc, xt, 1.0 / count));
  }
  dx[0] = g;
  return success();
}

static LogicalResult reduceSumGrad(OpBuilder &b, Operation *op, RGrads dy,
                                   Grads dx) {
  return reduceSumMeanGrad<ReduceSumOp>(b, op, dy, dx, /*mean=*/false);
}

static LogicalResult reduceMeanGrad(OpBuilder &b, Operation *op, RGrads dy,
                                    Grads dx) {
  return reduceSumMeanGrad<ReduceMeanOp>(b, op, dy, dx, /*mean=*/true);
}

static LogicalResult reduceMaxGrad(OpBuilder &b, Operation *op, RGrads dy,
                                   Grads dx) {
  // torch.amax: the gradient is shared evenly among the maxima.
  auto red = cast<ReduceMaxOp>(op);
  Location loc = op->getLoc();
  Value x = red.getInput();
  auto xt = tensorType(x);
  ArrayRef<int64_t> axes = red.getAxes();
  auto kt = keepDimsType(xt, axes);
  Value y =
      broadcastTo(b, loc, keepDims(b, loc, red.getResult(), xt, axes), xt);
  Value mask = CompareOp::create(b, loc, maskType(xt), "eq", x, y);
  Value maskF = CastOp::create(b, loc, xt, mask);
  Value count = ReduceSumOp::create(b, loc, kt, maskF, axes,
                                    /*keepdims=*/true);
  Value share =
      binary<DivOp>(b, loc, kt, keepDims(b, loc, dy[0], xt, axes), count);
  dx[0] = binary<MulOp>(b, loc, xt, maskF, broadcastTo(b, loc, share, xt));
  return success();
}

static LogicalResult reduceProdGrad(OpBuilder &b, Operation *op, RGrads dy,
                                    Grads dx) {
  // The product of the other elements of each reduced group, exact with
  // zeros (torch's prod_backward): no zero in the group: g * prod / x; one
  // zero: g * (product of the non-zeros) at the zero, 0 elsewhere; two or
  // more zeros: 0.
  auto red = cast<ReduceProdOp>(op);
  Location loc = op->getLoc();
  Value x = red.getInput();
  auto xt = tensorType(x);
  ArrayRef<int64_t> axes = red.getAxes();
  auto kt = keepDimsType(xt, axes);
  Value zero = splat(b, loc, xt, 0.0), one = splat(b, loc, xt, 1.0);
  Value isZero = CompareOp::create(b, loc, maskType(xt), "eq", x, zero);
  Value zeros = ReduceSumOp::create(
      b, loc, kt, CastOp::create(b, loc, xt, isZero), axes, /*keepdims=*/true);
  Value nonZero = SelectOp::create(b, loc, xt, isZero, one, x);
  Value prodNonZero = ReduceProdOp::create(b, loc, kt, nonZero, axes,
                                           /*keepdims=*/true);
  Value gp =
      binary<MulOp>(b, loc, kt, keepDims(b, loc, dy[0], xt, axes), prodNonZero);
  Value g = broadcastTo(b, loc, gp, xt);
  Value count = broadcastTo(b, loc, zeros, xt);
  Value none = CompareOp::create(b, loc, maskType(xt), "eq", count, zero);
  Value single = CompareOp::create(b, loc, maskType(xt), "eq", count, one);
  Value atZero = SelectOp::create(b, loc, xt, single, g, zero);
  atZero = SelectOp::create(b, loc, xt, isZero, atZero, zero);
  dx[0] = SelectOp::create(b, loc, xt, none,
                           binary<DivOp>(b, loc, xt, g, nonZero), atZero);
  return success();
}

// CumSum: each input element x[j] enters the results at positions p with
// j <= p (inclusive forward scan), so its gradient is the sum of dy[p] over
// those p: the same scan of dy in the other direction (j >= p), with the
// same exclusivity. An integer cumsum has no gradient.

static LogicalResult cumSumGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  auto cs = cast<CumSumOp>(op);
  if (!isa<FloatType>(cs.getType().getElementType()))
    return success();
  dx[0] = CumSumOp::create(b, op->getLoc(), dy[0], cs.getAxisAttr(),
                           cs.getExclusiveAttr(),
                           cs.getReverse() ? UnitAttr() : b.getUnitAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerReductionGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<SoftmaxOp, softmaxGrad>(ctx);
    attachGradient<LogSoftmaxOp, logSoftmaxGrad>(ctx);
    attachGradient<ReduceSumOp, reduceSumGrad>(ctx);
    attachGradient<ReduceMeanOp, reduceMeanGrad>(ctx);
    attachGradient<ReduceMaxOp, reduceMaxGrad>(ctx);
    attachGradient<ReduceProdOp, reduceProdGrad>(ctx);
    attachGradient<CumSumOp, cumSumGrad>(ctx);
  });
}
