//===- OnnxGradientCheckTest.cpp - gradients of imported ONNX ops ---------===//
//
// Autodiff of ONNX ops (several are decompositions into dlgraph ops) against
// central finite differences, through the GradientCheck fixture
// (GradientCheck.h): each model is trained with SGD (lr = 1) and every
// parameter's gradient compared with finite differences of the loss.
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

using namespace mlir;
using namespace dlc::gradient_check;


//===----------------------------------------------------------------------===//
// Ops imported from ONNX (several are decompositions into dlgraph ops): each
// model is y = f(x + w) for a [2, 3] parameter w, trained with the default
// softmax cross-entropy, so the check covers the importer's decomposition and
// every gradient rule it relies on.
//===----------------------------------------------------------------------===//

namespace {

TEST_F(OnnxGradientCheck, Erf) { unaryOp("Erf"); }
TEST_F(OnnxGradientCheck, Tanh) { unaryOp("Tanh"); }
TEST_F(OnnxGradientCheck, Sigmoid) { unaryOp("Sigmoid"); }
// Trigonometric and hyperbolic functions.
TEST_F(OnnxGradientCheck, Sin) { unaryOp("Sin"); }
TEST_F(OnnxGradientCheck, Cos) { unaryOp("Cos"); }
TEST_F(OnnxGradientCheck, Atan) { unaryOp("Atan"); }
TEST_F(OnnxGradientCheck, Shrink) {
  unaryOp("Shrink", {{"lambd", 0.3f}, {"bias", 0.1f}});
}
TEST_F(OnnxGradientCheck, Sinh) { unaryOp("Sinh"); }
TEST_F(OnnxGradientCheck, Cosh) { unaryOp("Cosh"); }
TEST_F(OnnxGradientCheck, Asinh) { unaryOp("Asinh"); }
// Inside their domains: Op(x / 4 + w), x in [-1, 1], w in [lo, hi].
TEST_F(OnnxGradientCheck, Tan) { narrowUnaryOp("Tan", -0.7, 0.7); }
TEST_F(OnnxGradientCheck, Asin) { narrowUnaryOp("Asin", -0.4, 0.4); }
TEST_F(OnnxGradientCheck, Acos) { narrowUnaryOp("Acos", -0.4, 0.4); }
TEST_F(OnnxGradientCheck, Acosh) { narrowUnaryOp("Acosh", 1.5, 2.5); }
TEST_F(OnnxGradientCheck, Atanh) { narrowUnaryOp("Atanh", -0.4, 0.4); }
TEST_F(OnnxGradientCheck, Exp) { unaryOp("Exp"); }
TEST_F(OnnxGradientCheck, Neg) { unaryOp("Neg"); }
TEST_F(OnnxGradientCheck, Abs) { unaryOp("Abs"); }
TEST_F(OnnxGradientCheck, Log) { unaryOp("Log", {}, 1.5, 3); }
TEST_F(OnnxGradientCheck, Sqrt) { unaryOp("Sqrt", {}, 1.5, 3); }
TEST_F(OnnxGradientCheck, Reciprocal) { unaryOp("Reciprocal", {}, 1.5, 3); }
TEST_F(OnnxGradientCheck, Elu) { unaryOp("Elu", {{"alpha", 0.7f}}); }
TEST_F(OnnxGradientCheck, Selu) { unaryOp("Selu"); }
TEST_F(OnnxGradientCheck, LeakyRelu) {
  unaryOp("LeakyRelu", {{"alpha", 0.1f}});
}
TEST_F(OnnxGradientCheck, Softplus) { unaryOp("Softplus"); }
TEST_F(OnnxGradientCheck, HardSigmoid) {
  unaryOp("HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}, -3, 3);
}
TEST_F(OnnxGradientCheck, HardSwish) { unaryOp("HardSwish", {}, -4, 4); }

TEST_F(OnnxGradientCheck, PowBothOperands) {
  // y = (x + w)^e with a positive base and a broadcast exponent parameter.
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("e", {3});
  std::string base = graph.node("Exp", {graph.node("Add", {"x", "w"})});
  run(graph, graph.node("Pow", {base, "e"}), 2);
}

TEST_F(OnnxGradientCheck, VariadicMaxMinWhere) {
  // Max(h, a, b) - Min(h, a) where h > 0, else h (broadcast parameters).
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("a", {3});
  graph.param("b", {2, 1});
  std::string h = graph.node("Add", {"x", "w"});
  std::string mx = graph.node("Max", {h, "a", "b"});
  std::string mn = graph.node("Min", {h, "a"});
  std::string d = graph.node("Sub", {mx, mn});
  std::string c = graph.node("Greater", {h, graph.scalar(0.0f)});
  run(graph, graph.node("Where", {c, d, h}), 3);
}

TEST_F(OnnxGradientCheck, PReluBroadcastSlope) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("slope", {3});
  run(graph, graph.node("PRelu", {graph.node("Add", {"x", "w"}), "slope"}), 2);
}

TEST_F(OnnxGradientCheck, CastThroughDouble) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  std::string d =
      graph.node("Cast", {h}, {}, {{"to", onnx::TensorProto_DataType_DOUBLE}});
  std::string t = graph.node("Tanh", {d});
  run(graph,
      graph.node("Cast", {t}, {}, {{"to", onnx::TensorProto_DataType_FLOAT}}),
      1);
}

