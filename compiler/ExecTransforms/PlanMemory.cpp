//===- PlanMemory.cpp - arena offsets for dlexec.alloc buffers
//--------------===//
// Subviews (slices, concat members) composed into the kernels that read
// them, generated kernels writing straight into the slots their results were
// copied to, then greedy-by-size best-fit placement of activation buffers in
// one arena per step function, and a checker for any memory plan.
#include "dialects/Exec/Analysis/KernelQueries.h"
#include "dialects/Exec/Analysis/Liveness.h"
#include "compiler/ExecTransforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace dlc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#define GEN_PASS_DEF_VERIFYMEMORYPLANPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// The orders placeBuffers tries: by size, by size times lifetime, by
/// lifetime (each largest first, then by first use).
enum class PlacementOrder { Size, Area, Lifetime };

/// Places |lives| in |orderKind|'s order and returns the arena size in
/// bytes. Each buffer goes into the smallest gap (between buffers already
/// placed whose lifetimes overlap its own) that holds it, or above all of
/// them: the greedy-by-size offset calculation of Pisarchyk and Lee 2020
/// ("Efficient Memory Management for Deep Neural Net Inference"; TensorFlow
/// Lite), with the other two orders tried as well.
int64_t placeBuffers(ArrayRef<BufferLife> lives, int64_t alignment,
                     PlacementOrder orderKind,
                     SmallVectorImpl<int64_t> &offsets) {
  size_t n = lives.size();
  offsets.assign(n, -1);
  SmallVector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  auto key = [&](size_t i) -> double {
    double length = double(lives[i].last - lives[i].first + 1);
    switch (orderKind) {
    case PlacementOrder::Size:
      return double(lives[i].bytes);
    case PlacementOrder::Area:
      return double(lives[i].bytes) * length;
    case PlacementOrder::Lifetime:
      return length;
    }
    return 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (key(a) != key(b))
      return key(a) > key(b);
    if (lives[a].bytes != lives[b].bytes)
      return lives[a].bytes > lives[b].bytes;
    return lives[a].first < lives[b].first;
  });
  int64_t arena = 0;
  SmallVector<size_t> placed;
  for (size_t i : order) {
    int64_t size = alignUp(std::max<int64_t>(lives[i].bytes, 1), alignment);
    // Byte ranges taken by placed buffers that are live at the same time.
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (livesOverlap(lives[i], lives[j]))
        taken.push_back(
            {offsets[j],
             offsets[j] +
                 alignUp(std::max<int64_t>(lives[j].bytes, 1), alignment)});
    llvm::sort(taken);
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : taken) {
      if (lo - cursor >= size && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0)
      best = cursor;
    offsets[i] = best;
    arena = std::max(arena, best + size);
    placed.push_back(i);
  }
  return arena;
}

/// |m| (loop indices -> indices of |view|'s result) as a map to indices of
/// |view|'s source: offsets + strides * m. A plain dim that covers only part
/// of a source dimension is written `d mod size` (equal to d), because
/// codegen sizes each loop from the operands that use it as a plain dim.
AffineMap composeSubview(exec::SubviewOp view, AffineMap m) {
  auto src = cast<MemRefType>(view.getSource().getType());
  auto dst = cast<MemRefType>(view.getType());
  ArrayRef<int64_t> offsets = view.getOffsets(), strides = view.getStrides();
  SmallVector<AffineExpr> exprs;
  for (unsigned r = 0; r < m.getNumResults(); ++r) {
    AffineExpr e = m.getResult(r);
    if (offsets[r] != 0 || strides[r] != 1)
      e = e * strides[r] + offsets[r];
    else if (isa<AffineDimExpr>(e) && dst.getDimSize(r) != src.getDimSize(r))
      e = e % src.getDimSize(r);
    exprs.push_back(e);
  }
  return AffineMap::get(m.getNumDims(), m.getNumSymbols(), exprs,
                        m.getContext());
}

/// Moves the op defining |out| (an alloc, without operands) and the chain of
/// dlexec.reshape views between it and |out| before |user| where they follow
/// it, so that they dominate it.
void hoistViewChain(Value out, Operation *user) {
  SmallVector<Operation *> chain;
  for (Value v = out; Operation *def = v.getDefiningOp();) {
    chain.push_back(def);
    if (auto r = dyn_cast<exec::ReshapeOp>(def))
      v = r.getSource();
    else
      break;
  }
  for (Operation *def : llvm::reverse(chain))
    if (user->isBeforeInBlock(def))
      def->moveBefore(user);
}

