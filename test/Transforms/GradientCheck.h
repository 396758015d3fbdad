//===- GradientCheck.h - fixtures of the gradient checks -------*- C++ -*-===//
//
// The test fixtures GradientCheckTest.cpp (dlgraph models) and
// OnnxGradientCheckTest.cpp (ONNX models) share: GradientCheck builds
// @train_step with SGD (lr = 1) and compares each parameter's gradient from
// the double-precision reference interpreter with central finite
// differences; OnnxGradientCheck builds small ONNX graphs for it.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TEST_TRANSFORMS_GRADIENTCHECK_H
#define DLC_TEST_TRANSFORMS_GRADIENTCHECK_H

#include "compiler/Import/ONNXImporter.h"
#include "compiler/Reference/Interpreter.h"
#include "compiler/Training/Gradients/Gradients.h"
#include "compiler/Training/Passes.h"
#include "dialects/Graph/GraphOps.h"

#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include "onnx/onnx_pb.h"

#include <fstream>
#include <unistd.h>

#include <cmath>
#include <map>
#include <random>

using namespace mlir;
using dlc::reference::Interpreter;
using dlc::reference::Tensor;

namespace dlc::gradient_check {

struct Prepared {
  OwningOpRef<ModuleOp> module;
  func::FuncOp trainStep;
  std::vector<std::string> params;
};

class GradientCheck : public ::testing::Test {
protected:
  GradientCheck() {
    DialectRegistry registry;
    registry.insert<dlc::graph::GraphDialect, func::FuncDialect>();
    dlc::registerGradientInterfaceExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses |text| and builds the training step (SGD, lr 1); |lossOutput|
  /// and |labelSmoothing| are the loss pass's options.
  Prepared prepare(const char *text, const std::string &lossOutput = "",
                   double labelSmoothing = 0.0) {
    return prepareModule(parseSourceString<ModuleOp>(text, &context),
                         lossOutput, labelSmoothing);
  }

  /// Builds the training step of an already parsed or imported module.
  Prepared prepareModule(OwningOpRef<ModuleOp> module,
                         const std::string &lossOutput = "",
                         double labelSmoothing = 0.0) {
    Prepared p;
    p.module = std::move(module);
    EXPECT_TRUE(p.module);
    if (!p.module)
      return p;
    PassManager pm(&context);
    dlc::TrainingOptions options;
    options.optimizer = "sgd";
    options.lr = 1.0;
    options.momentum = 0.0;
    options.weightDecay = 0.0;
    options.lossOutput = lossOutput;
    options.labelSmoothing = labelSmoothing;
    dlc::buildTrainingStepPipeline(pm, options);
    EXPECT_TRUE(succeeded(pm.run(*p.module)));
    p.trainStep = p.module->lookupSymbol<func::FuncOp>("train_step");
    EXPECT_TRUE(p.trainStep);
    for (auto var : p.module->getOps<dlc::graph::VariableOp>())
      if (var.getTrainable())
        p.params.push_back(var.getSymName().str());
    return p;
  }

  Tensor random(std::vector<int64_t> shape, double lo = -1, double hi = 1) {
    Tensor t(std::move(shape));
    std::uniform_real_distribution<double> d(lo, hi);
    for (double &v : t.data)
      v = d(rng);
    return t;
  }

  /// Checks every trainable parameter element's gradient (from one SGD
  /// step with lr 1) against a central difference of the loss. Tolerance:
  /// in double, h = 1e-5 gives truncation error ~h^2 |f'''| (~1e-10 for
  /// these smooth-at-the-point models) and rounding ~1e-16 / h; 1e-6
  /// relative (absolute below 1) leaves a wide margin yet catches any wrong
  /// rule (errors there are O(|g|)).
  void check(Prepared &p, Interpreter &init, const std::vector<Tensor> &args,
             size_t expectedParams) {
    ASSERT_EQ(p.params.size(), expectedParams);
    Interpreter stepped = init;
    auto loss = stepped.run(p.trainStep, args);
    ASSERT_TRUE(succeeded(loss));
    const double h = 1e-5;
    for (const std::string &name : p.params) {
      const Tensor &before = init.variables.at(name);
      const Tensor &after = stepped.variables.at(name);
      for (int64_t i = 0; i < before.numElements(); ++i) {
        double analytic = before.data[i] - after.data[i];
        Interpreter plus = init, minus = init;
        plus.variables[name].data[i] += h;
        minus.variables[name].data[i] -= h;
        auto lp = plus.run(p.trainStep, args);
        auto lm = minus.run(p.trainStep, args);
        ASSERT_TRUE(succeeded(lp) && succeeded(lm));
        double numeric = ((*lp)[0].data[0] - (*lm)[0].data[0]) / (2 * h);
        EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::fabs(numeric)))
            << name << "[" << i << "]";
      }
    }
  }