TEST_F(OnnxGradientCheck, GeluErfAsExportedByTorch) {
  // torch.nn.functional.gelu at opsets 13..17: x * 0.5 * (1 + erf(x / sqrt 2)).
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  std::string e =
      graph.node("Erf", {graph.node("Div", {h, graph.scalar(1.4142135f)})});
  std::string p = graph.node("Add", {e, graph.scalar(1.0f)});
  std::string m = graph.node("Mul", {h, p});
  run(graph, graph.node("Mul", {m, graph.scalar(0.5f)}), 1);
}

TEST_F(OnnxGradientCheck, GeluTanhAsExportedByTorch) {
  // approximate='tanh': 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  std::string cube = graph.node("Pow", {h, graph.scalar(3.0f)});
  std::string inner = graph.node(
      "Add", {h, graph.node("Mul", {cube, graph.scalar(0.044715f)})});
  std::string t = graph.node(
      "Tanh", {graph.node("Mul", {inner, graph.scalar(0.7978846f)})});
  std::string p = graph.node("Add", {t, graph.scalar(1.0f)});
  std::string m = graph.node("Mul", {h, p});
  run(graph, graph.node("Mul", {m, graph.scalar(0.5f)}), 1);
}

TEST_F(OnnxGradientCheck, SoftmaxAndLogSoftmaxOnAxis0) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  std::string s = graph.node("Softmax", {h}, {}, {{"axis", 0}});
  std::string l = graph.node("LogSoftmax", {h}, {}, {{"axis", -2}});
  run(graph, graph.node("Add", {s, l}), 1);
}


//===----------------------------------------------------------------------===//
// Data movement on parameters: Slice (negative steps, clamped and INT64
// bounds), Concat, Split, Pad (constant with negative pads, reflect, edge),
// Gather (negative and repeated indices, axis 0 and 1) and GatherElements.
//===----------------------------------------------------------------------===//


/// A Constant node holding an int64 tensor of |shape|; returns its output.
std::string int64Constant(OnnxGraph &graph, std::vector<int64_t> values,
                          std::vector<int64_t> shape = {}) {
  std::string name = "i" + std::to_string(graph.counter++);
  auto *n = graph.g->add_node();
  n->set_op_type("Constant");
  n->add_output(name);
  auto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto_DataType_INT64);
  if (shape.empty())
    shape = {(int64_t)values.size()};
  for (int64_t d : shape)
    a->mutable_t()->add_dims(d);
  for (int64_t v : values)
    a->mutable_t()->add_int64_data(v);
  return name;
}

/// The node added last (to set more attributes or outputs).
onnx::NodeProto *lastNode(OnnxGraph &graph) {
  return graph.g->mutable_node(graph.g->node_size() - 1);
}

void setString(onnx::NodeProto *n, const std::string &key,
               const std::string &value) {
  auto *a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(value);
}

std::string slice(OnnxGraph &graph, const std::string &x,
                  std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> axes, std::vector<int64_t> steps) {
  return graph.node("Slice", {x, int64Constant(graph, starts),
                              int64Constant(graph, ends),
                              int64Constant(graph, axes),
                              int64Constant(graph, steps)});
}

TEST_F(OnnxGradientCheck, SliceAndConcat) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 6});
  graph.param("r", {1, 3});
  // Columns 5, 3, 1 (negative step, INT64_MIN end) and 0, 2, 4 (start
  // clamped from -100, INT64_MAX end).
  std::string a = slice(graph, "w", {5}, {INT64_MIN}, {1}, {-2});
  std::string b = slice(graph, "w", {-100}, {INT64_MAX}, {-1}, {2});
  // [a | x] along axis 1, then columns 1..3 mix both.
  std::string c = graph.node("Concat", {a, "x"}, {}, {{"axis", 1}});
  std::string d = slice(graph, c, {1}, {4}, {1}, {1});
  // [x ; r] along axis 0, rows 1..2 (x's second row and r).
  std::string e = graph.node("Concat", {"x", "r"}, {}, {{"axis", 0}});
  std::string f = slice(graph, e, {1}, {3}, {0}, {1});
  std::string y = graph.node("Mul", {graph.node("Add", {d, f}), b});
  run(graph, y, 2);
}

TEST_F(OnnxGradientCheck, SplitSizesAndEqualParts) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 6});
  graph.param("v", {4, 3});
  // w -> [2,1], [2,2], [2,3] (split input); v -> two [2,3] halves.
  std::string o1 = graph.node("Split", {"w", int64Constant(graph, {1, 2, 3})},
                              {}, {{"axis", 1}});
  lastNode(graph)->add_output("s_2cols");
  lastNode(graph)->add_output("s_3cols");
  std::string h1 = graph.node("Split", {"v"}, {}, {{"axis", 0}});
  lastNode(graph)->add_output("s_second");
  std::string y = graph.node(
      "Add", {graph.node("Mul", {"s_3cols", o1}),
              graph.node("Mul", {h1, graph.node("Add", {"s_second", "x"})})});
  run(graph, y, 2);
}

