//===- Autodiff.cpp - gradient rules and the reverse sweep over dlgraph ----===//
//
// One vector-Jacobian product per op kind, written with dlgraph ops, with the
// same formulas as PyTorch's autograd (tools/autograd/derivatives.yaml) so
// that compiled training matches torch numerically.
//
//===----------------------------------------------------------------------===//
#include "compiler/Transforms/Autodiff.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;

//===----------------------------------------------------------------------===//
// Helpers that build dlgraph ops
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// |type|'s shape with element type i1 (compare results).
static RankedTensorType maskType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(),
                               IntegerType::get(type.getContext(), 1));
}

/// A splat constant of |type| (floating-point element type) holding |v|.
static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double v) {
  auto attr = DenseElementsAttr::get(
      type, b.getFloatAttr(type.getElementType(), v));
  return ConstantOp::create(b, loc, type, cast<ElementsAttr>(attr));
}

template <typename OpTy>
static Value binary(OpBuilder &b, Location loc, RankedTensorType type, Value x,
                    Value y) {
  return OpTy::create(b, loc, type, x, y);
}

/// Sums |g| over the axes along which a value of |target| type was
/// broadcast (NumPy rules: leading axes, and size-1 axes of the target),
/// then reshapes to |target|. Returns |g| when no reduction is needed.
static Value reduceTo(OpBuilder &b, Location loc, Value g,
                      RankedTensorType target) {
  auto gt = tensorType(g);
  if (gt == target)
    return g;
  int64_t rank = gt.getRank(), off = rank - target.getRank();
  SmallVector<int64_t> axes, kept;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduce = i < off || (target.getDimSize(i - off) == 1 &&
                              gt.getDimSize(i) != 1);
    if (reduce)
      axes.push_back(i);
    else
      kept.push_back(gt.getDimSize(i));
  }
  Value v = g;
  if (!axes.empty())
    v = ReduceSumOp::create(
        b, loc, RankedTensorType::get(kept, gt.getElementType()), g, axes,
        /*keepdims=*/false);
  if (tensorType(v) != target)
    v = ReshapeOp::create(b, loc, target, v);
  return v;
}

/// Broadcasts |v| to |type| unless it already has it.
static Value broadcastTo(OpBuilder &b, Location loc, Value v,
                         RankedTensorType type) {
  if (tensorType(v) == type)
    return v;
  return BroadcastToOp::create(b, loc, type, v);
}

/// |type| with the dims in |axes| set to 1 (a keepdims reduction result).
static RankedTensorType keepDimsType(RankedTensorType type,
                                     ArrayRef<int64_t> axes) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  return RankedTensorType::get(shape, type.getElementType());
}

static bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

//===----------------------------------------------------------------------===//
// Gradient rules
//===----------------------------------------------------------------------===//

namespace {
using Grads = MutableArrayRef<Value>;
using RGrads = ArrayRef<Value>;
} // namespace

// Unary elementwise ops: x = operand 0, y = result 0, dy = result grad.

static LogicalResult reluGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // threshold_backward: grad where result > 0.
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  Value zero = splat(b, loc, t, 0.0);
  Value mask = CompareOp::create(b, loc, maskType(t), "gt", y, zero);
  dx[0] = SelectOp::create(b, loc, t, mask, dy[0], zero);
  return success();
}

static LogicalResult clipGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // clamp_backward: grad where min <= x <= max.
  auto clip = cast<ClipOp>(op);
  Location loc = op->getLoc();
  Value x = clip.getInput();
  auto t = tensorType(x);
  Value zero = splat(b, loc, t, 0.0);
  Value lo = splat(b, loc, t, clip.getMin().convertToDouble());
  Value hi = splat(b, loc, t, clip.getMax().convertToDouble());
  Value geMin = CompareOp::create(b, loc, maskType(t), "ge", x, lo);
  Value leMax = CompareOp::create(b, loc, maskType(t), "le", x, hi);
  Value inner = SelectOp::create(b, loc, t, leMax, dy[0], zero);
  dx[0] = SelectOp::create(b, loc, t, geMin, inner, zero);
  return success();
}

static LogicalResult expGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  auto t = tensorType(op->getResult(0));
  dx[0] = binary<MulOp>(b, op->getLoc(), t, dy[0], op->getResult(0));
  return success();
}

static LogicalResult logGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  auto t = tensorType(op->getResult(0));
  dx[0] = binary<DivOp>(b, op->getLoc(), t, dy[0], op->getOperand(0));
  return success();
}

