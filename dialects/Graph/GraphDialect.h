//===- GraphDialect.h - dlgraph dialect ---------------------------*- C++ -*-===//
#ifndef DLC_DIALECTS_GRAPH_GRAPHDIALECT_H
#define DLC_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Graph/GraphDialect.h.inc"

#endif