/// Whether codegen can size every loop of a kernel whose operands are
/// |operands| read through |maps|: each loop is a plain dim of some map,
/// and every plain dim of a loop stands for the same size.
bool loopsSized(ValueRange operands, ArrayRef<AffineMap> maps,
                unsigned numLoops) {
  SmallVector<int64_t> size(numLoops, -1);
  for (auto [v, m] : llvm::zip(operands, maps)) {
    auto t = cast<MemRefType>(v.getType());
    for (unsigned r = 0; r < m.getNumResults(); ++r)
      if (auto d = dyn_cast<AffineDimExpr>(m.getResult(r))) {
        int64_t &known = size[d.getPosition()];
        if (known >= 0 && known != t.getDimSize(r))
          return false;
        known = t.getDimSize(r);
      }
  }
  return llvm::all_of(size, [](int64_t s) { return s >= 0; });
}

/// A dlexec.reshape of a subview as a subview of a reshape of the view's
/// source, when the reshape only splits dims of the view or merges them
/// (each group of dims of one side is one dim of the other): a split dim
/// must start at a multiple of the split-off inner size with stride 1 (the
/// source dim splits the same way); merged dims must be whole but for the
/// outermost, which has stride 1. E.g. a slice of the fused QKV projection
/// reshaped into heads: [2,128,2304] -> view [2,128,768] at 768 ->
/// [2,128,12,64] is the view at (0,0,12,0) of [2,128,36,64]. Null when the
/// reshape is neither.
exec::SubviewOp reshapeOfSubview(exec::ReshapeOp reshape, exec::SubviewOp v) {
  auto srcT = cast<MemRefType>(v.getSource().getType());
  ArrayRef<int64_t> src = srcT.getShape();
  ArrayRef<int64_t> view = cast<MemRefType>(v.getType()).getShape();
  ArrayRef<int64_t> to = cast<MemRefType>(reshape.getType()).getShape();
  ArrayRef<int64_t> offsets = v.getOffsets(), strides = v.getStrides();
  SmallVector<int64_t> newSrc, newOff, newStride;
  size_t i = 0, j = 0;
  while (i < view.size() || j < to.size()) {
    // The next group: view dims [i, i2), result dims [j, j2).
    size_t i2 = i, j2 = j;
    int64_t pv = 1, pt = 1;
    if (i2 < view.size())
      pv *= view[i2++];
    if (j2 < to.size())
      pt *= to[j2++];
    while (pv != pt) {
      if (pv < pt && i2 < view.size())
        pv *= view[i2++];
      else if (pt < pv && j2 < to.size())
        pt *= to[j2++];
      else
        return nullptr;
    }
    if (i2 == i || j2 == j)
      return nullptr;
    if (i2 - i == 1) {
      // View dim i splits into result dims [j, j2).
      int64_t inner = 1;
      for (size_t k = j + 1; k < j2; ++k)
        inner *= to[k];
      if (inner != 1 &&
          (strides[i] != 1 || offsets[i] % inner != 0 || src[i] % inner != 0))
        return nullptr;
      newSrc.push_back(src[i] / inner);
      newOff.push_back(offsets[i] / inner);
      newStride.push_back(inner == 1 ? strides[i] : 1);
      for (size_t k = j + 1; k < j2; ++k) {
        newSrc.push_back(to[k]);
        newOff.push_back(0);
        newStride.push_back(1);
      }
    } else if (j2 - j == 1) {
      // View dims [i, i2) merge into result dim j.
      int64_t inner = 1;
      for (size_t k = i + 1; k < i2; ++k) {
        if (offsets[k] != 0 || strides[k] != 1 || view[k] != src[k])
          return nullptr;
        inner *= src[k];
      }
      if (strides[i] != 1 && view[i] != 1)
        return nullptr;
      newSrc.push_back(src[i] * inner);
      newOff.push_back(offsets[i] * inner);
      newStride.push_back(1);
    } else {
      return nullptr;
    }
    i = i2;
    j = j2;
  }
  if (newSrc.size() != to.size())
    return nullptr;
  OpBuilder b(reshape);
  auto newType = MemRefType::get(newSrc, srcT.getElementType());
  Value source =
      exec::ReshapeOp::create(b, reshape.getLoc(), newType, v.getSource())
          .getResult();
  return exec::SubviewOp::create(b, reshape.getLoc(), reshape.getType(), source,
                                 b.getDenseI64ArrayAttr(newOff),
                                 b.getDenseI64ArrayAttr(newStride));
}

