//===- AttrReaders.h - typed reads of dlexec op attributes -----*- C++ -*-===//
//
// The attributes of dlexec.library_call and dlexec.builtin_kernel are the
// discardable attributes the lowering copies from the dlgraph op, so a list
// may be spelled array<i64: ...>, [1, 2] or dense<...>. The ops' getParams
// (LibraryCallOp.cpp, BuiltinKernelOp.cpp) read them through these
// functions, and the verifiers and codegen take the typed parameters from
// there, so both accept the same forms.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_EXEC_ATTRREADERS_H
#define DLC_DIALECTS_EXEC_ATTRREADERS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

namespace dlc::exec {

/// Reads the integer list attribute |name| of |op| given as array<i64: ...>,
/// [1, 2] or dense<...>; |fallback| when absent. Emits an error at |op| and
/// fails when it is malformed or not |expectedSize| values long.
mlir::FailureOr<llvm::SmallVector<int64_t>>
getIntList(mlir::Operation *op, llvm::StringRef name,
           llvm::ArrayRef<int64_t> fallback, size_t expectedSize);

/// Reads the integer or boolean attribute |name| of |op| (a boolean reads as
/// 0 or 1); |fallback| when absent. Emits an error at |op| otherwise.
mlir::FailureOr<int64_t> getInt(mlir::Operation *op, llvm::StringRef name,
                                int64_t fallback);

/// Reads the number attribute |name| of |op| (float or integer) as an f32;
/// |fallback| when absent. Emits an error at |op| otherwise.
mlir::FailureOr<float> getFloat(mlir::Operation *op, llvm::StringRef name,
                                float fallback);

} // namespace dlc::exec

#endif
