//===- Driver.cpp - the compiler library behind `dlc` ---------------------===//
#include "compiler/Driver/Driver.h"

#include <cmath>

#include "codegen/Codegen.h"
#include "codegen/CompileCache.h"
#include "compiler/Driver/Diagnostics.h"
#include "compiler/Driver/Simulate.h"
#include "compiler/Import/ONNXImporter.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/Analysis/PlanStats.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Partition/Passes.h"
#include "compiler/Pipeline/MemoryBudget.h"
#include "compiler/Training/TrainingStepUtils.h"
#include "dialects/Exec/ExecAttributes.h"
#include "dialects/Graph/GraphAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "compiler/Partition/DeviceModel.h"
#include "runtime/schema/PipelineSchedule.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <sys/resource.h>

using namespace mlir;

uint64_t dlc::peakResidentBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0)
    return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024; // Linux: KiB
}

namespace {

/// The `--stats` lines of dlgraph-partition-pipeline's record on @main: one
/// per stage, then `balance: slowest/mean = X`.
std::string describePipelineStages(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  auto stages =
      main ? main->getAttrOfType<ArrayAttr>(dlc::graph::kPipelineStagesAttr)
           : ArrayAttr();
  if (!stages)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  double slowest = 0, total = 0;
  os << "pipeline stages: " << stages.size() << "\n";
  for (auto [i, a] : llvm::enumerate(stages)) {
    auto d = cast<DictionaryAttr>(a);
    double cost = cast<FloatAttr>(d.get("cost")).getValueAsDouble();
    slowest = std::max(slowest, cost);
    total += cost;
    os << "  stage " << i << ": "
       << cast<IntegerAttr>(d.get("ops")).getInt() << " ops, "
       << llvm::format("%.3f", cost * 1e3) << " ms, parameters "
       << cast<IntegerAttr>(d.get("param_bytes")).getInt()
       << " bytes, activations "
       << cast<IntegerAttr>(d.get("activation_bytes")).getInt() << " bytes, "
       << cast<StringAttr>(d.get("first")).getValue() << " .. "
       << cast<StringAttr>(d.get("last")).getValue() << "\n";
  }
  os << "balance: slowest/mean = "
     << llvm::format("%.3f", total > 0 ? slowest / (total / stages.size()) : 1.0)
     << "\n";
  return out;
}

/// The `--stats` lines of the training step's parameter groups: the trained,
/// frozen (--freeze) and no-weight-decay (--no-weight-decay) variables, each
/// with its element count, from the attributes the training passes set.
std::string describeParameterGroups(ModuleOp module) {
  struct Group {
    const char *title;
    std::vector<std::pair<std::string, int64_t>> tensors;
    int64_t elements = 0;
  };
  Group trained{"trained tensors", {}}, frozen{"frozen tensors", {}},
      noDecay{"no-weight-decay tensors", {}};
  for (auto var : module.getOps<dlc::graph::VariableOp>()) {
    auto type = cast<ShapedType>(var.getType());
    int64_t n = type.getNumElements();
    auto add = [&](Group &g) {
      g.tensors.push_back({var.getSymName().str(), n});
      g.elements += n;
    };
    if (var.getTrainable())
      add(trained);
    if (var->hasAttr(dlc::graph::kFrozenAttr))
      add(frozen);
    if (var->hasAttr(dlc::graph::kNoWeightDecayAttr))
      add(noDecay);
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  for (Group *g : {&trained, &frozen, &noDecay}) {
    os << g->title << ": " << g->tensors.size() << ", " << g->elements
       << " elements\n";
    for (auto &[name, n] : g->tensors) {
      os << "  " << name << ": " << n;
      if (g == &frozen)
        if (auto var = dyn_cast_or_null<dlc::graph::VariableOp>(
                SymbolTable::lookupSymbolIn(module, name)))
          if (auto why =
                  var->getAttrOfType<StringAttr>(dlc::graph::kFrozenAttr))
            os << " (" << why.getValue() << ")";
      os << "\n";
    }
  }
  return out;
}

/// The name diagnostics and progress lines start with.
constexpr llvm::StringLiteral kTool = "dlc";

/// Prints stage progress with elapsed time to stderr.
class Progress {
public:
  explicit Progress(bool quiet) : quiet(quiet) {}

  void stage(const llvm::Twine &what) {
    if (quiet)
      return;
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    llvm::errs() << kTool << llvm::format(": [%6.2fs] ", s) << what << "\n";
  }

private:
  bool quiet;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};

/// `--time-phases`: the wall time between consecutive phase() calls (and
/// the phases writePackage adds itself), printed to stderr with the total,
/// the compile cache's hits and the peak resident memory when it goes out
/// of scope.
class PhaseClock {
public:
  explicit PhaseClock(bool enabled) : enabled(enabled) {}
  ~PhaseClock() {
    if (!enabled)
      return;
    phase("");
    llvm::errs() << kTool << ": phase times (wall seconds):\n";
    for (auto &[name, seconds] : times_.phases)
      llvm::errs() << "  " << llvm::left_justify(name, 22)
                   << llvm::format("%8.3f", seconds) << "\n";
    llvm::errs() << "  " << llvm::left_justify("total", 22)
                 << llvm::format("%8.3f", elapsed(start)) << "\n";
    if (!cache.empty())
      llvm::errs() << kTool << ": " << cache << "\n";
    llvm::errs() << kTool << ": peak resident memory: "
                 << llvm::format("%.1f", dlc::peakResidentBytes() / 1048576.0)
                 << " MiB\n";
  }

  /// Ends the running phase and starts |name| ("" starts none).
  void phase(llvm::StringRef name) {
    if (!enabled)
      return;
    if (!running.empty())
      times_.add(running, elapsed(since));
    running = name.str();
    since = std::chrono::steady_clock::now();
  }

  /// Where writePackage records its own phases (null when not timing).
  dlc::codegen::PhaseTimes *times() { return enabled ? &times_ : nullptr; }
  /// The cache line printed last ("cache: N hits, ...").
  std::string cache;

private:
  static double elapsed(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
        .count();
  }
  bool enabled;
  dlc::codegen::PhaseTimes times_;
  std::string running;
  std::chrono::steady_clock::time_point start =
                                            std::chrono::steady_clock::now(),
                                        since = start;
};

LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return failure();
}

/// Writes |text| to the output path (stdout when empty or "-").
LogicalResult writeText(const dlc::CompileOptions &options,
                        llvm::StringRef text) {
  if (options.outputPath.empty() || options.outputPath == "-") {
    llvm::outs() << text;
    return success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(options.outputPath, ec);
  if (ec)
    return fail("cannot write '" + options.outputPath + "': " + ec.message());
  os << text;
  return success();
}

LogicalResult writeModule(const dlc::CompileOptions &options, ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return writeText(options, text);
}

/// A context with every dlc dialect loaded whose diagnostics print as one
/// line each.
struct DriverContext {
  DriverContext() : context(registry()), handler(&context, kTool) {
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
  }

  static DialectRegistry registry() {
    DialectRegistry registry;
    dlc::registerAllDialects(registry);
    return registry;
  }

  MLIRContext context;
  dlc::ToolDiagnosticHandler handler;
};

/// The batch size the package records: --batch-size, else dim 0 of the step
/// function's first input (0 when unknown).
int64_t packageBatchSize(const dlc::CompileOptions &options, ModuleOp module) {
  if (options.batchSize)
    return options.batchSize;
  for (llvm::StringRef name : {"train_step", "stage0_forward", "forward"}) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (fn && fn.getNumArguments() > 0)
      if (auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0]))
        if (t.getRank() > 0 && !t.isDynamicDim(0))
          return t.getDimSize(0);
  }
  return 0;
}

