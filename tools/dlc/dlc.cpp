//===- dlc.cpp - the dlc compiler driver ------------------------------------===//
// Imports a model (ONNX or dlgraph MLIR), optionally builds the training step,
// lowers it to dlexec, plans memory, emits kernels and writes a package.
#include "codegen/Codegen.h"
#include "compiler/Import/ONNXImporter.h"
#include "compiler/InitAll/InitAll.h"
#include "compiler/Lowering/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory dlcCategory("dlc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::cat(dlcCategory));
static cl::opt<std::string>
    outputPath("o", cl::desc("Output file (default: <model>.dlcp for packages, "
                             "stdout for --emit other than package)"),
               cl::value_desc("path"), cl::cat(dlcCategory));

enum class EmitKind { DLGraph, DLExec, Cuda, Host, Plan, Package };
static cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce (default: package)"),
    cl::values(clEnumValN(EmitKind::DLGraph, "dlgraph",
                          "the dlgraph module after import (and --train)"),
               clEnumValN(EmitKind::DLExec, "dlexec",
                          "the planned dlexec module"),
               clEnumValN(EmitKind::Cuda, "cuda", "CUDA C++ of every kernel"),
               clEnumValN(EmitKind::Host, "host", "host C++ of every kernel"),
               clEnumValN(EmitKind::Plan, "plan",
                          "the execution plan: steps, buffers, offsets"),
               clEnumValN(EmitKind::Package, "package",
                          "a .dlcp package for dlrt")),
    cl::init(EmitKind::Package), cl::cat(dlcCategory));

static cl::opt<bool> train("train",
                           cl::desc("Compile a training step (forward, loss, "
                                    "backward, optimizer update)"),
                           cl::cat(dlcCategory));
static cl::opt<std::string>
    loss("loss", cl::desc("Loss added by --train: softmax-cross-entropy (over "
                          "the last axis of the first output, against int64 "
                          "class ids in a new input 'labels')"),
         cl::init("softmax-cross-entropy"), cl::cat(dlcCategory));
static cl::opt<std::string>
    lossOutput("loss-output",
               cl::desc("Use this scalar model output as the loss instead"),
               cl::value_desc("name"), cl::cat(dlcCategory));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("Optimizer for --train: sgd, adam or adamw "
                       "(torch.optim semantics; default sgd)"),
              cl::init("sgd"), cl::cat(dlcCategory));
static cl::opt<double> lr("lr", cl::desc("Learning rate (default 0.01)"),
                          cl::init(0.01), cl::cat(dlcCategory));
static cl::opt<double> momentum("momentum",
                                cl::desc("SGD momentum (default 0)"),
                                cl::init(0.0), cl::cat(dlcCategory));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Weight decay (default 0; adamw: 0.01)"),
                cl::init(-1.0), cl::cat(dlcCategory));
static cl::opt<double> beta1("beta1", cl::desc("Adam beta1 (default 0.9)"),
                             cl::init(0.9), cl::cat(dlcCategory));
static cl::opt<double> beta2("beta2", cl::desc("Adam beta2 (default 0.999)"),
                             cl::init(0.999), cl::cat(dlcCategory));
static cl::opt<double> adamEps("adam-epsilon",
                               cl::desc("Adam epsilon (default 1e-8)"),
                               cl::init(1e-8), cl::cat(dlcCategory));
static cl::opt<bool> exposeGradients(
    "expose-gradients",
    cl::desc("With --train: train_step also returns each trainable "
             "parameter's gradient as output '<parameter>.grad' (for dlrt "
             "train --save-gradients; costs their memory and a copy per "
             "step)"),
    cl::cat(dlcCategory));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Batch size; fixes dim 0 of every model input"),
              cl::init(0), cl::cat(dlcCategory));
static cl::list<std::string>
    targets("target",
            cl::desc("CUDA architectures to compile kernels for with NVRTC "
                     "and embed (e.g. sm_80,sm_90); without it the runtime "
                     "compiles them on first use"),
            cl::CommaSeparated, cl::cat(dlcCategory));
static cl::opt<std::string>
    hostCompiler("host-compiler",
                 cl::desc("C++ compiler for the host kernels (default c++)"),
                 cl::init("c++"), cl::cat(dlcCategory));
static cl::opt<bool> quiet("quiet", cl::desc("Print no progress"),
                           cl::cat(dlcCategory));
static cl::opt<bool>
    checkOnly("check",
              cl::desc("List every op of the ONNX model with its support "
                       "status, then try importing it; compiles nothing. "
                       "Exit status 0 when everything is supported"),
              cl::cat(dlcCategory));

namespace {
/// Prints stage progress with elapsed time to stderr.
class Progress {
public:
  void stage(llvm::StringRef what) {
    if (quiet)
      return;
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    llvm::errs() << llvm::format("dlc: [%6.2fs] ", s) << what << "\n";
  }

private:
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};
} // namespace