static LogicalResult negGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  dx[0] = NegOp::create(b, op->getLoc(), dy[0].getType(), dy[0]);
  return success();
}

static LogicalResult sqrtGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // grad / (2 * result)
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  Value twoY = binary<MulOp>(b, loc, t, y, splat(b, loc, t, 2.0));
  dx[0] = binary<DivOp>(b, loc, t, dy[0], twoY);
  return success();
}

static LogicalResult rsqrtGrad(OpBuilder &b, Operation *op, RGrads dy,
                               Grads dx) {
  // -0.5 * grad * result^3
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  Value y2 = binary<MulOp>(b, loc, t, y, y);
  Value y3 = binary<MulOp>(b, loc, t, y2, y);
  Value s = binary<MulOp>(b, loc, t, y3, splat(b, loc, t, -0.5));
  dx[0] = binary<MulOp>(b, loc, t, dy[0], s);
  return success();
}

static LogicalResult tanhGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // grad * (1 - y^2)
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  Value y2 = binary<MulOp>(b, loc, t, y, y);
  Value d = binary<SubOp>(b, loc, t, splat(b, loc, t, 1.0), y2);
  dx[0] = binary<MulOp>(b, loc, t, dy[0], d);
  return success();
}

static LogicalResult sigmoidGrad(OpBuilder &b, Operation *op, RGrads dy,
                                 Grads dx) {
  // grad * (1 - y) * y
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  auto t = tensorType(y);
  Value oneMinus = binary<SubOp>(b, loc, t, splat(b, loc, t, 1.0), y);
  Value d = binary<MulOp>(b, loc, t, dy[0], oneMinus);
  dx[0] = binary<MulOp>(b, loc, t, d, y);
  return success();
}

static LogicalResult erfGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  // grad * 2/sqrt(pi) * exp(-x^2)
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto t = tensorType(x);
  Value x2 = binary<MulOp>(b, loc, t, x, x);
  Value e = ExpOp::create(b, loc, t, NegOp::create(b, loc, t, x2));
  Value d = binary<MulOp>(b, loc, t, e, splat(b, loc, t, 1.1283791670955126));
  dx[0] = binary<MulOp>(b, loc, t, dy[0], d);
  return success();
}

static LogicalResult absGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  // grad * sgn(x), with sgn(0) = 0 (torch's abs backward).
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto t = tensorType(x);
  Value zero = splat(b, loc, t, 0.0);
  Value pos = CompareOp::create(b, loc, maskType(t), "gt", x, zero);
  Value neg = CompareOp::create(b, loc, maskType(t), "lt", x, zero);
  Value ng = NegOp::create(b, loc, t, dy[0]);
  Value inner = SelectOp::create(b, loc, t, neg, ng, zero);
  dx[0] = SelectOp::create(b, loc, t, pos, dy[0], inner);
  return success();
}

static LogicalResult identityGrad(OpBuilder &b, Operation *op, RGrads dy,
                                  Grads dx) {
  dx[0] = dy[0];
  return success();
}

static LogicalResult castGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  Value x = op->getOperand(0);
  if (!isFloatTensor(x))
    return success();
  dx[0] = x.getType() == dy[0].getType()
              ? dy[0]
              : CastOp::create(b, op->getLoc(), x.getType(), dy[0]).getResult();
  return success();
}

// Binary elementwise ops with NumPy broadcasting: each operand's gradient is
// computed at the result's shape, then reduced to the operand's shape.

static LogicalResult addGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  Location loc = op->getLoc();
  dx[0] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(0)));
  dx[1] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(1)));
  return success();
}

static LogicalResult subGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  Location loc = op->getLoc();
  dx[0] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(0)));
  Value neg = NegOp::create(b, loc, dy[0].getType(), dy[0]);
  dx[1] = reduceTo(b, loc, neg, tensorType(op->getOperand(1)));
  return success();
}

static LogicalResult mulGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1);
  auto t = tensorType(op->getResult(0));
  dx[0] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], r), tensorType(l));
  dx[1] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], l), tensorType(r));
  return success();
}

static LogicalResult divGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  // d/dl = grad / r; d/dr = -grad * l / r^2 = -(grad * y) / r.
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1), y = op->getResult(0);
  auto t = tensorType(y);
  dx[0] = reduceTo(b, loc, binary<DivOp>(b, loc, t, dy[0], r), tensorType(l));
  Value gy = binary<MulOp>(b, loc, t, dy[0], y);
  Value q = binary<DivOp>(b, loc, t, gy, r);
  dx[1] = reduceTo(b, loc, NegOp::create(b, loc, t, q), tensorType(r));
  return success();
}

