//===- MemoryModel.cpp - the training step's activations, for remat -------===//
#include "compiler/Training/Remat/MemoryModel.h"

#include "dialects/Graph/GraphInterfaces.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <functional>

using namespace mlir;
using namespace dlc;
using namespace dlc::remat;

/// Bytes of |t| as the memory planner counts them (a byte per i1).
static int64_t tensorBytes(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || !rt.hasStaticShape() || !rt.getElementType().isIntOrFloat())
    return 0;
  int64_t bits = rt.getElementType().getIntOrFloatBitWidth();
  return rt.getNumElements() * ((bits + 7) / 8);
}

/// True when |op| does no arithmetic (RecomputeCost::Free): a view of its
/// operand, or, without operands, a variable read or a constant.
static bool isFree(Operation *op) {
  auto cost = dyn_cast<graph::RecomputeCostOpInterface>(op);
  return cost && cost.getRecomputeCost() == graph::RecomputeCost::Free;
}

/// True when |op| lowers to a view of its first operand (no buffer).
static bool isView(Operation *op) {
  return isFree(op) && op->getNumOperands() > 0;
}

/// True when |op|'s results live outside the arena (variables, constants).
static bool isPersistent(Operation *op) {
  return isFree(op) && op->getNumOperands() == 0;
}

StepGraph::StepGraph(func::FuncOp train, int boundaryPos)
    : boundary(boundaryPos) {
  Block &body = train.getBody().front();
  for (Operation &op : body) {
    pos[&op] = static_cast<int>(ops.size());
    ops.push_back(&op);
  }
  end = static_cast<int>(ops.size()) - 1; // the return
  // Roots and views, in program order.
  for (Operation *op : ops) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      continue;
    for (Value r : op->getResults()) {
      if (isPersistent(op))
        continue;
      if (isView(op) && op->getNumOperands() > 0) {
        viewSource_[r] = op->getOperand(0);
        continue;
      }
      Root root;
      root.value = r;
      root.op = op;
      // A value only written to a variable is written in place (the
      // lowering's direct write): not in the arena.
      bool onlyWritten = !r.use_empty() &&
                         llvm::all_of(r.getUsers(), [](Operation *u) {
                           return isa<graph::WriteVariableOp>(u);
                         });
      root.bytes = onlyWritten ? 0 : tensorBytes(r.getType());
      root.def = pos[op];
      root.lastUse = root.def;
      root.forward = root.def < boundary;
      auto cost = dyn_cast<graph::RecomputeCostOpInterface>(op);
      root.recomputable = root.forward && cost &&
                          cost.getRecomputeCost() !=
                              graph::RecomputeCost::Never &&
                          op->getNumRegions() == 0;
      root.flops = cost ? cost.getRecomputeFlops() : 0;
      rootIndex_[r] = static_cast<int>(roots.size());
      roots.push_back(root);
    }
  }
  for (Root &root : roots) {
    for (Value v : root.op->getOperands()) {
      int r = rootOf(v);
      if (r >= 0 && !llvm::is_contained(root.operandRoots, r))
        root.operandRoots.push_back(r);
    }
  }
  // Values that elementwise fusion will not store: the lowering's fusion
  // (--dlexec-fuse-elementwise) folds an all-parallel kernel into its single
  // consumer kernel, which then reads the producer's operands itself. Here:
  // an Elementwise op whose result has one use, by an Elementwise op of the
  // same shape on the same side of the loss. Such a value takes no memory,
  // and its consumer's use counts as a use of its operands.
  for (Root &root : roots) {
    Value v = root.value;
    if (!root.op->hasTrait<graph::GraphTrait::Elementwise>() || !v.hasOneUse())
      continue;
    Operation *user = *v.getUsers().begin();
    auto it = pos.find(user);
    if (it == pos.end() || user->getNumResults() != 1 ||
        !user->hasTrait<graph::GraphTrait::Elementwise>() ||
        user->getResult(0).getType() != v.getType() ||
        (it->second <= boundary) != (root.def <= boundary))
      continue;
    root.fused = true;
    root.bytes = 0;
  }
  // Uses, through views and fused values.
  for (Operation *op : ops) {
    int p = pos[op];
    bool isReturn = op->hasTrait<OpTrait::IsTerminator>();
    std::function<void(int)> use = [&](int r) {
      Root &root = roots[r];
      root.lastUse = std::max(root.lastUse, p);
      if (isReturn)
        root.recomputable = false;
      if (p <= boundary) {
        root.lastEarlyUse = std::max(root.lastEarlyUse, p);
      } else {
        if (root.firstLateUse < 0)
          root.firstLateUse = p;
        root.lastLateUse = std::max(root.lastLateUse, p);
      }
      if (root.fused)
        for (int o : root.operandRoots)
          use(o);
    };
    op->walk([&](Operation *user) {
      for (Value v : user->getOperands())
        if (int r = rootOf(v); r >= 0)
          use(r);
    });
  }
}