/// Renders a location as "file:line:col", "node 'n' (Op)", or both, leaving
/// out what |message| already names (the importer's messages name the file
/// and the node themselves).
static std::string describeLocation(Location loc, llvm::StringRef message) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto named = dyn_cast<NameLoc>(loc)) {
    std::string child = describeLocation(named.getChildLoc(), message);
    llvm::StringRef name = named.getName().getValue();
    auto slash = name.rfind('/');
    llvm::StringRef node = name, opType;
    if (slash != llvm::StringRef::npos && slash + 1 < name.size()) {
      node = name.substr(0, slash);
      opType = name.substr(slash + 1);
    }
    if (!message.contains(("'" + node + "'").str())) {
      os << "node '" << node << "'";
      if (!opType.empty())
        os << " (" << opType << ")";
    }
    if (!child.empty())
      return out.empty() ? child : child + ": " + out;
    return out;
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    if (file.getLine()) {
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn();
    } else if (!message.contains(file.getFilename().getValue())) {
      os << file.getFilename().getValue();
    }
    return out;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations()) {
      std::string part = describeLocation(l, message);
      if (part.empty())
        continue;
      if (!out.empty())
        out += ", ";
      out += part;
    }
    return out;
  }
  if (auto callsite = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(callsite.getCallee(), message);
  return out;
}

static std::string optionValue(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.9g", v);
  return s;
}

/// The training pipeline as a textual pass pipeline (the pass's flag names
/// are its stable interface).
static std::string trainingPipeline() {
  std::string opts = "optimizer=" + optimizer + " lr=" + optionValue(lr);
  if (!lossOutput.empty())
    opts += " loss-output=" + lossOutput;
  else
    opts += " loss=" + loss;
  opts += " momentum=" + optionValue(momentum);
  if (weightDecay >= 0)
    opts += " weight-decay=" + optionValue(weightDecay);
  opts += " beta1=" + optionValue(beta1) + " beta2=" + optionValue(beta2) +
          " epsilon=" + optionValue(adamEps);
  if (exposeGradients)
    opts += " expose-gradients=true";
  return "dlgraph-build-training-step{" + opts + "}";
}

/// `dlc --check`: prints the op table of |check| for |path| to stdout;
/// returns the exit status (0 when every op type is supported and the model
/// imports, 1 otherwise).
static int printCheck(llvm::StringRef path, const dlc::ONNXModelCheck &check) {
  llvm::raw_ostream &os = llvm::outs();
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
  if (check.importError.empty())
    os << "import: ok (lowering and code generation are checked when "
          "compiling)\n";
  else // The full list of supported ops adds nothing to the table above.
    os << "import: error: "
       << llvm::StringRef(check.importError).split("; supported ops: ").first
       << "\n";
  return supported == check.ops.size() && check.importError.empty() ? 0 : 1;
}

static int fail(llvm::Twine message) {
  llvm::errs() << "dlc: error: " << message << "\n";
  return 1;
}

