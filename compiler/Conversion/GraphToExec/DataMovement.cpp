//===- DataMovement.cpp - data movement ops to dlexec copies -------------===//
// Reshape as a view; slices of activations and concats that are part of a
// larger concat as dlexec.subview views; identity, broadcast, transpose,
// other slices, pad and concat as copy kernels with strided maps; gather and
// resize as builtin kernels; one_hot as an elementwise kernel that compares the
// index with a loop index.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

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

/// Whether a slice of |buf| may be a dlexec.subview: |buf| is an activation
/// (an alloc, through reshape views and subviews), written once before the
/// slice and never again, so its readers may read it later. Inputs and
/// variables are copied: a variable may be written in place later in the
/// step.
bool viewable(Value buf) {
  for (;;) {
    if (auto r = buf.getDefiningOp<x::ReshapeOp>())
      buf = r.getSource();
    else if (auto v = buf.getDefiningOp<x::SubviewOp>())
      buf = v.getSource();
    else
      return static_cast<bool>(buf.getDefiningOp<x::AllocOp>());
  }
}

/// The buffer of |t|'s input when |t| needs no copy: it swaps the last two
/// dims, every reader is a dlgraph.matmul that reads it through its
/// batched_gemm's trans flag (matmulAbsorbsTranspose), and the input is a
/// contiguous activation written once (viewable), so the call may read it
/// where the matmul runs; null otherwise. Any other transpose (one that
/// moves a batch dim, e.g. [B, T, H, D] -> [B, H, D, T]) or a reader that
/// needs the transposed buffer keeps the copy kernel.
Value unmaterializedTranspose(FuncLowering &fl, g::TransposeOp t) {
  if (!swapsLastTwoDims(t.getPerm()) || t->use_empty())
    return nullptr;
  for (OpOperand &use : t->getUses()) {
    auto mm = dyn_cast<g::MatMulOp>(use.getOwner());
    if (!mm || !matmulAbsorbsTranspose(mm, use.getOperandNumber()))
      return nullptr;
  }
  auto it = fl.buffers.find(t.getInput());
  if (it == fl.buffers.end() || fl.inFlight.count(t.getInput()))
    return nullptr;
  Value src = it->second;
  auto mt = cast<MemRefType>(src.getType());
  if (!mt.getLayout().isIdentity() || !viewable(src))
    return nullptr;
  return src;
}

/// The concat of |c|'s block, on the same axis, with the most inputs, that
/// holds |c|'s inputs as a contiguous run starting at its input |at| (the
/// first in block order on a tie); null when there is none.
g::ConcatOp enclosingConcat(g::ConcatOp c, int64_t &at) {
  g::ConcatOp best;
  auto ins = c.getInputs();
  if (ins.empty())
    return best;
  for (Operation *user : ins[0].getUsers()) {
    auto d = dyn_cast<g::ConcatOp>(user);
    if (!d || d == c || d->getBlock() != c->getBlock() ||
        d.getAxis() != c.getAxis() || d.getInputs().size() <= ins.size())
      continue;
    auto dins = d.getInputs();
    for (size_t k = 0; k + ins.size() <= dins.size(); ++k) {
      if (!std::equal(ins.begin(), ins.end(), dins.begin() + k))
        continue;
      if (!best || dins.size() > best.getInputs().size() ||
          (dins.size() == best.getInputs().size() &&
           d->isBeforeInBlock(best))) {
        best = d;
        at = k;
      }
      break;
    }
  }
  return best;
}

/// The last concat reached by following enclosingConcat from |c|, and in
/// |base| the input of it at which |c|'s inputs start.
g::ConcatOp chainRoot(g::ConcatOp c, int64_t &base) {
  g::ConcatOp cur = c;
  int64_t at = 0;
  base = 0;
  while (g::ConcatOp d = enclosingConcat(cur, at)) {
    base += at;
    cur = d;
  }
  return cur;
}

