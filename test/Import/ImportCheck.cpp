//===- ImportCheck.cpp - imported ONNX model vs PyTorch's outputs
//-----------===//
//
//   dlc-import-check model.onnx input.bin expected.bin [--batch-size N]
//                    [--tolerance T]
//   dlc-import-check --supported-ops
//
// Imports the model, runs @main on the raw little-endian f32 input (the shape
// of the first argument) with the double-precision reference interpreter and
// compares the first result with the raw f32 expected output elementwise:
// |got - want| <= T * (1 + |want|). Prints the maximum error; exits 1 on a
// mismatch or any failure. With --supported-ops, prints the ONNX ops the
// importer maps instead, one per line as "<op type> <first mapped opset>",
// sorted (used by test/tools/docs-ops.test).
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "compiler/Reference/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

namespace cl = llvm::cl;

static bool readFloats(llvm::StringRef path, std::vector<double> &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buf) {
    llvm::errs() << "cannot open '" << path << "'\n";
    return false;
  }
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() % 4) {
    llvm::errs() << "'" << path << "' is not a whole number of f32 values\n";
    return false;
  }
  out.resize(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    out[i] = f;
  }
  return true;
}

int main(int argc, char **argv) {
  cl::opt<std::string> model(cl::Positional, cl::desc("<model>"));
  cl::opt<std::string> input(cl::Positional, cl::desc("<input>"));
  cl::opt<std::string> expected(cl::Positional, cl::desc("<expected>"));
  cl::opt<int64_t> batchSize("batch-size", cl::init(0));
  cl::opt<double> tolerance("tolerance", cl::init(1e-4));
  cl::opt<bool> supportedOps(
      "supported-ops",
      cl::desc("print the ONNX ops the importer maps and exit"));
  cl::ParseCommandLineOptions(argc, argv, "imported model vs expected\n");

  if (supportedOps) {
    for (const dlc::SupportedONNXOp &op : dlc::supportedONNXOps())
      llvm::outs() << op.opType << " " << op.mappedSince << " "
                   << op.newestVersion << "\n";
    return 0;
  }
  if (model.empty() || input.empty() || expected.empty()) {
    llvm::errs() << "usage: dlc-import-check model.onnx input.bin "
                    "expected.bin [--batch-size N] [--tolerance T]\n";
    return 1;
  }

  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  dlc::ImportOptions options;
  options.batchSize = batchSize;
  auto module = dlc::importONNXModel(context, model, options);
  if (!module)
    return 1;
  auto func = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!func || func.getNumArguments() != 1 || func.getNumResults() < 1) {
    llvm::errs() << "expected @main with one argument\n";
    return 1;
  }
  auto argType = mlir::cast<mlir::RankedTensorType>(func.getArgumentTypes()[0]);
  dlc::reference::Tensor x(std::vector<int64_t>(argType.getShape().begin(),
                                                argType.getShape().end()));
  std::vector<double> want;
  if (!readFloats(input, x.data) || !readFloats(expected, want))
    return 1;
  if ((int64_t)x.data.size() != argType.getNumElements()) {
    llvm::errs() << "input has " << x.data.size() << " values, @main takes "
                 << argType.getNumElements() << "\n";
    return 1;
  }
  auto interp = dlc::reference::Interpreter::create(*module);
  if (mlir::failed(interp))
    return 1;
  auto results = interp->run(func, {x});
  if (mlir::failed(results))
    return 1;
  const dlc::reference::Tensor &got = (*results)[0];
  if (got.data.size() != want.size()) {
    llvm::errs() << "result has " << got.data.size() << " values, expected "
                 << want.size() << "\n";
    return 1;
  }
  double maxErr = 0;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double err = std::fabs(got.data[i] - want[i]) / (1 + std::fabs(want[i]));
    maxErr = std::max(maxErr, err);
    if (!(err <= tolerance))
      ++bad;
  }
  llvm::outs() << "values " << want.size() << " max_err " << maxErr
               << (bad ? " MISMATCH" : " ok") << "\n";
  return bad ? 1 : 0;
}