  MLIRContext context;
  std::mt19937 rng{1234};
};


/// A small ONNX graph under construction (opset 17 unless given).
struct OnnxGraph {
  onnx::ModelProto model;
  onnx::GraphProto *g;
  int counter = 0;

  explicit OnnxGraph(int64_t opset = 17) {
    model.set_ir_version(8);
    auto *imp = model.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    g = model.mutable_graph();
    g->set_name("gradcheck");
  }
  static void setShape(onnx::ValueInfoProto *v, const std::string &name,
                       std::vector<int64_t> shape) {
    v->set_name(name);
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : shape)
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void input(const std::string &name, std::vector<int64_t> shape) {
    setShape(g->add_input(), name, shape);
  }
  void output(const std::string &name, std::vector<int64_t> shape) {
    setShape(g->add_output(), name, shape);
  }
  /// An f32 initializer (a parameter once imported).
  void param(const std::string &name, std::vector<int64_t> shape) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i)
      t->add_float_data(0.0f);
  }
  /// A Constant node holding an f32 scalar; returns its output name.
  std::string scalar(float v) {
    std::string name = "c" + std::to_string(counter++);
    auto *n = g->add_node();
    n->set_op_type("Constant");
    n->add_output(name);
    auto *a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto_DataType_FLOAT);
    a->mutable_t()->add_float_data(v);
    return name;
  }
  /// Adds a node; returns its (first) output name.
  std::string node(const std::string &op, std::vector<std::string> ins,
                   std::vector<std::pair<std::string, float>> floats = {},
                   std::vector<std::pair<std::string, int64_t>> ints = {}) {
    std::string name = "v" + std::to_string(counter++);
    auto *n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + name);
    for (auto &i : ins)
      n->add_input(i);
    n->add_output(name);
    for (auto &[k, v] : floats) {
      auto *a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      a->set_f(v);
    }
    for (auto &[k, v] : ints) {
      auto *a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto_AttributeType_INT);
      a->set_i(v);
    }
    return name;
  }
};

class OnnxGradientCheck : public GradientCheck {
protected:
  /// Imports |graph| (input x [2, 3], parameters as declared, output |y| of
  /// shape [2, 3]) and checks the gradients of all |numParams| parameters,
  /// drawn uniformly from [lo, hi].
  void run(OnnxGraph &graph, const std::string &y, size_t numParams,
           double lo = -2, double hi = 2) {
    graph.output(y, {2, 3});
    std::string path =
        ::testing::TempDir() + "gradcheck_" + std::to_string(::getpid()) + "_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() +
        ".onnx";
    {
      std::ofstream f(path, std::ios::binary);
      ASSERT_TRUE(graph.model.SerializeToOstream(&f));
    }
    auto module = dlc::importONNXModel(context, path, dlc::ImportOptions());
    std::remove(path.c_str());
    ASSERT_TRUE(module);
    Prepared p = prepareModule(std::move(module));
    ASSERT_TRUE(p.trainStep);
    auto interp = Interpreter::create(*p.module);
    ASSERT_TRUE(succeeded(interp));
    for (const std::string &name : p.params)
      interp->variables[name] = random(interp->variables[name].shape, lo, hi);
    Tensor labels({2});
    labels.data = {2, 0};
    check(p, *interp, {random({2, 3}), labels}, numParams);
  }

  /// y = Op(x + w) for a unary ONNX op with float attributes.
  void unaryOp(const std::string &op,
               std::vector<std::pair<std::string, float>> attrs = {},
               double lo = -2, double hi = 2) {
    OnnxGraph graph;
    graph.input("x", {2, 3});
    graph.param("w", {2, 3});
    std::string h = graph.node("Add", {"x", "w"});
    run(graph, graph.node(op, {h}, attrs), 1, lo, hi);
  }

  /// y = Op(x / 4 + w), for ops defined on a narrow domain.
  void narrowUnaryOp(const std::string &op, double lo, double hi) {
    OnnxGraph graph;
    graph.input("x", {2, 3});
    graph.param("w", {2, 3});
    std::string h =
        graph.node("Add", {graph.node("Mul", {"x", graph.scalar(0.25f)}), "w"});
    run(graph, graph.node(op, {h}), 1, lo, hi);
  }
};

} // namespace dlc::gradient_check

#endif // DLC_TEST_TRANSFORMS_GRADIENTCHECK_H
