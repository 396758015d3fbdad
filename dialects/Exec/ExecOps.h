//===- ExecOps.h - dlexec ops -------------------------------------*- C++ -*-===//
#ifndef DLC_DIALECTS_EXEC_EXECOPS_H
#define DLC_DIALECTS_EXEC_EXECOPS_H

#include "dialects/Exec/BuiltinTemplates.h"
#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/LibraryCalls.h"
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

#endif
