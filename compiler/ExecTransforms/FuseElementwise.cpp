//===- FuseElementwise.cpp - fold producer kernels into their consumer
//------===//
// Producer/consumer fusion of dlexec.kernel ops over the same iteration space,
// so that chains of elementwise ops become one kernel and their intermediate
// buffers disappear.
#include "dialects/Exec/Analysis/KernelQueries.h"
#include "compiler/ExecTransforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <set>

namespace dlc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
namespace x = dlc::exec;

namespace {

AffineMap mapOf(x::KernelOp k, unsigned operandNumber) {
  return cast<AffineMapAttr>(k.getIndexingMaps()[operandNumber]).getValue();
}

/// The buffer |v| is a view of (through reshapes and subviews), or |v|.
Value viewRoot(Value v) {
  while (isa_and_nonnull<x::ReshapeOp, x::SubviewOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

/// Identifies the memory a buffer value refers to: the alloc/input value, or
/// the variable symbol for variable_refs (two refs of one variable alias).
Attribute rootKey(Value v) {
  v = viewRoot(v);
  if (auto ref = v.getDefiningOp<x::VariableRefOp>())
    return ref.getVariableAttr();
  return nullptr;
}
bool sameMemory(Value a, Value b) {
  Attribute ka = rootKey(a), kb = rootKey(b);
  if (ka || kb)
    return ka == kb;
  return viewRoot(a) == viewRoot(b);
}

/// Buffers |op| writes.
SmallVector<Value> writtenBuffers(Operation *op) {
  if (auto k = dyn_cast<x::KernelOp>(op))
    return llvm::to_vector(k.getOutputs());
  if (auto l = dyn_cast<x::LibraryCallOp>(op))
    return llvm::to_vector(l.getOutputs());
  if (auto bk = dyn_cast<x::BuiltinKernelOp>(op))
    return llvm::to_vector(bk.getOutputs());
  return {};
}

/// Finds the kernels that touch a buffer, and records what one successful
/// fusion changed for the pass's worklist: the kernels it created and every
/// live kernel that touches (reads or writes) memory a kernel it erased
/// touched. Those, and the writers of what they read, are the only kernels
/// whose fusion outcome a rewrite can change (see
/// FuseElementwisePass::runOnOperation).
class FusionTracker {
public:
  explicit FusionTracker(Block &block) {
    for (auto ref : block.getOps<x::VariableRefOp>())
      variableRefs[ref.getVariableAttr()].push_back(ref.getResult());
    int64_t i = 0;
    for (auto k : block.getOps<x::KernelOp>())
      positions[k] = i++;
  }

  /// Whether kernel |a| comes before kernel |b| of the same block. Kept
  /// here rather than asking Operation::isBeforeInBlock, whose cached order
  /// each fused kernel's insertion invalidates (a renumbering of the whole
  /// block every few fusions).
  bool before(Operation *a, Operation *b) const {
    return positions.at(a) < positions.at(b);
  }

  /// |fused| was inserted right before |old|, which is erased next: it takes
  /// |old|'s position.
  void created(Operation *fused, Operation *old) {
    positions[fused] = positions.at(old);
    touched.insert(fused);
  }

  /// Kernels that must be looked at again after the current fusion.
  llvm::SetVector<Operation *> touched;
  /// Called with each kernel about to be erased.
  std::function<void(Operation *)> onErase;

  /// Records the kernels sharing memory with |k|, then erases |k|.
  void erase(x::KernelOp k) {
    for (Value v : k->getOperands())
      forEachKernelOnMemory(v, [&](x::KernelOp other) {
        if (other != k)
          touched.insert(other);
      });
    touched.remove(k);
    if (onErase)
      onErase(k);
    positions.erase(k);
    k.erase();
  }

  /// Calls |fn| on each kernel with an operand on the memory of |v| (any
  /// view of the same buffer, or of any reference to the same variable),
  /// possibly more than once.
  void forEachKernelOnMemory(Value v, llvm::function_ref<void(x::KernelOp)> fn) {
    v = viewRoot(v);
    SmallVector<Value> worklist;
    if (auto ref = v.getDefiningOp<x::VariableRefOp>())
      llvm::append_range(worklist, variableRefs.lookup(ref.getVariableAttr()));
    else
      worklist.push_back(v);
    while (!worklist.empty()) {
      Value cur = worklist.pop_back_val();
      for (Operation *user : cur.getUsers()) {
        if (auto k = dyn_cast<x::KernelOp>(user))
          fn(k);
        else if (isa<x::ReshapeOp, x::SubviewOp>(user) &&
                 user->getOperand(0) == cur)
          worklist.push_back(user->getResult(0));
      }
    }
  }

private:
  llvm::DenseMap<Attribute, SmallVector<Value>> variableRefs;
  /// Position of each live kernel of the block; fused kernels share the
  /// position of the kernel they replace.
  llvm::DenseMap<Operation *, int64_t> positions;
};

/// Gives |fused| its body block: one argument per buffer of |inputs| and
/// |outputs| (their element types; inputs at |producer|'s location, outputs
/// at |outLoc|), then the ops of |producer|'s body with its inputs read from
/// the arguments at |slots|. Sets |produced| to the values it yields and
/// returns a builder at the end of the block.
OpBuilder startFusedBody(x::KernelOp fused, ValueRange inputs,
                         ValueRange outputs, Location outLoc,
                         x::KernelOp producer, ArrayRef<int> slots,
                         SmallVectorImpl<Value> &produced) {
  Block *blk = new Block();
  fused.getBody().push_back(blk);
  for (Value v : inputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(),
                     producer.getLoc());
  for (Value v : outputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), outLoc);
  OpBuilder kb = OpBuilder::atBlockEnd(blk);
  Block &pBody = producer.getBody().front();
  IRMapping map;
  for (auto [i, slot] : llvm::enumerate(slots))
    map.map(pBody.getArgument(i), blk->getArgument(slot));
  for (Operation &op : pBody.without_terminator())
    kb.clone(op, map);
  produced.clear();
  for (Value v : cast<x::YieldOp>(pBody.getTerminator()).getValues())
    produced.push_back(map.lookupOrDefault(v));
  return kb;
}

/// Builds the kernel that computes |p|'s body in front of |c|'s, |c| reading
/// |p|'s outputs through |pMap| (a permutation of |c|'s loops onto |p|'s
/// iteration space), and replaces |c| with it. Leaves |p| in place. Fails
/// (changing nothing) when the fused kernel could not be sized or a write
/// between them makes it unsafe.
LogicalResult fuseInto(x::KernelOp p, x::KernelOp c, AffineMap pMap,
                       FusionTracker &t) {
  Block &pBody = p.getBody().front();
  unsigned pIns = p.getInputs().size();
  // A reduction epilogue (--dlexec-fuse-reduction-epilogues, which runs
  // later) is not carried over by the rewrites here.
  if (c->getBlock() != p->getBlock() || !t.before(p, c) ||
      !c.getEpilogue().empty())
    return failure();
  // P's reads move down to C: nothing in between may write what P reads.
  for (Operation *op = p->getNextNode(); op != c.getOperation();
       op = op->getNextNode())
    for (Value w : writtenBuffers(op))
      for (Value r : p.getInputs())
        if (sameMemory(w, r))
          return failure();
  // C writing a buffer P reads is only safe element by element.
  for (auto [j, w] : llvm::enumerate(c.getOutputs()))
    for (auto [i, r] : llvm::enumerate(p.getInputs()))
      if (sameMemory(w, r) &&
          (!isAllParallel(c) || !mapOf(p, i).compose(pMap).isIdentity() ||
           !mapOf(c, c.getInputs().size() + j).isIdentity()))
        return failure();

  // Inputs of the fused kernel: C's (minus P's outputs), then P's, deduped.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  auto addInput = [&](Value v, AffineMap m) -> unsigned {
    for (unsigned i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v && maps[i] == m)
        return i;
    inputs.push_back(v);
    maps.push_back(m);
    return inputs.size() - 1;
  };
  unsigned cIns = c.getInputs().size();
  SmallVector<int> cInputSlot(cIns, -1), pInputSlot(pIns, -1);
  SmallVector<int> cFromP(cIns, -1);
  for (unsigned i = 0; i < cIns; ++i) {
    Value v = c.getInputs()[i];
    auto it = llvm::find(p.getOutputs(), v);
    if (it != p.getOutputs().end())
      cFromP[i] = it - p.getOutputs().begin();
    else
      cInputSlot[i] = addInput(v, mapOf(c, i));
  }
  for (unsigned i = 0; i < pIns; ++i)
    pInputSlot[i] = addInput(p.getInputs()[i], mapOf(p, i).compose(pMap));
  for (unsigned j = 0; j < c.getOutputs().size(); ++j)
    maps.push_back(mapOf(c, cIns + j));
  // Codegen sizes each loop from a map that uses it as a plain dimension;
  // P's output (an identity map) may have been the only one, e.g. a
  // broadcast feeding a reduction over the broadcast axis. Keep it unfused
  // then.
  unsigned numLoops = mapOf(c, 0).getNumDims();
  for (unsigned d = 0; d < numLoops; ++d) {
    bool covered = llvm::any_of(maps, [&](AffineMap m) {
      return llvm::any_of(m.getResults(), [&](AffineExpr e) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        return dim && dim.getPosition() == d;
      });
    });
    if (!covered)
      return failure();
  }