/// Removes every dlexec.subview of |func|: a kernel that reads one reads its
/// source through the composed indexing map instead (a slice read in place,
/// as XLA fuses a slice into its consumer's index computation); any other
/// reader (a library call, a builtin kernel, an output, a reshape, or a
/// kernel whose loops the composed map would leave unsized) reads one dense
/// copy made by a copy kernel before the first of them. A view of a view reads
/// the first view's source. Fails (with an error at the view) when
/// something writes through a view.
LogicalResult foldSubviews(exec::FuncOp func) {
  SmallVector<exec::SubviewOp> views;
  func.walk([&](exec::SubviewOp v) { views.push_back(v); });
  if (views.empty())
    return success();
  for (exec::SubviewOp v : views)
    if (auto inner = v.getSource().getDefiningOp<exec::SubviewOp>()) {
      SmallVector<int64_t> offsets, strides;
      for (size_t d = 0; d < v.getOffsets().size(); ++d) {
        offsets.push_back(inner.getOffsets()[d] +
                          inner.getStrides()[d] * v.getOffsets()[d]);
        strides.push_back(inner.getStrides()[d] * v.getStrides()[d]);
      }
      v.getSourceMutable().assign(inner.getSource());
      v.setOffsets(offsets);
      v.setStrides(strides);
    }
  // Reshapes of views become views of reshapes (to a fixed point: a view
  // made here may be reshaped again).
  for (size_t n = 0; n < views.size(); ++n)
    for (Operation *user : llvm::make_early_inc_range(views[n]->getUsers()))
      if (auto r = dyn_cast<exec::ReshapeOp>(user))
        if (exec::SubviewOp folded = reshapeOfSubview(r, views[n])) {
          r.getResult().replaceAllUsesWith(folded.getResult());
          r.erase();
          views.push_back(folded);
        }
  llvm::StringSet<> names;
  func.walk([&](exec::KernelOp k) { names.insert(k.getSymName()); });
  int counter = 0;
  for (exec::SubviewOp v : views) {
    SmallVector<OpOperand *> others;
    bool keep = false;
    for (OpOperand &use : llvm::make_early_inc_range(v->getUses())) {
      Operation *user = use.getOwner();
      unsigned n = use.getOperandNumber();
      bool written = false;
      // The strided output of a call or builtin that writes views (one
      // placed in its slot by writeCopiesInPlace) stays a view.
      if (exec::writesStridedOperand(user, n) && exec::stridedViewOf(v)) {
        keep = true;
        continue;
      }
      if (auto k = dyn_cast<exec::KernelOp>(user)) {
        written = n >= k.getInputs().size();
        if (!written) {
          SmallVector<AffineMap> maps(
              k.getIndexingMaps().getAsValueRange<AffineMapAttr>());
          SmallVector<Value> operands(k->getOperands());
          maps[n] = composeSubview(v, maps[n]);
          operands[n] = v.getSource();
          if (loopsSized(operands, maps, k.getIteratorTypes().size())) {
            use.set(v.getSource());
            k.setIndexingMapsAttr(Builder(k).getAffineMapArrayAttr(maps));
            continue;
          }
        }
      } else if (auto l = dyn_cast<exec::LibraryCallOp>(user)) {
        written = n >= l.getInputs().size();
      } else if (auto bk = dyn_cast<exec::BuiltinKernelOp>(user)) {
        written = n >= bk.getInputs().size();
      } else if (isa<exec::AllReduceOp>(user)) {
        written = true;
      }
      if (written)
        return user->emitError()
               << "memory plan: writes through a dlexec.subview";
      others.push_back(&use);
    }
    if (!others.empty()) {
      // The copy goes right before the first of them (the view's source
      // holds the viewed elements from the view on, and its life reaches
      // the copy).
      Block *block = v->getBlock();
      Operation *first = nullptr;
      for (OpOperand *use : others) {
        Operation *top = block->findAncestorOpInBlock(*use->getOwner());
        if (top && (!first || top->isBeforeInBlock(first)))
          first = top;
      }
      OpBuilder b(v->getContext());
      if (first)
        b.setInsertionPoint(first);
      else
        b.setInsertionPointAfter(v);
      auto type = cast<MemRefType>(v.getType());
      Value copy =
          exec::AllocOp::create(b, v.getLoc(), type, IntegerAttr()).getResult();
      std::string name;
      do
        name = (func.getSymName() + "_subview" + Twine(counter++)).str();
      while (names.contains(name));
      names.insert(name);
      unsigned rank = type.getRank();
      AffineMap id = b.getMultiDimIdentityMap(rank);
      SmallVector<Attribute> iters(rank, b.getStringAttr("parallel"));
      auto k = exec::KernelOp::create(
          b, v.getLoc(), b.getStringAttr(name), ValueRange{v.getSource()},
          ValueRange{copy},
          b.getAffineMapArrayAttr({composeSubview(v, id), id}),
          b.getArrayAttr(iters), ArrayAttr());
      Block *blk = new Block();
      k.getBody().push_back(blk);
      blk->addArgument(type.getElementType(), v.getLoc());
      blk->addArgument(type.getElementType(), v.getLoc());
      OpBuilder kb = OpBuilder::atBlockEnd(blk);
      exec::YieldOp::create(kb, v.getLoc(), ValueRange{blk->getArgument(0)});
      for (OpOperand *use : others)
        use->set(copy);
    }
    if (!keep)
      v.erase();
  }
  return success();
}

