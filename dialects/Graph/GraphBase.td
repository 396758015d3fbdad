//===- GraphBase.td - dlgraph dialect definition -----------*- tablegen -*-===//
// The dlgraph dialect: a tensor graph with static shapes, one op per ONNX
// operator the product supports, plus the loss, gradient and optimizer-update
// ops that compiled training adds.
#ifndef DLC_DIALECT_GRAPH_BASE_TD
#define DLC_DIALECT_GRAPH_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "dialects/Graph/GraphInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "dlgraph";
  let cppNamespace = "::dlc::graph";
  let summary = "Tensor graph of a model: ONNX-level ops, losses, gradients, optimizer updates";
  let description = [{
    Values are statically shaped ranked tensors (f32, f64, i32, i64, i1). Model
    parameters and optimizer state are `dlgraph.variable` symbols at module
    level; graph functions are `func.func` ops that read them with
    `dlgraph.read_variable` and, in a training step, update them with
    `dlgraph.write_variable`. Every op created by the ONNX importer carries a
    location naming its ONNX node.
  }];
  let hasConstantMaterializer = 1;
  // The dlgraph.* discardable attributes between phases are declared in
  // GraphAttributes.h and checked in GraphAttributes.cpp.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

// Every dlgraph op answers PrecisionClassOpInterface and
// RecomputeCostOpInterface; its trait list must hold one precision trait
// (Graph_LowPrecision, Graph_KeepsF32, Graph_FollowsOperands) and one
// recompute-cost trait (Graph_Recompute*, Graph_NotRecomputable), or the op
// does not compile.
class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic,
         !listconcat(traits, [Graph_PrecisionClassOpInterface,
                              Graph_RecomputeCostOpInterface])>;

#endif // DLC_DIALECT_GRAPH_BASE_TD