/// The root of |c|'s concat family, and in |base| the root's input at which
/// |c|'s inputs start: the largest concat reached by following
/// enclosingConcat from |c| (e.g. each dense layer of a DenseNet block
/// concatenates all the block's features so far, a prefix of the block's
/// last concat). The members of a family are views of the root's buffer,
/// into whose slots each input is copied once: the "concatenate in place"
/// of XLA's buffer assignment (the operands share slices of the output's
/// allocation) and of the memory-efficient DenseNet (Pleiss et al. 2017,
/// shared storage for the concatenated features). A root one of whose
/// inputs is a member of its own family keeps its members as copies
/// (returns |c|). Memoized in |fl|.
g::ConcatOp concatRoot(FuncLowering &fl, g::ConcatOp c, int64_t &base) {
  auto it = fl.concatRoots.find(c);
  if (it != fl.concatRoots.end()) {
    base = it->second.second;
    return cast<g::ConcatOp>(it->second.first);
  }
  g::ConcatOp cur = chainRoot(c, base);
  if (cur != c)
    for (Value v : cur.getInputs())
      if (auto inner = v.getDefiningOp<g::ConcatOp>()) {
        int64_t ignored;
        if (chainRoot(inner, ignored) == cur) {
          cur = c;
          base = 0;
          break;
        }
      }
  fl.concatRoots[c] = {cur, base};
  return cur;
}

/// Copies concat input |v| into its slot at |offset| along |axis| of |out|
/// in the shape of the tensor |v| is a reshape of, when that reshape only
/// merges dims of its input into |axis| (e.g. attention heads [2,128,12,64]
/// merged into [2,128,768], the gradient of one piece of a fused QKV
/// projection): |out| is then viewed with |axis| split the same way, the
/// slot starts at a multiple of the merged inner dims, and the copy reads
/// the unreshaped producer through the identity map, so the memory planner
/// can make the producer write the slot itself (writeCopiesInPlace). False,
/// with nothing built, when the shapes do not line up this way.
bool copySplitSlot(FuncLowering &fl, Value v, Value out, int64_t axis,
                   int64_t offset, llvm::SmallDenseMap<Type, Value> &views,
                   Location loc) {
  auto r = v.getDefiningOp<g::ReshapeOp>();
  if (!r || (fl.splats.count(r.getInput()) && !fl.buffers.count(r.getInput())))
    return false;
  auto ut = tensorType(r.getInput()), vt = tensorType(v);
  auto outShape = cast<MemRefType>(out.getType()).getShape();
  int64_t rank = vt.getRank(), urank = ut.getRank(), extra = urank - rank;
  if (extra <= 0)
    return false;
  // u = v's dims before |axis|, then group [axis, axis + extra], then v's
  // dims after |axis|.
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis &&
        ut.getDimSize(d < axis ? d : d + extra) != vt.getDimSize(d))
      return false;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d <= axis + extra; ++d)
    inner *= ut.getDimSize(d);
  if (ut.getDimSize(axis) * inner != vt.getDimSize(axis) || offset % inner ||
      outShape[axis] % inner)
    return false;
  OpBuilder &b = fl.b;
  SmallVector<int64_t> viewShape(outShape), starts(urank, 0), steps(urank, 1);
  viewShape[axis] = outShape[axis] / inner;
  viewShape.insert(viewShape.begin() + axis + 1,
                   ut.getShape().begin() + axis + 1,
                   ut.getShape().begin() + axis + 1 + extra);
  starts[axis] = offset / inner;
  auto viewType = MemRefType::get(
      viewShape, cast<MemRefType>(out.getType()).getElementType());
  Value &view = views[viewType];
  if (!view)
    view = x::ReshapeOp::create(b, loc, viewType, out).getResult();
  AffineMap outMap = stridedMap(b, starts, steps, viewShape, ut.getShape());
  fl.buildKernel(loc, "concat", urank,
                 {{sizeSource(fl, r.getInput(), outMap, loc), TypedAttr(),
                   b.getMultiDimIdentityMap(urank)}},
                 {view}, {outMap}, {}, ArrayAttr(), copyBody);
  return true;
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