/// torch.maximum / torch.minimum: the gradient goes to the winner; ties
/// split it in half. |pred| is "gt" for max, "lt" for min.
static LogicalResult extremumGrad(OpBuilder &b, Operation *op, RGrads dy,
                                  Grads dx, StringRef pred) {
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1);
  auto t = tensorType(op->getResult(0));
  Value zero = splat(b, loc, t, 0.0);
  Value half = binary<MulOp>(b, loc, t, dy[0], splat(b, loc, t, 0.5));
  Value eq = CompareOp::create(b, loc, maskType(t), "eq", l, r);
  Value wins = CompareOp::create(b, loc, maskType(t), pred, l, r);
  Value lStrict = SelectOp::create(b, loc, t, wins, dy[0], zero);
  Value rStrict = SelectOp::create(b, loc, t, wins, zero, dy[0]);
  Value lg = SelectOp::create(b, loc, t, eq, half, lStrict);
  Value rg = SelectOp::create(b, loc, t, eq, half, rStrict);
  dx[0] = reduceTo(b, loc, lg, tensorType(l));
  dx[1] = reduceTo(b, loc, rg, tensorType(r));
  return success();
}

static LogicalResult maxGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  return extremumGrad(b, op, dy, dx, "gt");
}

static LogicalResult minGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  return extremumGrad(b, op, dy, dx, "lt");
}

static LogicalResult powGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  // d/dl = grad * r * l^(r-1); d/dr = grad * y * log(l).
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1), y = op->getResult(0);
  auto t = tensorType(y), rt = tensorType(r);
  Value rm1 = binary<SubOp>(b, loc, rt, r, splat(b, loc, rt, 1.0));
  Value p = binary<PowOp>(b, loc, t, l, rm1);
  Value rp = binary<MulOp>(b, loc, t, p, r);
  dx[0] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], rp), tensorType(l));
  Value logl = LogOp::create(b, loc, l.getType(), l);
  Value ylog = binary<MulOp>(b, loc, t, y, logl);
  dx[1] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], ylog), rt);
  return success();
}

static LogicalResult selectGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  auto sel = cast<SelectOp>(op);
  Location loc = op->getLoc();
  auto t = tensorType(sel.getResult());
  Value zero = splat(b, loc, t, 0.0);
  Value onTrue =
      SelectOp::create(b, loc, t, sel.getCondition(), dy[0], zero);
  Value onFalse =
      SelectOp::create(b, loc, t, sel.getCondition(), zero, dy[0]);
  dx[1] = reduceTo(b, loc, onTrue, tensorType(sel.getOnTrue()));
  dx[2] = reduceTo(b, loc, onFalse, tensorType(sel.getOnFalse()));
  return success();
}

// Linear algebra and convolution.

static LogicalResult gemmGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // Y = alpha * op(A) op(B) + beta * C.
  // d op(A) = alpha * dY op(B)^T, d op(B) = alpha * op(A)^T dY.
  auto gemm = cast<GemmOp>(op);
  Location loc = op->getLoc();
  Value a = gemm.getA(), bm = gemm.getB(), g = dy[0];
  bool ta = gemm.getTransA(), tb = gemm.getTransB();
  APFloat alpha = gemm.getAlpha(), one(1.0f);
  auto mk = [&](Type type, Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, loc, type, x, y, /*c=*/Value(), alpha, one, tx,
                          ty);
  };
  if (!ta)
    dx[0] = mk(a.getType(), g, bm, false, !tb);
  else
    dx[0] = mk(a.getType(), bm, g, tb, true);
  if (!tb)
    dx[1] = mk(bm.getType(), a, g, !ta, false);
  else
    dx[1] = mk(bm.getType(), g, a, true, ta);
  if (Value c = gemm.getC()) {
    Value gc = g;
    double beta = gemm.getBeta().convertToDouble();
    if (beta != 1.0)
      gc = binary<MulOp>(b, loc, tensorType(g), g,
                         splat(b, loc, tensorType(g), beta));
    dx[2] = reduceTo(b, loc, gc, tensorType(c));
  }
  return success();
}

static LogicalResult matmulGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  auto mm = cast<MatMulOp>(op);
  Value a = mm.getLhs(), bm = mm.getRhs();
  if (tensorType(a).getRank() != 2 || tensorType(bm).getRank() != 2)
    return op->emitError()
           << "gradient of dlgraph.matmul supports 2-D operands only, got "
              "ranks "
           << tensorType(a).getRank() << " and " << tensorType(bm).getRank();
  Location loc = op->getLoc();
  APFloat one(1.0f);
  dx[0] = GemmOp::create(b, loc, a.getType(), dy[0], bm, Value(), one, one,
                         false, true);
  dx[1] = GemmOp::create(b, loc, bm.getType(), a, dy[0], Value(), one, one,
                         true, false);
  return success();
}

