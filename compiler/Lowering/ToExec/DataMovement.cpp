//===- DataMovement.cpp - data movement ops to dlexec copies -------------===//
// Reshape as a view; identity, broadcast, transpose, slice, pad and concat as
// copy kernels with strided maps; gather and resize as builtin kernels;
// one_hot as an elementwise kernel that compares the index with a loop index.
#include "compiler/Lowering/ToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

namespace {

/// The body of a copy kernel: yields its only input.
SmallVector<Value> copyBody(OpBuilder &, Location, ArrayRef<Value> v,
                            ArrayRef<Value>) {
  return {v[0]};
}

/// (i_0, ...) -> (starts[d] + steps[d] * i_d, ...) into a buffer of shape
/// |big| from loops of shape |small|. Codegen takes a loop's size from any
/// operand indexed by that loop alone, so a dim that covers only part of
/// |big| with start 0 and step 1 is written `i mod big[d]` (equal to i, as
/// i < small[d] <= big[d]) rather than as the plain dim.
AffineMap stridedMap(OpBuilder &b, ArrayRef<int64_t> starts,
                     ArrayRef<int64_t> steps, ArrayRef<int64_t> big,
                     ArrayRef<int64_t> small) {
  SmallVector<AffineExpr> exprs;
  for (size_t d = 0; d < starts.size(); ++d) {
    AffineExpr e = b.getAffineDimExpr(d) * steps[d] + starts[d];
    if (isa<AffineDimExpr>(e) && big[d] != small[d])
      e = e % big[d];
    exprs.push_back(e);
  }
  return AffineMap::get(starts.size(), 0, exprs, b.getContext());
}

/// The buffer of |v| for a copy kernel whose output map |outMap| is not
/// plain in every loop: then only this identity-mapped input gives codegen
/// the loop sizes, so it is read through a same-shape dlexec.reshape view,
/// which keeps the elementwise fusion from replacing it with the reads of
/// its producer (whose maps may not give them either).
Value sizeSource(FuncLowering &fl, Value v, AffineMap outMap, Location loc) {
  Value buf = fl.getBuffer(v, loc);
  if (llvm::all_of(outMap.getResults(),
                   [](AffineExpr e) { return isa<AffineDimExpr>(e); }))
    return buf;
  return x::ReshapeOp::create(fl.b, loc, buf.getType(), buf).getResult();
}

} // namespace

/// dlgraph.one_hot as an elementwise kernel over the result: the index read
/// at the other loops (converted to i64, truncating a float index, and
/// wrapped when negative) is compared with the loop index along `axis`;
/// out-of-range indices match no position and give `off_value` everywhere.
static LogicalResult lowerOneHot(FuncLowering &fl, g::OneHotOp op) {
  OpBuilder &b = fl.b;
  Location loc = op.getLoc();
  auto rt = op.getType();
  unsigned rank = rt.getRank();
  int64_t axis = op.getAxis(), depth = op.getDepth();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < rank; ++i)
    if ((int64_t)i != axis)
      exprs.push_back(b.getAffineDimExpr(i));
  KIn kin{Value(), TypedAttr(), AffineMap::get(rank, 0, exprs, b.getContext())};
  if (TypedAttr splat = fl.splats.lookup(op.getIndices());
      splat && !fl.buffers.count(op.getIndices()))
    kin.scalar = splat;
  else
    kin.buffer = fl.getBuffer(op.getIndices(), loc);
  Value out = fl.alloc(rt, loc);
  TypedAttr on = op.getOnValueAttr(), off = op.getOffValueAttr();
  fl.buildKernel(
      loc, "one_hot", rank, {kin}, {out}, {b.getMultiDimIdentityMap(rank)}, {},
      ArrayAttr(),
      [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
          ArrayRef<Value>) -> SmallVector<Value> {
        Type i64 = kb.getI64Type();
        Value idx = castScalar(kb, l, ins[0], i64);
        Value zero = arith::ConstantOp::create(kb, l, kb.getI64IntegerAttr(0));
        Value n = arith::ConstantOp::create(kb, l, kb.getI64IntegerAttr(depth));
        Value neg =
            arith::CmpIOp::create(kb, l, arith::CmpIPredicate::slt, idx, zero);
        Value wrapped = arith::SelectOp::create(
            kb, l, neg, arith::AddIOp::create(kb, l, idx, n), idx);
        Value k = arith::IndexCastOp::create(
            kb, l, i64,
            x::IndexOp::create(kb, l, kb.getIndexType(),
                               kb.getI64IntegerAttr(axis)));
        Value hit =
            arith::CmpIOp::create(kb, l, arith::CmpIPredicate::eq, wrapped, k);
        return {arith::SelectOp::create(kb, l, hit,
                                        arith::ConstantOp::create(kb, l, on),
                                        arith::ConstantOp::create(kb, l, off))};
      });
  fl.buffers[op.getResult()] = out;
  return success();
}

