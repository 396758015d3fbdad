//===- Diagnostics.cpp - one-line diagnostics for command-line tools ------===//
#include "compiler/Driver/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

std::string dlc::describeLocation(Location loc, llvm::StringRef message) {
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

dlc::ToolDiagnosticHandler::ToolDiagnosticHandler(MLIRContext *ctx,
                                                  llvm::StringRef tool,
                                                  llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(ctx, [tool = tool.str(), &os](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Remark)
          return success();
        const char *kind =
            diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
            : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                                                                : "note";
        std::string message = diag.str();
        std::string where = describeLocation(diag.getLocation(), message);
        os << tool << ": " << kind << ": " << where
           << (where.empty() ? "" : ": ") << message << "\n";
        return success();
      }) {}