static LogicalResult writeText(llvm::StringRef text) {
  if (outputPath.empty() || outputPath == "-") {
    llvm::outs() << text;
    return success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(outputPath, ec);
  if (ec) {
    llvm::errs() << "dlc: error: cannot write '" << outputPath
                 << "': " << ec.message() << "\n";
    return failure();
  }
  os << text;
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAsmPrinterCLOptions();
  dlc::registerAllPasses();
  // `--stats` is created here: LLVM registers its own `-stats` (pass
  // statistics), which is renamed first to make room for dlc's.
  auto &registered = cl::getRegisteredOptions();
  if (auto it = registered.find("stats"); it != registered.end())
    it->second->setArgStr("llvm-stats");
  cl::opt<bool> statsOpt("stats",
                         cl::desc("Print kernels, library calls and the "
                                  "planned peak memory in bytes"),
                         cl::cat(dlcCategory));
  bool &stats = statsOpt.getValue();
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

  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    return fail("unknown --optimizer '" + optimizer +
                "'; supported: sgd, adam, adamw");
  if (loss != "softmax-cross-entropy")
    return fail("unknown --loss '" + loss +
                "'; supported: softmax-cross-entropy");
  if (batchSize < 0)
    return fail("--batch-size must be positive");
  if (exposeGradients && !train)
    return fail("--expose-gradients needs --train");
  for (const std::string &t : targets)
    if (!llvm::StringRef(t).starts_with("sm_") ||
        !llvm::all_of(llvm::StringRef(t).drop_front(3), llvm::isDigit) ||
        t.size() < 5)
      return fail("unknown --target '" + t +
                  "'; expected CUDA architectures like sm_80,sm_90");

  DialectRegistry registry;
  dlc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Remark)
      return success();
    const char *kind = diag.getSeverity() == DiagnosticSeverity::Error
                           ? "error"
                       : diag.getSeverity() == DiagnosticSeverity::Warning
                           ? "warning"
                           : "note";
    std::string message = diag.str();
    std::string where = describeLocation(diag.getLocation(), message);
    llvm::errs() << "dlc: " << kind << ": " << (where.empty() ? "" : where)
                 << (where.empty() ? "" : ": ") << message << "\n";
    return success();
  });

  Progress progress;
  llvm::StringRef ext = llvm::sys::path::extension(inputPath);
  if (checkOnly) {
    if (ext == ".mlir")
      return fail("--check takes an ONNX model, not '" + inputPath + "'");
    dlc::ImportOptions importOptions;
    importOptions.batchSize = batchSize;
    FailureOr<dlc::ONNXModelCheck> check =
        dlc::checkONNXModel(context, inputPath, importOptions);
    if (failed(check))
      return 1;
    return printCheck(inputPath, *check);
  }
  OwningOpRef<ModuleOp> module;
  if (ext == ".mlir") {
    progress.stage("parsing " + inputPath);
    module = parseSourceFile<ModuleOp>(inputPath, &context);
  } else {
    progress.stage("importing " + inputPath);
    dlc::ImportOptions importOptions;
    importOptions.batchSize = batchSize;
    module = dlc::importONNXModel(context, inputPath, importOptions);
  }
  if (!module)
    return 1;

  if (!train) {
    // An inference package's entry point is `forward`, as in training
    // packages (where the training pass renames @main).
    if (auto main = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            *module, StringAttr::get(&context, "main")))
      if (!SymbolTable::lookupNearestSymbolFrom(
              *module, StringAttr::get(&context, "forward")))
        main.setSymName("forward");
  }

  if (train) {
    progress.stage("building the training step (" + optimizer + ")");
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)) ||
        failed(parsePassPipeline(trainingPipeline(), pm, llvm::errs())))
      return fail("cannot build the training pipeline");
    if (failed(pm.run(*module)))
      return 1;
  }
  if (emitKind == EmitKind::DLGraph && !stats) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return failed(writeText(text)) ? 1 : 0;
  }

  // The batch size the package records: --batch-size, else dim 0 of the
  // step function's first input.
  int64_t packageBatch = batchSize;
  for (llvm::StringRef name : {"train_step", "forward"}) {
    if (packageBatch)
      break;
    auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        *module, StringAttr::get(&context, name));
    if (fn && fn.getNumArguments() > 0)
      if (auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0]))
        if (t.getRank() > 0 && !t.isDynamicDim(0))
          packageBatch = t.getDimSize(0);
  }

  progress.stage("lowering to dlexec, fusing, planning memory");
  {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    dlc::buildLowerToExecPipeline(pm);
    if (failed(pm.run(*module)))
      return 1;
  }

  if (stats) {
    dlc::PlanStats s = dlc::computePlanStats(*module);
    llvm::outs() << "kernels: " << s.kernels << "\n"
                 << "builtin kernels: " << s.builtinKernels << "\n"
                 << "library calls: " << s.libraryCalls << "\n"
                 << "planned peak memory: " << s.arenaBytes
                 << " bytes (activation arena)\n"
                 << "persistent memory: " << s.persistentBytes
                 << " bytes (parameters, optimizer state, constants)\n";
  }

  switch (emitKind) {
  case EmitKind::DLGraph:
    return 0;
  case EmitKind::DLExec: {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return failed(writeText(text)) ? 1 : 0;
  }
  case EmitKind::Cuda: {
    auto kernels = dlc::codegen::emitCudaKernels(*module);
    if (failed(kernels))
      return 1;
    std::string text;
    for (const auto &k : *kernels)
      text += "// kernel " + k.name + ": " + std::to_string(k.numThreads) +
              " threads\n" + k.cudaSource + "\n";
    return failed(writeText(text)) ? 1 : 0;
  }
  case EmitKind::Host: {
    auto source = dlc::codegen::emitHostSource(*module);
    if (failed(source))
      return 1;
    return failed(writeText(*source)) ? 1 : 0;
  }
  case EmitKind::Plan:
    return failed(writeText(dlc::codegen::describePlan(*module))) ? 1 : 0;
  case EmitKind::Package:
    break;
  }

  std::string out = outputPath;
  if (out.empty()) {
    llvm::SmallString<128> p(inputPath);
    llvm::sys::path::replace_extension(p, ".dlcp");
    out = std::string(p);
  }
  dlc::codegen::PackageOptions options;
  options.modelName = llvm::sys::path::stem(inputPath).str();
  options.cudaArchs.assign(targets.begin(), targets.end());
  options.training = train;
  // The training pass names the step's loss result "loss" in every case.
  options.lossOutput = "loss";
  options.optimizer = train ? std::string(optimizer) : "";
  options.learningRate = static_cast<float>(lr);
  options.batchSize = packageBatch;
  options.hostCompiler = hostCompiler;
  progress.stage(targets.empty()
                     ? "generating kernels, compiling host library"
                     : "generating kernels, compiling host library and "
                       "CUDA kernels (NVRTC) for " +
                           llvm::join(targets, ","));
  if (failed(dlc::codegen::writePackage(*module, out, options)))
    return 1;
  progress.stage("wrote " + out);
  return 0;
}
