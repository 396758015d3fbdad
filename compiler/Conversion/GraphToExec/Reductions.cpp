//===- Reductions.cpp - reductions to dlexec reduction kernels -----------===//
// ReduceSum/Mean/Max/Prod, ArgMax/ArgMin and CumSum as dlexec.kernel ops
// whose reduced loops are "reduction" iterators with an initial accumulator.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

LogicalResult dlc::lowering::lowerReduction(FuncLowering &fl, Operation *op,
                                            Value input, ArrayRef<int64_t> axes,
                                            bool keepdims, StringRef kind) {
  OpBuilder &b = fl.b;
  Location loc = op->getLoc();
  auto in = tensorType(input);
  Type et = in.getElementType();
  // Integer sums, products and maxima (i32/i64; sums and products wrap).
  bool isInt = isa<IntegerType>(et) && !et.isInteger(1);
  if (!isa<FloatType>(et) && !(isInt && kind != "mean"))
    return op->emitError() << "dlgraph-lower-to-dlexec: '" << op->getName()
                           << "' supports float tensors"
                           << (kind == "mean" ? "" : " and i32/i64")
                           << ", not " << et;
  unsigned rank = in.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<StringRef> iters;
  SmallVector<AffineExpr> outExprs;
  int64_t count = 1;
  for (unsigned i = 0; i < rank; ++i) {
    bool reduced = llvm::is_contained(axes, (int64_t)i);
    iters.push_back(reduced ? "reduction" : "parallel");
    if (reduced) {
      count *= in.getDimSize(i);
      if (keepdims)
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    } else {
      outExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  auto outMap = AffineMap::get(rank, 0, outExprs, ctx);
  // An f16 / bf16 sum, mean or product is the f32 reduction of the widened
  // input (into an f32 scratch buffer, summed as the f32 op sums) rounded
  // once by a second kernel, so it equals the f32 op on the same values,
  // rounded once. A maximum is exact in the input's type.
  bool viaF32 = (et.isF16() || et.isBF16()) && kind != "max";
  Type ft = viaF32 ? b.getF32Type() : et;
  Attribute initAttr;
  if (isInt)
    initAttr = b.getIntegerAttr(
        et, kind == "max"
                ? APInt::getSignedMinValue(et.getIntOrFloatBitWidth())
                : APInt(et.getIntOrFloatBitWidth(), kind == "prod" ? 1 : 0));
  else
    initAttr = kind == "max"
                   ? (Attribute)b.getFloatAttr(
                         ft, APFloat::getInf(
                                 cast<FloatType>(ft).getFloatSemantics(),
                                 /*Negative=*/true))
                   : (Attribute)b.getFloatAttr(ft, kind == "prod" ? 1.0 : 0.0);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value out = fl.alloc(resultType, loc);
  Value acc = viaF32 ? fl.alloc(resultType.clone(ft), loc) : out;
  KIn kin{fl.getBuffer(input, loc), TypedAttr(),
          b.getMultiDimIdentityMap(rank)};
  double scale = 1.0 / (double)count;
  fl.buildKernel(loc, op->getName().stripDialect(), rank, {kin}, {acc},
                 {outMap}, iters, b.getArrayAttr({initAttr}),
                 [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
                     ArrayRef<Value> outs) -> SmallVector<Value> {
                   Value v = ins[0];
                   if (isInt) {
                     if (kind == "max")
                       return {arith::MaxSIOp::create(kb, l, outs[0], v)};
                     if (kind == "prod")
                       return {arith::MulIOp::create(kb, l, outs[0], v)};
                     return {arith::AddIOp::create(kb, l, outs[0], v)};
                   }
                   if (viaF32)
                     v = arith::ExtFOp::create(kb, l, ft, v);
                   if (kind == "max")
                     return {arith::MaximumFOp::create(kb, l, outs[0], v)};
                   if (kind == "prod")
                     return {arith::MulFOp::create(kb, l, outs[0], v)};
                   if (kind == "mean")
                     v = arith::MulFOp::create(kb, l, v,
                                               constF(kb, l, ft, scale));
                   return {arith::AddFOp::create(kb, l, outs[0], v)};
                 });
  if (viaF32) {
    unsigned outRank = resultType.getRank();
    AffineMap id = b.getMultiDimIdentityMap(outRank);
    fl.buildKernel(loc, "round", outRank, {KIn{acc, TypedAttr(), id}}, {out},
                   {id}, {}, ArrayAttr(),
                   [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     return {arith::TruncFOp::create(kb, l, et, ins[0])};
                   });
  }
  fl.buffers[op->getResult(0)] = out;
  return success();
}

/// dlgraph.cumsum as one reduction kernel over loops [d_0, ..., d_{r-1}, j]:
/// the d loops run over the result and j over the summed axis, and each
/// result element accumulates input[d with d_axis = j] where j <= d_axis
/// (j < d_axis with `exclusive`; >= and > with `reverse`). That is O(n^2)
/// additions along an axis of length n instead of a scan's O(n), which is
/// fine for the short axes CumSum sees in models (positions, masks); a
/// builtin scan kernel would replace it if a long axis shows up. Any element
/// type of the op (f32, f64, i32, i64); the sum runs in increasing j.
/// dlgraph.cumprod is the same kernel with products (identity 1).
template <typename ScanOp>
static LogicalResult lowerScan(FuncLowering &fl, ScanOp op) {
  constexpr bool isProd = std::is_same_v<ScanOp, g::CumProdOp>;
  OpBuilder &b = fl.b;
  Location loc = op.getLoc();
  auto in = tensorType(op.getInput());
  Type et = in.getElementType();
  unsigned rank = in.getRank();
  int64_t axis = op.getAxis();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> inExprs, outExprs;
  for (unsigned i = 0; i < rank; ++i) {
    outExprs.push_back(getAffineDimExpr(i, ctx));
    inExprs.push_back(getAffineDimExpr((int64_t)i == axis ? rank : i, ctx));
  }
  SmallVector<StringRef> iters(rank, "parallel");
  iters.push_back("reduction");
  auto inMap = AffineMap::get(rank + 1, 0, inExprs, ctx);
  auto outMap = AffineMap::get(rank + 1, 0, outExprs, ctx);
  // Always a buffer, a splat input included: its map is the only one that
  // gives codegen the size of loop j.
  KIn kin{fl.getBuffer(op.getInput(), loc), TypedAttr(), inMap};
  bool isFloat = isa<FloatType>(et);
  // The combiner's identity: the initial value and the skipped terms.
  TypedAttr zero = isFloat ? (TypedAttr)b.getFloatAttr(et, isProd ? 1.0 : 0.0)
                           : (TypedAttr)b.getIntegerAttr(et, isProd ? 1 : 0);
  arith::CmpIPredicate pred =
      op.getReverse() ? (op.getExclusive() ? arith::CmpIPredicate::ugt
                                           : arith::CmpIPredicate::uge)
                      : (op.getExclusive() ? arith::CmpIPredicate::ult
                                           : arith::CmpIPredicate::ule);
  Value out = fl.alloc(op.getType(), loc);
  fl.buildKernel(loc, isProd ? "cumprod" : "cumsum", rank + 1, {kin}, {out}, {outMap}, iters,
                 b.getArrayAttr({zero}),
                 [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
                     ArrayRef<Value> outs) -> SmallVector<Value> {
                   Value p = x::IndexOp::create(kb, l, kb.getIndexType(),
                                                kb.getI64IntegerAttr(axis));
                   Value j = x::IndexOp::create(kb, l, kb.getIndexType(),
                                                kb.getI64IntegerAttr(rank));
                   Value take = arith::CmpIOp::create(kb, l, pred, j, p);
                   Value z = arith::ConstantOp::create(kb, l, zero);
                   Value term = arith::SelectOp::create(kb, l, take, ins[0], z);
                   if (isFloat && isProd)
                     return {arith::MulFOp::create(kb, l, outs[0], term)};
                   if (isFloat)
                     return {arith::AddFOp::create(kb, l, outs[0], term)};
                   if (isProd)
                     return {arith::MulIOp::create(kb, l, outs[0], term)};
                   return {arith::AddIOp::create(kb, l, outs[0], term)};
                 });
  fl.buffers[op.getResult()] = out;
  return success();
}

void dlc::lowering::populateLowerToExecReductions(LoweringTable &table) {
  table.add<g::CumSumOp>(lowerScan<g::CumSumOp>);
  table.add<g::CumProdOp>(lowerScan<g::CumProdOp>);
  table.add<g::ReduceSumOp>(
      [](FuncLowering &fl, g::ReduceSumOp r) -> LogicalResult {
        return lowerReduction(fl, r, r.getInput(), r.getAxes(), r.getKeepdims(),
                              "sum");
      });
  table.add<g::ReduceMeanOp>(
      [](FuncLowering &fl, g::ReduceMeanOp r) -> LogicalResult {
        return lowerReduction(fl, r, r.getInput(), r.getAxes(), r.getKeepdims(),
                              "mean");
      });
  table.add<g::ReduceMaxOp>(
      [](FuncLowering &fl, g::ReduceMaxOp r) -> LogicalResult {
        return lowerReduction(fl, r, r.getInput(), r.getAxes(), r.getKeepdims(),
                              "max");
      });
  table.add<g::ReduceProdOp>(
      [](FuncLowering &fl, g::ReduceProdOp r) -> LogicalResult {
        return lowerReduction(fl, r, r.getInput(), r.getAxes(), r.getKeepdims(),
                              "prod");
      });
  table.add<g::ArgMaxOp, g::ArgMinOp>([](FuncLowering &fl,
                                         auto a) -> LogicalResult {
    // A reduction over `axis` carrying (best value, its index); the
    // value output is a scratch buffer.
    OpBuilder &b = fl.b;
    Operation *op = a.getOperation();
    Location loc = op->getLoc();
    if (failed(fl.checkFloat(op, a.getInput())))
      return failure();
    auto in = tensorType(a.getInput());
    auto ft = cast<FloatType>(in.getElementType());
    bool isMax = isa<g::ArgMaxOp>(op), last = a.getSelectLastIndex();
    int64_t axis = a.getAxis();
    unsigned rank = in.getRank();
    MLIRContext *ctx = b.getContext();
    SmallVector<StringRef> iters;
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < rank; ++i) {
      iters.push_back((int64_t)i == axis ? "reduction" : "parallel");
      if ((int64_t)i != axis)
        outExprs.push_back(getAffineDimExpr(i, ctx));
      else if (a.getKeepdims())
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    }
    auto outMap = AffineMap::get(rank, 0, outExprs, ctx);
    auto rt = a.getType();
    Value best = fl.alloc(RankedTensorType::get(rt.getShape(), ft), loc);
    Value idx = fl.alloc(rt, loc);
    Attribute initBest = b.getFloatAttr(
        ft, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/isMax));
    Attribute initIdx = b.getI64IntegerAttr(0);
    KIn kin{fl.getBuffer(a.getInput(), loc), TypedAttr(),
            b.getMultiDimIdentityMap(rank)};
    arith::CmpFPredicate pred =
        isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
              : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
    fl.buildKernel(
        loc, op->getName().stripDialect(), rank, {kin}, {best, idx},
        {outMap, outMap}, iters, b.getArrayAttr({initBest, initIdx}),
        [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
            ArrayRef<Value> outs) -> SmallVector<Value> {
          Value i = x::IndexOp::create(kb, l, kb.getIndexType(),
                                       kb.getI64IntegerAttr(axis));
          Value i64 = arith::IndexCastOp::create(kb, l, kb.getI64Type(), i);
          Value better = arith::CmpFOp::create(kb, l, pred, ins[0], outs[0]);
          return {arith::SelectOp::create(kb, l, better, ins[0], outs[0]),
                  arith::SelectOp::create(kb, l, better, i64, outs[1])};
        });
    fl.buffers[op->getResult(0)] = idx;
    return success();
  });
}
