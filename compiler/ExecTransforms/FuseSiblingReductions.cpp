//===- FuseSiblingReductions.cpp - sibling reductions in one kernel -------===//
//
// --dlexec-fuse-sibling-reductions (Passes.td): two reduction kernels over
// the same loops that read a common input become one kernel with both
// kernels' outputs, as XLA's sibling multi-output fusion does, so the common
// input is read once and one launch does the work of two.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/BufferAccess.h"
#include "dialects/Exec/Analysis/KernelQueries.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace dlc {
#define GEN_PASS_DEF_FUSESIBLINGREDUCTIONSPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using dlc::lowering::accessOf;
using dlc::lowering::rootOf;

namespace {

AffineMap mapOf(exec::KernelOp k, unsigned operand) {
  return cast<AffineMapAttr>(k.getIndexingMaps()[operand]).getValue();
}

/// Whether |k| may take part: a reduction (an `init`) whose body yields
/// every output (no epilogue) and that carries no attribute of another
/// pass.
bool isCandidate(exec::KernelOp k) {
  return k.getInit() && k.getEpilogue().empty() &&
         k.getNumBodyOutputs() == k.getOutputs().size() &&
         k->getDiscardableAttrs().empty();
}

/// The input slots of |second| in a kernel merged after |first|: the slot of
/// |first|'s input when the same value is read with the same map, else a
/// new slot numbered after |first|'s inputs; and how many new ones.
std::pair<SmallVector<unsigned>, unsigned>
inputSlots(exec::KernelOp first, exec::KernelOp second) {
  const unsigned n1 = first.getInputs().size();
  SmallVector<unsigned> slots;
  unsigned fresh = 0;
  for (auto [j, v] : llvm::enumerate(second.getInputs())) {
    unsigned slot = n1 + fresh;
    for (auto [i, u] : llvm::enumerate(first.getInputs()))
      if (u == v && mapOf(first, i) == mapOf(second, j)) {
        slot = i;
        break;
      }
    if (slot == n1 + fresh)
      ++fresh;
    slots.push_back(slot);
  }
  return {slots, fresh};
}

/// Whether |first| (before |second| in the same block) and |second| merge
/// (Passes.td's conditions).
bool canMerge(exec::KernelOp first, exec::KernelOp second,
              int64_t maxOperands) {
  if (!isCandidate(first) || !isCandidate(second) ||
      first.getIteratorTypes() != second.getIteratorTypes() ||
      loopSizes(first) != loopSizes(second))
    return false;
  auto [slots, fresh] = inputSlots(first, second);
  const unsigned n1 = first.getInputs().size();
  if (!llvm::any_of(slots, [&](unsigned s) { return s < n1; }))
    return false; // no common input: not siblings
  const int64_t operands = n1 + fresh + first.getOutputs().size() +
                           second.getOutputs().size();
  if (operands > maxOperands)
    return false;
  llvm::SmallPtrSet<const void *, 8> ins1, outs1, ins2, outs2;
  for (Value v : first.getInputs())
    ins1.insert(rootOf(v));
  for (Value v : first.getOutputs())
    outs1.insert(rootOf(v));
  for (Value v : second.getInputs())
    ins2.insert(rootOf(v));
  for (Value v : second.getOutputs())
    outs2.insert(rootOf(v));
  for (const void *o : outs1)
    if (ins2.contains(o) || outs2.contains(o))
      return false;
  for (const void *o : outs2)
    if (ins1.contains(o))
      return false;
  // The merged kernel runs at |second|'s place: nothing in between may
  // write what |first| reads or touch what it writes.
  for (Operation *op = first->getNextNode(); op != second.getOperation();
       op = op->getNextNode()) {
    lowering::Access a = accessOf(op);
    for (const void *w : a.writes)
      if (ins1.contains(w) || outs1.contains(w))
        return false;
    for (const void *r : a.reads)
      if (outs1.contains(r))
        return false;
  }
  return true;
}

/// Replaces |first| and |second| by one kernel at |second|'s place, named
/// as |second|: inputs, outputs, maps, init and yields |first|'s then
/// |second|'s.
exec::KernelOp merge(exec::KernelOp first, exec::KernelOp second) {
  OpBuilder b(second);
  Location loc = second.getLoc();
  const unsigned n1 = first.getInputs().size(),
                 n2 = second.getInputs().size();
  auto [slots, fresh] = inputSlots(first, second);
  SmallVector<Value> inputs(first.getInputs());
  SmallVector<Attribute> maps;
  for (unsigned i = 0; i < n1; ++i)
    maps.push_back(first.getIndexingMaps()[i]);
  for (unsigned j = 0; j < n2; ++j)
    if (slots[j] >= n1) {
      inputs.push_back(second.getInputs()[j]);
      maps.push_back(second.getIndexingMaps()[j]);
    }
  SmallVector<Value> outputs(first.getOutputs());
  llvm::append_range(outputs, second.getOutputs());
  for (unsigned o = 0; o < first.getOutputs().size(); ++o)
    maps.push_back(first.getIndexingMaps()[n1 + o]);
  for (unsigned o = 0; o < second.getOutputs().size(); ++o)
    maps.push_back(second.getIndexingMaps()[n2 + o]);
  SmallVector<Attribute> init(first.getInit()->getValue());
  llvm::append_range(init, second.getInit()->getValue());
  auto merged = exec::KernelOp::create(
      b, loc, second.getSymNameAttr(), inputs, outputs,
      b.getArrayAttr(maps), first.getIteratorTypes(), b.getArrayAttr(init));
  Block *blk = new Block();
  merged.getBody().push_back(blk);
  for (Value v : llvm::concat<Value>(inputs, outputs))
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  const unsigned numIn = inputs.size(), out1 = first.getOutputs().size();
  OpBuilder bb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> yields;
  auto cloneBody = [&](exec::KernelOp k, auto inputSlot, unsigned outBase) {
    Block &old = k.getBody().front();
    const unsigned nIn = k.getInputs().size();
    IRMapping map;
    for (unsigned i = 0; i < nIn; ++i)
      map.map(old.getArgument(i), blk->getArgument(inputSlot(i)));
    for (unsigned o = 0; o < k.getOutputs().size(); ++o)
      map.map(old.getArgument(nIn + o), blk->getArgument(numIn + outBase + o));
    for (Operation &op : old.without_terminator())
      bb.clone(op, map);
    for (Value v : cast<exec::YieldOp>(old.getTerminator()).getValues())
      yields.push_back(map.lookupOrDefault(v));
  };
  cloneBody(first, [](unsigned i) { return i; }, 0);
  // |second|'s new inputs follow |first|'s in order of appearance.
  SmallVector<unsigned> secondSlot(n2);
  for (unsigned j = 0, next = n1; j < n2; ++j)
    secondSlot[j] = slots[j] < n1 ? slots[j] : next++;
  cloneBody(second, [&](unsigned j) { return secondSlot[j]; }, out1);
  exec::YieldOp::create(bb, loc, yields);
  first.erase();
  second.erase();
  return merged;
}

struct FuseSiblingReductionsPass
    : dlc::impl::FuseSiblingReductionsPassBase<FuseSiblingReductionsPass> {
  using FuseSiblingReductionsPassBase::FuseSiblingReductionsPassBase;

  void runOnOperation() override {
    // Blocks holding kernels (a step function's body).
    SmallVector<Block *> blocks;
    getOperation().walk([&](exec::KernelOp k) {
      if (!llvm::is_contained(blocks, k->getBlock()))
        blocks.push_back(k->getBlock());
    });
    for (Block *block : blocks) {
      // Merge the first mergeable pair, then look again from the merged
      // kernel on: a merged kernel may take in a third sibling.
      bool changed = true;
      while (changed) {
        changed = false;
        SmallVector<exec::KernelOp> seen;
        for (Operation &op : *block) {
          auto k = dyn_cast<exec::KernelOp>(op);
          if (!k || !isCandidate(k))
            continue;
          for (exec::KernelOp earlier : llvm::reverse(seen))
            if (canMerge(earlier, k, maxOperands)) {
              merge(earlier, k);
              changed = true;
              break;
            }
          if (changed)
            break;
          seen.push_back(k);
        }
      }
    }
  }
};

} // namespace
