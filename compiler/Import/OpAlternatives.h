//===- OpAlternatives.h - What to use instead of an unsupported ONNX op -*- C++ -*-===//
#ifndef DLC_COMPILER_IMPORT_OPALTERNATIVES_H
#define DLC_COMPILER_IMPORT_OPALTERNATIVES_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace dlc {

/// The nearest supported alternative to the ONNX op |opType| (of domain
/// |domain|, empty for ai.onnx), as one phrase for an error message, e.g.
/// "Resize" for Upsample or "MatMul with Transpose/Reshape" for Einsum.
/// Alternatives come from a hand-written table of ops that compute the same
/// function (or the function a model exporter can emit instead); an entry is
/// offered only when the importer's registration table (OpRegistry) maps
/// every op it names. Returns a phrase that says there is none (and why, for
/// ops with data-dependent output shapes or control flow) when no entry
/// applies; never empty.
std::string nearestSupportedAlternative(llvm::StringRef domain,
                                        llvm::StringRef opType);

} // namespace dlc

#endif