  OpBuilder b(c);
  auto fused = x::KernelOp::create(
      b, c.getLoc(), c.getSymNameAttr(), inputs, c.getOutputs(),
      b.getAffineMapArrayAttr(maps), c.getIteratorTypes(), c.getInitAttr());
  SmallVector<Value> produced;
  OpBuilder kb = startFusedBody(fused, inputs, c.getOutputs(), c.getLoc(), p,
                                pInputSlot, produced);
  Block *blk = kb.getBlock();
  Block &cBody = c.getBody().front();
  IRMapping cmap;
  for (unsigned i = 0; i < cIns; ++i)
    cmap.map(cBody.getArgument(i), cFromP[i] >= 0
                                       ? produced[cFromP[i]]
                                       : blk->getArgument(cInputSlot[i]));
  for (unsigned j = 0; j < c.getOutputs().size(); ++j)
    cmap.map(cBody.getArgument(cIns + j), blk->getArgument(inputs.size() + j));
  for (Operation &op : cBody)
    kb.clone(op, cmap);
  t.created(fused, c);
  t.erase(c);
  return success();
}

/// Whether |c| stores a value derived from |p|'s in a narrower float type
/// than |p| writes it: every output of |c| is a float of fewer bits than
/// each of |p|'s (e.g. an f32 LayerNorm's x-hat read by the kernel that
/// applies the affine and rounds to bf16). Recomputing |p| there keeps the
/// wide value from being stored for |p|'s other, later readers.
bool narrowsProducer(x::KernelOp c, x::KernelOp p) {
  auto floatBits = [](Value v) -> unsigned {
    auto ft = dyn_cast<FloatType>(cast<MemRefType>(v.getType()).getElementType());
    return ft ? ft.getWidth() : 0;
  };
  unsigned narrowestOfP = ~0u;
  for (Value out : p.getOutputs()) {
    unsigned bits = floatBits(out);
    if (!bits)
      return false;
    narrowestOfP = std::min(narrowestOfP, bits);
  }
  return !c.getOutputs().empty() &&
         llvm::all_of(c.getOutputs(), [&](Value out) {
           unsigned bits = floatBits(out);
           return bits && bits < narrowestOfP;
         });
}