TEST_F(OnnxGradientCheck, PadConstantReflectEdge) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 2});
  graph.param("u", {3, 4});
  graph.param("e", {1, 2});
  // Constant 0.5 on the left; reflect on the right; negative pads crop u;
  // edge repeats e's row and its last column.
  std::string p1 = graph.node("Pad", {"w", int64Constant(graph, {0, 1, 0, 0}),
                                      graph.scalar(0.5f)});
  std::string p2 =
      graph.node("Pad", {"w", int64Constant(graph, {0, 0, 0, 1})});
  setString(lastNode(graph), "mode", "reflect");
  std::string p3 =
      graph.node("Pad", {"u", int64Constant(graph, {-1, 0, 0, -1})});
  std::string p4 =
      graph.node("Pad", {"e", int64Constant(graph, {0, 0, 1, 1})});
  setString(lastNode(graph), "mode", "edge");
  std::string y = graph.node(
      "Add", {graph.node("Mul", {p1, p2}),
              graph.node("Mul", {p3, graph.node("Add", {p4, "x"})})});
  run(graph, y, 3);
}

TEST_F(OnnxGradientCheck, GatherAxis0And1RepeatedNegativeIndices) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("table", {5, 3});
  graph.param("w", {2, 4});
  // Rows 3 and -2 (= 3): a repeated index accumulates; columns 0, 3, -4.
  std::string g1 = graph.node("Gather", {"table", int64Constant(graph, {3, -2})},
                              {}, {{"axis", 0}});
  std::string g2 = graph.node(
      "Gather", {"table", int64Constant(graph, {1, 4, 1, 0}, {2, 2})}, {},
      {{"axis", 0}});
  std::string g2r = graph.node("Reshape", {g2, int64Constant(graph, {4, 3})});
  std::string g2s = slice(graph, g2r, {0}, {2}, {0}, {1});
  std::string g3 = graph.node(
      "Gather", {"w", int64Constant(graph, {0, 3, -4})}, {}, {{"axis", 1}});
  std::string y = graph.node(
      "Add", {graph.node("Mul", {g1, g2s}), graph.node("Mul", {g3, "x"})});
  run(graph, y, 2);
}

TEST_F(OnnxGradientCheck, GatherElementsNegativeRepeated) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 4});
  graph.param("v", {3, 3});
  std::string g1 = graph.node(
      "GatherElements",
      {"w", int64Constant(graph, {0, 3, 3, -1, 1, 2}, {2, 3})}, {},
      {{"axis", 1}});
  std::string g2 = graph.node(
      "GatherElements",
      {"v", int64Constant(graph, {2, 0, -3, 2, 2, 1}, {2, 3})}, {},
      {{"axis", 0}});
  std::string y = graph.node(
      "Add", {graph.node("Mul", {g1, g2}), "x"});
  run(graph, y, 2);
}


/// Sets an INTS attribute on the node added last.
void setInts(OnnxGraph &graph, const std::string &name,
             std::vector<int64_t> values) {
  auto *a = lastNode(graph)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

// The importer's decompositions, checked as ONNX ops: LayerNormalization
// over the last axis, and InstanceNormalization over [1, 2, 3] (2 channels).
TEST_F(OnnxGradientCheck, LayerAndInstanceNormalization) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("scale", {3});
  graph.param("bias", {3});
  graph.param("iscale", {2});
  graph.param("ibias", {2});
  std::string h = graph.node("Add", {"x", "w"});
  std::string ln = graph.node("LayerNormalization", {h, "scale", "bias"}, {},
                              {{"axis", -1}});
  std::string r = graph.node("Reshape", {h, int64Constant(graph, {1, 2, 3})});
  std::string in =
      graph.node("InstanceNormalization", {r, "iscale", "ibias"});
  std::string back = graph.node("Reshape", {in, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {ln, graph.node("Mul", {back, h})}), 5);
}

// Expand and Tile of [1, 3] parameters to [2, 3], Trilu (upper and lower).
TEST_F(OnnxGradientCheck, ExpandTileTrilu) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("e", {1, 3});
  graph.param("t", {1, 3});
  graph.param("u", {2, 3});
  std::string ex = graph.node("Expand", {"e", int64Constant(graph, {2, 3})});
  std::string ti = graph.node("Tile", {"t", int64Constant(graph, {2, 1})});
  std::string up = graph.node("Trilu", {"u"}, {}, {{"upper", 1}});
  std::string lo =
      graph.node("Trilu", {"u", int64Constant(graph, {-1}, {1})}, {},
                 {{"upper", 0}});
  std::string y = graph.node(
      "Add", {graph.node("Mul", {graph.node("Add", {ex, "x"}), ti}),
              graph.node("Mul", {up, graph.node("Add", {lo, "x"})})});
  run(graph, y, 3);
}

