//===- ExecOps.h - dlexec ops -------------------------------------*- C++ -*-===//
#ifndef DLC_DIALECTS_EXEC_EXECOPS_H
#define DLC_DIALECTS_EXEC_EXECOPS_H

#include "runtime/schema/BuiltinParams.h"
#include "runtime/schema/BuiltinTemplates.h"
#include "dialects/Exec/ExecDialect.h"
#include "runtime/schema/LibraryCalls.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Exec/ExecOps.h.inc"

namespace dlc::exec {

/// A buffer operand stored as a strided window of a larger buffer: a
/// dlexec.subview, which after memory planning remains only as the output
/// of a library call or builtin kernel whose row accepts strided outputs
/// (LibraryCallInfo::stridedOutput, BuiltinTemplateInfo::stridedOutput).
struct StridedView {
  /// Elements from the start of the viewed (dense, row-major) buffer.
  int64_t offset = 0;
  /// Elements between neighbours along each dim of the view.
  llvm::SmallVector<int64_t> strides;
};

/// The view |v| is when it is a dlexec.subview of a dense buffer (an alloc,
/// input, variable or reshape of one), else none.
std::optional<StridedView> stridedViewOf(mlir::Value v);

/// Whether operand |operandNumber| of |op| may be a dlexec.subview that the
/// op writes: the single output of a library call or builtin kernel whose
/// row has stridedOutput.
bool writesStridedOperand(mlir::Operation *op, unsigned operandNumber);

} // namespace dlc::exec

#endif
