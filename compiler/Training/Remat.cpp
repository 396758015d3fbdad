//===- Remat.cpp - dlgraph-remat: activation checkpointing ---------------===//
// Chooses forward values of @train_step to recompute in the backward pass
// (Chen et al. 2016's segments, or a greedy fit to a memory target as in
// XLA's HloRematerialization) and clones them there; see Passes.td.
#include "compiler/Training/MemoryModel.h"
#include "compiler/Training/Passes.h"
#include "compiler/Training/Gradients/Gradients.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphInterfaces.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <unordered_map>

namespace dlc {
#define GEN_PASS_DEF_REMATERIALIZATIONPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::remat;

namespace {

constexpr llvm::StringLiteral kPass = "--dlgraph-remat";

/// Chen et al. 2016, section 4: cut the forward into ceil(sqrt(n)) segments
/// of about equal output bytes; keep what a later segment reads and the
/// last segment.
SmallVector<bool> chooseSqrt(const StepGraph &g) {
  size_t n = g.roots.size();
  SmallVector<bool> dropped(n, false);
  int computing = 0;
  int64_t total = 0;
  for (const Root &r : g.roots)
    if (r.forward) {
      ++computing;
      total += r.bytes;
    }
  if (computing == 0 || total == 0)
    return dropped;
  int64_t segments =
      std::max<int64_t>(1, (int64_t)std::ceil(std::sqrt(double(computing))));
  // Segment of each forward position: cut where the running bytes pass
  // total * k / segments.
  SmallVector<int> segmentOf(g.ops.size(), 0);
  int64_t running = 0;
  int segment = 0;
  size_t next = 0;
  for (size_t p = 0; p < g.ops.size(); ++p) {
    segmentOf[p] = segment;
    while (next < n && g.roots[next].def == (int)p) {
      running += g.roots[next].forward ? g.roots[next].bytes : 0;
      ++next;
    }
    if (running * segments >= total * (segment + 1) && segment + 1 < segments)
      ++segment;
  }
  // A root read by an op of a later forward segment is a segment output. A
  // value that fusion folds into its reader has no buffer to keep: its
  // operands are the segment outputs instead.
  SmallVector<bool> crosses(n, false);
  std::function<void(int)> markCrossing = [&](int r) {
    if (crosses[r])
      return;
    crosses[r] = true;
    if (g.roots[r].fused)
      for (int o : g.roots[r].operandRoots)
        markCrossing(o);
  };
  for (Operation *op : g.ops) {
    int p = g.pos.lookup(op);
    if (p > g.boundary)
      break;
    op->walk([&](Operation *user) {
      for (Value v : user->getOperands()) {
        int r = g.rootOf(v);
        if (r >= 0 && segmentOf[g.roots[r].def] < segmentOf[p])
          markCrossing(r);
      }
    });
  }
  for (size_t i = 0; i < n; ++i)
    if (g.roots[i].fused)
      crosses[i] = false;
  // The last segment's backward starts as soon as the forward ends, so its
  // values are kept (Chen et al.: recomputation is per earlier segment).
  int last = segmentOf[g.boundary];
  for (size_t i = 0; i < n; ++i)
    dropped[i] = g.roots[i].recomputable && !crosses[i] &&
                 segmentOf[g.roots[i].def] < last;
  return dropped;
}

/// Greedy fit to |target| bytes (XLA's HloRematerialization's strategy):
/// while the simulated peak is over the target, drop the held activation
/// live across the peak that adds the fewest FLOPs per byte freed, together
/// with the forward values its recomputation needs that would otherwise be
/// kept past the peak. A choice is taken only when the simulation confirms
/// it: the peak does not rise and the memory summed over time falls (the
/// clones themselves take memory where they are made); otherwise the next
/// best is tried. Finally, choices whose undoing keeps the peak within the
/// target (or the peak reached) are undone, latest first.
SmallVector<bool> chooseAuto(const StepGraph &g, int64_t target) {
  size_t n = g.roots.size();
  SmallVector<bool> dropped(n, false);
  constexpr int kMaxClosure = 64;
  constexpr int kTrials = 16;
  Simulation sim = simulate(g, dropped);
  SmallVector<SmallVector<int>> taken; // the closures dropped, in order
  while (sim.peak > target) {
    double t = sim.peakTime;
    // Is root i's kept interval live at t?
    auto liveAt = [&](int i) {
      return !dropped[i] && g.roots[i].def <= t && sim.end[i] + kFreeAfter > t;
    };
    struct Candidate {
      double score;
      int64_t benefit;
      SmallVector<int> closure;
    };
    SmallVector<Candidate> candidates;
    for (size_t i = 0; i < n; ++i) {
      const Root &r = g.roots[i];
      // Held across t: kept, recomputable, not in use around t.
      if (dropped[i] || !r.recomputable || r.firstLateUse < 0 || !liveAt(i) ||
          r.lastEarlyUse + kFreeAfter > t || r.def >= t ||
          r.firstLateUse - 0.5 <= t)
        continue;
      // The closure: i, and recomputable operands that are not live at t
      // (keeping them would carry them across t).
      Candidate c{0, r.bytes, {static_cast<int>(i)}};
      int64_t flops = r.flops;
      for (size_t k = 0; k < c.closure.size(); ++k)
        for (int o : g.roots[c.closure[k]].operandRoots) {
          if (dropped[o] || liveAt(o) || llvm::is_contained(c.closure, o))
            continue;
          if (g.roots[o].recomputable &&
              c.closure.size() < (size_t)kMaxClosure) {
            c.closure.push_back(o);
            flops += g.roots[o].flops;
          } else {
            c.benefit -= g.roots[o].bytes;
          }
        }
      if (c.benefit <= 0)
        continue;
      c.score = double(flops + 1) / double(c.benefit);
      candidates.push_back(std::move(c));
    }
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      if (a.score != b.score)
        return a.score < b.score;
      return a.benefit > b.benefit;
    });
    bool progressed = false;
    for (size_t k = 0; k < candidates.size() && k < (size_t)kTrials; ++k) {
      SmallVector<bool> trial(dropped);
      for (int c : candidates[k].closure)
        trial[c] = true;
      Simulation next = simulate(g, trial);
      if (next.peak <= sim.peak && next.area < sim.area) {
        taken.push_back(candidates[k].closure);
        dropped = std::move(trial);
        sim = std::move(next);
        progressed = true;
        break;
      }
    }
    if (!progressed)
      break; // nothing held across the peak can go
  }
  // Undo the choices the final peak does not need (latest first): steps
  // taken on a plateau of the peak added FLOPs for memory elsewhere.
  int64_t bound = std::max(target, sim.peak);
  for (size_t k = taken.size(); k-- > 0;) {
    SmallVector<bool> trial(dropped);
    for (int c : taken[k])
      trial[c] = false;
    if (simulate(g, trial).peak <= bound)
      dropped = std::move(trial);
  }
  return dropped;
}

