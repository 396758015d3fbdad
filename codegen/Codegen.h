//===- Codegen.h - dlexec -> CUDA C++, host C++, NVRTC, package -*- C++ -*-===//
#ifndef DLC_CODEGEN_CODEGEN_H
#define DLC_CODEGEN_CODEGEN_H

#include "runtime/schema/FormatVersion.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dlc::codegen {

class CompileCache;

/// Wall-clock seconds per compile phase, in the order the phases ran
/// (`dlc --time-phases`). A phase added twice accumulates.
struct PhaseTimes {
  std::vector<std::pair<std::string, double>> phases;
  void add(llvm::StringRef phase, double seconds);
};

/// Adds the wall time from its construction to stop() (or its destruction)
/// to |times| under |phase|; does nothing when |times| is null.
class PhaseTimer {
public:
  PhaseTimer(PhaseTimes *times, llvm::StringRef phase);
  ~PhaseTimer() { stop(); }
  void stop();

private:
  PhaseTimes *times;
  std::string phase;
  double start;
};

/// What the compile steps of one package did with the CompileCache: entries
/// found, compiled and stored.
struct CacheReport {
  unsigned hits = 0, misses = 0, corrupt = 0;
};

/// The package format version this writer produces
/// (runtime/schema/FormatVersion.h, the one constant).
constexpr uint32_t kFormatVersion = schema::kPackageFormatVersion;

/// The default PackageOptions::weightsSectionThreshold: 1 GiB of weights.
constexpr uint64_t kDefaultWeightsSectionThreshold = uint64_t(1) << 30;

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
  /// The names of the other kernels of the module that are identical to
  /// this one up to their name (codegen/KernelDedup.h): their launches run
  /// this kernel, which is emitted and compiled once.
  std::vector<std::string> aliases;
  /// Elements per vector access of a vectorized elementwise kernel (4 f32,
  /// 8 f16/bf16: 128 bits of its widest operand), each thread taking one
  /// vector per grid-stride step; 0 for a scalar kernel.
  int32_t vectorWidth = 0;
};

/// CUDA C++ for every dlexec.kernel and dlexec.builtin_kernel in |module|, one
/// translation unit per kernel, in program order (kernels with the same name
/// and the same source appear once; kernels identical up to their name appear
/// once, under the first one's name, with the others in `aliases`). Shapes and
/// attributes are baked in as constants. Errors (an unsupported body op,
/// element type or template) are emitted at the offending op's location.
mlir::FailureOr<std::vector<KernelSource>>
emitCudaKernels(mlir::ModuleOp module);

/// One host C++ translation unit holding every kernel of |module| as
/// `extern "C" void <name>(void **args)`, args[i] pointing at operand i
/// (inputs then outputs). Same semantics as the CUDA kernels.
mlir::FailureOr<std::string> emitHostSource(mlir::ModuleOp module);

/// One translation unit of the host library and the optimization level it is
/// compiled at.
struct HostUnit {
  std::string source;
  /// -O3 when true, else -O2. Only kernels with much work per launch are
  /// worth -O3's compile time (docs/dlc.md, "Compile time").
  bool hot = true;
  /// Estimated compile cost (bytes of source, weighted by the level); the
  /// units are compiled in decreasing order of it.
  double cost = 0;
};

/// Kernels whose estimated work per launch (host loop iterations x serial
/// reduction steps) reaches this many are
/// compiled at -O3, the others at -O2.
constexpr int64_t kHotKernelWork = 1 << 15;

/// The host source of |module| split into at most |units| translation units
/// (at least one per level used): kernels with at least |hotWork| work
/// (kHotKernelWork) go to -O3 units, the others to -O2 units; each unit
/// holds the prelude and a contiguous run (in program order) of one level's
/// kernels, the runs balanced by estimated compile cost, and the units come
/// in decreasing order of it (longest first, so parallel jobs end together).
mlir::FailureOr<std::vector<HostUnit>>
emitHostUnits(mlir::ModuleOp module, unsigned units,
              int64_t hotWork = kHotKernelWork);

/// Compiles |source| with |compiler| (looked up on PATH; flags -O3 -fPIC
/// -fopenmp -std=c++17 -fno-fast-math -fno-math-errno) into a shared object
/// and returns its bytes. Errors (compiler missing, compile failure with its
/// output) are emitted at |loc|.
mlir::FailureOr<std::vector<uint8_t>>
compileHostLibrary(mlir::Location loc, const std::string &source,
                   const std::string &compiler = "c++");

