//===- Liveness.cpp - buffer lifetimes over a dlexec.func schedule
//----------===//
#include "dialects/Exec/Analysis/Liveness.h"

#include "dialects/Exec/Analysis/KernelQueries.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace dlc;

int64_t dlc::bufferBytes(MemRefType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * ((bits + 7) / 8);
}

/// Sets BufferLife::inPlaceOf (see Liveness.h) for the outputs of
/// all-parallel kernels.
static void findInPlacePairs(Block &body,
                             llvm::DenseMap<Operation *, int64_t> &pos,
                             MutableArrayRef<BufferLife> lives) {
  llvm::DenseMap<Value, int64_t> lifeOf;
  for (auto [i, l] : llvm::enumerate(lives))
    lifeOf[l.alloc.getResult()] = static_cast<int64_t>(i);
  llvm::DenseSet<int64_t> taken;
  for (BufferLife &out : lives) {
    Operation *op = nullptr;
    for (Operation *u : out.alloc.getResult().getUsers())
      if (body.findAncestorOpInBlock(*u) == u && pos.lookup(u) == out.first)
        op = u;
    auto k = dyn_cast_or_null<exec::KernelOp>(op);
    if (!k || !isAllParallel(k))
      continue;
    unsigned numIn = k.getInputs().size();
    auto mapOf = [&](unsigned operand) {
      return cast<AffineMapAttr>(k.getIndexingMaps()[operand]).getValue();
    };
    int64_t outOperand = -1;
    for (auto [j, v] : llvm::enumerate(k.getOutputs()))
      if (v == out.alloc.getResult())
        outOperand = numIn + j;
    if (outOperand < 0 || !mapOf(outOperand).isPermutation())
      continue;
    for (auto [j, v] : llvm::enumerate(k.getInputs())) {
      auto it = lifeOf.find(v);
      if (it == lifeOf.end() || taken.contains(it->second))
        continue;
      BufferLife &in = lives[it->second];
      if (in.last != out.first || in.first >= out.first ||
          in.alloc.getType() != out.alloc.getType() ||
          mapOf(j) != mapOf(outOperand))
        continue;
      // Every operand of the kernel that reaches this buffer is the buffer
      // itself, read through the same map (no view, not an output).
      bool ok = true;
      for (OpOperand &o : k->getOpOperands()) {
        Value root = o.get();
        while (isa_and_nonnull<exec::ReshapeOp, exec::SubviewOp>(
            root.getDefiningOp()))
          root = root.getDefiningOp()->getOperand(0);
        if (root != v)
          continue;
        ok &= o.get() == v && o.getOperandNumber() < numIn &&
              mapOf(o.getOperandNumber()) == mapOf(outOperand);
      }
      if (!ok)
        continue;
      out.inPlaceOf = it->second;
      taken.insert(it->second);
      break;
    }
  }
}

SmallVector<BufferLife> dlc::computeBufferLives(exec::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> pos;
  int64_t n = 0;
  for (Operation &op : body)
    pos[&op] = n++;
  SmallVector<BufferLife> lives;
  for (Operation &op : body) {
    auto alloc = dyn_cast<exec::AllocOp>(op);
    if (!alloc)
      continue;
    BufferLife life;
    life.alloc = alloc;
    life.bytes = bufferBytes(cast<MemRefType>(alloc.getType()));
    int64_t first = INT64_MAX, last = -1;
    SmallVector<Value> worklist{alloc.getResult()};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<exec::ReshapeOp, exec::SubviewOp>(user)) {
          worklist.push_back(user->getResult(0));
          continue;
        }
        // Users nested in other ops count at their top-level ancestor.
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        int64_t p = pos[top];
        first = std::min(first, p);
        last = std::max(last, isa<exec::OutputOp>(top) ? n : p);
      }
    }
    if (last < 0)
      first = last = pos[alloc];
    life.first = first;
    life.last = last;
    lives.push_back(life);
  }
  findInPlacePairs(body, pos, lives);
  return lives;
}

SmallVector<int64_t> dlc::inPlaceGroups(ArrayRef<BufferLife> lives) {
  SmallVector<int64_t> group(lives.size());
  for (size_t i = 0; i < lives.size(); ++i) {
    int64_t g = static_cast<int64_t>(i);
    while (lives[g].inPlaceOf >= 0)
      g = lives[g].inPlaceOf;
    group[i] = g;
  }
  return group;
}