/// Merges identical pure ops of the backward (after |boundary|, the loss):
/// autodiff of a decomposed BatchNorm computes some values twice, and each
/// copy would look like a buffer of its own to the memory model. Forward
/// ops are left alone: merging a backward value into a forward one would
/// keep it alive from the forward on.
void mergeBackwardDuplicates(Block &body, Operation *boundary) {
  std::unordered_map<size_t, SmallVector<Operation *, 2>> seen;
  bool backward = false;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (&op == boundary) {
      backward = true;
      continue;
    }
    if (!backward || op.getNumRegions() != 0 || op.getNumResults() == 0 ||
        !isPure(&op))
      continue;
    size_t h = static_cast<size_t>(OperationEquivalence::computeHash(
        &op, OperationEquivalence::directHashValue,
        OperationEquivalence::ignoreHashValue,
        OperationEquivalence::IgnoreLocations));
    Operation *same = nullptr;
    for (Operation *prev : seen[h])
      if (OperationEquivalence::isEquivalentTo(
              &op, prev, OperationEquivalence::exactValueMatch, nullptr,
              OperationEquivalence::IgnoreLocations)) {
        same = prev;
        break;
      }
    if (same) {
      op.replaceAllUsesWith(same);
      op.erase();
    } else {
      seen[h].push_back(&op);
    }
  }
}

