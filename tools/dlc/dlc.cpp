//===- dlc.cpp - the dlc compiler driver ----------------------------------===//
// Parses dlc's flags into dlc::CompileOptions and runs the compiler library
// (compiler/Driver): import, the pipeline, codegen, the package. Every
// default comes from CompileOptions or TrainingOptions.
#include "codegen/Codegen.h"
#include "codegen/CompileCache.h"
#include "compiler/Driver/Driver.h"
#include "compiler/Import/ONNXImporter.h"
#include "compiler/InitAll/InitAll.h"
#include "compiler/Pipeline/MemoryBudget.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using dlc::EmitKind;
using dlc::TrainingOptions;

/// |v| as the help text writes numbers: "0.01", "1e-8".
static std::string num(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  for (const char *exp : {"e-0", "e+0"})
    if (size_t at = s.find(exp); at != std::string::npos)
      s.erase(at + 2, 1);
  return s;
}

/// Keeps |text| alive for cl::desc (help texts that show a default).
static llvm::StringRef keep(std::string text) {
  static std::vector<std::unique_ptr<std::string>> texts;
  texts.push_back(std::make_unique<std::string>(std::move(text)));
  return *texts.back();
}

static const dlc::CompileOptions defaults;
static cl::OptionCategory dlcCategory("dlc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::cat(dlcCategory));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output file (default: <model>.dlcp for packages, "
                        "stdout for --emit other than package)"),
               cl::value_desc("path"), cl::cat(dlcCategory));
static cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce (default: package)"),
    cl::values(
        clEnumValN(EmitKind::DLGraph, "dlgraph",
                   "the dlgraph module after import (and --train)"),
        clEnumValN(EmitKind::DLExec, "dlexec", "the planned dlexec module"),
        clEnumValN(EmitKind::Cuda, "cuda", "CUDA C++ of every kernel"),
        clEnumValN(EmitKind::Host, "host", "host C++ of every kernel"),
        clEnumValN(EmitKind::Plan, "plan",
                   "the execution plan: steps, buffers, offsets"),
        clEnumValN(EmitKind::Package, "package", "a .dlcp package for dlrt")),
    cl::init(defaults.emit), cl::cat(dlcCategory));

static cl::opt<bool> train("train",
                           cl::desc("Compile a training step (forward, loss, "
                                    "backward, optimizer update)"),
                           cl::init(defaults.pipeline.train),
                           cl::cat(dlcCategory));
static cl::opt<std::string>
    loss("loss",
         cl::desc("Loss added by --train: softmax-cross-entropy (over "
                  "the last axis of the first output, against int64 "
                  "class ids in a new input 'labels')"),
         cl::init(TrainingOptions::kDefaultLoss), cl::cat(dlcCategory));
static cl::opt<std::string>
    lossOutput("loss-output",
               cl::desc("Use this scalar model output as the loss instead"),
               cl::value_desc("name"), cl::cat(dlcCategory));
static cl::opt<std::string> optimizer(
    "optimizer",
    cl::desc(keep("Optimizer for --train: sgd, adam or adamw (torch.optim "
                  "semantics; default " +
                  std::string(TrainingOptions::kDefaultOptimizer) + ")")),
    cl::init(TrainingOptions::kDefaultOptimizer), cl::cat(dlcCategory));
static cl::opt<double>
    lr("lr",
       cl::desc(keep("Learning rate (default " +
                     num(TrainingOptions::kDefaultLearningRate) + ")")),
       cl::init(TrainingOptions::kDefaultLearningRate), cl::cat(dlcCategory));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("Compute precision of the training step and forward: fp32, "
             "bf16 or fp16 (mixed precision: f32 master weights, GEMM and "
             "convolution in the low type, reductions and the loss in f32; "
             "docs/mixed-precision.md; default fp32)"),
    cl::init(dlc::MixedPrecisionDefaults::kPrecision), cl::cat(dlcCategory));
static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("Loss scaling for --train: dynamic (torch.cuda.amp.GradScaler's "
             "rules), none, or a number (a static scale); default dynamic "
             "with --precision fp16, none otherwise"),
    cl::value_desc("dynamic|none|N"), cl::cat(dlcCategory));
