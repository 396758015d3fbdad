//===- MemoryModel.cpp - the training step's activations, for remat -------===//
#include "compiler/Training/MemoryModel.h"

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

/// Does |op| lower to an all-parallel generated kernel with one output,
/// which elementwise fusion can fold into its one consumer kernel?
static bool isFusableProducer(Operation *op) {
  return op->getNumResults() == 1 &&
         (op->hasTrait<graph::GraphTrait::Elementwise>() ||
          op->hasTrait<graph::GraphTrait::MovesElements>());
}

/// Can |reader| take |v| as the one consumer that elementwise fusion folds
/// |v|'s kernel into: an elementwise op with one result of v's shape (the
/// same iteration space), or a reduction of v, reading v directly?
static bool fusesInto(Value v, Operation *reader) {
  if (!llvm::is_contained(reader->getOperands(), v))
    return false;
  if (reader->hasTrait<graph::GraphTrait::Reduction>())
    return reader->getOperand(0) == v;
  return reader->hasTrait<graph::GraphTrait::Elementwise>() &&
         reader->getNumResults() == 1 &&
         cast<ShapedType>(reader->getResult(0).getType()).getShape() ==
             cast<ShapedType>(v.getType()).getShape();
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
      bool onlyWritten =
          !r.use_empty() && llvm::all_of(r.getUsers(), [](Operation *u) {
            return isa<graph::WriteVariableOp>(u);
          });
      root.bytes = onlyWritten ? 0 : tensorBytes(r.getType());
      root.def = pos[op];
      root.lastUse = root.def;
      root.forward = root.def < boundary;
      auto cost = dyn_cast<graph::RecomputeCostOpInterface>(op);
      root.recomputable =
          root.forward && cost &&
          cost.getRecomputeCost() != graph::RecomputeCost::Never &&
          op->getNumRegions() == 0;
      root.flops = cost ? cost.getRecomputeFlops() : 0;
      root.elementwise = op->hasTrait<graph::GraphTrait::Elementwise>() &&
                         op->getNumResults() == 1;
      root.fusable = isFusableProducer(op);
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
  // same shape or a reduction of it (fusesInto), on the same side of the
  // loss. Such a value takes no memory, and its consumer's use counts as a
  // use of its operands.
  for (Root &root : roots) {
    Value v = root.value;
    if (!isFusableProducer(root.op) || !v.hasOneUse())
      continue;
    Operation *user = *v.getUsers().begin();
    auto it = pos.find(user);
    if (it == pos.end() || !fusesInto(v, user) ||
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
        if (int r = rootOf(v); r >= 0) {
          use(r);
          if (roots[r].value != v || user != op)
            roots[r].readDirectly = false;
          if (p > boundary && !isReturn &&
              !llvm::is_contained(roots[r].lateReaders, p))
            roots[r].lateReaders.push_back(p);
        }
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

namespace {

/// One stretch of storage in the simulation: a root's original value or its
/// clone, from its definition to its last reader; in-place chains share one
/// group (and one allocation).
struct Interval {
  int root = -1;
  bool clone = false;
  double start = 0, end = 0;
  int64_t bytes = 0;
  int group = -1;
};

} // namespace

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
  // Which dropped roots get a clone: those the backward reads, and the
  // dropped operands of clones.
  std::function<void(int)> mark = [&](int i) {
    if (!dropped[i] || s.cloned[i])
      return;
    s.cloned[i] = true;
    for (int o : g.roots[i].operandRoots)
      mark(o);
  };
  for (size_t i = 0; i < n; ++i)
    if (dropped[i] && g.roots[i].firstLateUse >= 0)
      mark(static_cast<int>(i));
  // Clones that fusion folds into their one reader: a clone of an
  // elementwise or element-moving op, read directly by exactly one op (a
  // backward op or another clone) that fusesInto accepts.
  SmallVector<int> cloneReaders(n, 0), cloneReader(n, -1);
  for (size_t j = 0; j < n; ++j)
    if (s.cloned[j])
      for (int o : g.roots[j].operandRoots)
        if (s.cloned[o]) {
          ++cloneReaders[o];
          cloneReader[o] = static_cast<int>(j);
        }
  SmallVector<bool> fusedClone(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Root &r = g.roots[i];
    if (!s.cloned[i] || !r.fusable || !r.readDirectly)
      continue;
    size_t readers = r.lateReaders.size() + cloneReaders[i];
    if (readers != 1)
      continue;
    Operation *reader = r.lateReaders.empty() ? g.roots[cloneReader[i]].op
                                              : g.ops[r.lateReaders.front()];
    fusedClone[i] = fusesInto(r.value, reader);
  }
  // Clones are made before the op at position p, in the order the rewrite
  // makes them (operands first): the k-th clone of the step sits at time
  // p - 0.5 + k * 1e-6, and an operand lives until the clone that reads it.
  int64_t sequence = 0;
  SmallVector<int> made; // clones in the order they are made
  SmallVector<bool> done(n, false);
  std::function<void(int, int, double)> materialize = [&](int i, int p,
                                                          double userTime) {
    if (!dropped[i]) {
      s.end[i] = std::max(s.end[i], userTime);
      return;
    }
    if (done[i]) {
      s.cloneEnd[i] = std::max(s.cloneEnd[i], userTime);
      return;
    }
    done[i] = true;
    for (int o : g.roots[i].operandRoots)
      materialize(o, p, -1.0);
    double t = p - 0.5 + double(++sequence) * 1e-6;
    s.cloneStart[i] = t;
    s.cloneEnd[i] = std::max(t, userTime);
    made.push_back(i);
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
  // A fused clone's operands are read where it is (by its reader): latest
  // made first, so that a chain of fused clones reaches its real reader.
  for (int i : llvm::reverse(made)) {
    if (!fusedClone[i])
      continue;
    for (int o : g.roots[i].operandRoots) {
      if (dropped[o])
        s.cloneEnd[o] = std::max(s.cloneEnd[o], s.cloneEnd[i]);
      else
        s.end[o] = std::max(s.end[o], s.cloneEnd[i]);
    }
  }
  // The intervals: each root's original and its clone.
  SmallVector<Interval> iv;
  SmallVector<int> originalOf(n, -1), cloneOf(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Root &r = g.roots[i];
    originalOf[i] = static_cast<int>(iv.size());
    iv.push_back({static_cast<int>(i), false, double(r.def), s.end[i], r.bytes,
                  static_cast<int>(iv.size())});
    if (s.cloned[i]) {
      cloneOf[i] = static_cast<int>(iv.size());
      iv.push_back({static_cast<int>(i), true, s.cloneStart[i], s.cloneEnd[i],
                    fusedClone[i] ? 0 : r.bytes, static_cast<int>(iv.size())});
    }
  }
  // In place: an elementwise value with its own bytes takes the bytes of an
  // operand of its type whose stretch ends where it starts (read directly;
  // through a fused operand, that operand's own operands). The version it
  // reads: the clone when the reader is a clone or a backward op and the
  // operand is dropped, else the original.
  SmallVector<bool> taken(iv.size(), false);
  for (size_t k = 0; k < iv.size(); ++k) {
    Interval &w = iv[k];
    const Root &r = g.roots[w.root];
    if (w.bytes == 0 || !r.elementwise)
      continue;
    bool late = w.clone || r.def > g.boundary;
    SmallVector<int, 8> operands(r.operandRoots.begin(), r.operandRoots.end());
    for (size_t q = 0; q < operands.size() && q < 32; ++q) {
      int o = operands[q];
      bool readsClone = late && dropped[o];
      bool fusedOperand =
          readsClone ? fusedClone[o] : (!readsClone && g.roots[o].fused);
      if (fusedOperand) {
        for (int oo : g.roots[o].operandRoots)
          if (!llvm::is_contained(operands, oo))
            operands.push_back(oo);
        continue;
      }
      int v = readsClone ? cloneOf[o] : originalOf[o];
      if (v < 0 || taken[v] || iv[v].bytes != w.bytes || iv[v].end != w.start ||
          !g.roots[o].readDirectly ||
          g.roots[o].value.getType() != r.value.getType())
        continue;
      taken[v] = true;
      w.group = iv[v].group;
      break;
    }
  }
  // Groups: allocated at their first member's start, freed after their last
  // member's end.
  SmallVector<double> groupStart(iv.size(), 0), groupEnd(iv.size(), -1);
  SmallVector<int64_t> groupBytes(iv.size(), 0);
  for (size_t k = 0; k < iv.size(); ++k) {
    // Members come after the interval that founded their group (a writer
    // starts where its operand ends), so the founder is seen first.
    int grp = iv[k].group;
    while (iv[grp].group != grp)
      grp = iv[grp].group;
    iv[k].group = grp;
    if (groupEnd[grp] < 0) {
      groupStart[grp] = iv[k].start;
      groupEnd[grp] = iv[k].end;
    } else {
      groupStart[grp] = std::min(groupStart[grp], iv[k].start);
      groupEnd[grp] = std::max(groupEnd[grp], iv[k].end);
    }
    groupBytes[grp] = std::max(groupBytes[grp], iv[k].bytes);
  }
  // Sweep: +bytes at each start, -bytes after each end.
  SmallVector<std::pair<double, int64_t>> events;
  events.reserve(2 * iv.size());
  for (size_t k = 0; k < iv.size(); ++k) {
    if (iv[k].group != static_cast<int>(k) || groupBytes[k] == 0)
      continue;
    events.push_back({groupStart[k], groupBytes[k]});
    events.push_back({groupEnd[k] + kFreeAfter, -groupBytes[k]});
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
