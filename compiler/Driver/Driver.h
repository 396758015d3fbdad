//===- Driver.h - the compiler library behind `dlc` -------------*- C++ -*-===//
//
// Imports a model (ONNX or dlgraph MLIR), runs the pipeline
// (compiler/Pipeline) and emits what was asked for: a stage's IR, kernel
// sources, the plan or a package. `dlc` only parses its flags into
// CompileOptions and calls compileModel or checkModel.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_DRIVER_DRIVER_H
#define DLC_COMPILER_DRIVER_DRIVER_H

#include "codegen/Codegen.h"
#include "compiler/Pipeline/Pipeline.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

/// What compileModel produces (`dlc --emit`).
enum class EmitKind {
  DLGraph, ///< the dlgraph module after import and the graph stage
  DLExec,  ///< the planned dlexec module
  Cuda,    ///< CUDA C++ of every kernel
  Host,    ///< host C++ of every kernel
  Plan,    ///< the execution plan: steps, buffers, offsets
  Package, ///< a .dlcp package for dlrt
};

/// Everything `dlc` can be asked to do: the driver's own options here, the
/// pipeline's in `pipeline`. The member initializers are the defaults;
/// bindOptions declares each flag once (OptionsBinder).
struct CompileOptions {
  /// The model: `.mlir` (dlgraph text) or anything else (ONNX).
  std::string inputPath;
  /// Where the output goes; empty: `<model>.dlcp` for packages, stdout for
  /// the other kinds; "-" is stdout.
  std::string outputPath;
  EmitKind emit = EmitKind::Package;
  /// `--compile-to`: the pipeline phase (phaseName) after which the module
  /// is written, as IREE's --compile-to; empty: all of them.
  std::string compileTo;
  /// Fixes dim 0 of every model input; 0 keeps the model's. Must be >= 0.
  int64_t batchSize = 0;
  /// `--input-shape` values as written, `NAME=D0xD1x...` (parseInputShape in
  /// compiler/Import/ONNXImporter.h): the static shapes of named inputs.
  std::vector<std::string> inputShapes;
  /// `--input-value NAME=FILE` values (dlc::InputValueBinding): graph
  /// inputs given their value at compile time.
  std::vector<std::string> inputValues;
  /// CUDA architectures ("sm_80") to compile kernels for and embed.
  std::vector<std::string> cudaArchs;
  /// C++ compiler for the host kernels.
  std::string hostCompiler = "c++";
  /// `--cache-dir`: the compile cache's folder (codegen/CompileCache.h);
  /// empty: CompileCache::defaultDir().
  std::string cacheDir;
  /// `--no-cache`: compile every kernel; read and write no cache.
  bool noCache = false;
  /// `--jobs`: parallel compile jobs (host compiler processes, NVRTC
  /// threads); 0: one per core.
  unsigned jobs = 0;
  /// `--time-phases`: print the wall time of each compile phase to stderr.
  bool timePhases = false;
  /// $DLC_WEIGHTS_SECTION_THRESHOLD: bytes of initial values from which the
  /// package puts them in its weights section, after the FlatBuffer
  /// (codegen::PackageOptions::weightsSectionThreshold).
  uint64_t weightsSectionThreshold = codegen::kDefaultWeightsSectionThreshold;
  /// Print kernels, library calls and planned memory (bytes) to stdout.
  bool stats = false;
  /// No progress lines on stderr.
  bool quiet = false;
  /// `--simulate`: run the schedule on the cost model (the Simulator) and
  /// print its table instead of writing a package.
  bool simulate = false;
  /// `--replicas`: data-parallel replicas D of every stage the simulator
  /// assumes (S x D devices).
  int64_t replicas = 1;
  /// `--simulate-trace`: where --simulate writes its timeline (Chrome trace
  /// JSON); empty: nowhere.
  std::string simulateTrace;
  /// `--stage-times`: a JSON file of measured per-stage times that replace
  /// the cost model's in --simulate; empty: the cost model.
  std::string stageTimes;
  /// `--check`: list the ONNX model's ops with their support status and
  /// compile nothing (checkModel).
  bool check = false;
  /// The pipeline's options: training, precision, partitioning, remat.
  PipelineOptions pipeline;

  /// Binds every flag of `dlc` (the driver's and the pipeline's) with
  /// |binder|; `--stats` and the input path are bound by the tool (LLVM
  /// has a `-stats` of its own that the tool renames first).
  void bindOptions(OptionsBinder &binder);
};

/// The overview `dlc --help` prints: what dlc compiles (the ONNX opsets the
/// importer maps) and three example command lines.
std::string toolOverview();

/// The version line `dlc --version` prints, with the package format version
/// a package written now carries (codegen::kPackageFormatVersion).
std::string versionString();

/// Runs `dlc` on parsed |options|: --check (checkModel), or a compile through
/// the package cache (a package compiled before from the same input, |argv|
/// and toolchain is copied from the cache; docs/dlc.md "Compile time"),
/// trimming the cache after. Returns the exit status: 0, 1 (compile or check
/// failed) or 2 (bad environment). |argv| is the command line, for the
/// cache key.
int runCompiler(const CompileOptions &options, int argc, char **argv);

/// Checks the options that need no model (optimizer and loss names, batch
/// size, --expose-gradients without --train, CUDA architecture names).
/// Returns the first problem as one line naming the flag, or "" when there
/// is none.
std::string checkCompileOptions(const CompileOptions &options);

/// Compiles `options.inputPath` as `dlc` does: checks the options, imports or
/// parses the model, runs the pipeline (stopping after the graph stage for
/// EmitKind::DLGraph), prints the stats, writes the output. Progress lines
/// (unless quiet) and every diagnostic go to stderr, one line each, as
/// `dlc: error: <where>: <message>`; reports (--stats, stdout outputs) go to
/// stdout. Nothing is written when it fails.
mlir::LogicalResult compileModel(const CompileOptions &options);

/// The peak resident memory of this process so far (getrusage's ru_maxrss:
/// anonymous memory and the pages of mapped files it has touched, such as
/// external data weights), in bytes; 0 where the system does not report it.
/// `dlc --time-phases` prints it, in MiB, after the phase times.
uint64_t peakResidentBytes();

/// `dlc --check`: prints to |os| every op type of the ONNX model
/// `options.inputPath` with its node count and support status, then the
/// result of importing it. Returns whether every op type is supported and
/// the model imports; fails (with a diagnostic on stderr) when the options
/// are wrong or the model cannot be read.
mlir::FailureOr<bool> checkModel(const CompileOptions &options,
                                 llvm::raw_ostream &os);

} // namespace dlc

#endif // DLC_COMPILER_DRIVER_DRIVER_H
