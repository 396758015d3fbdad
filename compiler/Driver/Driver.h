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

/// Everything `dlc` can be asked to do. The defaults here are dlc's; those
/// of the training options are TrainingOptions' constants. Not copyable (the
/// pipeline options are command-line option objects).
struct CompileOptions {
  /// The model: `.mlir` (dlgraph text) or anything else (ONNX).
  std::string inputPath;
  /// Where the output goes; empty: `<model>.dlcp` for packages, stdout for
  /// the other kinds; "-" is stdout.
  std::string outputPath;
  EmitKind emit = EmitKind::Package;
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
  /// `--memory-budget`: the planned peak (persistent + inputs + arena +
  /// workspace) the training step must fit, as parseByteSize reads it
  /// ("512MiB"); empty: no budget. Implies remat auto.
  std::string memoryBudget;
  /// `--bucket-size` as written (empty: the default, 25 MiB).
  std::string bucketSize;
  /// `--pipeline-stages`: pipeline stages to split @main into (analysis
  /// only, docs/pipeline.md); 0: no split. Needs train; > 1 needs stats or
  /// EmitKind::DLGraph.
  int64_t pipelineStages = 0;
  /// `--device-model`: h100 or FILE.json (compiler/Partition/Cost).
  std::string deviceModel = "h100";
  /// `--pipeline-split`: comma-separated node names ending each stage but
  /// the last; empty: the cost model's split.
  std::string pipelineSplit;
  /// `--microbatches`: micro-batches M per step of a pipeline (>= 1); the
  /// global batch is M x the compiled (micro-)batch size.
  int64_t microbatches = 4;
  /// `--schedule`: the pipeline schedule, gpipe or 1f1b
  /// (dialects/Exec/PipelineSchedule.h).
  std::string schedule = "1f1b";
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
  /// Training and its hyper-parameters.
  PipelineOptions pipeline;
};

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