/// Prints the op table of |check| for |path| to |os|; returns whether every
/// op type is supported and the model imports.
bool printCheck(llvm::raw_ostream &os, llvm::StringRef path,
                const dlc::ONNXModelCheck &check) {
  os << path << ": ONNX opset " << check.opset << ", " << check.numNodes
     << (check.numNodes == 1 ? " node, " : " nodes, ") << check.ops.size()
     << (check.ops.size() == 1 ? " op type\n" : " op types\n");
  size_t width = 2;
  for (const dlc::ONNXOpStatus &op : check.ops)
    width = std::max(width, op.domain.size() + op.opType.size() +
                                (op.domain.empty() ? 0 : 1));
  size_t supported = 0;
  for (const dlc::ONNXOpStatus &op : check.ops) {
    std::string name =
        op.domain.empty() ? op.opType : op.domain + "." + op.opType;
    os << "  " << llvm::left_justify(name, width) << "  "
       << llvm::format("%5zu", op.nodes.size())
       << (op.nodes.size() == 1 ? " node   " : " nodes  ");
    if (op.unsupportedReason.empty() && op.nodeIssues.empty()) {
      ++supported;
      os << "supported";
      if (!op.uncheckedNodes.empty())
        os << " (" << op.uncheckedNodes.size()
           << " not checked: they depend on a node that does not import)";
      os << "\n";
      continue;
    }
    if (op.unsupportedReason.empty()) {
      // Mapped, but some nodes do not import: name each and say why.
      os << "unsupported at " << op.nodeIssues.size() << " of "
         << op.nodes.size() << (op.nodes.size() == 1 ? " node:\n" : " nodes:\n");
      for (const dlc::ONNXNodeIssue &issue : op.nodeIssues)
        os << "      node '" << issue.node << "': " << issue.reason << "\n";
      continue;
    }
    os << "unsupported: " << op.unsupportedReason << " (node '"
       << op.nodes.front() << "'"
       << (op.nodes.size() > 1
               ? " and " + std::to_string(op.nodes.size() - 1) + " more"
               : std::string())
       << ")";
    if (!op.alternative.empty())
      os << "; nearest supported alternative: " << op.alternative;
    os << "\n";
  }
  os << supported << " of " << check.ops.size() << " op types supported\n";
  if (!check.unfixedDims.empty())
    os << "symbolic dimensions not fixed (checked as 1): "
       << llvm::join(check.unfixedDims, ", ")
       << "; fix them with --batch-size (dim 0) or --input-shape "
       << llvm::join(check.inputShapeHints, " --input-shape ") << "\n";
  if (check.importError.empty())
    os << "import: ok (lowering and code generation are checked when "
          "compiling)\n";
  else // The full list of supported ops adds nothing to the table above.
    os << "import: error: "
       << llvm::StringRef(check.importError).split("; supported ops: ").first
       << "\n";
  return supported == check.ops.size() && check.importError.empty();
}

