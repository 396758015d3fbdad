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

/// Gradients of the trigonometric and hyperbolic functions and their inverses
/// (d/dx of each, e.g. Abramowitz & Stegun 4.3.105, 4.4.52-54, 4.5.77, 4.6.40).
static LogicalResult trigGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0), y = op->getResult(0);
  auto t = tensorType(x);
  auto one = [&] { return splat(b, loc, t, 1.0); };
  auto square = [&](Value v) { return binary<MulOp>(b, loc, t, v, v); };
  Value d;
  if (isa<SinOp>(op)) {
    d = CosOp::create(b, loc, t, x);
  } else if (isa<CosOp>(op)) {
    d = NegOp::create(b, loc, t, SinOp::create(b, loc, t, x));
  } else if (isa<TanOp>(op)) { // 1 + tan^2
    d = binary<AddOp>(b, loc, t, one(), square(y));
  } else if (isa<AsinOp>(op)) { // 1 / sqrt(1 - x^2)
    d = RsqrtOp::create(b, loc, t, binary<SubOp>(b, loc, t, one(), square(x)));
  } else if (isa<AcosOp>(op)) {
    d = NegOp::create(
        b, loc, t,
        RsqrtOp::create(b, loc, t, binary<SubOp>(b, loc, t, one(), square(x))));
  } else if (isa<AtanOp>(op)) { // 1 / (1 + x^2)
    d = binary<DivOp>(b, loc, t, one(),
                      binary<AddOp>(b, loc, t, one(), square(x)));
  } else if (isa<SinhOp>(op)) {
    d = CoshOp::create(b, loc, t, x);
  } else if (isa<CoshOp>(op)) {
    d = SinhOp::create(b, loc, t, x);
  } else if (isa<AsinhOp>(op)) { // 1 / sqrt(x^2 + 1)
    d = RsqrtOp::create(b, loc, t, binary<AddOp>(b, loc, t, square(x), one()));
  } else if (isa<AcoshOp>(op)) { // 1 / sqrt(x^2 - 1)
    d = RsqrtOp::create(b, loc, t, binary<SubOp>(b, loc, t, square(x), one()));
  } else { // atanh: 1 / (1 - x^2)
    d = binary<DivOp>(b, loc, t, one(),
                      binary<SubOp>(b, loc, t, one(), square(x)));
  }
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

/// |v| with its last two dims swapped.
static Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  auto t = tensorType(v);
  int64_t r = t.getRank();
  SmallVector<int64_t> perm, shape(t.getShape());
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 2], perm[r - 1]);
  std::swap(shape[r - 2], shape[r - 1]);
  return TransposeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), v, perm);
}

static Value reshapeTo(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int64_t> shape) {
  auto t = tensorType(v);
  if (t.getShape() == shape)
    return v;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), v);
}

static LogicalResult matmulGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  // numpy.matmul: Y[..., M, N] = A[..., M, K] B[..., K, N] with broadcast
  // batch dims. dA = dY B^T and dB = A^T dY, each summed over the batch dims
  // along which its operand was broadcast (reduceTo).
  auto mm = cast<MatMulOp>(op);
  Location loc = op->getLoc();
  Value a = mm.getLhs(), bm = mm.getRhs();
  auto at = tensorType(a), bt = tensorType(bm);
  Type et = at.getElementType();
  // Promote 1-D operands ([K] -> [1, K] on the left, [K, 1] on the right)
  // and give dY the promoted result shape.
  SmallVector<int64_t> as(at.getShape()), bs(bt.getShape());
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  Value a2 = reshapeTo(b, loc, a, as), b2 = reshapeTo(b, loc, bm, bs);
  SmallVector<int64_t> ys(tensorType(op->getResult(0)).getShape());
  if (at.getRank() == 1)
    ys.insert(ys.end() - (bt.getRank() == 1 ? 0 : 1), 1);
  if (bt.getRank() == 1)
    ys.push_back(1);
  Value g = reshapeTo(b, loc, dy[0], ys);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  APFloat one(1.0f);
  auto gemm = [&](ArrayRef<int64_t> shape, Value x, Value y, bool tx,
                  bool ty) -> Value {
    return GemmOp::create(b, loc, RankedTensorType::get(shape, et), x, y,
                          Value(), one, one, tx, ty);
  };
  Value da, db;
  if (as.size() == 2 && bs.size() == 2) {
    da = gemm({m, k}, g, b2, false, true);
    db = gemm({k, n}, a2, g, true, false);
  } else if (bs.size() == 2) {
    // B is shared by every batch (a linear layer on [..., M, K]): flatten
    // the batch into the rows and use single GEMMs.
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < ys.size(); ++i)
      rows *= ys[i];
    Value g2 = reshapeTo(b, loc, g, {rows, n});
    Value af = reshapeTo(b, loc, a2, {rows, k});
    da = reshapeTo(b, loc, gemm({rows, k}, g2, b2, false, true), as);
    db = gemm({k, n}, af, g2, true, false);
  } else {
    SmallVector<int64_t> batch(ys.begin(), ys.end() - 2);
    SmallVector<int64_t> daShape(batch), dbShape(batch);
    daShape.append({m, k});
    dbShape.append({k, n});
    da = MatMulOp::create(b, loc, RankedTensorType::get(daShape, et), g,
                          transposeLast2(b, loc, b2));
    db = MatMulOp::create(b, loc, RankedTensorType::get(dbShape, et),
                          transposeLast2(b, loc, a2), g);
    da = reduceTo(b, loc, da, RankedTensorType::get(as, et));
    db = reduceTo(b, loc, db, RankedTensorType::get(bs, et));
  }
  dx[0] = reshapeTo(b, loc, da, at.getShape());
  dx[1] = reshapeTo(b, loc, db, bt.getShape());
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
  if (Value bias = conv.getBias()) {
    // Sum over the batch and every spatial axis (2-D or 3-D).
    SmallVector<int64_t> axes = {0};
    for (int64_t i = 2; i < cast<RankedTensorType>(dy[0].getType()).getRank();
         ++i)
      axes.push_back(i);
    dx[2] = ReduceSumOp::create(b, loc, bias.getType(), dy[0], axes,
                                /*keepdims=*/false);
  }
  return success();
}

