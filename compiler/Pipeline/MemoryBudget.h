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

#include "compiler/Lowering/Pipelines.h"
#include "compiler/Pipeline/Pipeline.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dlc {

/// Parses a size in bytes: a non-negative number with an optional binary
/// suffix, "B", "KiB", "MiB" or "GiB" (so "1048576", "512KiB", "1.5MiB").
/// Returns nullopt for anything else (including "MB": decimal suffixes are
/// ambiguous and not accepted) and for sizes of 2^63 bytes or more.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// "3145728 bytes (3.00 MiB)": exact bytes and a binary-prefixed figure.
std::string formatBytes(int64_t bytes);

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

} // namespace dlc

#endif // DLC_COMPILER_PIPELINE_MEMORYBUDGET_H