/// A producer recomputed in several consumers stays small.
constexpr unsigned kMaxDuplicatedBodyOps = 32;
constexpr unsigned kMaxDuplicates = 4;

/// Folds |p| into its consumer kernel when that is legal (see the pass
/// description), or into each of its consumers when one of them is a cast.
/// Returns success when it fused.
LogicalResult tryFuse(x::KernelOp p, FusionTracker &t) {
  if (!isAllParallel(p))
    return failure();
  Block &pBody = p.getBody().front();
  unsigned pIns = p.getInputs().size();
  for (unsigned i = 0; i < p.getOutputs().size(); ++i)
    if (!pBody.getArgument(pIns + i).use_empty())
      return failure();
  // Each consumer reads all of P's outputs it reads through one map, a
  // permutation of its loops (identity, or a transpose).
  SmallVector<std::pair<x::KernelOp, AffineMap>> consumers;
  for (auto [i, out] : llvm::enumerate(p.getOutputs())) {
    if (!out.getDefiningOp<x::AllocOp>())
      return failure();
    AffineMap om = mapOf(p, pIns + i);
    if (!om.isIdentity())
      return failure();
    for (OpOperand &use : out.getUses()) {
      Operation *user = use.getOwner();
      if (user == p.getOperation()) {
        if (use.getOperandNumber() != pIns + i)
          return failure(); // p also reads its own output
        continue;
      }
      auto k = dyn_cast<x::KernelOp>(user);
      if (!k)
        return failure();
      unsigned n = use.getOperandNumber();
      if (n >= k.getInputs().size())
        return failure();
      AffineMap m = mapOf(k, n);
      if (!m.isPermutation())
        return failure();
      auto it = llvm::find_if(consumers, [&](auto &e) { return e.first == k; });
      if (it == consumers.end())
        consumers.push_back({k, m});
      else if (it->second != m)
        return failure();
    }
  }
  if (consumers.empty())
    return failure();
  if (consumers.size() > 1) {
    // Recompute P in each consumer only to absorb a cast (mixed
    // precision): the value is then never stored, in either type. A
    // consumer that rounds P's value to a narrower type counts as a cast.
    bool castConsumer =
        isCastKernel(p) || llvm::any_of(consumers, [&](auto &e) {
          return isCastKernel(e.first) || narrowsProducer(e.first, p);
        });
    if (!castConsumer || consumers.size() > kMaxDuplicates ||
        pBody.getOperations().size() > kMaxDuplicatedBodyOps + 1)
      return failure();
    // All or nothing: check every consumer first.
    for (auto &[k, m] : consumers)
      if (k->getBlock() != p->getBlock() || !t.before(p, k))
        return failure();
  }
  unsigned fused = 0;
  for (auto &[k, m] : consumers)
    fused += succeeded(fuseInto(p, k, m, t));
  if (fused < consumers.size()) // P still feeds the others
    return success(fused > 0);
  SmallVector<Operation *> deadAllocs;
  for (Value out : p.getOutputs())
    deadAllocs.push_back(out.getDefiningOp());
  t.erase(p);
  for (Operation *a : deadAllocs)
    a->erase();
  return success();
}

