//===- GradientRulesTest.cpp - which dlgraph ops have a gradient rule -----===//
//
// The gradient rules are DifferentiableOpInterface external models attached
// by registerGradientInterfaceExternalModels (through registerAllDialects).
// Checks that every op that had a rule in the former name-keyed rule table
// still has one, that the ops declared non-differentiable
// (nonDifferentiableOps) have none, that registration is what attaches them
// and is idempotent, and that a rule builds its vector-Jacobian product
// through the interface.
//
//===----------------------------------------------------------------------===//
#include "compiler/InitAll/InitAll.h"
#include "compiler/Training/Gradients/Gradients.h"
#include "dialects/Graph/DifferentiableOpInterface.h"
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using dlc::graph::DifferentiableOpInterface;

namespace {

/// Every op the rule table registered before the rules became external
/// models (Autodiff.cpp's `ruleTable()`, 60 entries), and the ones added
/// since (cumsum; gather_grad and gather_elements_grad, whose gradients are
/// gathers, for scatters with run-time indices).
// clang-format off
const char *const kDifferentiableOps[] = {
    // Elementwise.cpp
    "relu", "clip", "exp", "log", "neg", "sqrt", "rsqrt", "tanh", "sigmoid",
    "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "abs", "identity", "cast", "add", "sub", "mul",
    "div", "max", "min", "pow", "select", "ceil", "floor", "round", "fmod",
    "dropout",
    // Linear.cpp
    "gemm", "matmul",
    // Conv.cpp
    "conv", "conv_backward_data",
    // Pool.cpp
    "max_pool", "average_pool", "global_average_pool",
    // DataMovement.cpp
    "reshape", "transpose", "broadcast_to", "slice", "pad", "concat", "gather",
    "gather_elements", "resize",
    // Reductions.cpp
    "softmax", "log_softmax", "reduce_sum", "reduce_mean", "reduce_max",
    "reduce_prod", "cumsum", "gather_grad", "gather_elements_grad",
    // Losses.cpp
    "softmax_cross_entropy",
};
// clang-format on

bool hasGradientRule(MLIRContext &ctx, llvm::StringRef mnemonic) {
  std::string name = ("dlgraph." + mnemonic).str();
  std::optional<RegisteredOperationName> info =
      RegisteredOperationName::lookup(name, &ctx);
  EXPECT_TRUE(info.has_value()) << name << " is not a registered op";
  return info && info->hasInterface<DifferentiableOpInterface>();
}

/// A context set up the way dlc and dlc-opt set theirs up.
std::unique_ptr<MLIRContext> makeDlcContext() {
  DialectRegistry registry;
  dlc::registerAllDialects(registry);
  auto ctx = std::make_unique<MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

TEST(GradientRules, EveryFormerlyDifferentiableOpHasTheInterface) {
  // The former table's 60 rules, cumsum, gather_grad and
  // gather_elements_grad.
  EXPECT_EQ(std::size(kDifferentiableOps), 63u);
  auto ctx = makeDlcContext();
  for (const char *op : kDifferentiableOps)
    EXPECT_TRUE(hasGradientRule(*ctx, op)) << "dlgraph." << op;
}

TEST(GradientRules, NonDifferentiableOpsHaveNoInterface) {
  auto ctx = makeDlcContext();
  // The ops declared non-differentiable (Gradients.h): no rule attached.
  EXPECT_EQ(dlc::nonDifferentiableOps().size(), 29u);
  for (llvm::StringRef op : dlc::nonDifferentiableOps()) {
    ASSERT_TRUE(op.consume_front("dlgraph.")) << op.str();
    EXPECT_FALSE(hasGradientRule(*ctx, op)) << "dlgraph." << op.str();
  }
}

TEST(GradientRules, RegistrationAttachesTheRulesAndIsIdempotent) {
  // Without the registration function the ops exist but have no rules.
  {
    MLIRContext ctx;
    ctx.loadDialect<dlc::graph::GraphDialect>();
    EXPECT_FALSE(hasGradientRule(ctx, "relu"));
  }
  // Registering twice, and once more after the dialect is loaded, attaches
  // each rule once and keeps them working.
  DialectRegistry registry;
  registry.insert<dlc::graph::GraphDialect>();
  dlc::registerGradientInterfaceExternalModels(registry);
  dlc::registerGradientInterfaceExternalModels(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  DialectRegistry again;
  dlc::registerGradientInterfaceExternalModels(again);
  ctx.appendDialectRegistry(again);
  for (const char *op : kDifferentiableOps)
    EXPECT_TRUE(hasGradientRule(ctx, op)) << "dlgraph." << op;
}

TEST(GradientRules, RuleBuildsTheVectorJacobianProduct) {
  // d exp(x) = dy * exp(x): one dlgraph.mul of the result gradient and the
  // op's own result; the rule leaves nothing else behind.
  auto ctx = makeDlcContext();
  OpBuilder b(ctx.get());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto t = RankedTensorType::get({4}, b.getF32Type());
  auto fn = func::FuncOp::create(b, loc, "f", b.getFunctionType({t, t}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  auto exp = dlc::graph::ExpOp::create(b, loc, t, body->getArgument(0));
  Value dy = body->getArgument(1);

  auto rule = dyn_cast<DifferentiableOpInterface>(exp.getOperation());
  ASSERT_TRUE(rule);
  SmallVector<Value> dx(1);
  ASSERT_TRUE(succeeded(rule.buildGradients(b, {dy}, dx)));
  ASSERT_TRUE(dx[0]);
  EXPECT_EQ(dx[0].getType(), t);
  auto mul = dx[0].getDefiningOp<dlc::graph::MulOp>();
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->getOperand(0), dy);
  EXPECT_EQ(mul->getOperand(1), exp.getResult());
  EXPECT_EQ(std::distance(body->begin(), body->end()), 2);
}

TEST(GradientRules, NonDifferentiableOperandsGetNoGradient) {
  // select's i1 condition gets no gradient; both branches do.
  auto ctx = makeDlcContext();
  OpBuilder b(ctx.get());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto t = RankedTensorType::get({3}, b.getF32Type());
  auto m = RankedTensorType::get({3}, b.getI1Type());
  auto fn =
      func::FuncOp::create(b, loc, "f", b.getFunctionType({m, t, t, t}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  auto sel =
      dlc::graph::SelectOp::create(b, loc, t, body->getArgument(0),
                                   body->getArgument(1), body->getArgument(2));
  auto rule = cast<DifferentiableOpInterface>(sel.getOperation());
  SmallVector<Value> dx(3);
  ASSERT_TRUE(succeeded(rule.buildGradients(b, {body->getArgument(3)}, dx)));
  EXPECT_FALSE(dx[0]);
  ASSERT_TRUE(dx[1] && dx[2]);
  EXPECT_EQ(dx[1].getType(), t);
  EXPECT_EQ(dx[2].getType(), t);
}

} // namespace