// Reductions over axis 1 with keepdims (axes as attribute, and as input for
// ReduceSum), multiplied back onto [2, 3]; Unsqueeze then Squeeze.
TEST_F(OnnxGradientCheck, ReductionsSqueezeUnsqueeze) {
  OnnxGraph graph;
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  std::string e = graph.node("Exp", {h});
  std::vector<std::string> reduced;
  for (const char *op : {"ReduceL2", "ReduceL1", "ReduceMin", "ReduceMax",
                         "ReduceMean", "ReduceSumSquare", "ReduceLogSumExp"}) {
    reduced.push_back(graph.node(op, {h}, {}, {{"keepdims", 1}}));
    setInts(graph, "axes", {1});
  }
  reduced.push_back(graph.node("ReduceLogSum", {e}, {}, {{"keepdims", 1}}));
  setInts(graph, "axes", {1});
  reduced.push_back(
      graph.node("ReduceSum", {h, int64Constant(graph, {1})}, {},
                 {{"keepdims", 1}}));
  std::string sum = reduced[0];
  for (size_t i = 1; i < reduced.size(); ++i)
    sum = graph.node("Add", {sum, graph.node("Mul", {reduced[i],
                                                     graph.scalar(0.1f * i)})});
  std::string u =
      graph.node("Unsqueeze", {h, int64Constant(graph, {0})});
  std::string sq = graph.node("Squeeze", {u, int64Constant(graph, {0})});
  run(graph, graph.node("Mul", {sq, sum}), 1);
}


// Opset 18 forms: GatherND (negative and repeated index tuples, batch_dims
// 0 and 1), ScatterND on run-time data and updates (constant indices, a row
// written twice: the last write wins), Split with num_outputs (uneven),
// SplitToSequence/SequenceAt, ReduceMean with axes as an input and Pad with
// axes.
TEST_F(OnnxGradientCheck, Opset18IndexingOps) {
  OnnxGraph graph;
  graph.model.mutable_opset_import(0)->set_version(18);
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("t", {3, 4, 2});
  graph.param("v", {3, 3});
  std::string h = graph.node("Add", {"x", "w"});
  // [2, 3, 2] index tuples into t's first two axes -> [2, 3, 2] -> mean.
  std::string g1 = graph.node(
      "GatherND",
      {"t", int64Constant(graph, {0, 1, 2, -1, 0, 1, 1, 0, 2, 3, -3, 0},
                          {2, 3, 2})});
  std::string m1 = graph.node("ReduceMean", {g1, int64Constant(graph, {2})},
                              {}, {{"keepdims", 0}});
  // batch_dims 1: row b picks h[b, i].
  std::string g2 = graph.node(
      "GatherND", {h, int64Constant(graph, {2, 0, -1, 1, 1, 0}, {2, 3, 1})},
      {}, {{"batch_dims", 1}});
  // Rows of a [3, 3] copy of t's slice, overwritten by v's rows 0..2 at
  // rows 1, 0, 1 (row 1 ends as v[2]; v[0]'s write is lost).
  std::string base = graph.node(
      "Reshape", {slice(graph, "t", {0, 0, 0}, {3, 3, 1}, {0, 1, 2},
                        {1, 1, 1}),
                  int64Constant(graph, {3, 3})});
  std::string sc = graph.node(
      "ScatterND", {base, int64Constant(graph, {1, 0, 1}, {3, 1}), "v"});
  std::string scRows = slice(graph, sc, {0}, {2}, {0}, {1});
  // Split into [2, 2] and [2, 1], concatenated in reverse order.
  std::string s0 = graph.node("Split", {h}, {}, {{"axis", 1},
                                                 {"num_outputs", 2}});
  lastNode(graph)->add_output(s0 + "_1");
  std::string swapped =
      graph.node("Concat", {s0 + "_1", s0}, {}, {{"axis", 1}});
  // The last column of h as a sequence element, [2] -> [2, 1].
  std::string seq = graph.node("SplitToSequence", {h}, {},
                               {{"axis", 1}, {"keepdims", 0}});
  std::string last = graph.node("SequenceAt", {seq, int64Constant(graph, {-1}, {})});
  std::string col = graph.node("Unsqueeze", {last, int64Constant(graph, {1})});
  // Pad axis 1 by one on each side, then drop the first two columns.
  std::string padded = graph.node(
      "Pad", {h, int64Constant(graph, {1, 1}), graph.scalar(0.5f),
              int64Constant(graph, {1})});
  std::string shifted = slice(graph, padded, {2}, {5}, {1}, {1});
  std::string y = graph.node(
      "Add",
      {graph.node("Mul", {m1, g2}),
       graph.node("Add",
                  {graph.node("Mul", {scRows, swapped}),
                   graph.node("Mul", {col, shifted})})});
  run(graph, y, 3);
}

