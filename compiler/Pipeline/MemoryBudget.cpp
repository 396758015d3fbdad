//===- MemoryBudget.cpp - fit a training step to a memory budget ----------===//
#include "compiler/Pipeline/MemoryBudget.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace dlc;


std::string dlc::describePeak(const PlanStats &s) {
  return formatBytes(s.predictedPeakBytes()) + " (persistent " +
         std::to_string(s.persistentBytes) + " + inputs " +
         std::to_string(s.inputBytes) + " + arena " +
         std::to_string(s.arenaBytes) + " + workspace " +
         std::to_string(s.workspaceBytes) + ")";
}

/// Plans |graph| (cloned) with dlgraph-remat |mode| (auto at |target|).
static FailureOr<PlanStats> planWithTarget(ModuleOp graph, int64_t target,
                                           RematSummary *summary,
                                           llvm::StringRef mode = "auto") {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(graph->clone()));
  PipelineOptions o;
  o.train = true;
  o.remat = mode.str();
  o.rematArenaTarget = target;
  PassManager pm(graph.getContext());
  buildRematPipeline(pm, o);
  buildLoweringPipeline(pm);
  if (failed(pm.run(*copy)))
    return failure();
  if (summary)
    *summary = readRematSummary(*copy);
  return computePlanStats(*copy);
}

std::optional<BudgetFit> dlc::fitMemoryBudget(ModuleOp graph,
                                              int64_t budget,
                                              const PlanStats &none,
                                              std::string &error) {
  BudgetFit fit;
  if (none.predictedPeakBytes() <= budget) {
    // Fits without recomputing anything; auto with a target at least the
    // model's simulated peak changes nothing.
    fit.arenaTarget = INT64_MAX;
    fit.stats = none;
    return fit;
  }
  int64_t fixed = none.persistentBytes + none.inputBytes + none.workspaceBytes;
  int64_t arenaBudget = budget - fixed;
  // The pass's own model of the arena vs the planner's, from a first plan at
  // target 0 (also the smallest peak the search can promise).
  RematSummary summary;
  FailureOr<PlanStats> smallest = planWithTarget(graph, 0, &summary);
  if (failed(smallest)) {
    error = "--memory-budget: planning the rematerialized step failed";
    return std::nullopt;
  }
  ++fit.attempts;
  PlanStats best = *smallest;
  int64_t bestTarget = 0;
  auto fits = [&](const PlanStats &s) {
    return s.predictedPeakBytes() <= budget;
  };
  // Chen's segments can go lower than the greedy, which stops where no
  // single choice lowers the peak it simulates: when the greedy's floor does
  // not fit, sqrt's plan is tried too.
  if (!fits(*smallest)) {
    FailureOr<PlanStats> sqrt = planWithTarget(graph, 0, nullptr, "sqrt");
    ++fit.attempts;
    if (succeeded(sqrt) && fits(*sqrt)) {
      fit.mode = "sqrt";
      fit.arenaTarget = 0;
      fit.stats = *sqrt;
      return fit;
    }
    if (succeeded(sqrt) &&
        sqrt->predictedPeakBytes() < best.predictedPeakBytes())
      best = *sqrt;
  }
  if (arenaBudget > 0 && fits(*smallest)) {
    // Scale the arena share of the budget into the pass's model, then shrink
    // by the overshoot of each plan.
    double scale = summary.simulatedPeakBefore > 0 && none.arenaBytes > 0
                       ? double(summary.simulatedPeakBefore) / none.arenaBytes
                       : 1.0;
    int64_t target = static_cast<int64_t>(arenaBudget * scale);
    for (int i = 0; i < 11 && target > 0; ++i) {
      FailureOr<PlanStats> s = planWithTarget(graph, target, nullptr);
      ++fit.attempts;
      if (failed(s))
        break;
      if (fits(*s)) {
        // The first fit is the loosest target tried: the least recompute.
        fit.arenaTarget = target;
        fit.stats = *s;
        return fit;
      }
      double over = double(s->arenaBytes) / std::max<int64_t>(arenaBudget, 1);
      int64_t next = static_cast<int64_t>(target / over * 0.98);
      target = std::min(next, target * 9 / 10);
    }
    fit.arenaTarget = bestTarget;
    fit.stats = best;
    return fit;
  }
  error = "--memory-budget " + formatBytes(budget) +
          " cannot be met: the smallest planned peak this model reaches is " +
          describePeak(best) +
          ", with the least memory of --remat auto and --remat sqrt";
  return std::nullopt;
}