/// A closed interval that holds every value of |e| over loops of |sizes|,
/// or [0, whole - 1] when |e| is not of the forms data movement produces
/// (dims, constants, sums, products with and remainders by constants).
std::pair<int64_t, int64_t> exprRange(AffineExpr e, ArrayRef<int64_t> sizes,
                                      int64_t whole) {
  std::pair<int64_t, int64_t> all{0, whole - 1};
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    int64_t n = sizes[d.getPosition()];
    return n > 0 ? std::pair<int64_t, int64_t>{0, n - 1} : all;
  }
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return {c.getValue(), c.getValue()};
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return all;
  auto l = exprRange(bin.getLHS(), sizes, whole);
  auto rc = dyn_cast<AffineConstantExpr>(bin.getRHS());
  switch (e.getKind()) {
  case AffineExprKind::Add: {
    auto r = exprRange(bin.getRHS(), sizes, whole);
    return {l.first + r.first, l.second + r.second};
  }
  case AffineExprKind::Mul:
    if (rc && rc.getValue() >= 0)
      return {l.first * rc.getValue(), l.second * rc.getValue()};
    return all;
  case AffineExprKind::Mod:
    if (rc && rc.getValue() > 0) {
      if (l.first >= 0 && l.second < rc.getValue())
        return l;
      return {0, rc.getValue() - 1};
    }
    return all;
  default:
    return all;
  }
}

/// The box of elements of operand |n| of |k| that |k| may touch.
SmallVector<std::pair<int64_t, int64_t>> footprint(exec::KernelOp k,
                                                   unsigned n) {
  SmallVector<int64_t> sizes = loopSizes(k);
  AffineMap m = cast<AffineMapAttr>(k.getIndexingMaps()[n]).getValue();
  auto t = cast<MemRefType>(k->getOperand(n).getType());
  SmallVector<std::pair<int64_t, int64_t>> box;
  for (unsigned r = 0; r < m.getNumResults(); ++r)
    box.push_back(exprRange(m.getResult(r), sizes, t.getDimSize(r)));
  return box;
}

bool boxesDisjoint(ArrayRef<std::pair<int64_t, int64_t>> a,
                   ArrayRef<std::pair<int64_t, int64_t>> b) {
  for (auto [x, y] : llvm::zip(a, b))
    if (x.second < y.first || y.second < x.first)
      return true;
  return false;
}

/// The buffer |v| is, through reshapes (a reshape's elements are its
/// source's) and the subviews strided outputs write through.
Value stripReshapes(Value v) {
  while (isa_and_nonnull<exec::ReshapeOp, exec::SubviewOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

/// |w| (the write map of a copy over loops of |sizes|) as the offsets and
/// strides of a dlexec.subview: result r must be d_r, d_r * s + o (either
/// part optional) or d_r mod m with m at least loop r's size (plain dims
/// that cover part of a dim, composeSubview). None otherwise.
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
mapAsView(AffineMap w, ArrayRef<int64_t> sizes) {
  if (w.getNumResults() != w.getNumDims() || w.getNumSymbols() != 0)
    return std::nullopt;
  SmallVector<int64_t> offsets, strides;
  for (unsigned r = 0; r < w.getNumResults(); ++r) {
    AffineExpr e = w.getResult(r);
    int64_t offset = 0, stride = 1;
    if (e.getKind() == AffineExprKind::Add) {
      auto bin = cast<AffineBinaryOpExpr>(e);
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!c)
        return std::nullopt;
      offset = c.getValue();
      e = bin.getLHS();
    }
    if (e.getKind() == AffineExprKind::Mul) {
      auto bin = cast<AffineBinaryOpExpr>(e);
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!c)
        return std::nullopt;
      stride = c.getValue();
      e = bin.getLHS();
    } else if (e.getKind() == AffineExprKind::Mod && offset == 0) {
      auto bin = cast<AffineBinaryOpExpr>(e);
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!c || c.getValue() < sizes[r])
        return std::nullopt;
      e = bin.getLHS();
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || d.getPosition() != r || offset < 0 || stride < 1)
      return std::nullopt;
    offsets.push_back(offset);
    strides.push_back(stride);
  }
  return std::make_pair(offsets, strides);
}