// ScatterElements (reduction none) and ScatterND (reduction add, a repeated
// row) with indices computed at run time (constant values plus a Cast of
// x * 0): dlgraph.gather_grad / select, whose gradients gather dy back.
TEST_F(OnnxGradientCheck, RuntimeIndexScatters) {
  OnnxGraph graph;
  graph.model.mutable_opset_import(0)->set_version(18);
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("u", {1, 3});
  graph.param("v", {2, 3});
  std::string h = graph.node("Add", {"x", "w"});
  auto runtimeIndex = [&](std::vector<int64_t> values,
                          std::vector<int64_t> shape) {
    std::string zeros = graph.node(
        "Cast", {graph.node("Mul", {"x", graph.scalar(0.0f)})}, {},
        {{"to", onnx::TensorProto_DataType_INT64}});
    // x * 0 is [2, 3]: keep the values' shape by slicing it.
    std::string z = graph.node(
        "ReduceMax", {zeros, int64Constant(graph, {0, 1})}, {},
        {{"keepdims", 0}});
    return graph.node("Add", {int64Constant(graph, values, shape), z});
  };
  std::string se = graph.node(
      "ScatterElements", {h, runtimeIndex({1, 0, -1}, {1, 3}), "u"}, {},
      {{"axis", 0}});
  std::string rows = runtimeIndex({1, 1}, {2, 1});
  auto *red = graph.g->add_node();
  red->set_op_type("ScatterND");
  red->set_name("scatter_add");
  red->add_input(h);
  red->add_input(rows);
  red->add_input("v");
  red->add_output("sa");
  auto *r = red->add_attribute();
  r->set_name("reduction");
  r->set_type(onnx::AttributeProto_AttributeType_STRING);
  r->set_s("add");
  run(graph, graph.node("Mul", {se, "sa"}), 3);
}

// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss as model-computed
// losses (--loss-output): class weights and ignore_index, over [N, C, D].
TEST_F(OnnxGradientCheck, ModelComputedOnnxLosses) {
  for (const char *op : {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}) {
    SCOPED_TRACE(op);
    OnnxGraph graph;
    graph.input("x", {2, 3, 2});
    graph.param("w", {2, 3, 2});
    std::string h = graph.node("Add", {"x", "w"});
    if (std::string(op) == "NegativeLogLikelihoodLoss")
      h = graph.node("LogSoftmax", {h}, {}, {{"axis", 1}});
    // Class weights are a constant (not trained); target 1 at [1, 0] is
    // ignored.
    auto *wc = graph.g->add_initializer();
    wc->set_name("class_w");
    wc->set_data_type(onnx::TensorProto_DataType_DOUBLE);
    wc->add_dims(3);
    for (double v : {0.5, 1.0, 2.0})
      wc->add_double_data(v);
    std::string cast = graph.node("Cast", {"class_w"}, {},
                                  {{"to", onnx::TensorProto_DataType_FLOAT}});
    std::string labels =
        int64Constant(graph, {0, 2, 1, 1}, {2, 2});
    std::string loss = graph.node(op, {h, labels, cast}, {},
                                  {{"ignore_index", 1}});
    auto *attr = lastNode(graph)->add_attribute();
    attr->set_name("reduction");
    attr->set_type(onnx::AttributeProto_AttributeType_STRING);
    attr->set_s("mean");
    auto *out = graph.g->add_output();
    out->set_name(loss);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto_DataType_FLOAT);
    out->mutable_type()->mutable_tensor_type()->mutable_shape();
    std::string path = ::testing::TempDir() + "gradcheck_loss_" +
                       std::to_string(::getpid()) + ".onnx";
    {
      std::ofstream f(path, std::ios::binary);
      ASSERT_TRUE(graph.model.SerializeToOstream(&f));
    }
    auto module = dlc::importONNXModel(context, path, dlc::ImportOptions());
    std::remove(path.c_str());
    ASSERT_TRUE(module);
    Prepared p = prepareModule(std::move(module), loss);
    ASSERT_TRUE(p.trainStep);
    auto interp = Interpreter::create(*p.module);
    ASSERT_TRUE(succeeded(interp));
    interp->variables["w"] = random({2, 3, 2});
    check(p, *interp, {random({2, 3, 2})}, 1);
  }
}

//===----------------------------------------------------------------------===//
// Opset-23 transformer ops (Attention.cpp's decompositions): every input that
// carries a gradient is a parameter, so the check covers Q, K, V, additive
// masks, RMSNormalization's scale and RotaryEmbedding's cos/sin caches.
//===----------------------------------------------------------------------===//

/// A Constant node holding a bool tensor of |shape|.
std::string boolConstant(OnnxGraph &graph, std::vector<int> values,
                         std::vector<int64_t> shape) {
  std::string name = "b" + std::to_string(graph.counter++);
  auto *n = graph.g->add_node();
  n->set_op_type("Constant");
  n->add_output(name);
  auto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto_DataType_BOOL);
  for (int64_t d : shape)
    a->mutable_t()->add_dims(d);
  for (int v : values)
    a->mutable_t()->add_int32_data(v);
  return name;
}