/// OneHot, Reshape, Identity/BroadcastTo, Transpose and Slice.
static void addViewLowerings(LoweringTable &table) {
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
        if (Value src = unmaterializedTranspose(fl, t)) {
          fl.transposedSources[t.getResult()] = src;
          return success();
        }
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
    OpBuilder &b = fl.b;
    Location loc = s.getLoc();
    auto rt = s.getType();
    if (fl.splats.count(s.getInput()) && !fl.buffers.count(s.getInput())) {
      TypedAttr splat = fl.splats.lookup(s.getInput());
      fl.splats[s.getResult()] = splat;
      return success();
    }
    if (rt.getRank() == 0)
      return fl.unsupported(s, "rank-0 slice");
    // A forward slice of an activation is a view: its readers read the
    // source (see viewable).
    Value src = fl.getBuffer(s.getInput(), loc);
    if (rt.getNumElements() != 0 && viewable(src) &&
        llvm::all_of(s.getSteps(), [](int64_t st) { return st >= 1; })) {
      fl.buffers[s.getResult()] =
          x::SubviewOp::create(b, loc, toMemRef(rt), src, s.getStartsAttr(),
                               s.getStepsAttr())
              .getResult();
      return success();
    }
    // Else one copy kernel over the result reading input[starts + steps * i].
    Value out = fl.alloc(rt, loc);
    // Consumers read the slice through a same-shape view, so that the
    // elementwise fusion does not move the strided read into a consumer
    // whose other maps may leave a loop without a plain dim (codegen
    // needs one to size each loop; e.g. a reduction over a broadcast).
    fl.buffers[s.getResult()] =
        x::ReshapeOp::create(b, loc, out.getType(), out).getResult();
    if (rt.getNumElements() == 0)
      return success();
    fl.buildKernel(
        loc, "slice", rt.getRank(),
        {{src, TypedAttr(),
          stridedMap(b, s.getStarts(), s.getSteps(),
                     tensorType(s.getInput()).getShape(), rt.getShape())}},
        {out}, {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
        copyBody);
    return success();
  });
}

/// Pad, Concat, the gathers and Resize.
static void addCopyAndGatherLowerings(LoweringTable &table) {
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
    // One copy kernel per input writing its slot of the root concat's
    // buffer (see concatRoot), each slot copied once, by the first concat
    // of the root's family that holds it; the concat itself is a view of
    // its run of slots.
    OpBuilder &b = fl.b;
    Location loc = c.getLoc();
    int64_t base = 0;
    g::ConcatOp root = concatRoot(fl, c, base);
    auto rt = root.getType();
    unsigned rank = rt.getRank();
    int64_t axis = root.getAxis();
    Value out = fl.buffers.lookup(root.getResult());
    if (!out) {
      out = fl.alloc(rt, loc);
      fl.buffers[root.getResult()] = out;
    }
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<int64_t> steps(rank, 1), starts(rank, 0);
    auto rootInputs = root.getInputs();
    int64_t n = c.getInputs().size();
    // One view of |out| per split shape, shared by the copies into it, so
    // that the memory planner compares their slots in one index space.
    llvm::SmallDenseMap<Type, Value> splitViews;
    for (int64_t k = 0, offset = 0; k < (int64_t)rootInputs.size(); ++k) {
      Value v = rootInputs[k];
      auto t = tensorType(v);
      if (k == base)
        starts[axis] = offset;
      if (k >= base && k < base + n && t.getNumElements() != 0 &&
          fl.concatSlotsWritten.insert({root, k}).second) {
        if (!copySplitSlot(fl, v, out, axis, offset, splitViews, loc)) {
          SmallVector<int64_t> at(rank, 0);
          at[axis] = offset;
          AffineMap outMap =
              stridedMap(b, at, steps, rt.getShape(), t.getShape());
          fl.buildKernel(loc, "concat", rank,
                         {{sizeSource(fl, v, outMap, loc), TypedAttr(), id}},
                         {out}, {outMap}, {}, ArrayAttr(), copyBody);
        }
      }
      offset += t.getDimSize(axis);
    }
    if (root != c)
      fl.buffers[c.getResult()] =
          x::SubviewOp::create(b, loc, toMemRef(c.getType()), out,
                               b.getDenseI64ArrayAttr(starts),
                               b.getDenseI64ArrayAttr(steps))
              .getResult();
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

void dlc::lowering::populateLowerToExecDataMovement(LoweringTable &table) {
  addViewLowerings(table);
  addCopyAndGatherLowerings(table);
}