/// Folds the readers of a multi-output producer into it: when every output
/// of |p| (all-parallel, two or more outputs) is read only by all-parallel
/// kernels through identity maps over |p|'s loops, |p| and those readers
/// become one kernel at the last reader's place that writes the readers'
/// outputs (the guards `select(found_inf, old, new)` that loss scaling puts
/// on each result of an optimizer update). Returns success when it fused.
LogicalResult tryFuseReadersIntoProducer(x::KernelOp p, FusionTracker &t) {
  if (p.getOutputs().size() < 2 || !isAllParallel(p))
    return failure();
  Block &pBody = p.getBody().front();
  unsigned pIns = p.getInputs().size();
  unsigned numLoops = mapOf(p, 0).getNumDims();
  for (unsigned i = 0; i < p.getOutputs().size(); ++i)
    if (!pBody.getArgument(pIns + i).use_empty() ||
        !mapOf(p, pIns + i).isIdentity())
      return failure();
  SmallVector<x::KernelOp> readers;
  for (Value out : p.getOutputs()) {
    if (!out.getDefiningOp<x::AllocOp>())
      return failure();
    for (OpOperand &use : out.getUses()) {
      if (use.getOwner() == p.getOperation())
        continue;
      auto k = dyn_cast<x::KernelOp>(use.getOwner());
      if (!k || use.getOperandNumber() >= k.getInputs().size() ||
          !isAllParallel(k) || k->getBlock() != p->getBlock() ||
          !t.before(p, k) ||
          mapOf(k, 0).getNumDims() != numLoops ||
          !mapOf(k, use.getOperandNumber()).isIdentity())
        return failure();
      if (!llvm::is_contained(readers, k))
        readers.push_back(k);
    }
  }
  if (readers.empty())
    return failure();
  llvm::sort(readers, [&](x::KernelOp a, x::KernelOp b) {
    return t.before(a, b);
  });
  for (x::KernelOp k : readers)
    for (unsigned j = 0; j < k.getOutputs().size(); ++j)
      if (!mapOf(k, k.getInputs().size() + j).isIdentity() ||
          !k.getBody().front().getArgument(k.getInputs().size() + j)
               .use_empty())
        return failure();
  x::KernelOp last = readers.back();
  // Everything but the last reader moves down to it: no op in between may
  // write what they read, or read or write what they write.
  SmallVector<Value> reads(p.getInputs()), writes;
  for (x::KernelOp k : readers) {
    llvm::append_range(reads, k.getInputs());
    if (k != last)
      llvm::append_range(writes, k.getOutputs());
  }
  for (Operation *op = p->getNextNode(); op != last.getOperation();
       op = op->getNextNode()) {
    if (llvm::is_contained(readers, dyn_cast<x::KernelOp>(op)))
      continue;
    for (Value w : writtenBuffers(op))
      for (Value r : llvm::concat<Value>(reads, writes))
        if (sameMemory(w, r))
          return failure();
    for (Value operand : op->getOperands())
      for (Value w : writes)
        if (sameMemory(operand, w))
          return failure();
  }
  // The fused kernel reads and writes element by element (identity maps);
  // a buffer written and also read through another map is not safe.
  SmallVector<std::pair<Value, AffineMap>> inputs;
  auto addInput = [&](Value v, AffineMap m) -> unsigned {
    for (unsigned i = 0; i < inputs.size(); ++i)
      if (inputs[i].first == v && inputs[i].second == m)
        return i;
    inputs.push_back({v, m});
    return inputs.size() - 1;
  };
  SmallVector<int> pSlot;
  for (unsigned i = 0; i < pIns; ++i)
    pSlot.push_back(addInput(p.getInputs()[i], mapOf(p, i)));
  SmallVector<SmallVector<int>> readerSlot;
  SmallVector<Value> outputs;
  for (x::KernelOp k : readers) {
    SmallVector<int> slots;
    for (auto [i, v] : llvm::enumerate(k.getInputs()))
      slots.push_back(llvm::is_contained(p.getOutputs(), v)
                          ? -1
                          : (int)addInput(v, mapOf(k, i)));
    readerSlot.push_back(slots);
    llvm::append_range(outputs, k.getOutputs());
  }
  for (Value w : outputs)
    for (auto &[r, m] : inputs)
      if (sameMemory(w, r) && !m.isIdentity())
        return failure();

  OpBuilder b(last);
  SmallVector<AffineMap> maps;
  SmallVector<Value> inputValues;
  for (auto &[v, m] : inputs) {
    inputValues.push_back(v);
    maps.push_back(m);
  }
  for (unsigned j = 0; j < outputs.size(); ++j)
    maps.push_back(AffineMap::getMultiDimIdentityMap(numLoops, p.getContext()));
  auto fused = x::KernelOp::create(b, p.getLoc(), p.getSymNameAttr(),
                                   inputValues, outputs,
                                   b.getAffineMapArrayAttr(maps),
                                   p.getIteratorTypes(), p.getInitAttr());
  SmallVector<Value> produced;
  OpBuilder kb = startFusedBody(fused, inputValues, outputs, p.getLoc(), p,
                                pSlot, produced);
  Block *blk = kb.getBlock();
  SmallVector<Value> yields;
  unsigned outBase = inputValues.size();
  for (auto [r, k] : llvm::enumerate(readers)) {
    Block &kBody = k.getBody().front();
    IRMapping kmap;
    for (auto [i, v] : llvm::enumerate(k.getInputs())) {
      int slot = readerSlot[r][i];
      if (slot >= 0) {
        kmap.map(kBody.getArgument(i), blk->getArgument(slot));
      } else {
        unsigned o = llvm::find(p.getOutputs(), v) - p.getOutputs().begin();
        kmap.map(kBody.getArgument(i), produced[o]);
      }
    }
    for (unsigned j = 0; j < k.getOutputs().size(); ++j)
      kmap.map(kBody.getArgument(k.getInputs().size() + j),
               blk->getArgument(outBase + yields.size() + j));
    for (Operation &op : kBody.without_terminator())
      kb.clone(op, kmap);
    for (Value y : cast<x::YieldOp>(kBody.getTerminator()).getValues())
      yields.push_back(kmap.lookupOrDefault(y));
  }
  x::YieldOp::create(kb, p.getLoc(), yields);

  SmallVector<Operation *> dead;
  for (Value out : p.getOutputs())
    dead.push_back(out.getDefiningOp());
  t.created(fused, last);
  for (x::KernelOp k : readers)
    t.erase(k);
  t.erase(p);
  for (Operation *a : dead)
    a->erase();
  return success();
}