// conv_backward_data (ONNX ConvTranspose) is linear in both operands:
// z = conv^T(a, W), so dA = conv(dZ, W) and dW = conv_backward_filter with dZ
// in the role of the convolution's input and a in the role of its output
// gradient.
static LogicalResult convBackwardDataGrad(OpBuilder &b, Operation *op,
                                          RGrads dy, Grads dx) {
  auto cbd = cast<ConvBackwardDataOp>(op);
  Location loc = op->getLoc();
  dx[0] = ConvOp::create(b, loc, cbd.getResultGrad().getType(), dy[0],
                         cbd.getFilter(), Value(), cbd.getStridesAttr(),
                         cbd.getPadsAttr(), cbd.getDilationsAttr(),
                         cbd.getGroupAttr());
  dx[1] = ConvBackwardFilterOp::create(
      b, loc, cbd.getFilter().getType(), dy[0], cbd.getResultGrad(),
      cbd.getStridesAttr(), cbd.getPadsAttr(), cbd.getDilationsAttr(),
      cbd.getGroupAttr());
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
  Value zeros = ReduceSumOp::create(b, loc, kt, CastOp::create(b, loc, xt, isZero),
                                    axes, /*keepdims=*/true);
  Value nonZero = SelectOp::create(b, loc, xt, isZero, one, x);
  Value prodNonZero = ReduceProdOp::create(b, loc, kt, nonZero, axes,
                                           /*keepdims=*/true);
  Value gp = binary<MulOp>(b, loc, kt, keepDims(b, loc, dy[0], xt, axes),
                           prodNonZero);
  Value g = broadcastTo(b, loc, gp, xt);
  Value count = broadcastTo(b, loc, zeros, xt);
  Value none = CompareOp::create(b, loc, maskType(xt), "eq", count, zero);
  Value single = CompareOp::create(b, loc, maskType(xt), "eq", count, one);
  Value atZero = SelectOp::create(b, loc, xt, single, g, zero);
  atZero = SelectOp::create(b, loc, xt, isZero, atZero, zero);
  dx[0] = SelectOp::create(b, loc, xt, none, binary<DivOp>(b, loc, xt, g, nonZero),
                           atZero);
  return success();
}

static LogicalResult resizeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  // The adjoint (upsample_nearest/bilinear backward): a weighted
  // scatter-add of dy into the elements each output read.
  auto r = cast<ResizeOp>(op);
  dx[0] = ResizeGradOp::create(b, op->getLoc(), tensorType(r.getInput()),
                               dy[0], r.getModeAttr(),
                               r.getCoordinateTransformationModeAttr(),
                               r.getNearestModeAttr(), r.getScalesAttr());
  return success();
}

static LogicalResult dropoutGrad(OpBuilder &b, Operation *op, RGrads dy,
                                 Grads dx) {
  // torch's native_dropout_backward: dy * mask * 1 / (1 - ratio).
  auto d = cast<DropoutOp>(op);
  Location loc = op->getLoc();
  auto xt = tensorType(d.getInput());
  double scale = 1.0 / (1.0 - (double)d.getRatio().convertToFloat());
  Value scaled = binary<MulOp>(b, loc, xt, dy[0], splat(b, loc, xt, scale));
  dx[0] = SelectOp::create(b, loc, xt, d.getMask(), scaled,
                           splat(b, loc, xt, 0.0));
  return success();
}

