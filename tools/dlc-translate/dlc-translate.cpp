//===- dlc-translate.cpp - imports ONNX models into dlgraph (for lit tests)
//-===//
//
//   dlc-translate --import-onnx model.onnx [--batch-size N] [-o out.mlir]
//
// Prints the imported module; errors go to stderr as diagnostics and the exit
// status is 1. The standard MLIR printing flags (--mlir-print-debuginfo, ...)
// apply.
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"),
                             cl::Required);
  cl::opt<bool> importOnnx("import-onnx",
                           cl::desc("Import an ONNX model into dlgraph"),
                           cl::Required);
  cl::opt<int64_t> batchSize("batch-size",
                             cl::desc("Override dim 0 of every graph input"),
                             cl::init(0));
  cl::opt<std::string> output("o", cl::desc("Output file"),
                              cl::value_desc("filename"), cl::init("-"));
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "dlc translation driver\n");

  // Only the importer's dialects: this tool must not depend on the passes.
  mlir::DialectRegistry registry;
  registry.insert<dlc::graph::GraphDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  dlc::ImportOptions options;
  options.batchSize = batchSize;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      dlc::importONNXModel(context, input, options);
  if (!module)
    return 1;

  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return 1;
  }
  module->print(out->os(), mlir::OpPrintingFlags());
  out->os() << "\n";
  out->keep();
  return 0;
}
