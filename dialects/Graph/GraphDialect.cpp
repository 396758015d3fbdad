//===- GraphDialect.cpp - dlgraph dialect registration ----------------------===//
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;

#include "dialects/Graph/GraphDialect.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/GraphOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/GraphTrainingOps.cpp.inc"
      >();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