static cl::opt<double> lossScaleInit(
    "loss-scale-init",
    cl::desc(keep("Initial dynamic loss scale (default " +
                  num(dlc::MixedPrecisionDefaults::kInitScale) + ")")),
    cl::init(dlc::MixedPrecisionDefaults::kInitScale), cl::cat(dlcCategory));
static cl::opt<double> lossScaleGrowthFactor(
    "loss-scale-growth-factor",
    cl::desc(keep("Dynamic loss scale growth factor (default " +
                  num(dlc::MixedPrecisionDefaults::kGrowthFactor) + ")")),
    cl::init(dlc::MixedPrecisionDefaults::kGrowthFactor),
    cl::cat(dlcCategory));
static cl::opt<double> lossScaleBackoffFactor(
    "loss-scale-backoff-factor",
    cl::desc(keep("Dynamic loss scale backoff factor on inf/NaN gradients "
                  "(default " +
                  num(dlc::MixedPrecisionDefaults::kBackoffFactor) + ")")),
    cl::init(dlc::MixedPrecisionDefaults::kBackoffFactor),
    cl::cat(dlcCategory));
static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("With --train: a step for data-parallel training on any number "
             "of ranks (dlrt launch, torchrun, mpirun): the gradients are "
             "averaged over the ranks with all-reduces in buckets, issued "
             "while the backward runs, as PyTorch DDP; docs/distributed.md"),
    cl::init(false), cl::cat(dlcCategory));
static cl::opt<std::string> bucketSize(
    "bucket-size",
    cl::desc("With --data-parallel: the most bytes of one gradient bucket, "
             "in bytes or with KiB, MiB or GiB (default 25MiB, DDP's)"),
    cl::value_desc("SIZE"), cl::cat(dlcCategory));
static cl::opt<int64_t> pipelineStages(
    "pipeline-stages",
    cl::desc("With --train: split the training step into S pipeline stages "
             "(by a roofline cost model, or --pipeline-split); the package "
             "runs on S x D ranks under a launcher, each stage's forward and "
             "backward per micro-batch in --schedule order (docs/pipeline.md)"),
    cl::value_desc("S"), cl::init(0), cl::cat(dlcCategory));
static cl::opt<std::string> deviceModel(
    "device-model",
    cl::desc("With --pipeline-stages: the device the cost model assumes: h100 "
             "(H100 SXM5 datasheet), host (this machine, one core per stage, "
             "measured) or FILE.json (default h100)"),
    cl::value_desc("h100|host|FILE.json"), cl::init("h100"), cl::cat(dlcCategory));
static cl::opt<std::string> pipelineSplit(
    "pipeline-split",
    cl::desc("With --pipeline-stages: the ONNX node names ending each stage "
             "but the last, comma-separated, instead of the cost model's "
             "split"),
    cl::value_desc("NODE[,NODE...]"), cl::cat(dlcCategory));
static cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("With --pipeline-stages: micro-batches per step; the global "
             "batch is M x --batch-size"),
    cl::value_desc("M"), cl::init(defaults.microbatches),
    cl::cat(dlcCategory));
static cl::opt<std::string> schedule(
    "schedule",
    cl::desc("With --pipeline-stages: the pipeline schedule, gpipe (all "
             "forwards, then all backwards) or 1f1b (PipeDream-Flush; "
             "default)"),
    cl::value_desc("gpipe|1f1b"), cl::init(defaults.schedule),
    cl::cat(dlcCategory));
static cl::opt<bool> simulate(
    "simulate",
    cl::desc("With --pipeline-stages: run the schedule on the cost model "
             "and print per-stage busy time, bubble, memory and step time "
             "instead of writing a package"),
    cl::init(false), cl::cat(dlcCategory));
static cl::opt<int64_t> replicas(
    "replicas",
    cl::desc("With --simulate: data-parallel replicas of every stage "
             "(S x D devices; default 1)"),
    cl::value_desc("D"), cl::init(defaults.replicas), cl::cat(dlcCategory));
