//===- FuncLowering.cpp - buffers, kernels and writes of the lowering ----===//
// The op-independent part of dlgraph-lower-to-dlexec: function arguments and
// results, buffers and splats, kernel builders, dispatch through the
// LoweringTable, and the placement of variable writes.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace x = dlc::exec;

void LoweringTable::insert(TypeID id, Handler handler) {
  bool inserted = handlers.try_emplace(id, std::move(handler)).second;
  (void)inserted;
  assert(inserted && "an op kind is lowered by two families");
}

const LoweringTable::Handler *LoweringTable::lookup(Operation *op) const {
  auto it = handlers.find(op->getName().getTypeID());
  return it == handlers.end() ? nullptr : &it->second;
}

MemRefType dlc::lowering::toMemRef(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

RankedTensorType dlc::lowering::tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

double dlc::lowering::decimalValue(FloatAttr a) {
  double d = a.getValueAsDouble();
  if (!a.getType().isF32())
    return d;
  float f = (float)d;
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, d);
    double shortest = std::strtod(buf, nullptr);
    if ((float)shortest == f)
      return shortest;
  }
  return d;
}

Value dlc::lowering::constF(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v)).getResult();
}

ElemKind dlc::lowering::kindOf(Type t) {
  if (isa<FloatType>(t))
    return ElemKind::Float;
  if (t.isInteger(1))
    return ElemKind::Bool;
  if (isa<IntegerType>(t))
    return ElemKind::Int;
  return ElemKind::Other;
}

namespace {

/// The buffer a view was made from (follows dlexec.reshape).
Value rootOf(Value v) {
  while (auto r = v.getDefiningOp<x::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// Maps the loops of an iteration space of shape |outShape| to the elements of
/// an operand of shape |inShape| under NumPy broadcasting: trailing dims line
/// up, and a size-1 operand dim against a larger loop maps to constant 0.
AffineMap broadcastMap(ArrayRef<int64_t> inShape, ArrayRef<int64_t> outShape,
                       MLIRContext *ctx) {
  unsigned r = inShape.size(), R = outShape.size();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < r; ++i) {
    unsigned od = R - r + i;
    if (inShape[i] == 1 && outShape[od] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(od, ctx));
  }
  return AffineMap::get(R, 0, exprs, ctx);
}

/// True when |op| writes |operand| (it is one of its outputs).
bool writesOperand(Operation *op, OpOperand &operand) {
  unsigned idx = operand.getOperandNumber();
  if (auto k = dyn_cast<x::KernelOp>(op))
    return idx >= k.getInputs().size();
  if (auto l = dyn_cast<x::LibraryCallOp>(op))
    return idx >= l.getInputs().size();
  if (auto bk = dyn_cast<x::BuiltinKernelOp>(op))
    return idx >= bk.getInputs().size();
  return false;
}

/// Every (op, operand) that uses |buf| or a reshape view of it.
void collectUses(Value buf, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &u : buf.getUses()) {
    if (auto r = dyn_cast<x::ReshapeOp>(u.getOwner()))
      collectUses(r.getResult(), uses);
    else
      uses.push_back(&u);
  }
}

AffineMap operandMap(x::KernelOp k, unsigned operandNumber) {
  return cast<AffineMapAttr>(k.getIndexingMaps()[operandNumber]).getValue();
}

} // namespace

Value FuncLowering::getBuffer(Value v, Location loc) {
  auto it = buffers.find(v);
  if (it != buffers.end())
    return it->second;
  // A splat constant needed as a buffer: a constant variable.
  auto sit = splats.find(v);
  auto tt = tensorType(v);
  Attribute init = DenseElementsAttr::get(tt, sit->second);
  OpBuilder mb(dst);
  std::string name = uniqueSymbol("__constant");
  x::VariableOp::create(mb, loc, mb.getStringAttr(name),
                        TypeAttr::get(toMemRef(tt)),
                        mb.getStringAttr("constant"), cast<ElementsAttr>(init));
  Value ref =
      x::VariableRefOp::create(b, loc, toMemRef(tt),
                               FlatSymbolRefAttr::get(b.getStringAttr(name)))
          .getResult();
  buffers[v] = ref;
  return ref;
}

KIn FuncLowering::kernelInput(Value v, ArrayRef<int64_t> loopShape,
                              Location loc) {
  AffineMap map =
      broadcastMap(tensorType(v).getShape(), loopShape, b.getContext());
  auto sit = splats.find(v);
  if (sit != splats.end())
    return {Value(), sit->second, map};
  return {getBuffer(v, loc), TypedAttr(), map};
}