// 3-D, causal, grouped-query: 2 query heads of size 2 read 1 K/V head
// (V head size 1); Y [1, 3, 2] reshaped to [2, 3].
TEST_F(OnnxGradientCheck, AttentionCausalGroupedQuery3D) {
  OnnxGraph graph(23);
  graph.input("x", {2, 3});
  graph.param("q", {1, 3, 4});
  graph.param("k", {1, 3, 2});
  graph.param("v", {1, 3, 1});
  std::string y = graph.node("Attention", {"q", "k", "v"}, {},
                             {{"is_causal", 1},
                              {"q_num_heads", 2},
                              {"kv_num_heads", 1}});
  std::string r = graph.node("Reshape", {y, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {"x", r}), 3);
}

// 4-D, an additive per-head float mask [2, 3, 4] (a parameter too) and a
// boolean mask that drops key 1 for query 0 and key 3 for queries 1 and 2,
// an explicit scale, 2 query heads over 1 K/V head; Sq = 3, Skv = 4.
TEST_F(OnnxGradientCheck, AttentionMasksGroupedQuery4D) {
  OnnxGraph graph(23);
  graph.input("x", {2, 3});
  graph.param("q", {1, 2, 3, 2});
  graph.param("k", {1, 1, 4, 2});
  graph.param("v", {1, 1, 4, 1});
  graph.param("mask", {2, 3, 4});
  std::string keep =
      boolConstant(graph, {1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0}, {1, 1, 3, 4});
  std::string a =
      graph.node("Attention", {"q", "k", "v", "mask"}, {{"scale", 0.7f}});
  std::string b = graph.node("Attention", {"q", "k", "v", keep});
  std::string y = graph.node("Mul", {a, b});
  std::string r = graph.node("Reshape", {y, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {"x", r}), 4);
}

/// Adds output 3 (qk_matmul_output) to the node that defined |y|; returns
/// its name.
std::string qkOutput(OnnxGraph &graph, const std::string &y) {
  for (auto &n : *graph.g->mutable_node())
    if (n.output_size() && n.output(0) == y) {
      std::string qk = y + "_qk";
      n.add_output("");
      n.add_output("");
      n.add_output(qk);
      return qk;
    }
  return "";
}

/// Sum of squares of |s| [2, 1, 3, T] over T, as [2, 3].
std::string rowSquares(OnnxGraph &graph, const std::string &s) {
  std::string r =
      graph.node("ReduceSumSquare", {s, int64Constant(graph, {-1})}, {},
                 {{"keepdims", 0}});
  return graph.node("Reshape", {r, int64Constant(graph, {2, 3})});
}

// Opsets 24 and 25: per-batch key lengths (nonpad_kv_seqlen {4, 2}: batch
// 1's keys 2 and 3 are padding, and its causal offset 2 - 3 = -1 leaves
// query 0 with no key, a zero row) with a causal left window of 1, and a
// bidirectional window (left 0, right 1) after soft-capping; the
// qk_matmul_output scores of both (softmax, mode 3; soft-capped, mode 1)
// are part of the loss. Sq = 3, Skv = 4.
TEST_F(OnnxGradientCheck, AttentionWindowsAndKeyLengths) {
  OnnxGraph graph(25);
  graph.input("x", {2, 3});
  graph.param("q", {2, 1, 3, 2});
  graph.param("k", {2, 1, 4, 2});
  graph.param("v", {2, 1, 4, 1});
  std::string lens = int64Constant(graph, {4, 2});
  std::string a = graph.node("Attention", {"q", "k", "v", "", "", "", lens}, {},
                             {{"is_causal", 1},
                              {"left_window_size", 1},
                              {"qk_matmul_output_mode", 3}});
  std::string aqk = qkOutput(graph, a);
  std::string b = graph.node("Attention", {"q", "k", "v"}, {{"softcap", 2.0f}},
                             {{"left_window_size", 0},
                              {"right_window_size", 1},
                              {"qk_matmul_output_mode", 1}});
  std::string bqk = qkOutput(graph, b);
  auto flat = [&](const std::string &y) {
    return graph.node("Reshape", {y, int64Constant(graph, {2, 3})});
  };
  std::string ys = graph.node("Add", {flat(a), flat(b)});
  std::string ss =
      graph.node("Add", {rowSquares(graph, aqk), rowSquares(graph, bqk)});
  run(graph, graph.node("Add", {graph.node("Add", {"x", ys}), ss}), 3);
}