static cl::opt<std::string> simulateTrace(
    "simulate-trace",
    cl::desc("With --simulate: write the simulated timeline as a Chrome "
             "trace (Perfetto, chrome://tracing)"),
    cl::value_desc("FILE.json"), cl::cat(dlcCategory));
static cl::opt<std::string> stageTimes(
    "stage-times",
    cl::desc("With --simulate: measured per-stage times (JSON) to use "
             "instead of the cost model's"),
    cl::value_desc("FILE.json"), cl::cat(dlcCategory));
static cl::opt<std::string> remat(
    "remat",
    cl::desc("Activation checkpointing for --train: none, sqrt (Chen et al. "
             "2016's sqrt(n) segments) or auto (recompute the cheapest "
             "activations to a memory target; docs/remat.md; default none)"),
    cl::value_desc("none|sqrt|auto"), cl::init("none"), cl::cat(dlcCategory));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("With --train: the planned peak memory (persistent + inputs + "
             "arena + workspace) the step must fit, in bytes or with KiB, "
             "MiB or GiB; recomputes the activations that add the fewest "
             "FLOPs (implies --remat auto); an unreachable budget is an "
             "error naming the smallest reachable one"),
    cl::value_desc("SIZE"), cl::cat(dlcCategory));
static cl::opt<int64_t> lossScaleGrowthInterval(
    "loss-scale-growth-interval",
    cl::desc(keep("Finite steps between loss scale growths (default " +
                  std::to_string(
                      dlc::MixedPrecisionDefaults::kGrowthInterval) +
                  ")")),
    cl::init(dlc::MixedPrecisionDefaults::kGrowthInterval),
    cl::cat(dlcCategory));
static cl::opt<double>
    momentum("momentum",
             cl::desc(keep("SGD momentum (default " +
                           num(TrainingOptions::kDefaultMomentum) + ")")),
             cl::init(TrainingOptions::kDefaultMomentum), cl::cat(dlcCategory));
static cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc(keep(
        "Weight decay (default " +
        num(dlc::resolveWeightDecay("sgd",
                                    TrainingOptions::kDefaultWeightDecay)) +
        "; adamw: " +
        num(dlc::resolveWeightDecay("adamw",
                                    TrainingOptions::kDefaultWeightDecay)) +
        ")")),
    cl::init(TrainingOptions::kDefaultWeightDecay), cl::cat(dlcCategory));
static cl::opt<double>
    beta1("beta1",
          cl::desc(keep("Adam beta1 (default " +
                        num(TrainingOptions::kDefaultBeta1) + ")")),
          cl::init(TrainingOptions::kDefaultBeta1), cl::cat(dlcCategory));
static cl::opt<double>
    beta2("beta2",
          cl::desc(keep("Adam beta2 (default " +
                        num(TrainingOptions::kDefaultBeta2) + ")")),
          cl::init(TrainingOptions::kDefaultBeta2), cl::cat(dlcCategory));
static cl::opt<double>
    adamEpsilon("adam-epsilon",
                cl::desc(keep("Adam epsilon (default " +
                              num(TrainingOptions::kDefaultAdamEpsilon) + ")")),
                cl::init(TrainingOptions::kDefaultAdamEpsilon),
                cl::cat(dlcCategory));
static cl::opt<bool> exposeGradients(
    "expose-gradients",
    cl::desc("With --train: train_step also returns each trainable "
             "parameter's gradient as output '<parameter>.grad' (for dlrt "
             "train --save-gradients; costs their memory and a copy per "
             "step)"),
    cl::init(defaults.pipeline.exposeGradients), cl::cat(dlcCategory));
static cl::opt<std::string> lrSchedule(
    "lr-schedule",
    cl::desc("With --train: the learning rate of update t = 1, 2, ... "
             "(counted in the step, so --resume continues it): constant, "
             "linear, cosine or step, after a linear warm-up of "
             "--warmup-steps; train_step returns it as output 'lr' "
             "(docs/dlc.md, Training recipes)"),
    cl::value_desc("constant|linear|cosine|step"), cl::cat(dlcCategory));