static LogicalResult convGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  auto conv = cast<ConvOp>(op);
  Location loc = op->getLoc();
  dx[0] = ConvBackwardDataOp::create(
      b, loc, conv.getInput().getType(), dy[0], conv.getFilter(),
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  dx[1] = ConvBackwardFilterOp::create(
      b, loc, conv.getFilter().getType(), conv.getInput(), dy[0],
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  if (Value bias = conv.getBias())
    dx[2] = ReduceSumOp::create(b, loc, bias.getType(), dy[0],
                                ArrayRef<int64_t>{0, 2, 3},
                                /*keepdims=*/false);
  return success();
}

// Pooling.

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

// Shape ops.

static LogicalResult reshapeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                 Grads dx) {
  dx[0] = ReshapeOp::create(b, op->getLoc(), op->getOperand(0).getType(),
                            dy[0]);
  return success();
}

static LogicalResult transposeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                   Grads dx) {
  ArrayRef<int64_t> perm = cast<TransposeOp>(op).getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  dx[0] = TransposeOp::create(b, op->getLoc(), op->getOperand(0).getType(),
                              dy[0], inverse);
  return success();
}

static LogicalResult broadcastToGrad(OpBuilder &b, Operation *op, RGrads dy,
                                     Grads dx) {
  dx[0] = reduceTo(b, op->getLoc(), dy[0], tensorType(op->getOperand(0)));
  return success();
}

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
  int64_t axis = normalizeAxis(cast<SoftmaxOp>(op).getAxisAttr().getInt(), t.getRank());
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
  int64_t axis = normalizeAxis(cast<LogSoftmaxOp>(op).getAxisAttr().getInt(), t.getRank());
  Value s = ReduceSumOp::create(b, loc, keepDimsType(t, {axis}), dy[0],
                                ArrayRef<int64_t>{axis}, /*keepdims=*/true);
  Value e = ExpOp::create(b, loc, t, y);
  Value es = binary<MulOp>(b, loc, t, e, s);
  dx[0] = binary<SubOp>(b, loc, t, dy[0], es);
  return success();
}

static LogicalResult softmaxCrossEntropyGrad(OpBuilder &b, Operation *op,
                                             RGrads dy, Grads dx) {
  auto sce = cast<SoftmaxCrossEntropyOp>(op);
  dx[0] = SoftmaxCrossEntropyGradOp::create(
      b, op->getLoc(), sce.getLogits().getType(), sce.getLogits(),
      sce.getLabels(), dy[0]);
  return success();
}

// Reductions: the gradient at keepdims shape, broadcast back to the input.

/// |dy| reshaped to the keepdims form of a reduction of |xt| over |axes|.
static Value keepDims(OpBuilder &b, Location loc, Value dy,
                      RankedTensorType xt, ArrayRef<int64_t> axes) {
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
  Value g = broadcastTo(b, loc, keepDims(b, loc, dy[0], xt, red.getAxes()),
                        xt);
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
  Value y = broadcastTo(b, loc, keepDims(b, loc, red.getResult(), xt, axes),
                        xt);
  Value mask = CompareOp::create(b, loc, maskType(xt), "eq", x, y);
  Value maskF = CastOp::create(b, loc, xt, mask);
  Value count = ReduceSumOp::create(b, loc, kt, maskF, axes,
                                    /*keepdims=*/true);
  Value share = binary<DivOp>(b, loc, kt, keepDims(b, loc, dy[0], xt, axes),
                              count);
  dx[0] = binary<MulOp>(b, loc, xt, maskF, broadcastTo(b, loc, share, xt));
  return success();
}

//===----------------------------------------------------------------------===//
// The rule table
//===----------------------------------------------------------------------===//

