//===- GraphOps.h - dlgraph ops -----------------------------------*- C++ -*-===//
#ifndef DLC_DIALECTS_GRAPH_GRAPHOPS_H
#define DLC_DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/Graph/GraphTrainingOps.h.inc"

#endif