static cl::opt<int64_t> warmupSteps(
    "warmup-steps",
    cl::desc("With --lr-schedule: lr = lr * t / W for the first W updates "
             "(default 0)"),
    cl::value_desc("W"), cl::init(0), cl::cat(dlcCategory));
static cl::opt<int64_t> totalSteps(
    "total-steps",
    cl::desc("With --lr-schedule linear or cosine: the update T at which the "
             "lr reaches --min-lr (and stays)"),
    cl::value_desc("T"), cl::init(0), cl::cat(dlcCategory));
static cl::opt<double> minLr(
    "min-lr",
    cl::desc("With --lr-schedule linear or cosine: the final lr (default 0)"),
    cl::value_desc("M"), cl::init(0.0), cl::cat(dlcCategory));
static cl::opt<int64_t> stepSize(
    "step-size",
    cl::desc("With --lr-schedule step: lr = lr * gamma^floor(t / K)"),
    cl::value_desc("K"), cl::init(0), cl::cat(dlcCategory));
static cl::opt<double> gammaOpt(
    "gamma",
    cl::desc(keep("With --lr-schedule step: the decay factor (default " +
                  num(TrainingOptions::kDefaultGamma) + ")")),
    cl::init(TrainingOptions::kDefaultGamma), cl::cat(dlcCategory));
static cl::opt<double> clipGradNorm(
    "clip-grad-norm",
    cl::desc("With --train: scale the gradients by MAX / (norm + 1e-6) when "
             "their global L2 norm exceeds MAX (torch.nn.utils."
             "clip_grad_norm_); train_step returns the norm as output "
             "'grad_norm'"),
    cl::value_desc("MAX"), cl::init(0.0), cl::cat(dlcCategory));
static cl::opt<int64_t> accumulate(
    "accumulate",
    cl::desc("With --train: each call of train_step adds its gradients to "
             "persistent accumulators and the optimizer applies their mean "
             "on every N-th call (one step on the N-times batch; the step "
             "counter and --lr-schedule count updates; default 1)"),
    cl::value_desc("N"), cl::init(1), cl::cat(dlcCategory));
static cl::opt<std::string> noWeightDecay(
    "no-weight-decay",
    cl::desc("With --train: initializers whose name matches REGEX (POSIX "
             "extended, anywhere in the name) get weight decay 0"),
    cl::value_desc("REGEX"), cl::cat(dlcCategory));
static cl::opt<std::string> freeze(
    "freeze",
    cl::desc("With --train: initializers whose name matches REGEX are not "
             "trained (no gradient, no optimizer state)"),
    cl::value_desc("REGEX"), cl::cat(dlcCategory));
static cl::opt<std::string> noFreeze(
    "no-freeze",
    cl::desc("With --train: initializers whose name matches REGEX are trained "
             "even when dlc's rule takes them for buffers (non-finite values, "
             "attention masks, sin/cos position frequencies)"),
    cl::value_desc("REGEX"), cl::cat(dlcCategory));
static cl::opt<std::string> trainable(
    "trainable",
    cl::desc("With --train: train exactly the initializers FILE names, one "
             "per line (PyTorch's named_parameters()); the others are "
             "constants"),
    cl::value_desc("FILE"), cl::cat(dlcCategory));
static cl::opt<double> labelSmoothing(
    "label-smoothing",
    cl::desc("With --train: label smoothing E in [0, 1] of the "
             "softmax-cross-entropy loss (PyTorch's label_smoothing; "
             "default 0)"),
    cl::value_desc("E"), cl::init(0.0), cl::cat(dlcCategory));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Batch size; fixes dim 0 of every model input"),
              cl::init(defaults.batchSize), cl::cat(dlcCategory));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fixes the shape of graph input NAME (repeatable): each D a size, "
             "or ? to keep the model's dimension; sets symbolic dimensions "
             "(sequence length, image size) that --batch-size does not"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(dlcCategory));