/// The map of the first input of |k| that reads its last reduction loop (or
/// a null map): CUDA codegen picks a row or a column reduction from it, so
/// siblings merge only when it agrees and each output keeps its summation
/// order on both targets.
AffineMap rowDecidingMap(x::KernelOp k) {
  unsigned last = 0;
  bool any = false;
  for (auto [d, it] : llvm::enumerate(k.getIteratorTypes()))
    if (cast<StringAttr>(it).getValue() == "reduction") {
      last = d;
      any = true;
    }
  if (!any)
    return AffineMap();
  for (unsigned i = 0; i < k.getInputs().size(); ++i)
    if (mapOf(k, i).isFunctionOfDim(last))
      return mapOf(k, i);
  return AffineMap();
}

/// Sibling (multi-output) fusion of reductions, as XLA's multi-output
/// fusion does for reductions over the same input (e.g. sum(dy) and
/// sum(dy * xhat) of a BatchNorm backward): |a| and the first later kernel
/// |b| of its block that reduces over the same loops and reads |a|'s first
/// input through the same map, writing through the same output maps,
/// become one kernel at |b|'s place with |a|'s outputs, then |b|'s. Each
/// output keeps its own accumulator and the loop order, so its summation
/// order is unchanged (the host's serial loop nest; CUDA's row/column split
/// is chosen from the same input map). Not when |b| reads what |a| writes,
/// or an op in between writes what |a| reads or touches what |a| writes.
/// Returns success when it fused.
LogicalResult tryMergeSiblingReductions(x::KernelOp a, FusionTracker &t) {
  if (isAllParallel(a) || a.getInputs().empty() || !a.getInit() ||
      !a.getEpilogue().empty())
    return failure();
  unsigned aIns = a.getInputs().size(), aOuts = a.getOutputs().size();
  Block &aBody = a.getBody().front();
  for (unsigned j = 0; j < aOuts; ++j)
    if (!aBody.getArgument(aIns + j).hasOneUse())
      return failure();
  // The first input reads every loop as a plain dimension, so it alone
  // sizes the loops and the siblings share the iteration domain.
  if (!mapOf(a, 0).isPermutation())
    return failure();
  Value in0 = a.getInputs()[0];
  AffineMap rowMap = rowDecidingMap(a);
  x::KernelOp b;
  for (Operation *user : in0.getUsers()) {
    auto k = dyn_cast<x::KernelOp>(user);
    if (!k || k == a || k->getBlock() != a->getBlock() || !t.before(a, k) ||
        (b && !t.before(k, b)))
      continue;
    if (k.getInputs().empty() || k.getInputs()[0] != in0 || !k.getInit() ||
        !k.getEpilogue().empty() ||
        k.getIteratorTypes() != a.getIteratorTypes() ||
        mapOf(k, 0) != mapOf(a, 0) || rowDecidingMap(k) != rowMap ||
        k.getOutputs().size() != aOuts)
      continue;
    unsigned kIns = k.getInputs().size();
    bool sameOutMaps = true;
    for (unsigned j = 0; j < aOuts; ++j)
      sameOutMaps &= mapOf(k, kIns + j) == mapOf(a, aIns + j) &&
                     k.getBody().front().getArgument(kIns + j).hasOneUse();
    if (sameOutMaps)
      b = k;
  }
  if (!b)
    return failure();
  // a's reads and writes move down to b.
  for (Value r : b->getOperands())
    for (Value w : a.getOutputs())
      if (sameMemory(r, w))
        return failure();
  for (Operation *op = a->getNextNode(); op != b.getOperation();
       op = op->getNextNode()) {
    for (Value w : writtenBuffers(op))
      for (Value r : a->getOperands())
        if (sameMemory(w, r))
          return failure();
    for (Value v : op->getOperands())
      for (Value w : a.getOutputs())
        if (sameMemory(v, w))
          return failure();
  }

  unsigned bIns = b.getInputs().size();
  SmallVector<Value> inputs(a.getInputs());
  SmallVector<AffineMap> maps;
  for (unsigned i = 0; i < aIns; ++i)
    maps.push_back(mapOf(a, i));
  SmallVector<unsigned> bSlot;
  for (unsigned i = 0; i < bIns; ++i) {
    Value v = b.getInputs()[i];
    AffineMap m = mapOf(b, i);
    unsigned slot = inputs.size();
    for (unsigned j = 0; j < inputs.size(); ++j)
      if (inputs[j] == v && maps[j] == m)
        slot = j;
    if (slot == inputs.size()) {
      inputs.push_back(v);
      maps.push_back(m);
    }
    bSlot.push_back(slot);
  }
  SmallVector<Value> outputs(a.getOutputs());
  llvm::append_range(outputs, b.getOutputs());
  for (unsigned j = 0; j < aOuts; ++j)
    maps.push_back(mapOf(a, aIns + j));
  for (unsigned j = 0; j < aOuts; ++j)
    maps.push_back(mapOf(b, bIns + j));
  SmallVector<Attribute> init(a.getInitAttr().getValue());
  llvm::append_range(init, b.getInitAttr().getValue());

  OpBuilder ob(b);
  auto fused = x::KernelOp::create(
      ob, a.getLoc(), a.getSymNameAttr(), inputs, outputs,
      ob.getAffineMapArrayAttr(maps), a.getIteratorTypes(),
      ob.getArrayAttr(init));
  Block *blk = new Block();
  fused.getBody().push_back(blk);
  for (Value v : inputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(),
                     a.getLoc());
  for (Value v : outputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(),
                     a.getLoc());
  OpBuilder kb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> yields;
  IRMapping amap, bmap;
  for (unsigned i = 0; i < aIns; ++i)
    amap.map(aBody.getArgument(i), blk->getArgument(i));
  for (unsigned j = 0; j < aOuts; ++j)
    amap.map(aBody.getArgument(aIns + j), blk->getArgument(inputs.size() + j));
  Block &bBody = b.getBody().front();
  for (unsigned i = 0; i < bIns; ++i)
    bmap.map(bBody.getArgument(i), blk->getArgument(bSlot[i]));
  for (unsigned j = 0; j < aOuts; ++j)
    bmap.map(bBody.getArgument(bIns + j),
             blk->getArgument(inputs.size() + aOuts + j));
  for (auto [body, map] : {std::pair<Block *, IRMapping *>{&aBody, &amap},
                           {&bBody, &bmap}}) {
    for (Operation &op : body->without_terminator())
      kb.clone(op, *map);
    for (Value y : cast<x::YieldOp>(body->getTerminator()).getValues())
      yields.push_back(map->lookupOrDefault(y));
  }
  x::YieldOp::create(kb, b.getLoc(), yields);
  t.created(fused, b);
  t.erase(b);
  t.erase(a);
  return success();
}

