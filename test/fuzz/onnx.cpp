//===- onnx.cpp - fuzz target: ONNX bytes -> dlgraph import ----------------===//
// importONNXModelFromBytes: protobuf parsing, the model checks and the
// import to dlgraph, including the module verifier (no passes, no codegen).
// Every input gets a fresh MLIRContext so that what one input uniqued
// (attributes, types) neither accumulates nor changes how the next imports.
// Diagnostics are swallowed; an import that fails must have emitted one.
#include "compiler/Import/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  bool sawError = false;
  mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &d) {
    sawError |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = dlc::importONNXModelFromBytes(
      context, llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", dlc::ImportOptions());
  if (!module && !sawError) {
    std::fprintf(stderr, "onnx: the import failed without an error\n");
    std::abort();
  }
  return 0;
}