/// Runs the pass pipeline that |build| adds to a pass manager that honours
/// the MLIR command-line flags (--mlir-print-ir-after-all, ...).
LogicalResult runPipeline(ModuleOp module,
                          llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm); // --mlir-timing
  build(pm);
  return pm.run(module);
}

} // namespace

/// The importer's options from |options|; an empty string, or what is wrong
/// with them (a malformed or repeated --input-shape or --input-value).
static std::string importOptionsOf(const dlc::CompileOptions &options,
                                   dlc::ImportOptions &out) {
  out.batchSize = options.batchSize;
  out.inputShapes.clear();
  for (const std::string &spec : options.inputShapes) {
    dlc::InputShapeOverride o;
    if (std::string problem = dlc::parseInputShape(spec, o); !problem.empty())
      return problem;
    for (const dlc::InputShapeOverride &seen : out.inputShapes)
      if (seen.name == o.name)
        return "--input-shape names '" + o.name + "' twice";
    out.inputShapes.push_back(std::move(o));
  }
  out.inputValues.clear();
  for (const std::string &spec : options.inputValues) {
    dlc::InputValueBinding b;
    if (std::string problem = dlc::parseInputValue(spec, b); !problem.empty())
      return problem;
    for (const dlc::InputValueBinding &seen : out.inputValues)
      if (seen.name == b.name)
        return "--input-value names '" + b.name + "' twice";
    out.inputValues.push_back(std::move(b));
  }
  return "";
}