namespace {
/// Phase::Rematerialization with a budget: plans a clone without
/// rematerialization, searches the target that fits (fitMemoryBudget), runs
/// dlgraph-remat at it and records the search on the module
/// (kMemoryBudgetAttr). Fails with the search's one-line error.
struct FitMemoryBudgetPass
    : PassWrapper<FitMemoryBudgetPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FitMemoryBudgetPass)

  explicit FitMemoryBudgetPass(int64_t budget) : budget(budget) {}
  llvm::StringRef getArgument() const override {
    return "dlc-fit-memory-budget";
  }
  llvm::StringRef getDescription() const override {
    return "Rematerializes the training step until its planned peak fits a "
           "memory budget";
  }

  /// The dialects the nested lowering and remat pipelines load.
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    PipelineOptions rp;
    rp.train = true;
    rp.remat = "auto";
    buildRematPipeline(pm, rp);
    buildLoweringPipeline(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OwningOpRef<ModuleOp> plain(cast<ModuleOp>(module->clone()));
    PassManager lower(ctx);
    buildLoweringPipeline(lower);
    if (failed(lower.run(*plain)))
      return signalPassFailure();
    PlanStats before = computePlanStats(*plain);
    std::string error;
    std::optional<BudgetFit> fit =
        fitMemoryBudget(module, budget, before, error);
    if (!fit) {
      emitError(UnknownLoc::get(ctx)) << error;
      return signalPassFailure();
    }
    PipelineOptions rp;
    rp.train = true;
    rp.remat = fit->mode;
    rp.rematArenaTarget = fit->arenaTarget;
    OpPassManager remat(ModuleOp::getOperationName());
    buildRematPipeline(remat, rp);
    if (failed(runPipeline(remat, module)))
      return signalPassFailure();
    Builder b(ctx);
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    module->setAttr(
        kMemoryBudgetAttr,
        b.getDictionaryAttr({
            b.getNamedAttr("budget", i64(budget)),
            b.getNamedAttr("mode", b.getStringAttr(fit->mode)),
            b.getNamedAttr("persistent_before", i64(before.persistentBytes)),
            b.getNamedAttr("inputs_before", i64(before.inputBytes)),
            b.getNamedAttr("arena_before", i64(before.arenaBytes)),
            b.getNamedAttr("workspace_before", i64(before.workspaceBytes)),
        }));
  }

  int64_t budget;
};
} // namespace

std::unique_ptr<Pass> dlc::createFitMemoryBudgetPass(int64_t budget) {
  return std::make_unique<FitMemoryBudgetPass>(budget);
}

std::optional<std::pair<std::string, PlanStats>>
dlc::readMemoryBudgetFit(ModuleOp module) {
  auto d = module->getAttrOfType<DictionaryAttr>(kMemoryBudgetAttr);
  if (!d)
    return std::nullopt;
  auto get = [&](llvm::StringRef name) {
    auto a = d.getAs<IntegerAttr>(name);
    return a ? a.getInt() : int64_t(0);
  };
  PlanStats before;
  before.persistentBytes = get("persistent_before");
  before.inputBytes = get("inputs_before");
  before.arenaBytes = get("arena_before");
  before.workspaceBytes = get("workspace_before");
  auto mode = d.getAs<StringAttr>("mode");
  return std::make_pair(mode ? mode.str() : std::string("auto"), before);
}