/// Whether |op| may write any element of buffer |root| in the box |target|
/// (an operand of |op| that reaches |root| and is written, by a kernel
/// whose box of written elements overlaps |target|, or by anything else).
bool mayWriteBox(Operation *op, Value root,
                 ArrayRef<std::pair<int64_t, int64_t>> target) {
  if (isa<exec::ReshapeOp, exec::SubviewOp, exec::OutputOp>(op))
    return false;
  std::optional<unsigned> numInputs;
  if (auto k = dyn_cast<exec::KernelOp>(op))
    numInputs = k.getInputs().size();
  else if (auto b = dyn_cast<exec::BuiltinKernelOp>(op))
    numInputs = b.getInputs().size();
  else if (auto l = dyn_cast<exec::LibraryCallOp>(op))
    numInputs = l.getInputs().size();
  else if (auto m = dyn_cast<exec::MultiTensorKernelOp>(op))
    numInputs = m.getInputs().size();
  for (OpOperand &o : op->getOpOperands()) {
    if (stripReshapes(o.get()) != root)
      continue;
    if (numInputs && o.getOperandNumber() < *numInputs)
      continue;
    auto k = dyn_cast<exec::KernelOp>(op);
    if (!k || stripReshapes(o.get()) != o.get() ||
        !boxesDisjoint(target, footprint(k, o.getOperandNumber())))
      return true;
  }
  return false;
}