struct FuseElementwisePass
    : dlc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  /// The rewrites apply, one at a time, to the first kernel in block order
  /// that fuses, until none does. Instead of rescanning the block after each
  /// (quadratic in the kernels), a worklist ordered by position holds the
  /// kernels that may fuse: all at first; a kernel that does not fuse leaves
  /// it, and a fusion puts back the kernels whose outcome it can change (the
  /// new kernel, the kernels touching memory an erased kernel touched, and
  /// the writers of what those read; a sibling reduction shares memory with
  /// an erased kernel, so it is among the former). Every kernel outside the
  /// list would not fuse, so taking the list's first kernel fuses exactly
  /// what the rescan would, in the same order.
  void runOnOperation() override {
    for (auto func : getOperation().getOps<x::FuncOp>())
      for (Block &block : func.getBody())
        runOnBlock(block);
  }

  void runOnBlock(Block &block) {
    FusionTracker t(block);
    auto before = [&](Operation *a, Operation *b) { return t.before(a, b); };
    std::set<Operation *, decltype(before)> pending(before);
    for (auto k : block.getOps<x::KernelOp>())
      pending.insert(k);
    t.onErase = [&](Operation *op) { pending.erase(op); };
    while (!pending.empty()) {
      auto k = cast<x::KernelOp>(*pending.begin());
      pending.erase(pending.begin());
      t.touched.clear();
      if (failed(tryFuse(k, t)) && failed(tryFuseReadersIntoProducer(k, t)) &&
          failed(tryMergeSiblingReductions(k, t)))
        continue;
      SmallVector<Operation *> again(t.touched.begin(), t.touched.end());
      for (Operation *op : t.touched)
        for (Value in : cast<x::KernelOp>(op).getInputs())
          t.forEachKernelOnMemory(in, [&](x::KernelOp w) {
            if (llvm::any_of(w.getOutputs(),
                             [&](Value o) { return sameMemory(o, in); }))
              again.push_back(w);
          });
      for (Operation *op : again)
        if (op->getBlock() == &block)
          pending.insert(op);
    }
  }
};

} // namespace
