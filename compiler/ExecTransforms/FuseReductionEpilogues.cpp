//===- FuseReductionEpilogues.cpp - kernels into reduction epilogues ------===//
//
// --dlexec-fuse-reduction-epilogues (Passes.td): the small elementwise
// kernels over a reduction's outputs (BatchNorm's per-channel rsqrt, scale
// and gradient products) become the reduction kernel's epilogue region, as
// XLA's reduction / multi-output fusion does.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/KernelQueries.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace dlc {
#define GEN_PASS_DEF_FUSEREDUCTIONEPILOGUESPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

/// |v| with reshapes stripped (the whole buffer it views).
Value stripReshapes(Value v) {
  while (auto r = v.getDefiningOp<exec::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// A key naming the storage behind |v|, through reshapes and subviews: the
/// variable for a `dlexec.variable_ref` (two refs of one variable alias),
/// else the buffer value (before planning distinct allocs do not overlap).
const void *memKey(Value v) {
  while (isa_and_nonnull<exec::ReshapeOp, exec::SubviewOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  if (auto ref = v.getDefiningOp<exec::VariableRefOp>())
    return ref.getVariableAttr().getAttr().getAsOpaquePointer();
  return v.getAsOpaquePointer();
}

/// Whether |v| views a whole buffer (reshapes only, no subview).
bool isWhole(Value v) {
  return !stripReshapes(v).getDefiningOp<exec::SubviewOp>();
}

/// The memory |op| reads and writes, by memKey. Ops that only name buffers
/// touch nothing; kernels, builtin kernels, multi-tensor kernels and library
/// calls read their inputs and write their outputs; any other op counts as
/// reading and writing every buffer it names.
struct Access {
  llvm::SmallDenseSet<const void *, 8> reads, writes;
};
Access accessOf(Operation *op) {
  Access a;
  if (isa<exec::ReshapeOp, exec::SubviewOp, exec::AllocOp,
          exec::VariableRefOp, exec::InputOp, arith::ConstantOp>(op))
    return a;
  std::optional<unsigned> numInputs;
  if (auto k = dyn_cast<exec::KernelOp>(op))
    numInputs = k.getInputs().size();
  else if (auto k = dyn_cast<exec::BuiltinKernelOp>(op))
    numInputs = k.getInputs().size();
  else if (auto c = dyn_cast<exec::LibraryCallOp>(op))
    numInputs = c.getInputs().size();
  else if (auto m = dyn_cast<exec::MultiTensorKernelOp>(op))
    numInputs = m.getInputs().size();
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (!isa<MemRefType>(v.getType()))
      continue;
    a.reads.insert(memKey(v));
    if (!numInputs || i >= *numInputs)
      a.writes.insert(memKey(v));
  }
  return a;
}

/// The output points of reduction kernel |r|: its parallel loops, and the
/// sizes of those that are not 1 (the layout every epilogue operand must
/// have once unit dimensions are dropped).
struct Points {
  SmallVector<unsigned> loops;   // parallel loops with size > 1, in order
  SmallVector<int64_t> sizes;    // their sizes
  int64_t count = 1;             // elements
  unsigned numLoops = 0;
};

/// The map from |p|'s loops to the elements of a buffer of |type| that
/// reads, at each output point, the element at the point's row-major
/// position; none when |type|'s sizes without its unit dimensions differ
/// from the points'.
std::optional<AffineMap> pointMap(const Points &p, MemRefType type,
                                  MLIRContext *ctx) {
  SmallVector<AffineExpr> results;
  unsigned next = 0;
  for (int64_t size : type.getShape()) {
    if (size == 1) {
      results.push_back(getAffineConstantExpr(0, ctx));
      continue;
    }
    if (next >= p.sizes.size() || p.sizes[next] != size)
      return std::nullopt;
    results.push_back(getAffineDimExpr(p.loops[next++], ctx));
  }
  if (next != p.sizes.size())
    return std::nullopt;
  return AffineMap::get(p.numLoops, 0, results, ctx);
}

bool isHalf(Type t) { return t.isF16() || t.isBF16(); }

/// A reduction kernel and the epilogue kernels found for it.
struct Group {
  exec::KernelOp reduction;
  Points points;
  SmallVector<exec::KernelOp> epilogues;
  llvm::SmallDenseSet<const void *, 8> reads, writes;
};

/// Whether |k| can join |g| as its next epilogue kernel (see Passes.td).
bool canJoin(Group &g, exec::KernelOp k, ArrayRef<Operation *> skipped) {
  if (!k.getEpilogue().empty() ||
      llvm::any_of(k.getIteratorTypes(), [](Attribute a) {
        return cast<StringAttr>(a).getValue() != "parallel";
      }))
    return false;
  bool readsIndex = false;
  k.getBody().walk([&](exec::IndexOp) { readsIndex = true; });
  if (readsIndex)
    return false;
  bool readsGroup = false;
  for (auto [i, v] : llvm::enumerate(k->getOperands())) {
    auto type = cast<MemRefType>(v.getType());
    AffineMap map = cast<AffineMapAttr>(k.getIndexingMaps()[i]).getValue();
    if (!map.isIdentity() || type.getNumElements() != g.points.count ||
        isHalf(type.getElementType()) ||
        !pointMap(g.points, type, k.getContext()))
      return false;
    if (g.writes.contains(memKey(v))) {
      if (!isWhole(v))
        return false;
      if (i < k.getInputs().size())
        readsGroup = true;
      else
        return false; // written twice
    }
  }
  if (!readsGroup)
    return false;
  // Outputs: whole buffers sharing memory with nothing the group reads, nor
  // with K's other operands except an input at the same element.
  unsigned numInputs = k.getInputs().size();
  for (Value out : k.getOutputs()) {
    const void *key = memKey(out);
    if (!isWhole(out) || g.reads.contains(key))
      return false;
    for (auto [j, other] : llvm::enumerate(k->getOperands())) {
      if (other == out || memKey(other) != key)
        continue;
      if (j >= numInputs || !isWhole(other))
        return false;
    }
  }
  // The ops the group moves past.
  Access ka = accessOf(k);
  for (Operation *op : skipped) {
    Access a = accessOf(op);
    for (const void *w : a.writes)
      if (ka.reads.contains(w) || ka.writes.contains(w))
        return false;
    for (const void *r : a.reads)
      if (ka.writes.contains(r))
        return false;
  }
  return true;
}

/// Builds the fused kernel of |g| before its last epilogue kernel and
/// erases the group's kernels.
void fuse(Group &g) {
  exec::KernelOp r = g.reduction;
  MLIRContext *ctx = r.getContext();
  OpBuilder b(g.epilogues.back());
  SmallVector<Value> inputs(r.getInputs()), outputs(r.getOutputs());
  SmallVector<AffineMap> inMaps, outMaps;
  for (unsigned i = 0; i < r.getInputs().size(); ++i)
    inMaps.push_back(cast<AffineMapAttr>(r.getIndexingMaps()[i]).getValue());
  for (unsigned o = 0; o < r.getOutputs().size(); ++o)
    outMaps.push_back(
        cast<AffineMapAttr>(r.getIndexingMaps()[inputs.size() + o]).getValue());
  // Buffers the group writes -> (kind, index): reduction output o, or the
  // epilogue value yielded for it.
  struct Source {
    bool reduced;
    unsigned index; // reduction output, or position in epilogueValues
  };
  llvm::DenseMap<const void *, Source> written;
  for (auto [o, v] : llvm::enumerate(r.getOutputs()))
    written[memKey(v)] = {true, (unsigned)o};
  // Epilogue inputs: the absorbed kernels' inputs the group does not write.
  SmallVector<SmallVector<int>> inputSlot(g.epilogues.size());
  for (auto [e, k] : llvm::enumerate(g.epilogues)) {
    for (Value v : k.getInputs()) {
      int slot = -1;
      bool fromGroup = false;
      for (exec::KernelOp prev : ArrayRef(g.epilogues).take_front(e))
        for (Value w : prev.getOutputs())
          fromGroup |= memKey(w) == memKey(v);
      for (Value w : r.getOutputs())
        fromGroup |= memKey(w) == memKey(v);
      if (!fromGroup) {
        AffineMap m =
            *pointMap(g.points, cast<MemRefType>(v.getType()), ctx);
        for (unsigned j = 0; j < inputs.size(); ++j)
          if (inputs[j] == v && inMaps[j] == m)
            slot = j;
        if (slot < 0) {
          slot = inputs.size();
          inputs.push_back(v);
          inMaps.push_back(m);
        }
      }
      inputSlot[e].push_back(slot);
    }
    for (Value v : k.getOutputs()) {
      outputs.push_back(v);
      outMaps.push_back(
          *pointMap(g.points, cast<MemRefType>(v.getType()), ctx));
    }
  }
  const unsigned numIn = inputs.size(), numRedOut = r.getOutputs().size();
  SmallVector<AffineMap> maps(inMaps);
  llvm::append_range(maps, outMaps);
  auto fused = exec::KernelOp::create(
      b, r.getLoc(), r.getSymNameAttr(), inputs, outputs,
      b.getAffineMapArrayAttr(maps), r.getIteratorTypes(), r.getInitAttr());
  auto addArgs = [&](Block *blk) {
    for (Value v : llvm::concat<Value>(inputs, outputs))
      blk->addArgument(cast<MemRefType>(v.getType()).getElementType(),
                       r.getLoc());
  };
  // The body: the reduction's, its arguments renumbered.
  Block *body = new Block();
  fused.getBody().push_back(body);
  addArgs(body);
  Block &rBody = r.getBody().front();
  IRMapping rmap;
  for (unsigned i = 0; i < r.getInputs().size(); ++i)
    rmap.map(rBody.getArgument(i), body->getArgument(i));
  for (unsigned o = 0; o < numRedOut; ++o)
    rmap.map(rBody.getArgument(r.getInputs().size() + o),
             body->getArgument(numIn + o));
  OpBuilder bb = OpBuilder::atBlockEnd(body);
  for (Operation &op : rBody)
    bb.clone(op, rmap);
  // The epilogue: each absorbed kernel's ops in order; a value the group
  // wrote is the reduced value (an argument) or the value yielded for it.
  Block *epi = new Block();
  fused.getEpilogue().push_back(epi);
  addArgs(epi);
  OpBuilder eb = OpBuilder::atBlockEnd(epi);
  SmallVector<Value> yields;
  unsigned nextOut = numIn + numRedOut;
  for (auto [e, k] : llvm::enumerate(g.epilogues)) {
    Block &kBody = k.getBody().front();
    IRMapping kmap;
    for (auto [i, v] : llvm::enumerate(k.getInputs())) {
      Value arg = kBody.getArgument(i);
      if (inputSlot[e][i] >= 0) {
        kmap.map(arg, epi->getArgument(inputSlot[e][i]));
        continue;
      }
      Source s = written.lookup(memKey(v));
      kmap.map(arg, s.reduced ? epi->getArgument(numIn + s.index)
                              : yields[s.index]);
    }
    for (unsigned o = 0; o < k.getOutputs().size(); ++o)
      kmap.map(kBody.getArgument(k.getInputs().size() + o),
               epi->getArgument(nextOut++));
    for (Operation &op : kBody.without_terminator())
      eb.clone(op, kmap);
    for (auto [o, y] : llvm::enumerate(
             cast<exec::YieldOp>(kBody.getTerminator()).getValues())) {
      written[memKey(k.getOutputs()[o])] = {false, (unsigned)yields.size()};
      yields.push_back(kmap.lookupOrDefault(y));
    }
  }
  exec::YieldOp::create(eb, r.getLoc(), yields);
  // The views only the absorbed kernels read go too.
  llvm::SetVector<Operation *> views;
  for (exec::KernelOp k : g.epilogues) {
    for (Value v : k->getOperands())
      for (auto view = v.getDefiningOp<exec::ReshapeOp>(); view;
           view = view.getSource().getDefiningOp<exec::ReshapeOp>())
        views.insert(view);
    k.erase();
  }
  r.erase();
  // Until none is left unused (a view of a view goes before its source).
  SmallVector<Operation *> list(views.begin(), views.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *&view : list)
      if (view && view->use_empty()) {
        view->erase();
        view = nullptr;
        changed = true;
      }
  }
}

struct FuseReductionEpiloguesPass
    : dlc::impl::FuseReductionEpiloguesPassBase<
          FuseReductionEpiloguesPass> {
  using FuseReductionEpiloguesPassBase::FuseReductionEpiloguesPassBase;

  void runOnOperation() override {
    getOperation().walk(
        [&](exec::FuncOp f) { runOnBlock(f.getBody().front()); });
  }

  /// The reduction kernel's output points, if every output is laid out as
  /// them and none is f16 / bf16.
  static std::optional<Points> pointsOf(exec::KernelOp r) {
    if (!r.getInit() || !r.getEpilogue().empty())
      return std::nullopt;
    Points p;
    p.numLoops = r.getIteratorTypes().size();
    SmallVector<int64_t> sizes = loopSizes(r);
    bool anyReduction = false;
    for (auto [l, it] : llvm::enumerate(r.getIteratorTypes())) {
      if (cast<StringAttr>(it).getValue() != "parallel") {
        anyReduction = true;
        continue;
      }
      if (sizes[l] != 1) {
        p.loops.push_back(l);
        p.sizes.push_back(sizes[l]);
      }
      p.count *= sizes[l];
    }
    if (!anyReduction)
      return std::nullopt;
    unsigned numInputs = r.getInputs().size();
    for (auto [o, v] : llvm::enumerate(r.getOutputs())) {
      auto type = cast<MemRefType>(v.getType());
      AffineMap map =
          cast<AffineMapAttr>(r.getIndexingMaps()[numInputs + o]).getValue();
      std::optional<AffineMap> want = pointMap(p, type, r.getContext());
      if (isHalf(type.getElementType()) || !want || *want != map ||
          !isWhole(v))
        return std::nullopt;
    }
    return p;
  }

  void runOnBlock(Block &block) {
    SmallVector<exec::KernelOp> reductions;
    for (auto k : block.getOps<exec::KernelOp>())
      if (pointsOf(k))
        reductions.push_back(k);
    for (exec::KernelOp r : reductions) {
      Group g{r, *pointsOf(r), {}, {}, {}};
      Access ra = accessOf(r);
      g.reads = ra.reads;
      g.writes = ra.writes;
      SmallVector<Operation *> skipped;
      unsigned seen = 0;
      for (Operation *op = r->getNextNode(); op && seen < window;
           op = op->getNextNode(), ++seen) {
        auto k = dyn_cast<exec::KernelOp>(op);
        if (k && canJoin(g, k, skipped)) {
          g.epilogues.push_back(k);
          Access ka = accessOf(k);
          g.reads.insert(ka.reads.begin(), ka.reads.end());
          g.writes.insert(ka.writes.begin(), ka.writes.end());
          continue;
        }
        // Nothing after an op that conflicts with the group can join it.
        Access a = accessOf(op);
        bool conflict = false;
        for (const void *w : a.writes)
          conflict |= g.reads.contains(w) || g.writes.contains(w);
        for (const void *rd : a.reads)
          conflict |= g.writes.contains(rd);
        if (conflict)
          break;
        skipped.push_back(op);
      }
      if (!g.epilogues.empty())
        fuse(g);
    }
  }
};

} // namespace