std::string dlc::checkCompileOptions(const CompileOptions &options) {
  const PipelineOptions &p = options.pipeline;
  // Each phase's values, checked where its passes check them too.
  for (std::string problem :
       {p.FusionOptions::check(), p.TrainingOptions::check(),
        p.PrecisionOptions::check(),
        p.RematOptions::check(), p.PartitionOptions::check()})
    if (!problem.empty())
      return problem;
  if (options.batchSize < 0)
    return "--batch-size must be positive";
  ImportOptions importOptions;
  if (std::string problem = importOptionsOf(options, importOptions);
      !problem.empty())
    return problem;
  if (p.exposeGradients && !p.train)
    return "--expose-gradients needs --train";
  if (!p.train) {
    const char *flag = !p.lrSchedule.empty()     ? "--lr-schedule"
                       : p.clipGradNorm != 0     ? "--clip-grad-norm"
                       : !p.noWeightDecay.empty() ? "--no-weight-decay"
                       : !p.freeze.empty()        ? "--freeze"
                       : !p.noFreeze.empty()      ? "--no-freeze"
                       : !p.trainable.empty()     ? "--trainable"
                       : p.labelSmoothing != 0    ? "--label-smoothing"
                                                  : nullptr;
    if (flag)
      return std::string(flag) + " needs --train";
  }
  if (p.accumulate > 1 && !p.train)
    return "--accumulate needs --train";
  if (p.accumulate > 1 && resolveLossScale(p) != "none")
    return "--accumulate is not supported with loss scaling yet (each call's "
           "gradients would be scaled differently); use --loss-scale none";
  if (p.clipGradNorm != 0 && resolveLossScale(p) != "none")
    return "--clip-grad-norm is not supported with loss scaling yet (it "
           "would clip the scaled gradients); use --loss-scale none";
  if (!p.lossScale.empty() && !p.train)
    return "--loss-scale needs --train";
  if (p.remat != "none" && !p.train)
    return "--remat needs --train (it recomputes activations in the "
           "backward pass)";
  if (!options.pipeline.memoryBudget.empty() && !p.train)
    return "--memory-budget needs --train";
  if (!options.compileTo.empty() && !parsePhase(options.compileTo)) {
    std::vector<std::string> names;
    for (Phase phase : allPhases())
      names.push_back(phaseName(phase).str());
    return "unknown --compile-to '" + options.compileTo +
           "'; phases: " + llvm::join(names, ", ");
  }
  if (!options.compileTo.empty() && options.emit != EmitKind::Package)
    return "--compile-to prints the module after a phase; it does not "
           "combine with --emit";
  if (options.pipeline.pipelineStages > 0 && !p.train)
    return "--pipeline-stages needs --train (it splits a training step)";
  if (options.pipeline.pipelineStages > 1 && !options.simulate) {
    // What the pipelined step does not combine with yet.
    const char *with = " is not supported with --pipeline-stages yet";
    if (p.precision != "fp32")
      return "--precision " + std::string(p.precision) + with +
             " (pipelines train in fp32)";
    if (!p.lossScale.empty() && p.lossScale != "none")
      return std::string("--loss-scale") + with;
    if (p.remat != "none" || !options.pipeline.memoryBudget.empty())
      return std::string("--remat / --memory-budget") + with;
    if (p.dataParallel)
      return "--data-parallel is not needed with --pipeline-stages: a "
             "pipeline package runs on S x D ranks, and the launcher's world "
             "size gives the D replicas of every stage";
    if (p.exposeGradients)
      return std::string("--expose-gradients") + with;
    if (!p.lrSchedule.empty())
      return std::string("--lr-schedule") + with;
    if (p.clipGradNorm != 0)
      return std::string("--clip-grad-norm") + with;
    if (p.accumulate > 1)
      return "--accumulate is not needed with --pipeline-stages: "
             "--microbatches accumulates the gradients of M micro-batches";
  }
  if (!options.pipeline.pipelineSplit.empty() && options.pipeline.pipelineStages < 2)
    return "--pipeline-split needs --pipeline-stages >= 2";
  if (options.replicas < 1)
    return "--replicas must be >= 1, got " + std::to_string(options.replicas);
  if (options.pipeline.pipelineStages < 1) {
    const char *flag = options.simulate                 ? "--simulate"
                       : options.replicas != 1          ? "--replicas"
                       : !options.simulateTrace.empty() ? "--simulate-trace"
                       : !options.stageTimes.empty()    ? "--stage-times"
                                                        : nullptr;
    if (flag)
      return std::string(flag) + " needs --train --pipeline-stages S";
  }
  if (!options.simulate && !options.simulateTrace.empty())
    return "--simulate-trace needs --simulate";
  if (!options.simulate && !options.stageTimes.empty())
    return "--stage-times needs --simulate";
  if (p.dataParallel && !p.train)
    return "--data-parallel needs --train (it averages the gradients over "
           "the ranks)";
  if (!options.pipeline.bucketSize.empty()) {
    if (!p.dataParallel)
      return "--bucket-size needs --data-parallel";
  }
  for (llvm::StringRef t : options.cudaArchs)
    if (!t.starts_with("sm_") ||
        !llvm::all_of(t.drop_front(3), llvm::isDigit) || t.size() < 5)
      return ("unknown --target '" + t +
              "'; expected CUDA architectures like sm_80,sm_90")
          .str();
  return "";
}