x::KernelOp FuncLowering::buildKernel(Location loc, StringRef what,
                                      unsigned numLoops, ArrayRef<KIn> ins,
                                      ArrayRef<Value> outs,
                                      ArrayRef<AffineMap> outMaps,
                                      ArrayRef<StringRef> iters, ArrayAttr init,
                                      BodyFn body) {
  SmallVector<Value> inBufs;
  SmallVector<AffineMap> maps;
  for (const KIn &in : ins)
    if (in.buffer) {
      inBufs.push_back(in.buffer);
      maps.push_back(in.map);
    }
  maps.append(outMaps.begin(), outMaps.end());
  SmallVector<StringRef> iterNames(iters.begin(), iters.end());
  if (iterNames.empty())
    iterNames.assign(numLoops, "parallel");
  auto k = x::KernelOp::create(b, loc, b.getStringAttr(nextKernelName(what)),
                               inBufs, outs, b.getAffineMapArrayAttr(maps),
                               b.getStrArrayAttr(iterNames), init);
  Block *blk = new Block();
  k.getBody().push_back(blk);
  for (Value v : inBufs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  for (Value v : outs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  OpBuilder kb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> inVals, outVals;
  unsigned argNo = 0;
  for (const KIn &in : ins) {
    if (in.buffer)
      inVals.push_back(blk->getArgument(argNo++));
    else
      inVals.push_back(arith::ConstantOp::create(kb, loc, in.scalar));
  }
  for (unsigned i = 0; i < outs.size(); ++i)
    outVals.push_back(blk->getArgument(argNo++));
  SmallVector<Value> yielded = body(kb, loc, inVals, outVals);
  x::YieldOp::create(kb, loc, yielded);
  return k;
}

void FuncLowering::elementwise(Operation *op, ValueRange operands,
                               BodyFn body) {
  Location loc = op->getLoc();
  auto rt = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<KIn> ins;
  for (Value v : operands)
    ins.push_back(kernelInput(v, rt.getShape(), loc));
  Value out = alloc(rt, loc);
  AffineMap id = b.getMultiDimIdentityMap(rt.getRank());
  StringRef what = op->getName().stripDialect();
  buildKernel(loc, what, rt.getRank(), ins, {out}, {id}, {}, ArrayAttr(), body);
  buffers[op->getResult(0)] = out;
}

x::BuiltinKernelOp FuncLowering::builtin(Operation *op, StringRef tmpl,
                                         ArrayRef<Value> ins,
                                         ArrayRef<StringRef> attrNames) {
  Location loc = op->getLoc();
  SmallVector<Value> bufs;
  for (Value v : ins)
    bufs.push_back(getBuffer(v, loc));
  Value out = alloc(op->getResult(0).getType(), loc);
  auto k = x::BuiltinKernelOp::create(
      b, loc, b.getStringAttr(nextKernelName(op->getName().stripDialect())),
      b.getStringAttr(tmpl), bufs, ValueRange{out});
  for (StringRef n : attrNames)
    if (Attribute a = op->getAttr(n))
      k->setAttr(n, isa<UnitAttr>(a) ? b.getBoolAttr(true) : a);
  buffers[op->getResult(0)] = out;
  return k;
}

LogicalResult FuncLowering::unsupported(Operation *op, const Twine &why) {
  return op->emitError() << "dlgraph-lower-to-dlexec: cannot lower '"
                         << op->getName() << "': " << why;
}

LogicalResult FuncLowering::checkFloat(Operation *op, Value v) {
  Type et = tensorType(v).getElementType();
  if (!isa<FloatType>(et))
    return op->emitError() << "dlgraph-lower-to-dlexec: cannot lower '"
                           << op->getName() << "': supports float tensors, not "
                           << et;
  return success();
}

LogicalResult FuncLowering::run() {
  Block &body = dst.getBody().emplaceBlock();
  b.setInsertionPointToEnd(&body);
  Location floc = src.getLoc();
  for (auto [i, arg] : llvm::enumerate(src.getArguments())) {
    auto nameAttr = src.getArgAttrOfType<StringAttr>(i, graph::kNameAttr);
    std::string name = nameAttr ? nameAttr.str() : ("arg" + Twine(i)).str();
    if (!isa<RankedTensorType>(arg.getType()))
      return src.emitError()
             << "dlgraph-lower-to-dlexec: argument #" << i << " has type "
             << arg.getType() << "; expected a ranked tensor";
    buffers[arg] = x::InputOp::create(b, floc, toMemRef(arg.getType()),
                                      b.getStringAttr(name))
                       .getResult();
  }
  // Waits for the collectives in flight on |root| (once per buffer).
  auto waitFor = [&](Value root) {
    x::WaitOp::create(b, floc, root);
    for (auto it = inFlight.begin(); it != inFlight.end();) {
      auto cur = it++;
      if (cur->second == root)
        inFlight.erase(cur);
    }
  };
  for (Operation &op : src.getBody().front()) {
    if (!inFlight.empty()) {
      // A view of a value in flight is in flight too; any other use waits.
      bool view = isa<graph::ReshapeOp>(op);
      SmallVector<Value> roots;
      for (Value v : op.getOperands()) {
        auto it = inFlight.find(v);
        if (it == inFlight.end())
          continue;
        if (view)
          inFlight[op.getResult(0)] = it->second;
        else if (!llvm::is_contained(roots, it->second))
          roots.push_back(it->second);
      }
      if (!view)
        for (Value root : roots)
          waitFor(root);
    }
    if (failed(lowerOp(&op)))
      return failure();
  }
  // Nothing is left in flight at the end of the function.
  SmallVector<Value> pending; // in issue order
  for (auto start : body.getOps<x::AllReduceOp>())
    if (llvm::any_of(inFlight,
                     [&](auto &e) { return e.second == start.getBuffer(); }))
      pending.push_back(start.getBuffer());
  for (Value root : pending)
    waitFor(root);
  // Outputs first (so that a write into a returned buffer is seen as unsafe),
  // then the variable writes are placed before them.
  for (auto &[name, v] : results) {
    Value buf = getBuffer(v, floc);
    x::OutputOp::create(b, floc, b.getStringAttr(name), buf);
  }
  return finishWrites();
}

/// The first f16 or bf16 element type among |op|'s operands and results.
static Type halfElementType(Operation *op) {
  for (TypeRange types :
       {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
    for (Type t : types)
      if (auto shaped = dyn_cast<ShapedType>(t))
        if (shaped.getElementType().isF16() || shaped.getElementType().isBF16())
          return shaped.getElementType();
  return Type();
}

LogicalResult FuncLowering::lowerOp(Operation *op) {
  // f16 and bf16 need no new math in ops of O(1) work per element. Of the
  // ops that accumulate, those that mixed precision runs in the low type
  // (LowPrecision: GEMM and convolution, f32 accumulation in the library;
  // FollowsOperands: pooling and max-like reductions, f32 accumulation in
  // the kernel) take f16/bf16; the KeepsF32 ones (reductions, softmax,
  // losses, optimizer updates) take f32 only, as --precision gives them.
  if (Type half = halfElementType(op)) {
    auto cost = dyn_cast<graph::RecomputeCostOpInterface>(op);
    auto precision = dyn_cast<graph::PrecisionClassOpInterface>(op);
    bool lowPrecisionOk =
        precision &&
        (precision.getPrecisionClass() != graph::PrecisionClass::KeepsF32 ||
         op->hasTrait<graph::GraphTrait::ReadsLowPrecision>());
    if (!lowPrecisionOk && cost &&
        (cost.getRecomputeCost() == graph::RecomputeCost::Moderate ||
         cost.getRecomputeCost() == graph::RecomputeCost::Expensive))
      return unsupported(op, "element type " +
                                 llvm::Twine(half.isF16() ? "f16" : "bf16") +
                                 " is not supported by this op yet (f16 and "
                                 "bf16 tensors support elementwise ops, casts "
                                 "and data movement; cast to f32 for this op)");
  }
  if (const LoweringTable::Handler *handler = table.lookup(op))
    return (*handler)(*this, op);
  return unsupported(op, "no lowering to dlexec exists for this op");
}

LogicalResult FuncLowering::finishWrites() {
  Block &body = dst.getBody().front();
  Location floc = src.getLoc();
  llvm::StringMap<int> writeCount;
  for (auto &[sym, v] : writes)
    ++writeCount[sym.getValue()];

  // Everything below is computed once up front so that placing W writes in a
  // function of N ops costs O(N + W + uses), not O(W * N): DenseNet-121's SGD
  // step has ~360 writes and ~10^4 ops. The buffers of all writes exist
  // first (splats become constant variables here, in write order).
  for (auto &[sym, v] : writes)
    (void)getBuffer(v, floc);
  // The variable references of each written variable, in block order.
  llvm::StringMap<SmallVector<x::VariableRefOp>> refsOf;
  // The position of each op, for "is after the producer" (isBeforeInBlock
  // would renumber the block after every reference inserted below).
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body)) {
    position[&op] = i;
    if (auto ref = dyn_cast<x::VariableRefOp>(op))
      if (writeCount.count(ref.getVariable()))
        refsOf[ref.getVariable()].push_back(ref);
  }
  // The variables whose current buffer is the root of some write's value:
  // such a write reads the variable's old value at the end. A direct write
  // below only re-roots values at its own variable, which is written once
  // and never looked up again, so the set stays exact.
  llvm::StringSet<> readByWrite;
  for (auto &[sym, v] : writes)
    if (auto ref = rootOf(getBuffer(v, floc)).getDefiningOp<x::VariableRefOp>())
      readByWrite.insert(ref.getVariable());
  // The dlgraph values each buffer holds (the inverse of `buffers`).
  DenseMap<Value, SmallVector<Value, 1>> holders;
  for (auto &kv : buffers)
    holders[kv.second].push_back(kv.first);

  SmallVector<std::pair<StringAttr, Value>> copies;
  for (auto &[sym, v] : writes) {
    Value bx = getBuffer(v, floc);
    auto allocOp = bx.getDefiningOp<x::AllocOp>();
    bool direct = allocOp && writeCount[sym.getValue()] == 1;
    Operation *producer = nullptr;
    if (direct) {
      SmallVector<OpOperand *> uses;
      collectUses(bx, uses);
      for (OpOperand *u : uses) {
        if (isa<x::OutputOp>(u->getOwner()))
          direct = false;
        else if (u->get() == bx && writesOperand(u->getOwner(), *u)) {
          if (producer)
            direct = false;
          producer = u->getOwner();
        }
      }
      if (!producer)
        direct = false;
    }
    if (direct) {
      // No op after the producer may read the variable's old value, and the
      // producer itself only at the element it writes.
      for (x::VariableRefOp ref : refsOf.lookup(sym.getValue())) {
        SmallVector<OpOperand *> uses;
        collectUses(ref.getResult(), uses);
        for (OpOperand *u : uses) {
          Operation *user = u->getOwner();
          if (isa<x::OutputOp>(user)) {
            direct = false;
          } else if (user == producer) {
            auto k = dyn_cast<x::KernelOp>(user);
            unsigned outNo = 0;
            for (OpOperand &o : user->getOpOperands())
              if (o.get() == bx)
                outNo = o.getOperandNumber();
            if (!k || u->get() != ref.getResult() || writesOperand(user, *u) ||
                llvm::any_of(k.getIteratorTypes(),
                             [](Attribute a) {
                               return cast<StringAttr>(a).getValue() !=
                                      "parallel";
                             }) ||
                operandMap(k, u->getOperandNumber()) != operandMap(k, outNo))
              direct = false;
          } else if (position.lookup(producer) < position.lookup(user)) {
            direct = false;
          }
        }
      }
    }
    // Another write reading this variable at the end needs its old value.
    if (readByWrite.contains(sym.getValue()))
      direct = false;
    if (!direct) {
      copies.push_back({sym, bx});
      continue;
    }
    OpBuilder sb = OpBuilder::atBlockBegin(&body);
    Value ref = x::VariableRefOp::create(sb, floc, bx.getType(),
                                         FlatSymbolRefAttr::get(sym))
                    .getResult();
    bx.replaceAllUsesWith(ref);
    auto held = holders.find(bx);
    if (held != holders.end()) {
      SmallVector<Value, 1> values = std::move(held->second);
      holders.erase(held);
      for (Value hv : values)
        buffers[hv] = ref;
      holders[ref].append(values.begin(), values.end());
    }
    allocOp.erase();
  }

  // Copies go before the outputs at the end of the function. A copy source
  // or an output that is another written variable is snapshotted first.
  Operation *firstOutput = nullptr;
  for (Operation &op : body)
    if (isa<x::OutputOp>(op)) {
      firstOutput = &op;
      break;
    }
  if (firstOutput)
    b.setInsertionPoint(firstOutput);
  else
    b.setInsertionPointToEnd(&body);
  auto copyKernel = [&](Value from, Value to, StringRef what) {
    unsigned rank = cast<MemRefType>(from.getType()).getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    buildKernel(floc, what, rank, {{from, TypedAttr(), id}}, {to}, {id}, {},
                ArrayAttr(),
                [](OpBuilder &, Location, ArrayRef<Value> v,
                   ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
  };
  auto isWrittenVarBuffer = [&](Value v) {
    auto ref = rootOf(v).getDefiningOp<x::VariableRefOp>();
    return ref && writeCount.count(ref.getVariable());
  };
  auto snapshot = [&](Value v) {
    Value tmp = x::AllocOp::create(b, floc, cast<MemRefType>(v.getType()),
                                   IntegerAttr())
                    .getResult();
    copyKernel(v, tmp, "snapshot");
    return tmp;
  };
  for (auto &[sym, bx] : copies)
    if (isWrittenVarBuffer(bx))
      bx = snapshot(bx);
  for (Operation &op : body)
    if (auto out = dyn_cast<x::OutputOp>(op))
      if (isWrittenVarBuffer(out.getBuffer()))
        out.getBufferMutable().assign(snapshot(out.getBuffer()));
  for (auto &[sym, bx] : copies) {
    Value ref = x::VariableRefOp::create(b, floc, bx.getType(),
                                         FlatSymbolRefAttr::get(sym))
                    .getResult();
    copyKernel(bx, ref, "write_variable");
  }
  return success();
}