static cl::list<std::string> inputValues(
    "input-value",
    cl::desc("Gives graph input NAME its value at compile time (repeatable; "
             "FILE an ONNX TensorProto .pb or a NumPy .npy): it becomes a "
             "constant and leaves the step's inputs. For inputs that fix "
             "shapes or axes (axes, pads, sizes, shape, k)"),
    cl::value_desc("NAME=FILE"), cl::cat(dlcCategory));
static cl::list<std::string>
    targets("target",
            cl::desc("CUDA architectures to compile kernels for with NVRTC "
                     "and embed (e.g. sm_80,sm_90); without it the runtime "
                     "compiles them on first use"),
            cl::CommaSeparated, cl::cat(dlcCategory));
static cl::opt<std::string>
    hostCompiler("host-compiler",
                 cl::desc(keep("C++ compiler for the host kernels (default " +
                               defaults.hostCompiler + ")")),
                 cl::init(defaults.hostCompiler), cl::cat(dlcCategory));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Folder of the compile cache (compiled host objects and cubins, "
             "keyed by their source, compiler and flags, and whole "
             "packages); default $DLC_CACHE_DIR, else $XDG_CACHE_HOME/dlc, "
             "else ~/.cache/dlc. After each compile the least recently used "
             "entries are removed while it holds more than "
             "$DLC_CACHE_MAX_SIZE (default 5G; 0: no limit)"),
    cl::value_desc("DIR"), cl::cat(dlcCategory));
static cl::opt<bool> noCache(
    "no-cache",
    cl::desc("Compile every kernel; read and write no compile cache (also "
             "$DLC_NO_CACHE=1 when no --cache-dir is given)"),
    cl::cat(dlcCategory));
static cl::opt<unsigned>
    jobs("jobs",
         cl::desc("Parallel compile jobs: host compiler processes and NVRTC "
                  "threads (default 0: one per core)"),
         cl::init(0), cl::cat(dlcCategory));
static cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print the wall time of each compile phase (import, pass "
             "pipelines, kernel generation, host compile, NVRTC, package "
             "write) and the compile cache's hits to stderr; "
             "--mlir-timing times each pass"),
    cl::cat(dlcCategory));
static cl::opt<bool> quiet("quiet", cl::desc("Print no progress"),
                           cl::init(defaults.quiet), cl::cat(dlcCategory));
static cl::opt<bool>
    checkOnly("check",
              cl::desc("List every op of the ONNX model with its support "
                       "status, then try importing it; compiles nothing. "
                       "Exit status 0 when everything is supported"),
              cl::cat(dlcCategory));

