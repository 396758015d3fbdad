//===- Elementwise.cpp - gradients of the elementwise dlgraph ops ---------===//
//
// Unary and binary (NumPy-broadcasting) elementwise ops, select, cast and
// dropout: vector-Jacobian products written with dlgraph ops, with the same
// formulas as PyTorch's autograd (tools/autograd/derivatives.yaml).
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

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

static LogicalResult expGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  auto t = tensorType(op->getResult(0));
  dx[0] = binary<MulOp>(b, op->getLoc(), t, dy[0], op->getResult(0));
  return success();
}

static LogicalResult logGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  auto t = tensorType(op->getResult(0));
  dx[0] = binary<DivOp>(b, op->getLoc(), t, dy[0], op->getOperand(0));
  return success();
}

static LogicalResult negGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
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

static LogicalResult erfGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
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

static LogicalResult absGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
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

static LogicalResult addGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  Location loc = op->getLoc();
  dx[0] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(0)));
  dx[1] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(1)));
  return success();
}

static LogicalResult subGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  Location loc = op->getLoc();
  dx[0] = reduceTo(b, loc, dy[0], tensorType(op->getOperand(0)));
  Value neg = NegOp::create(b, loc, dy[0].getType(), dy[0]);
  dx[1] = reduceTo(b, loc, neg, tensorType(op->getOperand(1)));
  return success();
}

static LogicalResult mulGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  Location loc = op->getLoc();
  Value l = op->getOperand(0), r = op->getOperand(1);
  auto t = tensorType(op->getResult(0));
  dx[0] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], r), tensorType(l));
  dx[1] = reduceTo(b, loc, binary<MulOp>(b, loc, t, dy[0], l), tensorType(r));
  return success();
}

static LogicalResult divGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
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

static LogicalResult maxGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  return extremumGrad(b, op, dy, dx, "gt");
}

static LogicalResult minGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  return extremumGrad(b, op, dy, dx, "lt");
}

static LogicalResult powGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
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
  Value onTrue = SelectOp::create(b, loc, t, sel.getCondition(), dy[0], zero);
  Value onFalse = SelectOp::create(b, loc, t, sel.getCondition(), zero, dy[0]);
  dx[1] = reduceTo(b, loc, onTrue, tensorType(sel.getOnTrue()));
  dx[2] = reduceTo(b, loc, onFalse, tensorType(sel.getOnFalse()));
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
  dx[0] =
      SelectOp::create(b, loc, xt, d.getMask(), scaled, splat(b, loc, xt, 0.0));
  return success();
}

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

/// Piecewise-constant ops (ceil, floor, round): zero gradient almost
/// everywhere, as in torch.
static LogicalResult zeroGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  dx[0] = splat(b, op->getLoc(), tensorType(op->getOperand(0)), 0.0);
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerElementwiseGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<ReluOp, reluGrad>(ctx);
    attachGradient<ClipOp, clipGrad>(ctx);
    attachGradient<ExpOp, expGrad>(ctx);
    attachGradient<LogOp, logGrad>(ctx);
    attachGradient<NegOp, negGrad>(ctx);
    attachGradient<SqrtOp, sqrtGrad>(ctx);
    attachGradient<RsqrtOp, rsqrtGrad>(ctx);
    attachGradient<TanhOp, tanhGrad>(ctx);
    attachGradient<SigmoidOp, sigmoidGrad>(ctx);
    attachGradient<ErfOp, erfGrad>(ctx);
    attachGradient<SinOp, trigGrad>(ctx);
    attachGradient<CosOp, trigGrad>(ctx);
    attachGradient<TanOp, trigGrad>(ctx);
    attachGradient<AsinOp, trigGrad>(ctx);
    attachGradient<AcosOp, trigGrad>(ctx);
    attachGradient<AtanOp, trigGrad>(ctx);
    attachGradient<SinhOp, trigGrad>(ctx);
    attachGradient<CoshOp, trigGrad>(ctx);
    attachGradient<AsinhOp, trigGrad>(ctx);
    attachGradient<AcoshOp, trigGrad>(ctx);
    attachGradient<AtanhOp, trigGrad>(ctx);
    attachGradient<AbsOp, absGrad>(ctx);
    attachGradient<IdentityOp, identityGrad>(ctx);
    attachGradient<CastOp, castGrad>(ctx);
    attachGradient<AddOp, addGrad>(ctx);
    attachGradient<SubOp, subGrad>(ctx);
    attachGradient<MulOp, mulGrad>(ctx);
    attachGradient<DivOp, divGrad>(ctx);
    attachGradient<MaxOp, maxGrad>(ctx);
    attachGradient<MinOp, minGrad>(ctx);
    attachGradient<PowOp, powGrad>(ctx);
    attachGradient<SelectOp, selectGrad>(ctx);
    attachGradient<CeilOp, zeroGrad>(ctx);
    attachGradient<FloorOp, zeroGrad>(ctx);
    attachGradient<RoundOp, zeroGrad>(ctx);
    attachGradient<FmodOp, fmodGrad>(ctx);
    attachGradient<DropoutOp, dropoutGrad>(ctx);
  });
}
