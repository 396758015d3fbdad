//===- dlc.cpp - the dlc compiler driver ----------------------------------===//
// Binds dlc's flags (each declared once, by the options structs of the
// driver and the pipeline phases: CompileOptions::bindOptions), parses them
// and runs the compiler library (compiler/Driver).
#include "compiler/Driver/Driver.h"
#include "compiler/InitAll/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  dlc::registerAllPasses();

  static cl::OptionCategory category("dlc options");
  static dlc::CompileOptions options;
  static dlc::OptionsBinder binder = dlc::OptionsBinder::global(category);
  options.bindOptions(binder);
  static cl::opt<std::string, /*ExternalStorage=*/true> input(
      cl::Positional, cl::Required, cl::desc("<model.onnx | model.mlir>"),
      cl::location(options.inputPath), cl::cat(category));
  // LLVM registers its own `-stats` (pass statistics): renamed first to make
  // room for dlc's.
  auto &registered = cl::getRegisteredOptions();
  if (auto it = registered.find("stats"); it != registered.end())
    it->second->setArgStr("llvm-stats");
  static cl::opt<bool, /*ExternalStorage=*/true> stats(
      "stats",
      cl::desc("Print kernels, library calls, the predicted peak memory in "
               "bytes (persistent, inputs, arena, workspace; before and after "
               "rematerialization) and, with --train, the trained, frozen and "
               "no-weight-decay tensors with their element counts"),
      cl::location(options.stats), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << dlc::versionString() << "\n"; });

  std::string cliErrors;
  llvm::raw_string_ostream cliErrorStream(cliErrors);
  std::string overview = dlc::toolOverview();
  bool parsed = cl::ParseCommandLineOptions(argc, argv, overview,
                                            &cliErrorStream);
  if (!parsed) {
    // One line: LLVM's parser adds suggestions on further lines.
    llvm::StringRef first = llvm::StringRef(cliErrors).split('\n').first;
    first.consume_front("dlc: ");
    llvm::errs() << "dlc: error: " << first.trim() << "\n";
    return 2;
  }
  return dlc::runCompiler(options, argc, argv);
}