FailureOr<bool> dlc::checkModel(const CompileOptions &options,
                                llvm::raw_ostream &os) {
  if (std::string problem = checkCompileOptions(options); !problem.empty())
    return fail(problem);
  DriverContext dc;
  if (llvm::sys::path::extension(options.inputPath) == ".mlir")
    return fail("--check takes an ONNX model, not '" + options.inputPath + "'");
  ImportOptions importOptions;
  (void)importOptionsOf(options, importOptions); // checked above
  FailureOr<ONNXModelCheck> check =
      checkONNXModel(dc.context, options.inputPath, importOptions);
  if (failed(check))
    return failure();
  bool ok = printCheck(os, options.inputPath, *check);
  if (!options.pipeline.train || !ok || !check->unfixedDims.empty())
    return ok;
  // --check --train: the training step's graph passes, for the trained and
  // frozen tensors (with why) that `--stats` would list; a pass error is
  // printed and fails the check.
  OwningOpRef<ModuleOp> module =
      importONNXModel(dc.context, options.inputPath, importOptions);
  if (!module ||
      failed(runPipeline(*module, [&](OpPassManager &pm) {
        buildGraphPipeline(pm, options.pipeline, /*withRemat=*/false);
      }))) {
    os << "training step: error (printed on stderr)\n";
    return false;
  }
  os << "training step: ok\n" << describeParameterGroups(*module);
  // Warnings only: the step builds, but it may not train like the module
  // the model was exported from (docs/exporting.md). A sign on a tensor
  // that does not train (a folded mask, frozen) changes nothing.
  for (const auto &[name, sign] : check->optimizerSigns)
    if (auto var = dyn_cast_or_null<dlc::graph::VariableOp>(
            SymbolTable::lookupSymbolIn(*module, name));
        var && var.getTrainable())
      os << "warning: " << sign << "\n";
  return true;
}