int StepGraph::rootOf(Value v) const {
  while (true) {
    auto it = rootIndex_.find(v);
    if (it != rootIndex_.end())
      return it->second;
    auto view = viewSource_.find(v);
    if (view == viewSource_.end())
      return -1;
    v = view->second;
  }
}

Simulation dlc::remat::simulate(const StepGraph &g, ArrayRef<bool> dropped) {
  size_t n = g.roots.size();
  Simulation s;
  s.end.assign(n, 0);
  s.cloned.assign(n, false);
  s.cloneStart.assign(n, 0);
  s.cloneEnd.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Root &r = g.roots[i];
    s.end[i] = dropped[i] ? std::max(r.def, r.lastEarlyUse) : r.lastUse;
  }
  // Clones are made before the op at position p, in the order the rewrite
  // makes them (operands first): the k-th clone of the step sits at time
  // p - 0.5 + k * 1e-6, and an operand lives until the clone that reads it.
  int64_t sequence = 0;
  std::function<void(int, int, double)> materialize = [&](int i, int p,
                                                          double userTime) {
    if (!dropped[i]) {
      s.end[i] = std::max(s.end[i], userTime);
      return;
    }
    if (s.cloned[i]) {
      s.cloneEnd[i] = std::max(s.cloneEnd[i], userTime);
      return;
    }
    s.cloned[i] = true;
    for (int o : g.roots[i].operandRoots)
      materialize(o, p, -1.0);
    double t = p - 0.5 + double(++sequence) * 1e-6;
    s.cloneStart[i] = t;
    s.cloneEnd[i] = std::max(t, userTime);
    for (int o : g.roots[i].operandRoots)
      materialize(o, p, t);
  };
  SmallVector<int> order;
  for (size_t i = 0; i < n; ++i)
    if (dropped[i] && g.roots[i].firstLateUse >= 0)
      order.push_back(static_cast<int>(i));
  llvm::stable_sort(order, [&](int a, int b) {
    return g.roots[a].firstLateUse < g.roots[b].firstLateUse;
  });
  for (int i : order) {
    const Root &r = g.roots[i];
    materialize(i, r.firstLateUse, r.firstLateUse);
    s.cloneEnd[i] = std::max<double>(s.cloneEnd[i], r.lastLateUse);
  }
  // Sweep: +bytes at each start, -bytes after each end.
  SmallVector<std::pair<double, int64_t>> events;
  events.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const Root &r = g.roots[i];
    if (r.bytes == 0)
      continue;
    events.push_back({double(r.def), r.bytes});
    events.push_back({s.end[i] + kFreeAfter, -r.bytes});
    if (s.cloned[i]) {
      events.push_back({s.cloneStart[i], r.bytes});
      events.push_back({s.cloneEnd[i] + kFreeAfter, -r.bytes});
    }
  }
  llvm::sort(events, [](const auto &a, const auto &b) {
    if (a.first != b.first)
      return a.first < b.first;
    return a.second > b.second; // allocations first: both live at that time
  });
  int64_t live = 0;
  double last = 0;
  for (auto [t, delta] : events) {
    s.area += double(live) * (t - last);
    last = t;
    live += delta;
    if (live > s.peak) {
      s.peak = live;
      s.peakTime = t;
    }
  }
  return s;
}