static llvm::StringMap<GradientRule> &ruleTable() {
  static llvm::StringMap<GradientRule> table = [] {
    llvm::StringMap<GradientRule> t;
    auto add = [&](StringRef name, GradientRule rule) { t[name] = rule; };
    add(ReluOp::getOperationName(), reluGrad);
    add(ClipOp::getOperationName(), clipGrad);
    add(ExpOp::getOperationName(), expGrad);
    add(LogOp::getOperationName(), logGrad);
    add(NegOp::getOperationName(), negGrad);
    add(SqrtOp::getOperationName(), sqrtGrad);
    add(RsqrtOp::getOperationName(), rsqrtGrad);
    add(TanhOp::getOperationName(), tanhGrad);
    add(SigmoidOp::getOperationName(), sigmoidGrad);
    add(ErfOp::getOperationName(), erfGrad);
    add(AbsOp::getOperationName(), absGrad);
    add(IdentityOp::getOperationName(), identityGrad);
    add(CastOp::getOperationName(), castGrad);
    add(AddOp::getOperationName(), addGrad);
    add(SubOp::getOperationName(), subGrad);
    add(MulOp::getOperationName(), mulGrad);
    add(DivOp::getOperationName(), divGrad);
    add(MaxOp::getOperationName(), maxGrad);
    add(MinOp::getOperationName(), minGrad);
    add(PowOp::getOperationName(), powGrad);
    add(SelectOp::getOperationName(), selectGrad);
    add(GemmOp::getOperationName(), gemmGrad);
    add(MatMulOp::getOperationName(), matmulGrad);
    add(ConvOp::getOperationName(), convGrad);
    add(MaxPoolOp::getOperationName(), poolGrad<MaxPoolOp, MaxPoolGradOp>);
    add(AveragePoolOp::getOperationName(),
        poolGrad<AveragePoolOp, AveragePoolGradOp>);
    add(GlobalAveragePoolOp::getOperationName(), globalAveragePoolGrad);
    add(ReshapeOp::getOperationName(), reshapeGrad);
    add(TransposeOp::getOperationName(), transposeGrad);
    add(BroadcastToOp::getOperationName(), broadcastToGrad);
    add(SoftmaxOp::getOperationName(), softmaxGrad);
    add(LogSoftmaxOp::getOperationName(), logSoftmaxGrad);
    add(SoftmaxCrossEntropyOp::getOperationName(), softmaxCrossEntropyGrad);
    add(ReduceSumOp::getOperationName(), reduceSumGrad);
    add(ReduceMeanOp::getOperationName(), reduceMeanGrad);
    add(ReduceMaxOp::getOperationName(), reduceMaxGrad);
    return t;
  }();
  return table;
}

void dlc::registerGradientRule(StringRef opName, GradientRule rule) {
  ruleTable()[opName] = std::move(rule);
}

const GradientRule *dlc::lookupGradientRule(StringRef opName) {
  auto &table = ruleTable();
  auto it = table.find(opName);
  return it == table.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Activity analysis and the reverse sweep
//===----------------------------------------------------------------------===//

llvm::DenseSet<Value> dlc::computeActiveValues(ArrayRef<Operation *> ops,
                                               ArrayRef<Value> sources) {
  llvm::DenseSet<Value> active(sources.begin(), sources.end());
  for (Operation *op : ops) {
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value r : op->getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }
  return active;
}

FailureOr<llvm::DenseMap<Value, Value>>
dlc::computeGradients(OpBuilder &b, ArrayRef<Operation *> ops,
                      const llvm::DenseSet<Value> &active, Value loss,
                      Value seed) {
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = seed;
  auto accumulate = [&](Value v, Value g, Operation *at) -> LogicalResult {
    if (g.getType() != v.getType())
      return at->emitError() << "internal error: gradient of type "
                             << g.getType() << " for a value of type "
                             << v.getType();
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads[v] = g;
      return success();
    }
    it->second = AddOp::create(b, at->getLoc(), v.getType(), it->second, g);
    return success();
  };
  for (Operation *op : llvm::reverse(ops)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value r) { return grads.count(r); }))
      continue;
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    const GradientRule *rule = lookupGradientRule(op->getName().getStringRef());
    if (!rule)
      return op->emitError()
             << "no gradient rule for '" << op->getName()
             << "', which is on a path from a trainable parameter to the loss";
    SmallVector<Value> dys;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      if (!g) {
        if (!isFloatTensor(r))
          return op->emitError() << "no gradient for non-float result of '"
                                 << op->getName() << "'";
        g = splat(b, op->getLoc(), tensorType(r), 0.0);
      }
      dys.push_back(g);
    }
    SmallVector<Value> dxs(op->getNumOperands());
    if (failed((*rule)(b, op, dys, dxs)))
      return failure();
    for (auto [operand, g] : llvm::zip(op->getOperands(), dxs))
      if (g && active.contains(operand))
        if (failed(accumulate(operand, g, op)))
          return failure();
  }
  return grads;
}