// Opset 27's sequence-model ops, as unrolled recurrences and a grouped
// convolution: gated-delta LinearAttention with 2 query heads over 1 K/V
// head (d_k = 2, d_v = 1, per-key-dimension decay, per-head beta, a past
// state, T = 3), and CausalConvWithState with SiLU, a bias and a past state
// (kernel 2 over 3 channels, length 2). Every input is a parameter; both
// outputs of each op are in the loss.
TEST_F(OnnxGradientCheck, LinearAttentionAndCausalConvWithState) {
  OnnxGraph graph(27);
  graph.input("x", {2, 3});
  graph.param("q", {1, 3, 4});
  graph.param("k", {1, 3, 2});
  graph.param("v", {1, 3, 1});
  graph.param("state", {1, 1, 2, 1});
  graph.param("decay", {1, 3, 2});
  graph.param("beta", {1, 3, 1});
  graph.param("cx", {1, 3, 2});
  graph.param("cw", {3, 1, 2});
  graph.param("cb", {3});
  graph.param("cpast", {1, 3, 1});
  std::string la =
      graph.node("LinearAttention", {"q", "k", "v", "state", "decay", "beta"},
                 {}, {{"q_num_heads", 2}, {"kv_num_heads", 1}});
  graph.g->mutable_node(graph.g->node_size() - 1)->add_output(la + "_state");
  auto *ua = graph.g->mutable_node(graph.g->node_size() - 1)->add_attribute();
  ua->set_name("update_rule");
  ua->set_type(onnx::AttributeProto_AttributeType_STRING);
  ua->set_s("gated_delta");
  std::string cc =
      graph.node("CausalConvWithState", {"cx", "cw", "cb", "cpast"});
  graph.g->mutable_node(graph.g->node_size() - 1)->add_output(cc + "_state");
  auto *ac = graph.g->mutable_node(graph.g->node_size() - 1)->add_attribute();
  ac->set_name("activation");
  ac->set_type(onnx::AttributeProto_AttributeType_STRING);
  ac->set_s("silu");
  auto flat = [&](const std::string &y) {
    return graph.node("Reshape", {y, int64Constant(graph, {2, 3})});
  };
  // Both outputs [1, 3, 2] as [2, 3]; the conv's present_state [1, 3, 1]
  // scales the columns, LinearAttention's [1, 1, 2, 1] is added to the rows.
  std::string y = graph.node("Add", {flat(la), flat(cc)});
  std::string s1 =
      graph.node("Reshape", {la + "_state", int64Constant(graph, {1, 2})});
  std::string s2 =
      graph.node("Reshape", {cc + "_state", int64Constant(graph, {1, 3})});
  std::string z = graph.node("Add", {graph.node("Mul", {y, s2}), "x"});
  run(graph, graph.node("Add", {z, graph.node("Transpose", {s1})}), 10, -1, 1);
}

TEST_F(OnnxGradientCheck, RMSNormalization) {
  OnnxGraph graph(23);
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("scale", {3});
  std::string h = graph.node("Add", {"x", "w"});
  run(graph,
      graph.node("RMSNormalization", {h, "scale"}, {{"epsilon", 1e-3f}}), 2);
}

// X = x + w as [1, 1, 1, 6] (split halves) or [1, 1, 6] with one head
// (interleaved, partial: 4 of 6 features through position ids 2): the
// gradient reaches X and the cos/sin caches (gathered rows included).
TEST_F(OnnxGradientCheck, RotaryEmbeddingHalvesAndInterleavedPartial) {
  OnnxGraph graph(23);
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("cos", {1, 1, 3});
  graph.param("sin", {1, 1, 3});
  graph.param("pcos", {4, 2});
  graph.param("psin", {4, 2});
  std::string h = graph.node("Add", {"x", "w"});
  std::string x4 =
      graph.node("Reshape", {h, int64Constant(graph, {1, 1, 1, 6})});
  std::string a = graph.node("RotaryEmbedding", {x4, "cos", "sin"});
  std::string x3 = graph.node("Reshape", {h, int64Constant(graph, {1, 1, 6})});
  std::string b = graph.node(
      "RotaryEmbedding", {x3, "pcos", "psin", int64Constant(graph, {2}, {1, 1})},
      {}, {{"interleaved", 1}, {"num_heads", 1}, {"rotary_embedding_dim", 4}});
  std::string y = graph.node(
      "Add", {graph.node("Reshape", {a, int64Constant(graph, {2, 3})}),
              graph.node("Reshape", {b, int64Constant(graph, {2, 3})})});
  run(graph, graph.node("Mul", {y, h}), 5);
}

// The importer's sampling decompositions: Resize cubic (a constant
// interpolation matrix per axis), GridSample bilinear with zeros padding (a
// gather of the taps, weighted by the grid: the gradient reaches the grid)
// and LpPool p = 2 (a depthwise convolution of x^2).
TEST_F(OnnxGradientCheck, ResizeCubicGridSampleLpPool) {
  OnnxGraph graph(22);
  graph.input("x", {2, 3});
  graph.param("w", {2, 3});
  graph.param("grid", {1, 2, 3, 2});
  std::string h = graph.node("Add", {"x", "w"});
  std::string h4 =
      graph.node("Reshape", {h, int64Constant(graph, {1, 1, 2, 3})});
  std::string r = graph.node(
      "Resize", {h4, "", "", int64Constant(graph, {1, 1, 3, 4})});
  auto *mode = lastNode(graph)->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto_AttributeType_STRING);
  mode->set_s("cubic");
  std::string g = graph.node("GridSample", {r, "grid"});
  std::string lp = graph.node("LpPool", {r}, {}, {{"p", 2}});
  setInts(graph, "kernel_shape", {2, 2});
  std::string y = graph.node("Add", {g, lp});
  run(graph, graph.node("Reshape", {y, int64Constant(graph, {2, 3})}), 2,
      -0.9, 0.9);
}

