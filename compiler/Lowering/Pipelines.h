//===- Pipelines.h - the dlgraph -> planned dlexec pipeline -----*- C++ -*-===//
#ifndef DLC_COMPILER_LOWERING_PIPELINES_H
#define DLC_COMPILER_LOWERING_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace dlc {

/// Conversion to dlexec (on a builtin.module): dlgraph-fold-data-movement,
/// canonicalize, dlgraph-lower-to-dlexec. Every dlgraph op becomes dlexec
/// kernels, library calls and buffers.
void buildGraphToExecPipeline(mlir::OpPassManager &pm);

/// The dlexec transforms: elementwise fusion, canonicalize, GEMM epilogues,
/// multi-tensor updates, reduction epilogues, layer norm, persistent-kernel
/// remat, sibling reductions, split reductions.
void buildExecTransformsPipeline(mlir::OpPassManager &pm);

/// Memory planning: dlexec-plan-memory (arena offsets, `arena_bytes`).
void buildMemoryPlanningPipeline(mlir::OpPassManager &pm);

/// The three lowering phases in order: buildGraphToExecPipeline,
/// buildExecTransformsPipeline, buildMemoryPlanningPipeline. The result is a
/// module of dlexec variables and planned dlexec functions. Registered as the
/// pipeline `dlc-lowering-pipeline`; the last phases of `dlc-pipeline`
/// (compiler/Pipeline).
void buildLoweringPipeline(mlir::OpPassManager &pm);

/// Registers the `dlc-lowering-pipeline` pipeline with the global pass
/// registry.
void registerLoweringPipeline();

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

#endif