// Data movement: slice <-> pad are each other's gradients, concat splits
// the gradient into slices, gather scatter-adds it.

static LogicalResult sliceGrad(OpBuilder &b, Operation *op, RGrads dy,
                               Grads dx) {
  auto s = cast<SliceOp>(op);
  dx[0] = PadOp::create(b, op->getLoc(), s.getInput().getType(), dy[0],
                        s.getStartsAttr(), s.getStepsAttr(),
                        b.getF64FloatAttr(0.0));
  return success();
}

static LogicalResult padGrad(OpBuilder &b, Operation *op, RGrads dy,
                             Grads dx) {
  auto p = cast<PadOp>(op);
  dx[0] = SliceOp::create(b, op->getLoc(), p.getInput().getType(), dy[0],
                          p.getStartsAttr(), p.getStepsAttr());
  return success();
}

static LogicalResult concatGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  auto c = cast<ConcatOp>(op);
  int64_t axis = c.getAxis(), offset = 0;
  int64_t rank = tensorType(dy[0]).getRank();
  for (auto [i, v] : llvm::enumerate(c.getInputs())) {
    auto t = tensorType(v);
    int64_t n = t.getDimSize(axis);
    if (isa<FloatType>(t.getElementType())) {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = n ? offset : 0;
      dx[i] = SliceOp::create(b, op->getLoc(), t, dy[0],
                              b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(steps));
    }
    offset += n;
  }
  return success();
}

template <typename GradOp>
static LogicalResult gatherGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  dx[0] = GradOp::create(b, op->getLoc(), op->getOperand(0).getType(),
                         op->getOperand(1), dy[0],
                         op->getAttrOfType<IntegerAttr>("axis"));
  return success();
}

/// Piecewise-constant ops (ceil, floor, round): zero gradient almost
/// everywhere, as in torch.
/// torch.fmod: d/dl = grad; d/dr = -grad * trunc(l / r), where
/// trunc(l / r) = (l - y) / r exactly for y = fmod(l, r).
static LogicalResult fmodGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1), y = op->getResult(0);
  auto t = tensorType(y);
  dx[0] = reduceTo(b, loc, dy[0], tensorType(l));
  Value q = binary<DivOp>(b, loc, t, binary<SubOp>(b, loc, t, l, y), r);
  Value g = NegOp::create(b, loc, t, binary<MulOp>(b, loc, t, dy[0], q));
  dx[1] = reduceTo(b, loc, g, tensorType(r));
  return success();
}

static LogicalResult zeroGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  dx[0] = splat(b, op->getLoc(), tensorType(op->getOperand(0)), 0.0);
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
    add(SinOp::getOperationName(), trigGrad);
    add(CosOp::getOperationName(), trigGrad);
    add(TanOp::getOperationName(), trigGrad);
    add(AsinOp::getOperationName(), trigGrad);
    add(AcosOp::getOperationName(), trigGrad);
    add(AtanOp::getOperationName(), trigGrad);
    add(SinhOp::getOperationName(), trigGrad);
    add(CoshOp::getOperationName(), trigGrad);
    add(AsinhOp::getOperationName(), trigGrad);
    add(AcoshOp::getOperationName(), trigGrad);
    add(AtanhOp::getOperationName(), trigGrad);
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
    add(CeilOp::getOperationName(), zeroGrad);
    add(FloorOp::getOperationName(), zeroGrad);
    add(RoundOp::getOperationName(), zeroGrad);
    add(FmodOp::getOperationName(), fmodGrad);
    add(ConvOp::getOperationName(), convGrad);
    add(ConvBackwardDataOp::getOperationName(), convBackwardDataGrad);
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
    add(SliceOp::getOperationName(), sliceGrad);
    add(PadOp::getOperationName(), padGrad);
    add(ConcatOp::getOperationName(), concatGrad);
    add(GatherOp::getOperationName(), gatherGrad<GatherGradOp>);
    add(GatherElementsOp::getOperationName(),
        gatherGrad<GatherElementsGradOp>);
    add(ReduceProdOp::getOperationName(), reduceProdGrad);
    add(DropoutOp::getOperationName(), dropoutGrad);
    add(ResizeOp::getOperationName(), resizeGrad);
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
        auto rt = dyn_cast<RankedTensorType>(r.getType());
        if (rt && isa<IntegerType>(rt.getElementType())) {
          // An integer result (dropout's i1 mask) of an op with a float
          // result: rules ignore its (zero) gradient.
          auto zero = DenseElementsAttr::get(
              rt, b.getIntegerAttr(rt.getElementType(), 0));
          dys.push_back(ConstantOp::create(b, op->getLoc(), rt,
                                           cast<ElementsAttr>(zero)));
          continue;
        }
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