void dlc::lowering::populateLowerToExecDataMovement(LoweringTable &table) {
  table.add<g::OneHotOp>(lowerOneHot);
  table.add<g::ReshapeOp>(
      [](FuncLowering &fl, g::ReshapeOp r) -> LogicalResult {
        if (fl.splats.count(r.getInput()) && !fl.buffers.count(r.getInput())) {
          // Copy before inserting: the insert may grow the map.
          TypedAttr splat = fl.splats.lookup(r.getInput());
          fl.splats[r.getResult()] = splat;
          return success();
        }
        Location loc = r.getLoc();
        fl.buffers[r.getResult()] =
            x::ReshapeOp::create(fl.b, loc, toMemRef(r.getType()),
                                 fl.getBuffer(r.getInput(), loc))
                .getResult();
        return success();
      });
  table.add<g::IdentityOp, g::BroadcastToOp>(
      [](FuncLowering &fl, auto o) -> LogicalResult {
        fl.elementwise(o, {o.getInput()}, copyBody);
        return success();
      });
  table.add<g::TransposeOp>(
      [](FuncLowering &fl, g::TransposeOp t) -> LogicalResult {
        OpBuilder &b = fl.b;
        Location loc = t.getLoc();
        auto rt = t.getType();
        ArrayRef<int64_t> perm = t.getPerm();
        SmallVector<AffineExpr> exprs(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          exprs[p] = b.getAffineDimExpr(i);
        auto inMap = AffineMap::get(rt.getRank(), 0, exprs, b.getContext());
        Value out = fl.alloc(rt, loc);
        fl.buildKernel(loc, "transpose", rt.getRank(),
                       {{fl.getBuffer(t.getInput(), loc), TypedAttr(), inMap}},
                       {out}, {b.getMultiDimIdentityMap(rt.getRank())}, {},
                       ArrayAttr(), copyBody);
        fl.buffers[t.getResult()] = out;
        return success();
      });
  table.add<g::SliceOp>([](FuncLowering &fl, g::SliceOp s) -> LogicalResult {
    // One copy kernel over the result reading input[starts + steps * i].
    OpBuilder &b = fl.b;
    Location loc = s.getLoc();
    auto rt = s.getType();
    if (fl.splats.count(s.getInput()) && !fl.buffers.count(s.getInput())) {
      TypedAttr splat = fl.splats.lookup(s.getInput());
      fl.splats[s.getResult()] = splat;
      return success();
    }
    Value out = fl.alloc(rt, loc);
    // Consumers read the slice through a same-shape view, so that the
    // elementwise fusion does not move the strided read into a consumer
    // whose other maps may leave a loop without a plain dim (codegen
    // needs one to size each loop; e.g. a reduction over a broadcast).
    fl.buffers[s.getResult()] =
        x::ReshapeOp::create(b, loc, out.getType(), out).getResult();
    if (rt.getNumElements() == 0 || rt.getRank() == 0) {
      if (rt.getRank() == 0)
        return fl.unsupported(s, "rank-0 slice");
      return success();
    }
    fl.buildKernel(
        loc, "slice", rt.getRank(),
        {{fl.getBuffer(s.getInput(), loc), TypedAttr(),
          stridedMap(b, s.getStarts(), s.getSteps(),
                     tensorType(s.getInput()).getShape(), rt.getShape())}},
        {out}, {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
        copyBody);
    return success();
  });
  table.add<g::PadOp>([](FuncLowering &fl, g::PadOp p) -> LogicalResult {
    // A fill kernel over the result, then a copy kernel over the input
    // writing result[starts + steps * i].
    OpBuilder &b = fl.b;
    Location loc = p.getLoc();
    auto rt = p.getType();
    auto it = tensorType(p.getInput());
    unsigned rank = rt.getRank();
    Type et = rt.getElementType();
    if (rank == 0)
      return fl.unsupported(p, "rank-0 pad");
    if (kindOf(et) == ElemKind::Other)
      return fl.unsupported(p, "unsupported element type");
    double value = p.getValue().convertToDouble();
    Value out = fl.alloc(rt, loc);
    fl.buffers[p.getResult()] = out;
    if (rt.getNumElements() == 0)
      return success();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    fl.buildKernel(loc, "pad_fill", rank, {}, {out}, {id}, {}, ArrayAttr(),
                   [&](OpBuilder &kb, Location l, ArrayRef<Value>,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     if (isa<FloatType>(et))
                       return {constF(kb, l, et, value)};
                     return {arith::ConstantOp::create(
                         kb, l, kb.getIntegerAttr(et, (int64_t)value))};
                   });
    if (it.getNumElements() == 0)
      return success();
    AffineMap outMap = stridedMap(b, p.getStarts(), p.getSteps(), rt.getShape(),
                                  it.getShape());
    fl.buildKernel(
        loc, "pad", rank,
        {{sizeSource(fl, p.getInput(), outMap, loc), TypedAttr(), id}}, {out},
        {outMap}, {}, ArrayAttr(), copyBody);
    return success();
  });
  table.add<g::ConcatOp>([](FuncLowering &fl, g::ConcatOp c) -> LogicalResult {
    // One copy kernel per input writing its part of the result.
    OpBuilder &b = fl.b;
    Location loc = c.getLoc();
    auto rt = c.getType();
    unsigned rank = rt.getRank();
    int64_t axis = c.getAxis(), offset = 0;
    Value out = fl.alloc(rt, loc);
    fl.buffers[c.getResult()] = out;
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<int64_t> steps(rank, 1);
    for (Value v : c.getInputs()) {
      auto t = tensorType(v);
      if (t.getNumElements() != 0) {
        SmallVector<int64_t> starts(rank, 0);
        starts[axis] = offset;
        AffineMap outMap =
            stridedMap(b, starts, steps, rt.getShape(), t.getShape());
        fl.buildKernel(loc, "concat", rank,
                       {{sizeSource(fl, v, outMap, loc), TypedAttr(), id}},
                       {out}, {outMap}, {}, ArrayAttr(), copyBody);
      }
      offset += t.getDimSize(axis);
    }
    return success();
  });
  table.add<g::GatherOp>([](FuncLowering &fl, g::GatherOp o) -> LogicalResult {
    fl.builtin(o, "gather", {o.getData(), o.getIndices()}, {"axis"});
    return success();
  });
  table.add<g::GatherGradOp>([](FuncLowering &fl,
                                g::GatherGradOp o) -> LogicalResult {
    fl.builtin(o, "gather_grad", {o.getIndices(), o.getResultGrad()}, {"axis"});
    return success();
  });
  table.add<g::GatherElementsOp>([](FuncLowering &fl,
                                    g::GatherElementsOp o) -> LogicalResult {
    fl.builtin(o, "gather_elements", {o.getData(), o.getIndices()}, {"axis"});
    return success();
  });
  table.add<g::GatherElementsGradOp>(
      [](FuncLowering &fl, g::GatherElementsGradOp o) -> LogicalResult {
        fl.builtin(o, "gather_elements_grad",
                   {o.getIndices(), o.getResultGrad()}, {"axis"});
        return success();
      });
  table.add<g::ResizeOp, g::ResizeGradOp>(
      [](FuncLowering &fl, auto r) -> LogicalResult {
        Operation *op = r.getOperation();
        if (failed(fl.checkFloat(op, op->getOperand(0))))
          return failure();
        fl.builtin(op, isa<g::ResizeOp>(op) ? "resize" : "resize_grad",
                   {op->getOperand(0)},
                   {"mode", "coordinate_transformation_mode", "nearest_mode",
                    "scales"});
        return success();
      });
}
