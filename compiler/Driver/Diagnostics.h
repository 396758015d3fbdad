//===- Diagnostics.h - one-line diagnostics for tools -----------*- C++ -*-===//
#ifndef DLC_COMPILER_DRIVER_DIAGNOSTICS_H
#define DLC_COMPILER_DRIVER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace dlc {

/// Renders |loc| as "file:line:col", "node 'n' (Op)", or both, leaving out
/// what |message| already names (the importer's messages name the file and
/// the node themselves). Empty for unknown locations.
std::string describeLocation(mlir::Location loc, llvm::StringRef message);

/// While alive, prints every error, warning and note of a context to |os| as
/// one line `<tool>: <severity>: <where>: <message>` (remarks are dropped).
class ToolDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  ToolDiagnosticHandler(mlir::MLIRContext *ctx, llvm::StringRef tool,
                        llvm::raw_ostream &os = llvm::errs());
};

} // namespace dlc

#endif // DLC_COMPILER_DRIVER_DIAGNOSTICS_H
