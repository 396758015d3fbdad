//===- Optimizers.cpp - optimizer updates to dlexec kernels --------------===//
// SGD (with momentum and weight decay) and Adam/AdamW parameter updates as
// one multi-output kernel each, in torch.optim's order of float operations.
// The step count and the learning rate are rank-0 kernel inputs (the lr
// may come from a schedule computed in the step).
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;

/// Fails with an error at |op| unless |param| is an f32 or f64 tensor: an
/// update in f16 / bf16 would round the hyperparameters and the step count
/// to the parameter's type; those parameters need f32 master weights.
static LogicalResult checkUpdateType(FuncLowering &fl, Operation *op,
                                     Value param) {
  Type et = tensorType(param).getElementType();
  if (et.isF16() || et.isBF16())
    return fl.unsupported(op, "element type " +
                                  llvm::Twine(et.isF16() ? "f16" : "bf16") +
                                  " is not supported by optimizer updates "
                                  "(supported: f32, f64)");
  return fl.checkFloat(op, param);
}

void dlc::lowering::populateLowerToExecOptimizers(LoweringTable &table) {
  table.add<g::SGDUpdateOp>([](FuncLowering &fl,
                               g::SGDUpdateOp s) -> LogicalResult {
    OpBuilder &b = fl.b;
    Location loc = s.getLoc();
    if (failed(checkUpdateType(fl, s, s.getParam())))
      return failure();
    auto pt = tensorType(s.getParam());
    unsigned rank = pt.getRank();
    Type et = pt.getElementType();
    double mom = decimalValue(s.getMomentumAttr()),
           wd = decimalValue(s.getWeightDecayAttr());
    SmallVector<KIn> ins{
        fl.kernelInput(s.getParam(), pt.getShape(), loc),
        fl.kernelInput(s.getGrad(), pt.getShape(), loc),
        fl.kernelInput(s.getMomentumBuffer(), pt.getShape(), loc),
        {fl.getBuffer(s.getStep(), loc), TypedAttr(),
         AffineMap::get(rank, 0, {}, b.getContext())},
        fl.kernelInput(s.getLr(), pt.getShape(), loc)};
    Value np = fl.alloc(pt, loc), nb = fl.alloc(pt, loc);
    AffineMap id = b.getMultiDimIdentityMap(rank);
    fl.buildKernel(
        loc, "sgd_update", rank, ins, {np, nb}, {id, id}, {}, ArrayAttr(),
        [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
            ArrayRef<Value>) -> SmallVector<Value> {
          Value p = v[0], gr = v[1], buf = v[2], step = v[3], lr = v[4];
          if (step.getType() != et)
            step = castScalar(kb, l, step, et);
          if (lr.getType() != et)
            lr = castScalar(kb, l, lr, et);
          if (wd != 0.0)
            gr = arith::AddFOp::create(
                kb, l, gr,
                arith::MulFOp::create(kb, l, constF(kb, l, et, wd), p));
          if (mom == 0.0) {
            Value upd = arith::MulFOp::create(kb, l, lr, gr);
            return {arith::SubFOp::create(kb, l, p, upd), buf};
          }
          // buf' = step == 1 ? g : momentum * buf + g
          Value acc = arith::AddFOp::create(
              kb, l, arith::MulFOp::create(kb, l, constF(kb, l, et, mom), buf),
              gr);
          Value first = arith::CmpFOp::create(kb, l, arith::CmpFPredicate::OEQ,
                                              step, constF(kb, l, et, 1.0));
          Value nbuf = arith::SelectOp::create(kb, l, first, gr, acc);
          Value upd = arith::MulFOp::create(kb, l, lr, nbuf);
          return {arith::SubFOp::create(kb, l, p, upd), nbuf};
        });
    fl.buffers[s.getNewParam()] = np;
    fl.buffers[s.getNewMomentumBuffer()] = nb;
    return success();
  });
  table.add<g::AdamUpdateOp>([](FuncLowering &fl,
                                g::AdamUpdateOp a) -> LogicalResult {
    OpBuilder &b = fl.b;
    Location loc = a.getLoc();
    if (failed(checkUpdateType(fl, a, a.getParam())))
      return failure();
    auto pt = tensorType(a.getParam());
    unsigned rank = pt.getRank();
    Type et = pt.getElementType();
    double b1 = decimalValue(a.getBeta1Attr()),
           b2 = decimalValue(a.getBeta2Attr()),
           eps = decimalValue(a.getEpsilonAttr()),
           wd = decimalValue(a.getWeightDecayAttr());
    bool decoupled = a.getDecoupled();
    SmallVector<KIn> ins{fl.kernelInput(a.getParam(), pt.getShape(), loc),
                         fl.kernelInput(a.getGrad(), pt.getShape(), loc),
                         fl.kernelInput(a.getExpAvg(), pt.getShape(), loc),
                         fl.kernelInput(a.getExpAvgSq(), pt.getShape(), loc),
                         {fl.getBuffer(a.getStep(), loc), TypedAttr(),
                          AffineMap::get(rank, 0, {}, b.getContext())},
                         fl.kernelInput(a.getLr(), pt.getShape(), loc)};
    Value np = fl.alloc(pt, loc), nm = fl.alloc(pt, loc),
          nv = fl.alloc(pt, loc);
    AffineMap id = b.getMultiDimIdentityMap(rank);
    fl.buildKernel(
        loc, "adam_update", rank, ins, {np, nm, nv}, {id, id, id}, {},
        ArrayAttr(),
        [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
            ArrayRef<Value>) -> SmallVector<Value> {
          auto c = [&](double d) { return constF(kb, l, et, d); };
          auto mul = [&](Value p, Value q) {
            return (Value)arith::MulFOp::create(kb, l, p, q);
          };
          auto add = [&](Value p, Value q) {
            return (Value)arith::AddFOp::create(kb, l, p, q);
          };
          auto sub = [&](Value p, Value q) {
            return (Value)arith::SubFOp::create(kb, l, p, q);
          };
          auto div = [&](Value p, Value q) {
            return (Value)arith::DivFOp::create(kb, l, p, q);
          };
          Value p = v[0], gr = v[1], m = v[2], vs = v[3];
          // The per-step scalars in double, each rounded once to the
          // parameter's type, as torch.optim computes them (Python floats
          // and math.sqrt, then a scalar argument of a float tensor op): in
          // f32, 1 - 0.999f^t starts from 0.99900001287 and made every step
          // 6.5e-6 (relative) too small at beta2 = 0.999, 8.3e-5 at 0.9999.
          Type f64 = kb.getF64Type();
          auto c64 = [&](double d) { return constF(kb, l, f64, d); };
          Value t = castScalar(kb, l, v[4], f64),
                lr = castScalar(kb, l, v[5], f64);
          if (wd != 0.0) {
            if (decoupled)
              p = mul(p, castScalar(kb, l, sub(c64(1.0), mul(lr, c64(wd))),
                                    et));
            else
              gr = add(gr, mul(c(wd), p));
          }
          Value m2 = add(mul(c(b1), m), mul(c(1.0 - b1), gr));
          Value v2 = add(mul(c(b2), vs), mul(c(1.0 - b2), mul(gr, gr)));
          // PyTorch order: step_size = lr / bc1;
          // denom = sqrt(v') / sqrt(bc2) + eps; p -= step_size * m' / denom
          Value bc1 = sub(c64(1.0), math::PowFOp::create(kb, l, c64(b1), t));
          Value bc2 = sub(c64(1.0), math::PowFOp::create(kb, l, c64(b2), t));
          Value stepSize = castScalar(kb, l, div(lr, bc1), et);
          Value bc2Sqrt =
              castScalar(kb, l, math::SqrtOp::create(kb, l, bc2), et);
          Value denom =
              add(div(math::SqrtOp::create(kb, l, v2), bc2Sqrt), c(eps));
          Value np2 = sub(p, mul(stepSize, div(m2, denom)));
          return {np2, m2, v2};
        });
    fl.buffers[a.getNewParam()] = np;
    fl.buffers[a.getNewExpAvg()] = nm;
    fl.buffers[a.getNewExpAvgSq()] = nv;
    return success();
  });
}