namespace dlc {

/// The peak FLOP/s MFU divides by: the device model's (--device-model),
/// for the step's precision; 0 when the model cannot be loaded.
static double peakFlopsOf(const PipelineOptions &pipeline) {
  llvm::Expected<DeviceModel> dm = loadDeviceModel(pipeline.deviceModel);
  if (!dm) {
    llvm::consumeError(dm.takeError());
    return 0;
  }
  return pipeline.precision == "fp32" ? dm->peakFp32Flops : dm->peakHalfFlops;
}

/// The model FLOPs of one training step (PaLM's "model FLOPs", Chowdhery
/// et al. 2022, appendix B: what the model needs, not what the hardware
/// runs): 2 x the multiply-adds of every op of @train_step whose recompute
/// cost is Expensive (matmul, gemm, conv, attention and their gradients),
/// counted before rematerialization adds the ops it recomputes. 0 without
/// a @train_step (inference, pipeline stages).
static double modelFlopsPerStep(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return 0;
  double flops = 0;
  step.walk([&](graph::RecomputeCostOpInterface op) {
    if (op.getRecomputeCost() == graph::RecomputeCost::Expensive)
      flops += static_cast<double>(op.getRecomputeFlops());
  });
  return flops;
}

/// The `--stats` report of the planned |module| (whose PlanStats are |s|):
/// kernels, library calls, epilogues, casts, memory; with |before| the plan
/// without rematerialization and what the remat summary the module carries
/// says was recomputed; with |dataParallel| the gradient buckets it carries;
/// then the CUDA launch sizes and vector widths of the kernels codegen would
/// emit.
static LogicalResult printPlanStats(ModuleOp module, const PlanStats &s,
                                    const std::optional<PlanStats> &before,
                                    bool dataParallel) {
  llvm::outs() << "kernels: " << s.kernels << "\n"
               << "builtin kernels: " << s.builtinKernels << "\n"
               << "library calls: " << s.libraryCalls << "\n"
               << "gemm epilogues: " << s.gemmBias << " bias, "
               << s.gemmBiasRelu << " bias+relu, " << s.gemmRelu
               << " relu, " << s.gemmBiasGrad << " bgrad, "
               << s.gemmReluAux << " relu_aux, " << s.gemmDRelu
               << " drelu, " << s.gemmDReluBiasGrad << " drelu_bgrad\n"
               << "standalone cast kernels: " << s.castKernels << " ("
               << s.castKernelsNextToElementwise
               << " next to an elementwise kernel)\n"
               << "predicted peak memory: " << describePeak(s) << "\n"
               << "activation arena: " << s.arenaBytes << " bytes\n"
               << "persistent memory: " << s.persistentBytes
               << " bytes (parameters, optimizer state, constants)\n";
  if (before) {
    exec::RematSummary summary = exec::readRematSummary(module);
    double share = summary.stepFlops > 0
                       ? 100.0 * summary.addedFlops / summary.stepFlops
                       : 0.0;
    llvm::outs() << "before rematerialization: " << describePeak(*before)
                 << "\n"
                 << "recomputed: " << summary.recomputedOps << " ops, "
                 << summary.addedFlops << " FLOPs added ("
                 << llvm::format("%.1f", share) << "% of the step's "
                 << summary.stepFlops << ")\n";
  }
  if (dataParallel) {
    std::vector<exec::GradientBucket> buckets =
        exec::readGradientBuckets(module);
    int64_t total = 0;
    for (const exec::GradientBucket &b : buckets)
      total += b.bytes;
    llvm::outs() << "gradient buckets: " << buckets.size() << ", "
                 << formatBytes(total) << " all-reduced per step (in this "
                 << "order, each as soon as the backward finishes it)\n";
    for (auto [i, b] : llvm::enumerate(buckets))
      llvm::outs() << "  bucket " << i << ": " << formatBytes(b.bytes)
                   << ", " << b.gradients.size() << " gradients: "
                   << llvm::join(b.gradients, ", ") << "\n";
  }
  // CUDA launch sizes: the kernels whose threads share rows, and any
  // reduction a thread still walks alone for more than a warp's work.
  auto kernels = codegen::emitCudaKernels(module);
  if (failed(kernels))
    return failure();
  int64_t cooperative = 0, named = 0;
  std::string shared, serial;
  for (const codegen::KernelSource &k : *kernels) {
    named += 1 + k.aliases.size();
    std::string launch = "  " + k.name + ": " + std::to_string(k.numThreads) +
                         " threads in blocks of " +
                         std::to_string(k.blockSize);
    if (k.cooperative) {
      ++cooperative;
      shared += launch + "\n";
    } else if (k.serialReductionSteps > 32) {
      serial += launch + ", " + std::to_string(k.serialReductionSteps) +
                " reduction steps in one thread\n";
    }
  }
  llvm::outs() << "cuda launches: " << kernels->size() << " kernels, "
               << cooperative
               << " with a warp or block sharing each row or reduction\n"
               << shared << "serial reductions longer than a warp: "
               << (serial.empty() ? "none\n" : "\n" + serial)
               << "distinct kernels: " << kernels->size() << " of " << named
               << " (kernels identical up to their name are compiled "
                  "once)\n";
  // Elementwise kernels with 128-bit accesses, by vector width (elements
  // per access); `--emit=cuda` marks each one's source.
  std::map<int32_t, int64_t> byWidth;
  int64_t vectorized = 0;
  for (const codegen::KernelSource &k : *kernels)
    if (k.vectorWidth > 0) {
      ++byWidth[k.vectorWidth];
      ++vectorized;
    }
  std::string widths;
  for (auto [width, count] : byWidth)
    widths += (widths.empty() ? " (" : ", ") + std::to_string(count) +
              " of vector width " + std::to_string(width);
  llvm::outs() << "vectorized elementwise kernels: " << vectorized
               << widths << (widths.empty() ? "" : ")") << "\n";
  return success();
}

/// Writes what `--emit` other than package asks for from the planned
/// |module|.
static LogicalResult emitText(const CompileOptions &options,
                              ModuleOp module) {
  switch (options.emit) {
  case EmitKind::DLGraph: // with --stats: the stats are the output
    return success();
  case EmitKind::DLExec:
    return writeModule(options, module);
  case EmitKind::Cuda: {
    auto kernels = codegen::emitCudaKernels(module);
    if (failed(kernels))
      return failure();
    std::string text;
    for (const auto &k : *kernels)
      text += "// kernel " + k.name + ": " + std::to_string(k.numThreads) +
              " threads in blocks of " + std::to_string(k.blockSize) + "\n" +
              k.cudaSource + "\n";
    return writeText(options, text);
  }
  case EmitKind::Host: {
    auto source = codegen::emitHostSource(module);
    if (failed(source))
      return failure();
    return writeText(options, *source);
  }
  case EmitKind::Plan:
    return writeText(options, codegen::describePlan(module));
  case EmitKind::Package:
    break;
  }
  return success();
}

} // namespace dlc

