//===- Normalization.cpp - batch norm and softmax to dlexec --------------===//
// Inference batch normalization as one per-channel kernel; softmax and
// log-softmax as builtin kernels over a normalized axis.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;

void dlc::lowering::populateLowerToExecNormalization(LoweringTable &table) {
  table.add<g::BatchNormOp>([](FuncLowering &fl,
                               g::BatchNormOp bn) -> LogicalResult {
    OpBuilder &b = fl.b;
    Location loc = bn.getLoc();
    if (failed(fl.checkFloat(bn, bn.getInput())))
      return failure();
    auto rt = bn.getType();
    if (rt.getRank() < 2)
      return fl.unsupported(bn, "input must have a channel axis (rank >= 2)");
    auto chMap = AffineMap::get(rt.getRank(), 0, b.getAffineDimExpr(1));
    SmallVector<KIn> ins{fl.kernelInput(bn.getInput(), rt.getShape(), loc)};
    for (Value p :
         {bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()}) {
      KIn k = fl.kernelInput(p, {rt.getDimSize(1)}, loc);
      k.map = chMap;
      ins.push_back(k);
    }
    double eps = decimalValue(bn.getEpsilonAttr());
    Value out = fl.alloc(rt, loc);
    fl.buildKernel(
        loc, "batch_norm", rt.getRank(), ins, {out},
        {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
        [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
            ArrayRef<Value>) -> SmallVector<Value> {
          // (x - mean) / sqrt(var + eps) * scale + bias
          Type t = v[0].getType();
          Value d = arith::SubFOp::create(kb, l, v[0], v[3]);
          Value s = math::SqrtOp::create(
              kb, l, arith::AddFOp::create(kb, l, v[4], constF(kb, l, t, eps)));
          Value n = arith::DivFOp::create(kb, l, d, s);
          Value m = arith::MulFOp::create(kb, l, n, v[1]);
          return {arith::AddFOp::create(kb, l, m, v[2])};
        });
    fl.buffers[bn.getResult()] = out;
    return success();
  });
  table.add<g::SoftmaxOp>(
      [](FuncLowering &fl, g::SoftmaxOp s) -> LogicalResult {
        int64_t rank = s.getType().getRank();
        int64_t axis = s.getAxisAttr().getInt();
        if (axis < 0)
          axis += rank;
        auto k = fl.builtin(s, "softmax", {s.getInput()}, {});
        k->setAttr("axis", fl.b.getI64IntegerAttr(axis));
        return success();
      });
  table.add<g::LogSoftmaxOp>(
      [](FuncLowering &fl, g::LogSoftmaxOp s) -> LogicalResult {
        int64_t rank = s.getType().getRank();
        int64_t axis = s.getAxisAttr().getInt();
        if (axis < 0)
          axis += rank;
        auto k = fl.builtin(s, "log_softmax", {s.getInput()}, {});
        k->setAttr("axis", fl.b.getI64IntegerAttr(axis));
        return success();
      });
}
