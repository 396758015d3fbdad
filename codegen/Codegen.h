//===- Codegen.h - dlexec -> CUDA C++, host C++, NVRTC, package -*- C++ -*-===//
#ifndef DLC_CODEGEN_CODEGEN_H
#define DLC_CODEGEN_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc::codegen {

/// The package format version this writer produces
/// (runtime/schema/package.fbs).
constexpr uint32_t kFormatVersion = 3;

/// One generated CUDA kernel: a translation unit with a single
/// `extern "C" __global__ void <name>(T0* a0, T1* a1, ...)` (one pointer per
/// operand, inputs then outputs). The runtime launches
/// ceil(numThreads / blockSize) blocks of blockSize threads.
struct KernelSource {
  std::string name;
  std::string cudaSource;
  int64_t numThreads;
  int32_t blockSize = 256;
  /// The threads of a warp or block share each output's work (shuffles,
  /// shared memory, barriers): a reduction or row split over them.
  bool cooperative = false;
  /// The most reduction steps one thread walks alone for one output of a
  /// generated kernel (0: none; cooperative kernels share theirs).
  int64_t serialReductionSteps = 0;
};

/// CUDA C++ for every dlexec.kernel and dlexec.builtin_kernel in |module|, one
/// translation unit per kernel, in program order (kernels with the same name
/// and the same source appear once). Shapes and attributes are baked in as
/// constants. Errors (an unsupported body op, element type or template) are
/// emitted at the offending op's location.
mlir::FailureOr<std::vector<KernelSource>>
emitCudaKernels(mlir::ModuleOp module);

/// One host C++ translation unit holding every kernel of |module| as
/// `extern "C" void <name>(void **args)`, args[i] pointing at operand i
/// (inputs then outputs). Same semantics as the CUDA kernels.
mlir::FailureOr<std::string> emitHostSource(mlir::ModuleOp module);

/// Compiles |source| with |compiler| (looked up on PATH; flags -O2 -shared
/// -fPIC -fopenmp -std=c++17, no fast-math) into a shared object and returns
/// its bytes. Errors (compiler missing, compile failure with its output) are
/// emitted at |loc|.
mlir::FailureOr<std::vector<uint8_t>>
compileHostLibrary(mlir::Location loc, const std::string &source,
                   const std::string &compiler = "c++");

/// Compiles one kernel with NVRTC for |arch| (e.g. "sm_90") and returns the
/// cubin. On failure emits an error at |loc| carrying the NVRTC log.
mlir::FailureOr<std::vector<uint8_t>>
compileWithNVRTC(mlir::Location loc, const KernelSource &kernel,
                 llvm::StringRef arch);

/// What goes into a package besides the plan itself.
struct PackageOptions {
  std::string modelName, producer = "dlc 0.1";
  /// NVRTC-compiles every kernel for each arch ("sm_80", ...) and embeds the
  /// cubins; empty = CUDA sources only (the runtime compiles them).
  std::vector<std::string> cudaArchs;
  /// Training packages carry a TrainingInfo table (step counter "__step").
  bool training = false;
  std::string lossOutput = "loss", optimizer;
  float learningRate = 0;
  int64_t batchSize = 0;
  std::string hostCompiler = "c++";
  /// A pipeline package: the `dlgraph.pipeline` record of
  /// dlgraph-split-pipeline-stages (read before lowering, which drops it);
  /// the writer adds the Pipeline table and the step function `train_step`
  /// whose inputs are the global batch (dim 0 times the micro-batches) and
  /// whose output is the loss. Null: not a pipeline.
  mlir::DictionaryAttr pipeline;
};

/// Writes the package (runtime/schema/package.fbs, format kFormatVersion) for a
/// planned dlexec module (every dlexec.alloc has an `offset`, every dlexec.func
/// an `arena_bytes`) to |path|, atomically (temp file + rename). Errors are
/// emitted on the offending op (or the module) and return failure.
mlir::LogicalResult writePackage(mlir::ModuleOp planned, llvm::StringRef path,
                                 const PackageOptions &options);

/// A human-readable memory plan of |planned| for `dlc --emit=plan`: per
/// function its steps (kernel / library call, operand buffers with shapes),
/// then every buffer with its kind, dtype, shape, bytes and arena offset.
std::string describePlan(mlir::ModuleOp planned);

} // namespace dlc::codegen

#endif