LogicalResult dlc::compileModel(const CompileOptions &options) {
  if (std::string problem = checkCompileOptions(options); !problem.empty())
    return fail(problem);
  DriverContext dc;
  MLIRContext &context = dc.context;
  const PipelineOptions &pipeline = options.pipeline;

  Progress progress(options.quiet);
  PhaseClock clock(options.timePhases);
  clock.phase("import");
  const std::string &input = options.inputPath;
  OwningOpRef<ModuleOp> module;
  if (llvm::sys::path::extension(input) == ".mlir") {
    progress.stage("parsing " + input);
    module = parseSourceFile<ModuleOp>(input, &context);
  } else {
    progress.stage("importing " + input);
    ImportOptions importOptions;
    (void)importOptionsOf(options, importOptions); // checked above
    module = importONNXModel(context, input, importOptions);
  }
  if (!module)
    return failure();

  // The pipeline's phases (compiler/Pipeline), run in slices: the driver
  // reads what each slice leaves (stages, parameter groups, the budget
  // search) before the next one rewrites it. The gradient buckets, the remat
  // summary and the pipeline record reach the planned module
  // (dialects/Exec/ExecAttributes.h).
  const Phase last = options.compileTo.empty()
                         ? Phase::MemoryPlanning
                         : *parsePhase(options.compileTo); // checked above
  auto runPhases = [&](Phase first, Phase upTo) {
    return runPipeline(*module, [&](OpPassManager &pm) {
      buildPipeline(pm, pipeline, first, std::min(upTo, last));
    });
  };
  auto stopAfter = [&](Phase phase) { return last <= phase; };

  // Graph fusion (attention) before everything that reads @main.
  if (failed(runPhases(Phase::GraphFusion, Phase::GraphFusion)))
    return failure();
  std::string fusionStats;
  if (auto fusion = readAttentionFusionRecord(*module)) {
    llvm::raw_string_ostream fs(fusionStats);
    fs << "fused attentions: " << fusion->fused << " of "
       << fusion->candidates << "\n";
    for (const std::string &u : fusion->unfused)
      fs << "  not fused: " << u << "\n";
  }
  if (stopAfter(Phase::GraphFusion))
    return writeModule(options, *module);

  // Pipeline partitioning (docs/pipeline.md): analysis of @main only.
  std::string pipelineStats;
  if (pipeline.pipelineStages > 0) {
    clock.phase("pipeline partitioning");
    progress.stage("splitting @main into " +
                   std::to_string(pipeline.pipelineStages) +
                   " pipeline stages");
    if (failed(runPhases(Phase::Partitioning, Phase::Partitioning)))
      return failure();
    pipelineStats = describePipelineStages(*module);
  }
  if (stopAfter(Phase::Partitioning))
    return writeModule(options, *module);
  if (options.simulate)
    return simulatePipelineStep(*module, options, pipelineStats);

  clock.phase("graph passes");
  if (pipeline.train)
    progress.stage("building the training step (" + pipeline.optimizer + ")");
  if (failed(runPhases(Phase::TrainingStep, Phase::MixedPrecision)))
    return failure();
  if (stopAfter(Phase::MixedPrecision))
    return writeModule(options, *module);
  std::string parameterGroups =
      pipeline.train ? describeParameterGroups(*module) : std::string();
  const double modelFlops = pipeline.train ? modelFlopsPerStep(*module) : 0;

  // Rematerialization (docs/remat.md). With --stats, the plan without it is
  // printed too: made here for --remat, by the budget search for
  // --memory-budget (which plans it anyway).
  const bool budgeted = !pipeline.memoryBudget.empty();
  bool remat = pipeline.train && (pipeline.remat != "none" || budgeted);
  std::optional<PlanStats> before;
  if (remat) {
    clock.phase("rematerialization");
    if (options.stats && !budgeted) {
      OwningOpRef<ModuleOp> plain(cast<ModuleOp>((*module)->clone()));
      if (failed(runPipeline(*plain, buildLoweringPipeline)))
        return failure();
      before = computePlanStats(*plain);
    }
    if (budgeted)
      progress.stage("fitting the step to --memory-budget " +
                     formatBytes(*parseByteSize(pipeline.memoryBudget)));
    else
      progress.stage("recomputing activations (--remat " + pipeline.remat +
                     ")");
  }
  if (failed(runPhases(Phase::Rematerialization, Phase::Rematerialization)))
    return failure();
  if (auto fit = readMemoryBudgetFit(*module)) {
    progress.stage("recomputed activations (--remat " + fit->first + ")");
    before = fit->second;
  }
  if (stopAfter(Phase::Rematerialization) ||
      (options.emit == EmitKind::DLGraph && !options.stats))
    return writeModule(options, *module);

  int64_t packageBatch = packageBatchSize(options, *module);
  progress.stage("lowering to dlexec, fusing, planning memory");
  clock.phase("lowering passes");
  if (failed(runPhases(Phase::GraphToExec, Phase::MemoryPlanning)))
    return failure();
  if (!options.compileTo.empty())
    return writeModule(options, *module);
  // A pipeline package's batch is the global one: M micro-batches.
  if (exec::getPipelineRecord(*module))
    packageBatch *= pipeline.microbatches;
  clock.phase(options.stats ? "stats" : "");

  PlanStats s;
  if (options.stats || !options.pipeline.memoryBudget.empty())
    s = computePlanStats(*module);
  if (!options.pipeline.memoryBudget.empty()) {
    // The search planned this exact module; a difference is a dlc bug.
    int64_t budget = *parseByteSize(options.pipeline.memoryBudget);
    if (s.predictedPeakBytes() > budget)
      return fail("internal error: the planned peak " + describePeak(s) +
                  " exceeds --memory-budget " + formatBytes(budget) +
                  " that the search fit; please report it");
  }
  if (options.stats &&
      failed(printPlanStats(*module, s, before, pipeline.dataParallel)))
    return failure();
  if (options.stats)
    llvm::outs() << fusionStats << pipelineStats << parameterGroups;
  if (options.stats && modelFlops > 0)
    llvm::outs() << "model FLOPs per step: "
                 << llvm::format("%.0f", modelFlops) << " ("
                 << llvm::format("%.4g", modelFlops / packageBatch)
                 << " a sample; 2 x the multiply-adds of the step's matmuls, "
                    "convolutions and attentions)\n";

  clock.phase(options.emit == EmitKind::Package ? "" : "emit");
  if (options.emit != EmitKind::Package)
    return emitText(options, *module);
  std::string out = options.outputPath;
  if (out.empty()) {
    llvm::SmallString<128> p(input);
    llvm::sys::path::replace_extension(p, ".dlcp");
    out = std::string(p);
  }
  codegen::PackageOptions packageOptions;
  packageOptions.modelName = llvm::sys::path::stem(input).str();
  packageOptions.cudaArchs = options.cudaArchs;
  packageOptions.training = pipeline.train;
  // The training pipeline names the step's loss result "loss" in every case.
  packageOptions.lossOutput = "loss";
  packageOptions.optimizer =
      pipeline.train ? std::string(pipeline.optimizer) : std::string();
  packageOptions.learningRate = static_cast<float>(pipeline.lr);
  packageOptions.batchSize = packageBatch;
  packageOptions.modelFlops = modelFlops;
  packageOptions.peakFlops = peakFlopsOf(pipeline);
  packageOptions.hostCompiler = options.hostCompiler;
  // The compile cache (docs/dlc.md): --no-cache, --cache-dir, else
  // CompileCache::defaultDir() ($DLC_NO_CACHE, $DLC_CACHE_DIR, XDG, HOME).
  codegen::CompileCache cache(options.noCache ? std::string()
                              : !options.cacheDir.empty()
                                  ? options.cacheDir
                                  : codegen::CompileCache::defaultDir());
  codegen::CacheReport cacheReport;
  packageOptions.cache = &cache;
  packageOptions.cacheReport = &cacheReport;
  packageOptions.jobs = options.jobs;
  packageOptions.weightsSectionThreshold = options.weightsSectionThreshold;
  packageOptions.times = clock.times(); // writePackage times its phases
  progress.stage(options.cudaArchs.empty()
                     ? "generating kernels, compiling host library"
                     : "generating kernels, compiling host library and "
                       "CUDA kernels (NVRTC) for " +
                           llvm::join(options.cudaArchs, ","));
  LogicalResult written = codegen::writePackage(*module, out, packageOptions);
  clock.cache = cache.enabled()
                    ? "cache: " + std::to_string(cacheReport.hits) +
                          " hits, " + std::to_string(cacheReport.misses) +
                          " misses (" + std::to_string(cacheReport.corrupt) +
                          " corrupt, recompiled) in " + cache.dir()
                    : std::string("cache: off");
  if (failed(written))
    return failure();
  progress.stage("wrote " + out);
  return success();
}
