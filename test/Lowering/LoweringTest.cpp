//===- LoweringTest.cpp - tests of the dlgraph -> dlexec C++ API
//------------===//
#include "compiler/InitAll/InitAll.h"
#include "compiler/Conversion/GraphToExec/Passes.h"
#include "compiler/ExecTransforms/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "dialects/Exec/Analysis/PlanStats.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// An MLP training step: gemm, bias add, relu, loss, relu backward, bias
/// gradient, weight gradient, step counter, Adam and a plain bias update.
const char *kMlp = R"mlir(
module {
  dlgraph.variable @fc1.weight : tensor<8x4xf32> = dense<0.1> : tensor<8x4xf32> {trainable}
  dlgraph.variable @fc1.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32> {trainable}
  dlgraph.variable @fc1.weight.exp_avg : tensor<8x4xf32> {dlgraph.optimizer_state}
  dlgraph.variable @fc1.weight.exp_avg_sq : tensor<8x4xf32> {dlgraph.optimizer_state}
  dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
  func.func @train_step(%x: tensor<2x4xf32> {dlgraph.name = "input"}, %t: tensor<2xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w1 = dlgraph.read_variable @fc1.weight : tensor<8x4xf32>
    %b1 = dlgraph.read_variable @fc1.bias : tensor<8xf32>
    %m = dlgraph.read_variable @fc1.weight.exp_avg : tensor<8x4xf32>
    %v = dlgraph.read_variable @fc1.weight.exp_avg_sq : tensor<8x4xf32>
    %s0 = dlgraph.read_variable @__step : tensor<f32>
    %h = dlgraph.gemm %x, %w1 {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %hb = dlgraph.add %h, %b1 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %r = dlgraph.relu %hb : tensor<2x8xf32>
    %loss = dlgraph.softmax_cross_entropy %r, %t : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
    %one = dlgraph.constant dense<1.0> : tensor<f32>
    %dy = dlgraph.softmax_cross_entropy_grad %r, %t, %one : (tensor<2x8xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x8xf32>
    %zero = dlgraph.constant dense<0.0> : tensor<f32>
    %mask = dlgraph.compare "gt", %r, %zero : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
    %dh = dlgraph.select %mask, %dy, %zero : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %db1 = dlgraph.reduce_sum %dh {axes = array<i64: 0>} : tensor<2x8xf32> -> tensor<8xf32>
    %dw1 = dlgraph.gemm %dh, %x {trans_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
    %s1 = dlgraph.add %s0, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
    dlgraph.write_variable @__step, %s1 : tensor<f32>
    %lr0 = dlgraph.constant dense<1.0e-03> : tensor<f32>
    %p:3 = dlgraph.adam_update %w1, %dw1, %m, %v, %s1, %lr0 {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-08 : f32, weight_decay = 0.0 : f32} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
    dlgraph.write_variable @fc1.weight, %p#0 : tensor<8x4xf32>
    dlgraph.write_variable @fc1.weight.exp_avg, %p#1 : tensor<8x4xf32>
    dlgraph.write_variable @fc1.weight.exp_avg_sq, %p#2 : tensor<8x4xf32>
    %nb = dlgraph.sub %b1, %db1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    dlgraph.write_variable @fc1.bias, %nb : tensor<8xf32>
    return %loss : tensor<f32>
  }
}
)mlir";

struct LoweringTest : ::testing::Test {
  LoweringTest() {
    DialectRegistry registry;
    dlc::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  MLIRContext ctx;
};

TEST_F(LoweringTest, PipelinePlansMlpTrainingStep) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kMlp, &ctx);
  ASSERT_TRUE(module);
  PassManager pm(&ctx);
  dlc::buildLoweringPipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));

  dlc::PlanStats s = dlc::computePlanStats(*module);
  // Kernels after fusion: compare + select, step increment, Adam, bias
  // update. The bias add + relu is the forward gemm's bias+relu epilogue and
  // the reduce_sum (db1) the weight-gradient gemm's bgrad epilogue.
  EXPECT_EQ(s.kernels, 4);
  EXPECT_EQ(s.builtinKernels, 2); // loss and its gradient
  EXPECT_EQ(s.libraryCalls, 2);   // forward gemm and weight-gradient gemm
  // Live at once at most: relu output, dy, dh, loss -> 4 x 256-byte slots.
  EXPECT_EQ(s.arenaBytes, 1024);
  // 3 x 8x4 f32 (128 B) + 8 f32 (32 B) + step (4 B) + the 1.0 constant
  // (4 B): six allocations, each rounded up to 256 bytes as a device
  // allocates it.
  EXPECT_EQ(s.persistentBytes, 6 * 256);

  int funcs = 0;
  for (auto f : module->getOps<dlc::exec::FuncOp>()) {
    ++funcs;
    EXPECT_TRUE(succeeded(dlc::verifyMemoryPlan(f)));
  }
  EXPECT_EQ(funcs, 1);
}

TEST_F(LoweringTest, UnsupportedOpFailsWithDiagnostic) {
  const char *src = R"mlir(
func.func @g(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = func.call @g(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
)mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  std::string messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    messages += d.str() + "\n";
    return success();
  });
  PassManager pm(&ctx);
  dlc::buildLoweringPipeline(pm);
  EXPECT_TRUE(failed(pm.run(*module)));
  EXPECT_NE(messages.find("cannot lower 'func.call'"),
            std::string::npos)
      << messages;
}

TEST_F(LoweringTest, PlanCheckerRejectsOverlap) {
  const char *src = R"mlir(
#id = affine_map<(d0) -> (d0)>
dlexec.func @f attributes {arena_bytes = 256 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  %c = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k2 ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    dlexec.yield %s : f32
  }
}
)mlir";
  // a is read after k1 writes b, and b after k2 writes c: neither pair may
  // share bytes, but c may take a's or b's in place (k2 reads both for the
  // last time, element by element).
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  ScopedDiagnosticHandler handler(&ctx, [](Diagnostic &) { return success(); });
  auto f = *module->getOps<dlc::exec::FuncOp>().begin();
  EXPECT_TRUE(failed(dlc::verifyMemoryPlan(f)));
  // After planning, the same function is accepted.
  PassManager pm(&ctx);
  pm.addPass(dlc::createPlanMemoryPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  EXPECT_TRUE(succeeded(dlc::verifyMemoryPlan(f)));
  EXPECT_EQ(f.getArenaBytes().value_or(0), 512);
}

} // namespace