/// Compiles the translation units |units| (emitHostUnits) with |compiler|
/// into objects, up to |jobs| compiler processes at a time (0: one per
/// core), and links them into one shared object; same flags as above. With
/// an enabled |cache| the shared object is looked up by a content key of the
/// units, the compiler's identity (resolved path, size, modification time
/// and `--version` output) and the flags, and each object by the same key
/// of its unit; what is compiled is stored. Hits and misses are added to
/// |report| when not null. The output does not depend on the temporary
/// folder (-ffile-prefix-map), so a compile is reproducible.
mlir::FailureOr<std::vector<uint8_t>>
compileHostLibrary(mlir::Location loc, llvm::ArrayRef<std::string> units,
                   const std::string &compiler, CompileCache *cache,
                   unsigned jobs, CacheReport *report = nullptr);

/// As above, each unit at its own level (HostUnit::hot: -O3, else -O2), in
/// the order given; the levels are part of the cache keys.
mlir::FailureOr<std::vector<uint8_t>>
compileHostLibrary(mlir::Location loc, llvm::ArrayRef<HostUnit> units,
                   const std::string &compiler, CompileCache *cache,
                   unsigned jobs, CacheReport *report = nullptr);

/// Compiles one kernel with NVRTC for |arch| (e.g. "sm_90") and returns the
/// cubin. On failure emits an error at |loc| carrying the NVRTC log.
mlir::FailureOr<std::vector<uint8_t>>
compileWithNVRTC(mlir::Location loc, const KernelSource &kernel,
                 llvm::StringRef arch);

/// Cubins of every kernel of |kernels| for every arch of |archs|, indexed
/// [arch][kernel]: one NVRTC program per kernel, |jobs| threads at a time
/// (0: one per core). With an enabled |cache| each cubin is looked up by a
/// content key of the source, the arch, the NVRTC version and options first,
/// and stored after compiling. Hits and misses are added to |report| when
/// not null. On failure emits the first NVRTC error at |loc|.
mlir::FailureOr<std::vector<std::vector<std::vector<uint8_t>>>>
compileCubins(mlir::Location loc, llvm::ArrayRef<KernelSource> kernels,
              llvm::ArrayRef<std::string> archs, CompileCache *cache,
              unsigned jobs, CacheReport *report = nullptr);

/// The identity of the host C++ compiler |compiler| (looked up on PATH when
/// not absolute) for cache keys: its resolved path, size, modification time
/// and `--version` output; "" when it is not found.
std::string hostCompilerIdentity(const std::string &compiler);

/// NVRTC's version ("nvrtc 12.4"), "" when it does not say.
std::string nvrtcVersionString();

/// The number of parallel compile jobs for |jobs| (0: the machine's cores,
/// at least 1).
unsigned compileJobs(unsigned jobs);

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
  /// Model FLOPs of one training step on one rank (dlc --stats' "model
  /// FLOPs per step") and the peak FLOP/s of the device model for the
  /// step's precision: dlrt train's MFU. 0: unknown.
  double modelFlops = 0;
  double peakFlops = 0;
  std::string hostCompiler = "c++";
  /// Compiled host objects and cubins are looked up here and stored after
  /// compiling; null or disabled: everything is compiled.
  CompileCache *cache = nullptr;
  /// Parallel compile jobs (host compiler processes, NVRTC threads); 0: one
  /// per core.
  unsigned jobs = 0;
  /// Receives the wall time of kernel generation, host compile, NVRTC and
  /// the package write when not null.
  PhaseTimes *times = nullptr;
  /// Receives the cache's hits and misses when not null.
  CacheReport *cacheReport = nullptr;
  /// Bytes of initial values (all variables together) from which the
  /// writer puts them in the weights section after the FlatBuffer
  /// (package.fbs WeightsSection, WeightRef: 64-byte aligned, 64-bit
  /// offsets, no 2 GiB limit) instead of the `weights` safetensors blob
  /// inside it. 0: always the section.
  uint64_t weightsSectionThreshold = kDefaultWeightsSectionThreshold;
};

/// Writes the package (runtime/schema/package.fbs, format kFormatVersion) for a
/// planned dlexec module (every dlexec.alloc has an `offset`, every dlexec.func
/// an `arena_bytes`) to |path|, atomically (temp file + rename). A module
/// with a `dlexec.pipeline` record (dialects/Exec/ExecAttributes.h) makes a
/// pipeline package: the writer adds the Pipeline table and the step function
/// `train_step` whose inputs are the global batch (dim 0 times the
/// micro-batches) and whose output is the loss. Errors are emitted on the
/// offending op (or the module) and return failure.
mlir::LogicalResult writePackage(mlir::ModuleOp planned, llvm::StringRef path,
                                 const PackageOptions &options);

/// A human-readable memory plan of |planned| for `dlc --emit=plan`: per
/// function its steps (kernel / library call, operand buffers with shapes),
/// then every buffer with its kind, dtype, shape, bytes and arena offset.
std::string describePlan(mlir::ModuleOp planned);

} // namespace dlc::codegen

#endif
