//===- MemoryBudget.h - fit a training step to a memory budget --*- C++ -*-===//
//
// `dlc --memory-budget`: searches the target of dlgraph-remat's greedy mode
// until the planned peak (PlanStats::predictedPeakBytes: persistent + inputs
// + arena + workspace, after lowering, fusion and memory planning) fits the
// budget, or reports the smallest peak the model reaches.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PIPELINE_MEMORYBUDGET_H
#define DLC_COMPILER_PIPELINE_MEMORYBUDGET_H

#include "dialects/Exec/Analysis/PlanStats.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Support/ByteSize.h"
#include "dialects/Graph/GraphAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dlc {


/// "N bytes (...) (persistent P + inputs I + arena A + workspace W)".
std::string describePeak(const PlanStats &s);

/// What the search found: the dlgraph-remat target that fits, and the plan
/// it gives.
struct BudgetFit {
  /// The dlgraph-remat mode that fits: "auto" (at arenaTarget), or "sqrt"
  /// when only Chen's segments reach the budget.
  std::string mode = "auto";
  int64_t arenaTarget = 0; ///< remat-arena-target to run dlgraph-remat with
  PlanStats stats;         ///< the plan with that target
  int attempts = 0;        ///< plans made by the search
};

/// Searches dlgraph-remat (mode auto) targets for |graph| (a module after
/// buildGraphPipeline without rematerialization; not modified) until the
/// planned peak is at most |budget| bytes. |none| is the plan of |graph|
/// without rematerialization. The search starts from the budget's arena
/// share scaled by the pass's own model and shrinks the target by the
/// planned overshoot, at most 12 plans. Target 0 (recompute all the greedy
/// can) is planned first; when it does not fit, the plan of mode sqrt is
/// tried as well. On failure returns nullopt and sets |error| to one line
/// naming the smallest planned peak of the two.
std::optional<BudgetFit> fitMemoryBudget(mlir::ModuleOp graph,
                                         int64_t budget, const PlanStats &none,
                                         std::string &error);

/// The module attribute where dlc-fit-memory-budget records its search
/// (declared in dialects/Graph/GraphAttributes.h).
using graph::kMemoryBudgetAttr;

/// Phase::Rematerialization under a budget of |budget| bytes: plans a clone
/// without rematerialization, runs fitMemoryBudget and then dlgraph-remat at
/// the target found, and records kMemoryBudgetAttr. An unreachable budget
/// fails the pass with fitMemoryBudget's one-line error.
std::unique_ptr<mlir::Pass> createFitMemoryBudgetPass(int64_t budget);

/// What dlc-fit-memory-budget recorded on |module|: the remat mode that fit
/// and the plan without rematerialization (only its memory fields are set);
/// nullopt when it did not run.
std::optional<std::pair<std::string, PlanStats>>
readMemoryBudgetFit(mlir::ModuleOp module);

} // namespace dlc

#endif // DLC_COMPILER_PIPELINE_MEMORYBUDGET_H