/// Clones the dropped roots (and the views of them the backward reads)
/// before their first backward use and redirects every backward use.
/// Returns (ops cloned that are not views, their FLOPs).
std::pair<int64_t, int64_t> rewrite(const StepGraph &g,
                                    ArrayRef<bool> dropped) {
  // Backward uses of values whose root is dropped, in program order.
  SmallVector<std::pair<int, OpOperand *>> lateUses;
  for (Operation *op : g.ops) {
    int p = g.pos.lookup(op);
    if (p <= g.boundary)
      continue;
    op->walk([&](Operation *user) {
      for (OpOperand &use : user->getOpOperands()) {
        int r = g.rootOf(use.get());
        if (r >= 0 && dropped[r])
          lateUses.push_back({p, &use});
      }
    });
  }
  llvm::stable_sort(
      lateUses, [](const auto &a, const auto &b) { return a.first < b.first; });
  DenseMap<Operation *, Operation *> cloneOf;
  int64_t clonedOps = 0, addedFlops = 0;
  std::function<Value(Value, Operation *)> materialize =
      [&](Value v, Operation *before) -> Value {
    int r = g.rootOf(v);
    if (r < 0 || !dropped[r])
      return v;
    Operation *op = v.getDefiningOp();
    auto it = cloneOf.find(op);
    if (it == cloneOf.end()) {
      IRMapping map;
      for (Value o : op->getOperands())
        map.map(o, materialize(o, before));
      OpBuilder b(before);
      Operation *clone = b.clone(*op, map);
      clone->setAttr(graph::kRecomputedAttr, b.getUnitAttr());
      it = cloneOf.insert({op, clone}).first;
      auto cost = dyn_cast<graph::RecomputeCostOpInterface>(op);
      if (cost && cost.getRecomputeCost() != graph::RecomputeCost::Free) {
        ++clonedOps;
        addedFlops += cost.getRecomputeFlops();
      }
    }
    return it->second->getResult(cast<OpResult>(v).getResultNumber());
  };
  for (auto [p, use] : lateUses)
    use->set(materialize(use->get(), g.ops[p]));
  return {clonedOps, addedFlops};
}

struct RematerializationPass
    : PassWithOptions<dlc::impl::RematerializationPassBase<RematerializationPass>, RematOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (remat == "none")
      return;
    func::FuncOp train = training::lookupTrainStep(module, kPass);
    if (!train)
      return signalPassFailure();
    // Max pooling's backward reads the argmax (i32) saved in the forward
    // instead of the pooling's input: the input (often a ReLU output the
    // pass recomputes) is then not needed before the ReLU's own backward.
    useMaxPoolIndices(train);
    Block &body = train.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (auto name =
              train.getResultAttrOfType<StringAttr>(i, training::kNameAttr))
        if (name.getValue() == training::kLossName)
          loss = ret.getOperand(i);
    if (!loss || !loss.getDefiningOp() ||
        loss.getDefiningOp()->getBlock() != &body) {
      train.emitError() << kPass
                        << " expects @train_step to return a \"loss\" "
                           "computed in its body";
      return signalPassFailure();
    }
    int64_t stepFlops = 0;
    train.walk([&](graph::RecomputeCostOpInterface op) {
      stepFlops += op.getRecomputeFlops();
    });
    mergeBackwardDuplicates(body, loss.getDefiningOp());
    int boundary = 0;
    for (Operation &op : body) {
      if (&op == loss.getDefiningOp())
        break;
      ++boundary;
    }
    StepGraph g(train, boundary);
    SmallVector<bool> dropped =
        remat == "sqrt" ? chooseSqrt(g) : chooseAuto(g, rematArenaTarget);
    int64_t before = simulate(g, SmallVector<bool>(g.roots.size(), false)).peak;
    int64_t after = simulate(g, dropped).peak;
    auto [ops, flops] = rewrite(g, dropped);
    Builder b(&getContext());
    auto record = [&](StringRef key, int64_t v) {
      train->setAttr((graph::kRematSummaryPrefix + key).str(),
                     b.getI64IntegerAttr(v));
    };
    record("recomputed_ops", ops);
    record("added_flops", flops);
    record("step_flops", stepFlops);
    record("simulated_peak_before", before);
    record("simulated_peak_after", after);
  }
};

} // namespace

ArrayRef<StringLiteral> dlc::supportedRematModes() {
  static constexpr StringLiteral kModes[] = {"none", "sqrt", "auto"};
  return kModes;
}

RematSummary dlc::readRematSummary(ModuleOp module) {
  RematSummary s;
  auto train = module.lookupSymbol<func::FuncOp>(training::kTrainStep);
  if (!train)
    return s;
  auto get = [&](StringRef key) -> int64_t {
    auto a = train->getAttrOfType<IntegerAttr>(
        (graph::kRematSummaryPrefix + key).str());
    return a ? a.getInt() : 0;
  };
  s.recomputedOps = get("recomputed_ops");
  s.addedFlops = get("added_flops");
  s.stepFlops = get("step_flops");
  s.simulatedPeakBefore = get("simulated_peak_before");
  s.simulatedPeakAfter = get("simulated_peak_after");
  return s;
}

std::unique_ptr<mlir::Pass> dlc::createRematerializationPass(const RematOptions &options) {
  return std::make_unique<RematerializationPass>(options);
}
