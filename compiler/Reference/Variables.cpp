//===- Variables.cpp - constants and variables, reference interpreter -----===//
// dlgraph.constant, read_variable and write_variable: they read an attribute
// or a variable, or record a write that run() applies at the return.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

void dlc::reference::populateReferenceVariables(EvalTable &table) {
  // A dense constant; any other attribute is not evaluated.
  table.add<ConstantOp>([](Frame &, ConstantOp c) -> FailureOr<Tensor> {
    Tensor t(shapeOf(c.getResult()));
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return failure();
    int64_t i = 0;
    if (isa<FloatType>(dense.getElementType()))
      for (APFloat v : dense.getValues<APFloat>())
        t.data[i++] = v.convertToDouble();
    else
      for (APInt v : dense.getValues<APInt>())
        t.data[i++] = (double)v.getSExtValue();
    return t;
  });
  table.add<ReadVariableOp>([](Frame &f, ReadVariableOp o) {
    return f.variables[o.getVariable().str()];
  });
  table.add<WriteVariableOp>([](Frame &f, WriteVariableOp o) {
    f.writes.push_back({o.getVariable().str(), f.get(o.getValue())});
    return Tensor();
  });
}
