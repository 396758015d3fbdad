//===- PlanStats.h - counts and memory over a planned dlexec module -*- C++ -*-===//
// Shared by the compiler (dlc --stats, the memory budget) and codegen (the
// package's MemoryPlan table), so it lives beside the dialect.
#ifndef DLC_DIALECTS_EXEC_ANALYSIS_PLANSTATS_H
#define DLC_DIALECTS_EXEC_ANALYSIS_PLANSTATS_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace dlc {

/// Counts over a planned dlexec module.
struct PlanStats {
  int64_t kernels = 0;         ///< dlexec.kernel ops (generated kernels)
  int64_t builtinKernels = 0;  ///< dlexec.builtin_kernel ops
  int64_t libraryCalls = 0;    ///< dlexec.library_call ops
  // Memory, in bytes, each allocation rounded up as the device allocates it
  // (exec::allocationBytes, 256-byte granularity; docs/memory.md).
  int64_t arenaBytes = 0;      ///< max `arena_bytes` over the functions
  int64_t persistentBytes = 0; ///< all dlexec.variable buffers (every kind,
                               ///< constants included)
  int64_t inputBytes = 0;      ///< every function's dlexec.input buffers
                               ///< (the runtime binds each)
  /// The step's library-call workspace: exec::workspaceBytesFor the
  /// largest library-call output and the largest fallback scratch
  /// (exec::libraryCallFallbackScratchBytes), rounded by allocationBytes
  /// (0 without library calls).
  int64_t workspaceBytes = 0;
  /// What a session of the package holds on its device: persistent + input
  /// buffers + arena + workspace, bytes (docs/memory.md).
  int64_t predictedPeakBytes() const {
    return persistentBytes + inputBytes + arenaBytes + workspaceBytes;
  }
  /// dlexec.kernel ops that only convert one buffer's element type (a cast
  /// that fusion left standalone), and of those, the ones an adjacent
  /// elementwise (all-parallel) kernel could have absorbed: the cast is the
  /// only reader of what such a kernel writes, or all of the cast's readers
  /// are such kernels.
  int64_t castKernels = 0;
  int64_t castKernelsNextToElementwise = 0;
  /// `gemm` library calls by what their epilogue adds (cuBLASLt epilogues,
  /// LibraryCalls.h GemmEpilogue): a bias row alone (BIAS), a bias row then
  /// ReLU (RELU_BIAS), ReLU without a bias (RELU), a bias gradient (BGRADA /
  /// BGRADB); of the ReLU ones, those that also write the ReLU bit-mask
  /// (RELU_AUX(_BIAS)); the ReLU gradients reading a mask without (DRELU)
  /// and with the bias gradient (DRELU_BGRAD).
  int64_t gemmBias = 0;
  int64_t gemmBiasRelu = 0;
  int64_t gemmRelu = 0;
  int64_t gemmBiasGrad = 0;
  int64_t gemmReluAux = 0;
  int64_t gemmDRelu = 0;
  int64_t gemmDReluBiasGrad = 0;
};

/// Computes PlanStats over |planned| (a module after buildLoweringPipeline;
/// functions without `arena_bytes` count as 0).
PlanStats computePlanStats(mlir::ModuleOp planned);

} // namespace dlc

#endif // DLC_DIALECTS_EXEC_ANALYSIS_PLANSTATS_H
