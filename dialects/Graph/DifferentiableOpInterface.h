//===- DifferentiableOpInterface.h - reverse-mode rules ---------*- C++ -*-===//
// The dlgraph op interface for reverse-mode automatic differentiation
// (`DifferentiableOpInterface.td` documents the contract).
#ifndef DLC_DIALECTS_GRAPH_DIFFERENTIABLEOPINTERFACE_H
#define DLC_DIALECTS_GRAPH_DIFFERENTIABLEOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Graph/DifferentiableOpInterface.h.inc"

#endif // DLC_DIALECTS_GRAPH_DIFFERENTIABLEOPINTERFACE_H
