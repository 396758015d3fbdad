//===- ScheduleUpdates.cpp - dlgraph-schedule-updates ---------------------===//
// Moves each optimizer update of @train_step to right after its gradient is
// final, so that weight gradients die at their update; see Passes.td.
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <functional>

namespace dlc {
#define GEN_PASS_DEF_SCHEDULEUPDATESPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

/// An update: pure, no regions, and every result read only by
/// write_variable.
bool isUpdate(Operation *op) {
  if (op->getNumResults() == 0 || op->getNumRegions() != 0 ||
      !isMemoryEffectFree(op))
    return false;
  for (Value r : op->getResults())
    for (Operation *u : r.getUsers())
      if (!isa<graph::WriteVariableOp>(u))
        return false;
  return true;
}

/// True when |op| computes only from variables and constants (its operand
/// cone has no activation and no argument).
bool fromVariablesOnly(Operation *op, DenseMap<Operation *, bool> &memo) {
  if (isa<graph::ReadVariableOp, graph::ConstantOp>(op))
    return true;
  auto it = memo.find(op);
  if (it != memo.end())
    return it->second;
  bool ok = op->getNumRegions() == 0 && isMemoryEffectFree(op);
  for (Value v : op->getOperands()) {
    if (!ok)
      break;
    Operation *def = v.getDefiningOp();
    ok = def && fromVariablesOnly(def, memo);
  }
  return memo[op] = ok;
}

struct ScheduleUpdatesPass
    : dlc::impl::ScheduleUpdatesPassBase<ScheduleUpdatesPass> {
  using ScheduleUpdatesPassBase::ScheduleUpdatesPassBase;

  void runOnOperation() override {
    auto train =
        getOperation().lookupSymbol<func::FuncOp>(training::kTrainStep);
    if (!train || train.isExternal() || !train.getBody().hasOneBlock())
      return;
    Block &body = train.getBody().front();
    SmallVector<Operation *> updates;
    for (Operation &op : body.without_terminator())
      if (isUpdate(&op))
        updates.push_back(&op);
    if (updates.empty())
      return;

    // 1. Variable-only operands of updates (the step counter) and their
    //    operand cones go to the start of the body, in their order.
    DenseMap<Operation *, bool> memo;
    llvm::SetVector<Operation *> early;
    std::function<void(Operation *)> collect = [&](Operation *def) {
      if (!def || def->getBlock() != &body || early.contains(def))
        return;
      for (Value o : def->getOperands())
        collect(o.getDefiningOp());
      early.insert(def);
    };
    for (Operation *u : updates)
      for (Value v : u->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (!isa<graph::ReadVariableOp>(def) && fromVariablesOnly(def, memo))
            collect(def);
    Operation *anchorFront = &body.front();
    while (anchorFront && early.contains(anchorFront))
      anchorFront = anchorFront->getNextNode();
    SmallVector<Operation *> inOrder;
    for (Operation &op : body)
      if (early.contains(&op))
        inOrder.push_back(&op);
    for (Operation *op : inOrder)
      if (anchorFront && anchorFront->isBeforeInBlock(op))
        op->moveBefore(anchorFront);

    // 2. Each update right after its last dependence.
    for (Operation *u : updates) {
      llvm::StringSet<> written;
      for (Value r : u->getResults())
        for (Operation *w : r.getUsers())
          written.insert(cast<graph::WriteVariableOp>(w).getVariable());
      Operation *anchor = nullptr;
      auto later = [&](Operation *op) {
        op = body.findAncestorOpInBlock(*op);
        if (op && op != u && (!anchor || anchor->isBeforeInBlock(op)))
          anchor = op;
      };
      SmallVector<Operation *> carried; // single-use state reads
      for (Value v : u->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def) {
          continue; // a block argument: defined at the start
        }
        auto read = dyn_cast<graph::ReadVariableOp>(def);
        if (read && def->hasOneUse()) {
          carried.push_back(def);
          continue;
        }
        later(def);
      }
      // Every reader of a value read from a variable the update writes.
      for (Operation &op : body) {
        auto read = dyn_cast<graph::ReadVariableOp>(op);
        if (!read || !written.contains(read.getVariable()))
          continue;
        for (Operation *user : read->getUsers())
          later(user);
        if (!llvm::is_contained(carried, &op))
          later(&op);
      }
      if (!anchor || !anchor->isBeforeInBlock(u))
        continue;
      Operation *point = anchor;
      for (Operation *c : carried) {
        c->moveAfter(point);
        point = c;
      }
      u->moveAfter(point);
    }
  }
};

} // namespace