//===----------------------------------------------------------------------===//
// Unrolled control flow and recurrences (ControlFlow.cpp, Recurrent.cpp) and
// the DFT's constant matrix (Spectral.cpp): every weight, bias, initial
// state and scanned sequence is a parameter.
//===----------------------------------------------------------------------===//

/// Output |k| of the last node added to |graph|, named and returned.
std::string extraOutput(OnnxGraph &graph, int k) {
  auto *n = graph.g->mutable_node(graph.g->node_size() - 1);
  while (n->output_size() <= k)
    n->add_output("");
  std::string name = "o" + std::to_string(graph.counter++);
  n->set_output(k, name);
  return name;
}

void setString(OnnxGraph &graph, const std::string &attr,
               const std::string &v) {
  auto *a = graph.g->mutable_node(graph.g->node_size() - 1)->add_attribute();
  a->set_name(attr);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(v);
}

// LSTM with peepholes, initial states and a bias (3 steps, batch 2,
// hidden 3): y = x + Y_h + Y_c, every input a parameter.
TEST_F(OnnxGradientCheck, LSTMUnrolled) {
  OnnxGraph graph(22);
  graph.input("x", {2, 3});
  graph.param("X", {3, 2, 2});
  graph.param("W", {1, 12, 2});
  graph.param("R", {1, 12, 3});
  graph.param("B", {1, 24});
  graph.param("h0", {1, 2, 3});
  graph.param("c0", {1, 2, 3});
  graph.param("P", {1, 9});
  graph.node("LSTM", {"X", "W", "R", "B", "", "h0", "c0", "P"}, {},
             {{"hidden_size", 3}});
  std::string yh = extraOutput(graph, 1), yc = extraOutput(graph, 2);
  std::string s = graph.node("Add", {yh, yc});
  std::string r = graph.node("Reshape", {s, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {"x", r}), 7, -1, 1);
}

// Bidirectional GRU with linear_before_reset (2 steps, batch 1, hidden 3):
// Y_h [2, 1, 3] as [2, 3].
TEST_F(OnnxGradientCheck, GRUBidirectionalLinearBeforeReset) {
  OnnxGraph graph(22);
  graph.input("x", {2, 3});
  graph.param("X", {2, 1, 2});
  graph.param("W", {2, 9, 2});
  graph.param("R", {2, 9, 3});
  graph.param("B", {2, 18});
  graph.node("GRU", {"X", "W", "R", "B"}, {},
             {{"hidden_size", 3}, {"linear_before_reset", 1}});
  setString(graph, "direction", "bidirectional");
  std::string yh = extraOutput(graph, 1);
  std::string r = graph.node("Reshape", {yh, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {"x", r}), 4, -1, 1);
}

// Scan over 2 steps: s' = tanh(s * x_t + b) with b an outer parameter read
// by the body; the scan output (the states, [2, 3]) is y.
TEST_F(OnnxGradientCheck, ScanUnrolled) {
  OnnxGraph graph(21);
  graph.input("x", {2, 3});
  graph.param("s0", {3});
  graph.param("xs", {2, 3});
  graph.param("b", {3});
  graph.node("Scan", {"s0", "xs"}, {}, {{"num_scan_inputs", 1}});
  std::string ys = extraOutput(graph, 1);
  auto *a = graph.g->mutable_node(graph.g->node_size() - 1)->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
  onnx::GraphProto *body = a->mutable_g();
  body->set_name("step");
  OnnxGraph::setShape(body->add_input(), "s_in", {3});
  OnnxGraph::setShape(body->add_input(), "x_t", {3});
  auto addNode = [&](const char *op, std::vector<std::string> ins,
                     const char *out) {
    auto *n = body->add_node();
    n->set_op_type(op);
    for (auto &i : ins)
      n->add_input(i);
    n->add_output(out);
  };
  addNode("Mul", {"s_in", "x_t"}, "m");
  addNode("Add", {"m", "b"}, "p");
  addNode("Tanh", {"p"}, "s_out");
  addNode("Identity", {"s_out"}, "y_t");
  OnnxGraph::setShape(body->add_output(), "s_out", {3});
  OnnxGraph::setShape(body->add_output(), "y_t", {3});
  run(graph, graph.node("Add", {"x", ys}), 3, -1, 1);
}

// DFT (opset 20, constant axis 1, complex [2, 3, 2] parameter) then a
// [2, 1] parameter mixing the real and imaginary parts.
TEST_F(OnnxGradientCheck, DFTComplex) {
  OnnxGraph graph(20);
  graph.input("x", {2, 3});
  graph.param("p", {2, 3, 2});
  graph.param("v", {2, 1});
  std::string f =
      graph.node("DFT", {"p", "", int64Constant(graph, {1}, {})});
  std::string m = graph.node("MatMul", {f, "v"});
  std::string r = graph.node("Reshape", {m, int64Constant(graph, {2, 3})});
  run(graph, graph.node("Add", {"x", r}), 2, -1, 1);
}

} // namespace