/// A copy kernel |c| (see writeCopiesInPlace) whose input X is written by
/// a library call or builtin kernel P that writes strided outputs
/// (exec::writesStridedOperand: a convolution, a pooling) goes: P writes a
/// dlexec.subview of C's output R (the slot, from C's write map), the
/// kernels that read X read that slot of R through composed maps, and X
/// goes. XLA's buffer assignment gives a concatenate's operands slices of
/// its output the same way (TVM's "inplace concat" likewise). Not when P
/// reads R, when an op between P and C touches the slot (as in
/// writeCopiesInPlace), when an op after C writes it before the last
/// reader of X, when X has another reader or writer than kernels reading
/// it whole or the views C reads it through, or when a reader's loops would
/// lose their sizes. Returns whether it rewrote |c|.
bool writeSlotThroughView(exec::KernelOp c) {
  Value in = c.getInputs()[0], out = c.getOutputs()[0];
  Value x = stripReshapes(in);
  auto xAlloc = x.getDefiningOp<exec::AllocOp>();
  Value root = stripReshapes(out);
  auto outAlloc = root.getDefiningOp<exec::AllocOp>();
  Block *block = c->getBlock();
  if (!xAlloc || x.getType() != in.getType() || !outAlloc ||
      xAlloc->getBlock() != block || outAlloc->getBlock() != block)
    return false;
  Operation *writer = nullptr;
  unsigned writerOut = 0;
  SmallVector<OpOperand *> readers;
  SmallVector<Operation *> views;
  SmallVector<Value> worklist{x};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto r = dyn_cast<exec::ReshapeOp>(user)) {
        views.push_back(r);
        worklist.push_back(r.getResult());
      } else if (user == c.getOperation()) {
      } else if (v == x && !writer &&
                 exec::writesStridedOperand(user, use.getOperandNumber())) {
        writer = user;
        writerOut = use.getOperandNumber();
      } else if (auto k = dyn_cast<exec::KernelOp>(user);
                 k && v == x && use.getOperandNumber() < k.getInputs().size()) {
        readers.push_back(&use);
      } else {
        return false;
      }
    }
  }
  // A kernel reading X twice, or views of X other than those C reads
  // through, are not rewritten.
  for (size_t i = 0; i < readers.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (readers[i]->getOwner() == readers[j]->getOwner())
        return false;
  for (Operation *v : views)
    for (Operation *user : v->getResult(0).getUsers())
      if (!isa<exec::ReshapeOp>(user) && user != c.getOperation())
        return false;
  if (!writer || writer->getBlock() != block || !writer->isBeforeInBlock(c))
    return false;
  for (Value v : writer->getOperands())
    if (stripReshapes(v) == root)
      return false;
  auto xType = cast<MemRefType>(x.getType());
  AffineMap w = cast<AffineMapAttr>(c.getIndexingMaps()[1]).getValue();
  auto view = mapAsView(w, xType.getShape());
  if (!view)
    return false;
  auto target = footprint(c, 1);
  // Nothing between P and C touches the slot; nothing after C writes it
  // while X is still read.
  Operation *lastReader = c.getOperation();
  for (OpOperand *r : readers) {
    Operation *top = block->findAncestorOpInBlock(*r->getOwner());
    if (!top || top->getBlock() != block || top->isBeforeInBlock(writer))
      return false;
    if (lastReader->isBeforeInBlock(top))
      lastReader = top;
  }
  for (Operation *op = writer->getNextNode(); op != c.getOperation();
       op = op->getNextNode()) {
    if (isa<exec::ReshapeOp, exec::SubviewOp>(op))
      continue; // a view touches no element
    for (OpOperand &o : op->getOpOperands()) {
      if (stripReshapes(o.get()) != root)
        continue;
      auto other = dyn_cast<exec::KernelOp>(op);
      if (!other || o.get() != out ||
          !boxesDisjoint(target, footprint(other, o.getOperandNumber())))
        return false;
    }
    if (op->getNumRegions() != 0 && !isa<exec::KernelOp>(op))
      return false;
  }
  for (Operation *op = c->getNextNode(); op && op != lastReader->getNextNode();
       op = op->getNextNode())
    if (mayWriteBox(op, root, target) ||
        (op->getNumRegions() != 0 && !isa<exec::KernelOp>(op)))
      return false;
  // The readers' maps composed with C's write map must keep their loops
  // sized.
  SmallVector<SmallVector<AffineMap>> newMaps;
  for (OpOperand *r : readers) {
    auto k = cast<exec::KernelOp>(r->getOwner());
    SmallVector<AffineMap> maps(
        k.getIndexingMaps().getAsValueRange<AffineMapAttr>());
    SmallVector<Value> operands(k->getOperands());
    unsigned n = r->getOperandNumber();
    maps[n] = w.compose(maps[n]);
    operands[n] = out;
    if (!loopsSized(operands, maps, k.getIteratorTypes().size()))
      return false;
    newMaps.push_back(std::move(maps));
  }
  // R's alloc and the reshape views C writes through move up to dominate P.
  hoistViewChain(out, writer);
  // The whole of R (a plain copy) needs no view.
  bool whole = out.getType() == xType &&
               llvm::all_of(view->first, [](int64_t o) { return o == 0; }) &&
               llvm::all_of(view->second, [](int64_t s) { return s == 1; });
  OpBuilder b(writer);
  Value slot =
      whole ? out
            : exec::SubviewOp::create(b, c.getLoc(), xType, out,
                                      b.getDenseI64ArrayAttr(view->first),
                                      b.getDenseI64ArrayAttr(view->second))
                  .getResult();
  writer->setOperand(writerOut, slot);
  for (auto [r, maps] : llvm::zip(readers, newMaps)) {
    auto k = cast<exec::KernelOp>(r->getOwner());
    r->set(out);
    k.setIndexingMapsAttr(Builder(k).getAffineMapArrayAttr(maps));
  }
  c.erase();
  for (Operation *v : llvm::reverse(views))
    v->erase();
  xAlloc.erase();
  return true;
}

