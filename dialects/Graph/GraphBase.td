//===- GraphBase.td - dlgraph dialect definition -----------*- tablegen -*-===//
// The dlgraph dialect: a tensor graph with static shapes, one op per ONNX
// operator the product supports, plus the loss, gradient and optimizer-update
// ops that compiled training adds.
#ifndef DLC_DIALECT_GRAPH_BASE_TD
#define DLC_DIALECT_GRAPH_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

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
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // DLC_DIALECT_GRAPH_BASE_TD