/// The key of this compile in the package cache (docs/dlc.md, "Compile
/// time"): a package compiled before from the same input bytes and path,
/// arguments, dlc executable and host/NVRTC toolchain is copied from the
/// cache instead of compiled again, as ccache's direct mode reuses objects.
/// "" where the cache does not apply: no cache, output other than a package
/// file, --stats or --simulate (they print what a compile finds), or
/// options that read further files.
static std::string packageCacheKey(int argc, char **argv,
                                   const dlc::codegen::CompileCache &cache,
                                   bool stats) {
  if (!cache.enabled() || emitKind != EmitKind::Package || stats ||
      simulate || deviceModel != defaults.deviceModel || !stageTimes.empty() ||
      !simulateTrace.empty() || outputPath.empty() || outputPath == "-")
    return "";
  auto input = llvm::MemoryBuffer::getFile(inputPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  std::string self = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&packageCacheKey));
  llvm::sys::fs::file_status st;
  if (!input || self.empty() || llvm::sys::fs::status(self, st))
    return "";
  std::vector<std::string> parts = {
      "package",
      self + " " + std::to_string(st.getSize()) + " " +
          std::to_string(
              st.getLastModificationTime().time_since_epoch().count()) +
          " MLIR " LLVM_VERSION_STRING,
      dlc::codegen::hostCompilerIdentity(hostCompiler),
      targets.empty() ? std::string() : dlc::codegen::nvrtcVersionString(),
      "jobs " + std::to_string(dlc::codegen::compileJobs(jobs)),
      // Where the weights go (main() rejects a malformed value).
      "weights section " +
          std::string(std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD")
                          ? std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD")
                          : "")};
  // Every argument but those that cannot change the package's bytes.
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a == "-o" || a == "--o" || a == "-cache-dir" || a == "--cache-dir") {
      ++i;
      continue;
    }
    if (a.starts_with("-o=") || a.starts_with("--o=") ||
        a.starts_with("-cache-dir=") || a.starts_with("--cache-dir=") ||
        a == "-time-phases" || a == "--time-phases" || a == "-quiet" ||
        a == "--quiet")
      continue;
    parts.push_back(a.str());
  }
  // Weights in external data files are part of the model.
  if (std::string data = dlc::externalDataKey(inputPath, (*input)->getBuffer());
      !data.empty())
    parts.push_back(data);
  std::vector<llvm::StringRef> refs(parts.begin(), parts.end());
  refs.push_back((*input)->getBuffer());
  return dlc::codegen::contentKey(refs);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  dlc::registerAllPasses();
  // `--stats` is created here: LLVM registers its own `-stats` (pass
  // statistics), which is renamed first to make room for dlc's.
  auto &registered = cl::getRegisteredOptions();
  if (auto it = registered.find("stats"); it != registered.end())
    it->second->setArgStr("llvm-stats");
  cl::opt<bool> stats("stats",
                      cl::desc("Print kernels, library calls, the "
                               "predicted peak memory in bytes (persistent, "
                               "inputs, arena, workspace; before and after "
                               "rematerialization) and, with --train, the "
                               "trained, frozen and no-weight-decay tensors "
                               "with their element counts"),
                      cl::init(defaults.stats), cl::cat(dlcCategory));
  cl::HideUnrelatedOptions(dlcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "dlc 0.1 (package format 1, MLIR " << LLVM_VERSION_STRING << ")\n";
  });
  std::string cliErrors;
  llvm::raw_string_ostream cliErrorStream(cliErrors);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "dlc: compiles an ONNX model (opsets 13-17) or a dlgraph .mlir file into "
      "a package for dlrt.\n\n"
      "  dlc model.onnx --batch-size 64 -o model.dlcp            (inference)\n"
      "  dlc model.onnx --train --optimizer adam --lr 1e-3 --batch-size 64 "
      "-o model.dlcp\n"
      "  dlc model.onnx --check        (list the ops and their support)\n",
      &cliErrorStream);
  if (!parsed) {
    // One line: LLVM's parser adds suggestions on further lines.
    llvm::StringRef first = llvm::StringRef(cliErrors).split('\n').first;
    first.consume_front("dlc: ");
    llvm::errs() << "dlc: error: " << first.trim() << "\n";
    return 2;
  }

  dlc::CompileOptions options;
  options.inputPath = inputPath;
  options.outputPath = outputPath;
  options.emit = emitKind;
  options.batchSize = batchSize;
  options.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  options.inputValues.assign(inputValues.begin(), inputValues.end());
  options.cudaArchs.assign(targets.begin(), targets.end());
  options.hostCompiler = hostCompiler;
  options.stats = stats;
  options.quiet = quiet;
  options.cacheDir = cacheDir;
  options.noCache = noCache;
  options.jobs = jobs;
  options.timePhases = timePhases;
  // docs/package-format.md, "The weights section".
  if (const char *t = std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD"); t && *t) {
    std::optional<int64_t> bytes = dlc::parseByteSize(t);
    if (!bytes) {
      llvm::errs() << "dlc: error: DLC_WEIGHTS_SECTION_THRESHOLD '" << t
                   << "' is not a size in bytes (such as 0, 65536, 1GiB)\n";
      return 2;
    }
    options.weightsSectionThreshold = static_cast<uint64_t>(*bytes);
  }
  dlc::PipelineOptions &p = options.pipeline;
  p.train = train;
  p.loss = loss;
  p.lossOutput = lossOutput;
  p.optimizer = optimizer;
  p.lr = lr;
  p.momentum = momentum;
  p.weightDecay = weightDecay;
  p.beta1 = beta1;
  p.beta2 = beta2;
  p.adamEpsilon = adamEpsilon;
  p.exposeGradients = exposeGradients;
  p.lrSchedule = lrSchedule;
  p.warmupSteps = warmupSteps;
  p.totalSteps = totalSteps;
  p.minLr = minLr;
  p.stepSize = stepSize;
  p.gamma = gammaOpt;
  p.clipGradNorm = clipGradNorm;
  p.accumulate = accumulate;
  p.noWeightDecay = noWeightDecay;
  p.freeze = freeze;
  p.noFreeze = noFreeze;
  p.trainable = trainable;
  p.labelSmoothing = labelSmoothing;
  p.precision = precision;
  p.lossScale = lossScale;
  p.lossScaleInit = lossScaleInit;
  p.lossScaleGrowthFactor = lossScaleGrowthFactor;
  p.lossScaleBackoffFactor = lossScaleBackoffFactor;
  p.lossScaleGrowthInterval = lossScaleGrowthInterval;
  p.remat = remat;
  options.memoryBudget = memoryBudget;
  p.dataParallel = dataParallel;
  options.pipelineStages = pipelineStages;
  options.deviceModel = deviceModel;
  options.pipelineSplit = pipelineSplit;
  options.microbatches = microbatches;
  options.schedule = schedule;
  options.simulate = simulate;
  options.replicas = replicas;
  options.simulateTrace = simulateTrace;
  options.stageTimes = stageTimes;
  // A package of S > 1 stages runs them (docs/pipeline.md).
  p.pipelineMicroBatches =
      pipelineStages > 1 && !simulate ? int64_t(microbatches) : 0;
  p.pipelineSchedule = schedule;
  options.bucketSize = bucketSize;
  if (std::optional<int64_t> size = dlc::parseByteSize(bucketSize);
      size && *size > 0)
    p.bucketSize = *size; // checkCompileOptions rejects anything else

  if (checkOnly) {
    mlir::FailureOr<bool> supported = dlc::checkModel(options, llvm::outs());
    return succeeded(supported) && *supported ? 0 : 1;
  }

  // The package cache: the same compile as before is a copy.
  auto start = std::chrono::steady_clock::now();
  dlc::codegen::CompileCache cache(
      noCache ? std::string()
      : !cacheDir.empty() ? std::string(cacheDir)
                          : dlc::codegen::CompileCache::defaultDir());
  std::string packageKey = packageCacheKey(argc, argv, cache, stats);
  if (!packageKey.empty() &&
      cache.lookupToFile("package", packageKey, outputPath)) {
    // As writePackage leaves a package: readable by all.
    llvm::sys::fs::setPermissions(outputPath, llvm::sys::fs::all_read |
                                                  llvm::sys::fs::owner_write);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (timePhases)
      llvm::errs() << "dlc: phase times (wall seconds):\n"
                   << "  " << llvm::left_justify("package cache", 22)
                   << llvm::format("%8.3f", seconds) << "\n"
                   << "  " << llvm::left_justify("total", 22)
                   << llvm::format("%8.3f", seconds) << "\n"
                   << "dlc: cache: 1 hits, 0 misses (0 corrupt, recompiled) "
                      "in "
                   << cache.dir() << " (the whole package)\n"
                   << "dlc: peak resident memory: "
                   << llvm::format("%.1f", dlc::peakResidentBytes() / 1048576.0)
                   << " MiB\n";
    if (!quiet)
      llvm::errs() << "dlc: " << llvm::format("[%6.2fs] ", seconds)
                   << "wrote " << outputPath
                   << " (the same compile as before: copied from the package "
                      "cache)\n";
    return 0;
  }
  if (failed(dlc::compileModel(options)))
    return 1;
  if (!packageKey.empty())
    cache.storeFile("package", packageKey, outputPath);
  // The compile stored its objects (and package) in the cache folder: keep
  // the folder under its size limit.
  std::string limitError;
  uint64_t limit =
      dlc::codegen::CompileCache::maxBytesFromEnvironment(&limitError);
  if (!limitError.empty())
    llvm::errs() << "dlc: warning: " << limitError << "\n";
  cache.trim(limit);
  return 0;
}
