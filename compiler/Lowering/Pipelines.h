//===- Pipelines.h - the dlgraph -> planned dlexec pipeline --------*- C++
//-*-===//
#ifndef DLC_COMPILER_LOWERING_PIPELINES_H
#define DLC_COMPILER_LOWERING_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace dlc {

/// Adds to |pm| (on a builtin.module): canonicalize; dlgraph-lower-to-dlexec;
/// dlexec-fuse-elementwise; canonicalize; dlexec-plan-memory. The result is a
/// module of dlexec variables and planned dlexec functions. Registered as the
/// pipeline `dlc-lower-to-exec`.
void buildLowerToExecPipeline(mlir::OpPassManager &pm);

/// Counts over a planned dlexec module.
struct PlanStats {
  int64_t kernels = 0;         ///< dlexec.kernel ops (generated kernels)
  int64_t builtinKernels = 0;  ///< dlexec.builtin_kernel ops
  int64_t libraryCalls = 0;    ///< dlexec.library_call ops
  int64_t arenaBytes = 0;      ///< max `arena_bytes` over the functions, bytes
  int64_t persistentBytes = 0; ///< sum of all dlexec.variable sizes (every
                               ///< kind, constants included), bytes
};

/// Computes PlanStats over |planned| (a module after buildLowerToExecPipeline;
/// functions without `arena_bytes` count as 0).
PlanStats computePlanStats(mlir::ModuleOp planned);

} // namespace dlc

#endif