/// Makes generated kernels write their results straight into the slot a
/// copy kernel would copy them to (a concatenation's input, written in
/// place: XLA's buffer assignment gives a concatenate's operands slices of
/// its output the same way). A copy kernel C (one input read whole through
/// the identity map, one output R written through map W, a body that
/// yields the input; R an alloc or a reshape view of one, e.g. a concat's
/// buffer with its axis split into attention heads) whose input X is an
/// alloc written only by one earlier
/// all-parallel dlexec.kernel K (through map M) and read only by C goes: K
/// writes R through W o M, and X, C and the views between them go. Not when K
/// reads or writes R, when an op between K and C touches R where C writes it (a
/// kernel's box of touched elements overlaps C's) or touches it otherwise
/// (a library call, a builtin), or when K's loops would lose their sizes.
void writeCopiesInPlace(exec::FuncOp func) {
  auto isCopy = [](exec::KernelOp c) {
    Block &body = c.getBody().front();
    auto yield = cast<exec::YieldOp>(body.getTerminator());
    return c.getInputs().size() == 1 && c.getOutputs().size() == 1 &&
           isAllParallel(c) && body.getOperations().size() == 1 &&
           yield.getValues().size() == 1 &&
           yield.getValues()[0] == body.getArgument(0) &&
           cast<AffineMapAttr>(c.getIndexingMaps()[0]).getValue().isIdentity();
  };
  SmallVector<exec::KernelOp> copies;
  func.walk([&](exec::KernelOp c) {
    if (isCopy(c))
      copies.push_back(c);
  });
  for (exec::KernelOp c : copies) {
    // An earlier rewrite may have made a copy read another buffer through
    // another map.
    if (!isCopy(c))
      continue;
    if (writeSlotThroughView(c))
      continue;
    Value in = c.getInputs()[0], out = c.getOutputs()[0];
    Value x = stripReshapes(in);
    auto xAlloc = x.getDefiningOp<exec::AllocOp>();
    auto outAlloc = stripReshapes(out).getDefiningOp<exec::AllocOp>();
    if (!xAlloc || x.getType() != in.getType() || !outAlloc ||
        c->getBlock() != xAlloc->getBlock() ||
        outAlloc->getBlock() != c->getBlock())
      continue;
    // X's users: one writer kernel K, the copy (through same-shape views).
    exec::KernelOp k;
    unsigned kOut = 0;
    bool ok = true;
    SmallVector<Value> worklist{x};
    SmallVector<Operation *> views;
    while (ok && !worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (auto r = dyn_cast<exec::ReshapeOp>(user)) {
          views.push_back(r);
          worklist.push_back(r.getResult());
        } else if (user == c.getOperation()) {
        } else if (auto w = dyn_cast<exec::KernelOp>(user);
                   w && !k && v == x &&
                   use.getOperandNumber() >= w.getInputs().size()) {
          k = w;
          kOut = use.getOperandNumber();
        } else {
          ok = false;
        }
      }
    }
    if (!ok || !k || k->getBlock() != c->getBlock() || !k->isBeforeInBlock(c) ||
        !isAllParallel(k))
      continue;
    Value root = stripReshapes(out);
    for (Value v : k->getOperands())
      ok &= stripReshapes(v) != root;
    // What C writes must not be touched between K and C.
    auto target = footprint(c, 1);
    for (Operation *op = k->getNextNode(); ok && op != c.getOperation();
         op = op->getNextNode()) {
      if (isa<exec::ReshapeOp, exec::SubviewOp>(op))
        continue; // a view touches no element
      for (OpOperand &o : op->getOpOperands()) {
        if (stripReshapes(o.get()) != root)
          continue;
        auto other = dyn_cast<exec::KernelOp>(op);
        ok &= other && o.get() == out &&
              boxesDisjoint(target, footprint(other, o.getOperandNumber()));
      }
      ok &= op->getNumRegions() == 0 || isa<exec::KernelOp>(op);
    }
    if (!ok)
      continue;
    AffineMap w = cast<AffineMapAttr>(c.getIndexingMaps()[1]).getValue();
    SmallVector<AffineMap> maps(
        k.getIndexingMaps().getAsValueRange<AffineMapAttr>());
    SmallVector<Value> operands(k->getOperands());
    maps[kOut] = w.compose(maps[kOut]);
    operands[kOut] = out;
    if (!loopsSized(operands, maps, k.getIteratorTypes().size()))
      continue;
    // R's alloc and the reshape views C writes through move up to dominate
    // K.
    hoistViewChain(out, k);
    k->setOperand(kOut, out);
    k.setIndexingMapsAttr(Builder(k).getAffineMapArrayAttr(maps));
    c.erase();
    for (Operation *v : llvm::reverse(views))
      v->erase();
    xAlloc.erase();
  }
}

