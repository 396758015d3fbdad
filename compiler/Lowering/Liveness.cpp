//===- Liveness.cpp - buffer lifetimes over a dlexec.func schedule
//----------===//
#include "compiler/Lowering/Liveness.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace dlc;

int64_t dlc::bufferBytes(MemRefType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * ((bits + 7) / 8);
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
        if (auto view = dyn_cast<exec::ReshapeOp>(user)) {
          worklist.push_back(view.getResult());
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
  return lives;
}