struct PlanMemoryPass : dlc::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;
  void runOnOperation() override {
    if (alignment <= 0) {
      getOperation().emitError() << "dlexec-plan-memory: alignment must be "
                                    "positive, got "
                                 << alignment;
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<exec::FuncOp>()) {
      if (failed(foldSubviews(func)))
        return signalPassFailure();
      writeCopiesInPlace(func);
      SmallVector<BufferLife> lives = computeBufferLives(func);
      // A buffer written in place over another (BufferLife::inPlaceOf) is
      // placed as one group with it: the group lives from its first
      // member's first use to its last member's last.
      SmallVector<int64_t> groupOf = inPlaceGroups(lives);
      SmallVector<BufferLife> groups;
      SmallVector<int64_t> groupIndex(lives.size(), -1);
      for (size_t i = 0; i < lives.size(); ++i) {
        int64_t g = groupOf[i];
        if (groupIndex[g] < 0) {
          groupIndex[g] = static_cast<int64_t>(groups.size());
          groups.push_back(lives[g]);
        }
        BufferLife &gl = groups[groupIndex[g]];
        gl.first = std::min(gl.first, lives[i].first);
        gl.last = std::max(gl.last, lives[i].last);
        gl.bytes = std::max(gl.bytes, lives[i].bytes);
      }
      // The smallest arena of the three orders (the first on a tie).
      SmallVector<int64_t> offsets, tried;
      int64_t arena = -1;
      for (PlacementOrder order : {PlacementOrder::Size, PlacementOrder::Area,
                                   PlacementOrder::Lifetime}) {
        int64_t size = placeBuffers(groups, alignment, order, tried);
        if (arena < 0 || size < arena) {
          arena = size;
          offsets = tried;
        }
      }
      Builder b(func.getContext());
      for (size_t i = 0; i < lives.size(); ++i)
        lives[i].alloc.setOffsetAttr(
            b.getI64IntegerAttr(offsets[groupIndex[groupOf[i]]]));
      func.setArenaBytesAttr(b.getI64IntegerAttr(arena));
    }
  }
};

struct VerifyMemoryPlanPass
    : dlc::impl::VerifyMemoryPlanPassBase<VerifyMemoryPlanPass> {
  using VerifyMemoryPlanPassBase::VerifyMemoryPlanPassBase;
  void runOnOperation() override {
    bool ok = true;
    for (auto func : getOperation().getOps<exec::FuncOp>())
      ok &= succeeded(verifyMemoryPlan(func, alignment));
    if (!ok)
      signalPassFailure();
  }
};

} // namespace

LogicalResult dlc::verifyMemoryPlan(exec::FuncOp func, int64_t alignment) {
  SmallVector<BufferLife> lives = computeBufferLives(func);
  if (lives.empty())
    return success();
  auto arena = func.getArenaBytes();
  if (!arena)
    return func.emitError() << "memory plan: function '" << func.getSymName()
                            << "' has buffers but no arena_bytes";
  bool ok = true;
  for (BufferLife &l : lives) {
    auto off = l.alloc.getOffset();
    if (!off) {
      l.alloc.emitError() << "memory plan: buffer has no offset";
      ok = false;
      continue;
    }
    if (*off < 0 || *off % alignment != 0 || *off + l.bytes > (int64_t)*arena) {
      l.alloc.emitError() << "memory plan: offset " << *off << " (+" << l.bytes
                          << " bytes) is misaligned (alignment " << alignment
                          << ") or outside the arena of " << *arena << " bytes";
      ok = false;
    }
  }
  if (!ok)
    return failure();
  // Buffers of one in-place group may share their bytes: each member is
  // last read by the kernel that writes the next, element by element.
  SmallVector<int64_t> groupOf = inPlaceGroups(lives);
  for (size_t i = 0; i < lives.size(); ++i)
    for (size_t j = i + 1; j < lives.size(); ++j) {
      BufferLife &a = lives[i], &b = lives[j];
      if (!livesOverlap(a, b) || a.bytes == 0 || b.bytes == 0)
        continue;
      int64_t ao = *a.alloc.getOffset(), bo = *b.alloc.getOffset();
      if (groupOf[i] == groupOf[j] && ao == bo &&
          (a.last == b.first || b.last == a.first))
        continue;
      if (ao < bo + b.bytes && bo < ao + a.bytes) {
        InFlightDiagnostic d =
            b.alloc.emitError()
            << "memory plan: buffer at [" << bo << ", " << bo + b.bytes
            << ") live over ops [" << b.first << ", " << b.last
            << "] overlaps a buffer at [" << ao << ", " << ao + a.bytes
            << ") live over ops [" << a.first << ", " << a.last << "]";
        d.attachNote(a.alloc.getLoc()) << "the other buffer";
        ok = false;
      }
    }
  return success(ok);
}
