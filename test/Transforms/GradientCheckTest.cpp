//===- GradientCheckTest.cpp - autodiff against central finite differences ===//
//
// Builds @train_step with SGD (lr = 1, no momentum, no weight decay), so one
// step turns each trainable parameter p into p - dL/dp; runs it with the
// double-precision reference interpreter and compares dL/dp with central
// finite differences of the loss returned by @train_step. Also checks the
// BatchNorm running-statistics update against a direct computation, one
// conv/BatchNorm training step against PyTorch (torch_reference.py) and the
// optimizer update ops against torch.optim (torch_optim_reference.py).
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

using namespace dlc::gradient_check;

namespace {

TEST_F(GradientCheck, MlpGemmReluSoftmaxCrossEntropy) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w1 : tensor<5x4xf32>
    dlgraph.variable @b1 : tensor<5xf32>
    dlgraph.variable @w2 : tensor<5x3xf32>
    dlgraph.variable @b2 : tensor<1x3xf32>
    func.func @main(%x: tensor<3x4xf32>) -> tensor<3x3xf32> {
      %w1 = dlgraph.read_variable @w1 : tensor<5x4xf32>
      %b1 = dlgraph.read_variable @b1 : tensor<5xf32>
      %w2 = dlgraph.read_variable @w2 : tensor<5x3xf32>
      %b2 = dlgraph.read_variable @b2 : tensor<1x3xf32>
      %h = dlgraph.gemm %x, %w1, %b1 {trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
      %r = dlgraph.relu %h : tensor<3x5xf32>
      %y = dlgraph.gemm %r, %w2, %b2 {alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<3x5xf32>, tensor<5x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
      return %y : tensor<3x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w1"] = random({5, 4});
  interp->variables["b1"] = random({5});
  interp->variables["w2"] = random({5, 3});
  interp->variables["b2"] = random({1, 3});
  Tensor labels({3});
  labels.data = {0, 2, 1};
  check(p, *interp, {random({3, 4}), labels}, 4);
}

// softmax_cross_entropy with label_smoothing 0.3 (and one label outside
// [0, C), which adds nothing): its gradient rule against finite
// differences of its loss.
TEST_F(GradientCheck, SoftmaxCrossEntropyLabelSmoothing) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<5x4xf32>
    func.func @main(%x: tensor<4x4xf32>) -> tensor<4x5xf32> {
      %w = dlgraph.read_variable @w : tensor<5x4xf32>
      %y = dlgraph.gemm %x, %w {trans_b = true} : (tensor<4x4xf32>, tensor<5x4xf32>) -> tensor<4x5xf32>
      return %y : tensor<4x5xf32>
    }
  })mlir";
  Prepared p = prepare(text, "", 0.3);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({5, 4});
  Tensor labels({4});
  labels.data = {0, 4, 2, 7};
  check(p, *interp, {random({4, 4}), labels}, 1);
}

TEST_F(GradientCheck, ConvBatchNormMaxPool) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @cw : tensor<4x2x3x3xf32>
    dlgraph.variable @cb : tensor<4xf32>
    dlgraph.variable @s : tensor<4xf32>
    dlgraph.variable @o : tensor<4xf32>
    dlgraph.variable @rm : tensor<4xf32>
    dlgraph.variable @rv : tensor<4xf32>
    dlgraph.variable @fw : tensor<3x16xf32>
    func.func @main(%x: tensor<2x2x4x4xf32>) -> tensor<2x3xf32> {
      %w = dlgraph.read_variable @cw : tensor<4x2x3x3xf32>
      %b = dlgraph.read_variable @cb : tensor<4xf32>
      %s = dlgraph.read_variable @s : tensor<4xf32>
      %o = dlgraph.read_variable @o : tensor<4xf32>
      %m = dlgraph.read_variable @rm : tensor<4xf32>
      %v = dlgraph.read_variable @rv : tensor<4xf32>
      %fw = dlgraph.read_variable @fw : tensor<3x16xf32>
      %c = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
      %n = dlgraph.batch_norm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
      %r = dlgraph.relu %n : tensor<2x4x4x4xf32>
      %p = dlgraph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
      %f = dlgraph.reshape %p : tensor<2x4x2x2xf32> to tensor<2x16xf32>
      %y = dlgraph.gemm %f, %fw {trans_b = true} : (tensor<2x16xf32>, tensor<3x16xf32>) -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["cw"] = random({4, 2, 3, 3});
  interp->variables["cb"] = random({4});
  interp->variables["s"] = random({4}, 0.5, 1.5);
  interp->variables["o"] = random({4});
  interp->variables["rm"] = random({4});
  interp->variables["rv"] = random({4}, 0.5, 1.5);
  interp->variables["fw"] = random({3, 16});
  Tensor labels({2});
  labels.data = {1, 2};
  check(p, *interp, {random({2, 2, 4, 4}), labels}, 5);
}

TEST_F(GradientCheck, BatchNormRunningStatistics) {
  // BN directly on the input so the batch statistics are known here.
  const char *text = R"mlir(
  module {
    dlgraph.variable @s : tensor<2xf32>
    dlgraph.variable @o : tensor<2xf32>
    dlgraph.variable @rm : tensor<2xf32>
    dlgraph.variable @rv : tensor<2xf32>
    dlgraph.variable @fw : tensor<8x3xf32>
    func.func @main(%x: tensor<3x2x2x2xf32>) -> tensor<3x3xf32> {
      %s = dlgraph.read_variable @s : tensor<2xf32>
      %o = dlgraph.read_variable @o : tensor<2xf32>
      %m = dlgraph.read_variable @rm : tensor<2xf32>
      %v = dlgraph.read_variable @rv : tensor<2xf32>
      %fw = dlgraph.read_variable @fw : tensor<8x3xf32>
      %n = dlgraph.batch_norm %x, %s, %o, %m, %v {epsilon = 1.0e-03 : f32, momentum = 0.75 : f32} : (tensor<3x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2x2x2xf32>
      %f = dlgraph.reshape %n : tensor<3x2x2x2xf32> to tensor<3x8xf32>
      %y = dlgraph.matmul %f, %fw : (tensor<3x8xf32>, tensor<8x3xf32>) -> tensor<3x3xf32>
      return %y : tensor<3x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["s"] = random({2}, 0.5, 1.5);
  interp->variables["o"] = random({2});
  interp->variables["rm"] = random({2});
  interp->variables["rv"] = random({2}, 0.5, 1.5);
  interp->variables["fw"] = random({8, 3});
  Tensor x = random({3, 2, 2, 2}, -2, 3);
  Tensor labels({3});
  labels.data = {0, 1, 2};
  check(p, *interp, {x, labels}, 3);

  // running' = 0.75 running + 0.25 batch; variance unbiased (n = 12).
  Interpreter stepped = *interp;
  ASSERT_TRUE(succeeded(stepped.run(p.trainStep, {x, labels})));
  for (int c = 0; c < 2; ++c) {
    std::vector<double> vals;
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i)
        vals.push_back(x.data[(n * 2 + c) * 4 + i]);
    double mean = 0, var = 0;
    for (double v : vals)
      mean += v / vals.size();
    for (double v : vals)
      var += (v - mean) * (v - mean) / (vals.size() - 1);
    // The momentum attribute is f32 (0.75 is exact), so are the factors.
    EXPECT_NEAR(stepped.variables["rm"].data[c],
                0.75 * interp->variables["rm"].data[c] + 0.25 * mean, 1e-6);
    EXPECT_NEAR(stepped.variables["rv"].data[c],
                0.75 * interp->variables["rv"].data[c] + 0.25 * var, 1e-6);
  }
  // @__step counts the step.
  EXPECT_EQ(stepped.variables["__step"].data[0], 1.0);
}

TEST_F(GradientCheck, BatchedMatMulWithBroadcasting) {
  // numpy.matmul in every form the gradient rule distinguishes: batch dims
  // broadcast on both sides (dA and dB summed back), a 2-D rhs (batch folded
  // into rows), a 1-D rhs, and a 1-D lhs; @a is broadcast against %x too.
  const char *text = R"mlir(
  module {
    dlgraph.variable @a : tensor<1x3x4xf32>
    dlgraph.variable @w : tensor<2x4x5xf32>
    dlgraph.variable @p : tensor<5x4xf32>
    dlgraph.variable @v : tensor<4xf32>
    dlgraph.variable @u : tensor<2xf32>
    func.func @main(%x: tensor<2x1x3x4xf32>) -> tensor<2x3xf32> {
      %a = dlgraph.read_variable @a : tensor<1x3x4xf32>
      %w = dlgraph.read_variable @w : tensor<2x4x5xf32>
      %p = dlgraph.read_variable @p : tensor<5x4xf32>
      %v = dlgraph.read_variable @v : tensor<4xf32>
      %u = dlgraph.read_variable @u : tensor<2xf32>
      %xa = dlgraph.add %x, %a : (tensor<2x1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<2x1x3x4xf32>
      %y = dlgraph.matmul %xa, %w : (tensor<2x1x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x2x3x5xf32>
      %l = dlgraph.matmul %y, %p : (tensor<2x2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x2x3x4xf32>
      %t = dlgraph.tanh %l : tensor<2x2x3x4xf32>
      %r = dlgraph.matmul %t, %v : (tensor<2x2x3x4xf32>, tensor<4xf32>) -> tensor<2x2x3xf32>
      %z = dlgraph.matmul %u, %r : (tensor<2xf32>, tensor<2x2x3xf32>) -> tensor<2x3xf32>
      return %z : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["a"] = random({1, 3, 4});
  interp->variables["w"] = random({2, 4, 5}, -0.5, 0.5);
  interp->variables["p"] = random({5, 4}, -0.5, 0.5);
  interp->variables["v"] = random({4});
  interp->variables["u"] = random({2});
  Tensor labels({2});
  labels.data = {0, 2};
  check(p, *interp, {random({2, 1, 3, 4}), labels}, 5);
}

TEST_F(GradientCheck, FmodAndRounding) {
  // fmod's divisor gradient is -grad * trunc(l / r) (broadcast @r summed
  // back); floor, ceil and round are piecewise constant: zero gradient (the
  // random points are almost surely away from the jumps, h = 1e-5).
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<2x3xf32>
    dlgraph.variable @r : tensor<3xf32>
    dlgraph.variable @c : tensor<2x3xf32>
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %w = dlgraph.read_variable @w : tensor<2x3xf32>
      %r = dlgraph.read_variable @r : tensor<3xf32>
      %c = dlgraph.read_variable @c : tensor<2x3xf32>
      %h = dlgraph.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %m = dlgraph.fmod %h, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %f = dlgraph.floor %c : tensor<2x3xf32>
      %cl = dlgraph.ceil %c : tensor<2x3xf32>
      %rd = dlgraph.round %c : tensor<2x3xf32>
      %s1 = dlgraph.add %m, %f : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %s2 = dlgraph.mul %s1, %cl : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %y = dlgraph.sub %s2, %rd : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({2, 3}, 1.0, 3.0);
  interp->variables["r"] = random({3}, 0.6, 1.4);
  interp->variables["c"] = random({2, 3}, 0.6, 2.4);
  Tensor x = random({2, 3}, -3.0, 3.0);
  Tensor labels({2});
  labels.data = {1, 2};
  check(p, *interp, {x, labels}, 3);
  // Floor, ceil and round pass no gradient to @c, the others do.
  Interpreter stepped = *interp;
  ASSERT_TRUE(succeeded(stepped.run(p.trainStep, {x, labels})));
  EXPECT_EQ(stepped.variables["c"].data, interp->variables["c"].data);
  EXPECT_NE(stepped.variables["r"].data, interp->variables["r"].data);
}

TEST_F(GradientCheck, ElementwiseBroadcastingAndReductions) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<3x4xf32>
    dlgraph.variable @b : tensor<4xf32>
    dlgraph.variable @s : tensor<1x4xf32>
    dlgraph.variable @t : tensor<2x1xf32>
    dlgraph.variable @u : tensor<4x2xf32>
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
      %w = dlgraph.read_variable @w : tensor<3x4xf32>
      %b = dlgraph.read_variable @b : tensor<4xf32>
      %s = dlgraph.read_variable @s : tensor<1x4xf32>
      %t = dlgraph.read_variable @t : tensor<2x1xf32>
      %u = dlgraph.read_variable @u : tensor<4x2xf32>
      %h = dlgraph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %a = dlgraph.add %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      %m = dlgraph.mul %a, %s : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
      %d = dlgraph.sub %m, %t : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
      %th = dlgraph.tanh %d : tensor<2x4xf32>
      %sg = dlgraph.sigmoid %a : tensor<2x4xf32>
      %lg = dlgraph.log %sg : tensor<2x4xf32>
      %e = dlgraph.exp %th : tensor<2x4xf32>
      %sq = dlgraph.sqrt %e : tensor<2x4xf32>
      %rs = dlgraph.rsqrt %e : tensor<2x4xf32>
      %q = dlgraph.div %sq, %e : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %ut = dlgraph.transpose %u {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
      %mx = dlgraph.max %q, %ut : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %mn = dlgraph.min %lg, %ut : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %cl = dlgraph.clip %rs {min = 0.5 : f32, max = 1.2 : f32} : tensor<2x4xf32>
      %two = dlgraph.constant dense<2.0> : tensor<f32>
      %pw = dlgraph.pow %mx, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
      %ng = dlgraph.neg %mn : tensor<2x4xf32>
      %s1 = dlgraph.add %pw, %ng : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %s2 = dlgraph.add %s1, %cl : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %sm = dlgraph.softmax %s2 {axis = 1 : i64} : tensor<2x4xf32>
      %ls = dlgraph.log_softmax %s2 {axis = -1 : i64} : tensor<2x4xf32>
      %rsum = dlgraph.reduce_sum %ls {axes = array<i64: 1>, keepdims} : tensor<2x4xf32> -> tensor<2x1xf32>
      %rmean = dlgraph.reduce_mean %sm {axes = array<i64: 0>} : tensor<2x4xf32> -> tensor<4xf32>
      %rmax = dlgraph.reduce_max %s2 {axes = array<i64: 1>} : tensor<2x4xf32> -> tensor<2xf32>
      %rmax2 = dlgraph.reshape %rmax : tensor<2xf32> to tensor<2x1xf32>
      %bc = dlgraph.broadcast_to %rmean : tensor<4xf32> to tensor<2x4xf32>
      %z1 = dlgraph.mul %bc, %rsum : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
      %z2 = dlgraph.add %z1, %rmax2 : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
      %z3 = dlgraph.add %z2, %sm : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %zero = dlgraph.constant dense<0.0> : tensor<2x4xf32>
      %c = dlgraph.compare "gt", %h, %zero : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
      %sel = dlgraph.select %c, %z3, %d : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %id = dlgraph.identity %sel : tensor<2x4xf32>
      return %id : tensor<2x4xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({3, 4});
  interp->variables["b"] = random({4});
  interp->variables["s"] = random({1, 4});
  interp->variables["t"] = random({2, 1});
  interp->variables["u"] = random({4, 2});
  Tensor labels({2});
  labels.data = {3, 0};
  check(p, *interp, {random({2, 3}), labels}, 5);
}

// ReduceProd's gradient is the product of the other elements of each
// group; rows of the reduced operand hold no zero, one zero and two zeros
// (and the columns mix them). The product is multilinear, so the central
// difference is exact at a zero too.
TEST_F(GradientCheck, ReduceProdWithZeros) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<3x4xf32>
    func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
      %w = dlgraph.read_variable @w : tensor<3x4xf32>
      %d = dlgraph.sub %w, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
      %p = dlgraph.reduce_prod %d {axes = array<i64: 1>, keepdims} : tensor<3x4xf32> -> tensor<3x1xf32>
      %q = dlgraph.reduce_prod %d {axes = array<i64: 0>} : tensor<3x4xf32> -> tensor<4xf32>
      %y = dlgraph.mul %d, %p : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
      %z = dlgraph.add %y, %q : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
      return %z : tensor<3x4xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  Tensor w = random({3, 4}, 0.5, 1.5);
  interp->variables["w"] = w;
  // x = w - d with d in +-[0.5, 1.5], and x = w exactly where d must be 0.
  Tensor x = random({3, 4}, 0.5, 1.5);
  for (int64_t i = 0; i < 12; ++i)
    x.data[i] = w.data[i] - (i % 2 ? x.data[i] : -x.data[i]);
  for (int64_t i : {6, 8, 11})
    x.data[i] = w.data[i];
  Tensor labels({3});
  labels.data = {1, 3, 0};
  check(p, *interp, {x, labels}, 1);
  // The zeros' gradients are not all zero (the one-zero row's is not).
  Interpreter stepped = *interp;
  ASSERT_TRUE(succeeded(stepped.run(p.trainStep, {x, labels})));
  EXPECT_NE(stepped.variables["w"].data[6], w.data[6]);
}

// CumSum's gradient is the scan of dy in the other direction with the same
// exclusivity: all four (exclusive, reverse) forms, on both axes, with
// tanh between them so that each gradient reaches the parameter shaped by
// the others. A one_hot of constant indices (negative and out-of-range
// ones included) scales the result: its indices get no gradient, and
// differentiation passes it by.
TEST_F(GradientCheck, CumSumAllFormsAndOneHot) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<3x5xf32>
    func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
      %w = dlgraph.read_variable @w : tensor<3x5xf32>
      %a = dlgraph.mul %w, %x : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
      %c1 = dlgraph.cumsum %a {axis = 1 : i64} : tensor<3x5xf32>
      %t1 = dlgraph.tanh %c1 : tensor<3x5xf32>
      %c2 = dlgraph.cumsum %t1 {axis = 0 : i64, exclusive, reverse} : tensor<3x5xf32>
      %s2 = dlgraph.add %c2, %t1 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
      %t2 = dlgraph.tanh %s2 : tensor<3x5xf32>
      %c3 = dlgraph.cumsum %t2 {axis = 1 : i64, reverse} : tensor<3x5xf32>
      %t3 = dlgraph.tanh %c3 : tensor<3x5xf32>
      %c4 = dlgraph.cumsum %t3 {axis = 0 : i64, exclusive} : tensor<3x5xf32>
      %s4 = dlgraph.add %c4, %t3 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
      %ids = dlgraph.constant dense<[[0, -1, 7, 2, 3], [1, 1, -4, -5, 0], [3, 2, 1, 0, -2]]> : tensor<3x5xi64>
      %oh = dlgraph.one_hot %ids {axis = 2 : i64, depth = 4 : i64, off_value = 2.500000e-01 : f32, on_value = 1.500000e+00 : f32} : tensor<3x5xi64> -> tensor<3x5x4xf32>
      %pos = dlgraph.constant dense<[[[1.0], [2.0], [3.0], [4.0]]]> : tensor<1x4x1xf32>
      %ohs = dlgraph.reshape %oh : tensor<3x5x4xf32> to tensor<15x1x4xf32>
      %wsum = dlgraph.matmul %ohs, %pos : (tensor<15x1x4xf32>, tensor<1x4x1xf32>) -> tensor<15x1x1xf32>
      %r = dlgraph.reshape %wsum : tensor<15x1x1xf32> to tensor<3x5xf32>
      %y = dlgraph.mul %s4, %r : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
      return %y : tensor<3x5xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({3, 5});
  Tensor labels({3});
  labels.data = {4, 0, 2};
  check(p, *interp, {random({3, 5}), labels}, 1);
}

// Training-mode dropout: the gradient is dy * mask / (1 - ratio) for the
// mask the forward drew; the mask keeps about 1 - ratio of the elements,
// is the same for the same (seed, step) and changes with the step.
TEST_F(GradientCheck, DropoutMaskAndGradient) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<4x6xf32>
    dlgraph.variable @step : tensor<f32>
    func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
      %w = dlgraph.read_variable @w : tensor<4x6xf32>
      %s = dlgraph.read_variable @step : tensor<f32>
      %h = dlgraph.mul %w, %x : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
      %y, %m = dlgraph.dropout %h, %s {ratio = 0.4 : f32, seed = 1234 : i64}
          : (tensor<4x6xf32>, tensor<f32>) -> (tensor<4x6xf32>, tensor<4x6xi1>)
      %t = dlgraph.tanh %y : tensor<4x6xf32>
      return %t : tensor<4x6xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({4, 6});
  interp->variables["step"].data = {3};
  Tensor labels({4});
  labels.data = {1, 5, 0, 2};
  check(p, *interp, {random({4, 6}), labels}, 1);
  // Some gradients are exactly zero (dropped), some are not.
  Interpreter stepped = *interp;
  Tensor x = random({4, 6});
  ASSERT_TRUE(succeeded(stepped.run(p.trainStep, {x, labels})));
  int dropped = 0;
  for (int64_t i = 0; i < 24; ++i)
    dropped += stepped.variables["w"].data[i] == interp->variables["w"].data[i];
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 24);

  // The mask statistics on a larger tensor, through the forward function.
  const char *big = R"mlir(
  module {
    func.func @main(%x: tensor<100x100xf32>, %s: tensor<f32>) -> (tensor<100x100xf32>, tensor<100x100xi1>) {
      %y, %m = dlgraph.dropout %x, %s {ratio = 0.3 : f32, seed = 42 : i64}
          : (tensor<100x100xf32>, tensor<f32>) -> (tensor<100x100xf32>, tensor<100x100xi1>)
      return %y, %m : tensor<100x100xf32>, tensor<100x100xi1>
    }
  })mlir";
  auto module = parseSourceString<ModuleOp>(big, &context);
  ASSERT_TRUE(module);
  auto fn = module->lookupSymbol<func::FuncOp>("main");
  auto bi = Interpreter::create(*module);
  ASSERT_TRUE(succeeded(bi));
  Tensor ones({100, 100}, 1.0), s0({}, 0.0), s1({}, 1.0);
  auto r0 = bi->run(fn, {ones, s0}), r0b = bi->run(fn, {ones, s0}),
       r1 = bi->run(fn, {ones, s1});
  ASSERT_TRUE(succeeded(r0) && succeeded(r0b) && succeeded(r1));
  double kept = 0;
  int64_t differ = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    kept += (*r0)[1].data[i];
    // Kept elements are scaled by 1 / (1 - ratio) (ratio is the f32 0.3),
    // dropped ones are 0.
    EXPECT_DOUBLE_EQ((*r0)[0].data[i], (*r0)[1].data[i] / (1.0 - (double)0.3f));
    differ += (*r0)[1].data[i] != (*r1)[1].data[i];
  }
  // Binomial(10000, 0.7): sd 0.0046 of the fraction; 0.02 is 4.4 sd.
  EXPECT_NEAR(kept / 10000, 0.7, 0.02);
  EXPECT_EQ((*r0)[1].data, (*r0b)[1].data);
  // Independent masks differ in 2 * 0.7 * 0.3 = 42% of the elements.
  EXPECT_GT(differ, 3000);
}

// Resize's gradient (a weighted scatter-add) for bilinear upsampling with
// pytorch_half_pixel and align_corners coordinates and nearest downsampling
// and upsampling with half_pixel / round_prefer_ceil and asymmetric / floor.
TEST_F(GradientCheck, ResizeNearestAndLinear) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @w : tensor<1x2x3x4xf32>
    func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<2x35xf32> {
      %w = dlgraph.read_variable @w : tensor<1x2x3x4xf32>
      %h = dlgraph.mul %w, %x : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
      %a = dlgraph.resize %h {mode = "linear", coordinate_transformation_mode = "pytorch_half_pixel",
             nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 1.6666666666666667, 1.75>}
           : tensor<1x2x3x4xf32> -> tensor<1x2x5x7xf32>
      %b = dlgraph.resize %h {mode = "linear", coordinate_transformation_mode = "align_corners",
             nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 1.3333333333333333, 1.5>}
           : tensor<1x2x3x4xf32> -> tensor<1x2x4x6xf32>
      %c = dlgraph.resize %h {mode = "nearest", coordinate_transformation_mode = "half_pixel",
             nearest_mode = "round_prefer_ceil", scales = array<f64: 1.0, 1.0, 0.6, 0.6>}
           : tensor<1x2x3x4xf32> -> tensor<1x2x1x2xf32>
      %d = dlgraph.resize %h {mode = "nearest", coordinate_transformation_mode = "asymmetric",
             nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 2.0, 1.5>}
           : tensor<1x2x3x4xf32> -> tensor<1x2x6x6xf32>
      %a2 = dlgraph.reshape %a : tensor<1x2x5x7xf32> to tensor<2x35xf32>
      %b2 = dlgraph.reshape %b : tensor<1x2x4x6xf32> to tensor<2x24xf32>
      %c2 = dlgraph.reshape %c : tensor<1x2x1x2xf32> to tensor<2x2xf32>
      %d2 = dlgraph.reshape %d : tensor<1x2x6x6xf32> to tensor<2x36xf32>
      %bs = dlgraph.reduce_sum %b2 {axes = array<i64: 1>, keepdims} : tensor<2x24xf32> -> tensor<2x1xf32>
      %cs = dlgraph.reduce_max %c2 {axes = array<i64: 1>, keepdims} : tensor<2x2xf32> -> tensor<2x1xf32>
      %ds = dlgraph.reduce_sum %d2 {axes = array<i64: 1>, keepdims} : tensor<2x36xf32> -> tensor<2x1xf32>
      %bc = dlgraph.mul %bs, %cs : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
      %m = dlgraph.mul %a2, %ds : (tensor<2x35xf32>, tensor<2x1xf32>) -> tensor<2x35xf32>
      %y = dlgraph.add %m, %bc : (tensor<2x35xf32>, tensor<2x1xf32>) -> tensor<2x35xf32>
      return %y : tensor<2x35xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["w"] = random({1, 2, 3, 4});
  Tensor labels({2});
  labels.data = {4, 30};
  check(p, *interp, {random({1, 2, 3, 4}, 0.2, 0.6), labels}, 1);
}

TEST_F(GradientCheck, GroupedStridedConvAveragePools) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @cw : tensor<4x1x3x3xf32>
    dlgraph.variable @cb : tensor<4xf32>
    dlgraph.variable @fw : tensor<4x3xf32>
    func.func @main(%x: tensor<2x2x5x5xf32>) -> tensor<2x3xf32> {
      %w = dlgraph.read_variable @cw : tensor<4x1x3x3xf32>
      %b = dlgraph.read_variable @cb : tensor<4xf32>
      %fw = dlgraph.read_variable @fw : tensor<4x3xf32>
      %c = dlgraph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<2x2x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x3x2xf32>
      %s = dlgraph.sigmoid %c : tensor<2x4x3x2xf32>
      %a = dlgraph.average_pool %s {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>, count_include_pad} : tensor<2x4x3x2xf32> -> tensor<2x4x3x2xf32>
      %a2 = dlgraph.average_pool %a {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>} : tensor<2x4x3x2xf32> -> tensor<2x4x3x2xf32>
      %g = dlgraph.global_average_pool %a2 : tensor<2x4x3x2xf32> -> tensor<2x4x1x1xf32>
      %f = dlgraph.reshape %g : tensor<2x4x1x1xf32> to tensor<2x4xf32>
      %y = dlgraph.gemm %f, %fw {alpha = 3.0 : f32} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["cw"] = random({4, 1, 3, 3});
  interp->variables["cb"] = random({4});
  interp->variables["fw"] = random({4, 3});
  Tensor labels({2});
  labels.data = {2, 1};
  check(p, *interp, {random({2, 2, 5, 5}), labels}, 3);
}

// ConvTranspose as imported: conv_backward_data of a parameter-dependent
// input, grouped, strided, dilated, asymmetric pads, and one row of
// output_padding (H = 2*(3-1) + 1 + 3 - 1 = 7, W = 2 + 5 - 1 = 6), plus a
// broadcast bias. Every output position feeds the loss through its own gemm
// weight, so a wrong spatial mapping in either gradient would show.
TEST_F(GradientCheck, ConvTransposeGroupedStridedDilated) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @p : tensor<2x2x3x3xf32>
    dlgraph.variable @tw : tensor<2x2x3x3xf32>
    dlgraph.variable @tb : tensor<4x1x1xf32>
    dlgraph.variable @fw : tensor<3x168xf32>
    func.func @main(%x: tensor<2x2x3x3xf32>) -> tensor<2x3xf32> {
      %p = dlgraph.read_variable @p : tensor<2x2x3x3xf32>
      %w = dlgraph.read_variable @tw : tensor<2x2x3x3xf32>
      %b = dlgraph.read_variable @tb : tensor<4x1x1xf32>
      %fw = dlgraph.read_variable @fw : tensor<3x168xf32>
      %h = dlgraph.add %x, %p : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
      %t = dlgraph.conv_backward_data %h, %w {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 1>, dilations = array<i64: 1, 2>, group = 2 : i64} : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x4x7x6xf32>
      %c = dlgraph.add %t, %b : (tensor<2x4x7x6xf32>, tensor<4x1x1xf32>) -> tensor<2x4x7x6xf32>
      %s = dlgraph.tanh %c : tensor<2x4x7x6xf32>
      %f = dlgraph.reshape %s : tensor<2x4x7x6xf32> to tensor<2x168xf32>
      %y = dlgraph.gemm %f, %fw {trans_b = true} : (tensor<2x168xf32>, tensor<3x168xf32>) -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["p"] = random({2, 2, 3, 3});
  interp->variables["tw"] = random({2, 2, 3, 3});
  interp->variables["tb"] = random({4, 1, 1});
  interp->variables["fw"] = random({3, 168});
  Tensor labels({2});
  labels.data = {0, 2};
  check(p, *interp, {random({2, 2, 3, 3}), labels}, 4);
}

// 3-D convolution (rank-5 NCDHW): grouped, strided in depth, dilated in
// height, asymmetric pads, with bias; a parameter added to the input makes
// the input gradient (3-D conv_backward_data) part of the check. Output
// D = (4+1-2)/2+1 = 2, H = (5+1-3)+1 = 4, W = (3+1-2)+1 = 3.
TEST_F(GradientCheck, Conv3DGroupedStridedDilated) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @p : tensor<2x2x4x5x3xf32>
    dlgraph.variable @cw : tensor<4x1x2x2x2xf32>
    dlgraph.variable @cb : tensor<4xf32>
    dlgraph.variable @fw : tensor<3x96xf32>
    func.func @main(%x: tensor<2x2x4x5x3xf32>) -> tensor<2x3xf32> {
      %p = dlgraph.read_variable @p : tensor<2x2x4x5x3xf32>
      %w = dlgraph.read_variable @cw : tensor<4x1x2x2x2xf32>
      %b = dlgraph.read_variable @cb : tensor<4xf32>
      %fw = dlgraph.read_variable @fw : tensor<3x96xf32>
      %h = dlgraph.add %x, %p : (tensor<2x2x4x5x3xf32>, tensor<2x2x4x5x3xf32>) -> tensor<2x2x4x5x3xf32>
      %c = dlgraph.conv %h, %w, %b {strides = array<i64: 2, 1, 1>, pads = array<i64: 1, 0, 0, 0, 1, 1>, dilations = array<i64: 1, 2, 1>, group = 2 : i64} : (tensor<2x2x4x5x3xf32>, tensor<4x1x2x2x2xf32>, tensor<4xf32>) -> tensor<2x4x2x4x3xf32>
      %s = dlgraph.tanh %c : tensor<2x4x2x4x3xf32>
      %f = dlgraph.reshape %s : tensor<2x4x2x4x3xf32> to tensor<2x96xf32>
      %y = dlgraph.gemm %f, %fw {trans_b = true} : (tensor<2x96xf32>, tensor<3x96xf32>) -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["p"] = random({2, 2, 4, 5, 3});
  interp->variables["cw"] = random({4, 1, 2, 2, 2});
  interp->variables["cb"] = random({4});
  interp->variables["fw"] = random({3, 96});
  Tensor labels({2});
  labels.data = {1, 0};
  check(p, *interp, {random({2, 2, 4, 5, 3}), labels}, 4);
}

TEST_F(GradientCheck, ModelComputedLossTransposedGemm) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @a : tensor<4x3xf32>
    dlgraph.variable @b : tensor<5x4xf32>
    func.func @main(%x: tensor<4x2xf32> {dlgraph.name = "x"}) -> (tensor<f32> {dlgraph.name = "total"}) {
      %a = dlgraph.read_variable @a : tensor<4x3xf32>
      %b = dlgraph.read_variable @b : tensor<5x4xf32>
      %y = dlgraph.gemm %a, %b {trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
      %z = dlgraph.gemm %x, %a {trans_a = true, alpha = 0.25 : f32} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
      %zz = dlgraph.matmul %z, %y : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
      %t = dlgraph.tanh %zz : tensor<2x5xf32>
      %l = dlgraph.reduce_mean %t {axes = array<i64: 0, 1>} : tensor<2x5xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
  })mlir";
  Prepared p = prepare(text, "total");
  ASSERT_TRUE(p.trainStep);
  EXPECT_EQ(p.trainStep.getNumArguments(), 1u);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["a"] = random({4, 3});
  interp->variables["b"] = random({5, 4});
  check(p, *interp, {random({4, 2})}, 2);
}

/// 0.5 sin(0.37 i + k) for i in [0, numElements): the deterministic fill that
/// test/Transforms/torch_reference.py uses for the PyTorch side.
Tensor sinFill(std::vector<int64_t> shape, double k, double scale = 1.0,
               double offset = 0.0) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data[i] = offset + scale * 0.5 * std::sin(0.37 * i + k);
  return t;
}

TEST_F(GradientCheck, MatchesPyTorchConvBatchNormStep) {
  // Same model, weights and batch as torch_reference.py (float64 PyTorch,
  // BatchNorm2d in train mode, F.cross_entropy); the expected numbers below
  // are its output. Differences come only from f32 attributes (BN epsilon
  // and momentum rounded to f32: ~1e-8 relative), hence the tolerances.
  const char *text = R"mlir(
  module {
    dlgraph.variable @cw : tensor<3x2x3x3xf32>
    dlgraph.variable @cb : tensor<3xf32>
    dlgraph.variable @s : tensor<3xf32>
    dlgraph.variable @o : tensor<3xf32>
    dlgraph.variable @rm : tensor<3xf32>
    dlgraph.variable @rv : tensor<3xf32>
    dlgraph.variable @fw : tensor<4x12xf32>
    dlgraph.variable @fb : tensor<4xf32>
    func.func @main(%x: tensor<2x2x4x4xf32>) -> tensor<2x4xf32> {
      %w = dlgraph.read_variable @cw : tensor<3x2x3x3xf32>
      %b = dlgraph.read_variable @cb : tensor<3xf32>
      %s = dlgraph.read_variable @s : tensor<3xf32>
      %o = dlgraph.read_variable @o : tensor<3xf32>
      %m = dlgraph.read_variable @rm : tensor<3xf32>
      %v = dlgraph.read_variable @rv : tensor<3xf32>
      %fw = dlgraph.read_variable @fw : tensor<4x12xf32>
      %fb = dlgraph.read_variable @fb : tensor<4xf32>
      %c = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
      %n = dlgraph.batch_norm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
      %r = dlgraph.relu %n : tensor<2x3x4x4xf32>
      %p = dlgraph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x3x4x4xf32> -> tensor<2x3x2x2xf32>
      %f = dlgraph.reshape %p : tensor<2x3x2x2xf32> to tensor<2x12xf32>
      %y = dlgraph.gemm %f, %fw, %fb {trans_b = true} : (tensor<2x12xf32>, tensor<4x12xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  Interpreter &init = *interp;
  init.variables["cw"] = sinFill({3, 2, 3, 3}, 1);
  init.variables["cb"] = sinFill({3}, 2);
  init.variables["s"] = sinFill({3}, 3, 1.0, 1.0);
  init.variables["o"] = sinFill({3}, 4);
  init.variables["rm"] = sinFill({3}, 5);
  init.variables["rv"] = sinFill({3}, 6, 1.0, 1.0);
  init.variables["fw"] = sinFill({4, 12}, 7);
  init.variables["fb"] = sinFill({4}, 8);
  Tensor labels({2});
  labels.data = {1, 3};
  Interpreter stepped = init;
  auto loss = stepped.run(p.trainStep, {sinFill({2, 2, 4, 4}, 9, 2.0), labels});
  ASSERT_TRUE(succeeded(loss));
  EXPECT_NEAR((*loss)[0].data[0], 1.415916498834112, 1e-9);
  std::map<std::string, std::vector<double>> grads = {
      {"cw",
       {0.03992824726932975,   0.14347056873311131,    0.21336301161895677,
        0.2591025247968542,    -0.15048102104688887,   -0.09447640957334297,
        -0.08929795446082428,  0.05261454700918078,    0.2301966046755626,
        -0.053427888722499234, 0.06642804637085964,    0.1420678691494029,
        0.2568084631822966,    -0.14232615204398563,   -0.10915082278169774,
        -0.10781664660825922,  -0.12079619279897391,   0.07396851115234235,
        -0.26230133648572596,  -0.29168396108900146,   -0.3250915420331154,
        -0.02112309131458895,  0.024109772567065813,   0.08294219548258308,
        -0.14755478114476883,  -0.24751322525038622,   -0.3027396814967788,
        -0.17062727848151066,  -0.2400074593066589,    -0.3286355169362305,
        -0.06476548907944119,  -0.008775477403464849,  0.051760197839978206,
        -0.031041721761381726, -0.14384041644206697,   -0.23902316659001416,
        0.12159115434639223,   -0.0012579314950702594, -0.12786133213699236,
        0.13938209943943203,   -0.14155979122539142,   -0.28169698722079306,
        -0.2563798098993805,   -0.17259114686836108,   -0.2309268151337217,
        0.22254620906700823,   0.11684482395231688,    0.01583991807090327,
        0.2906940536451809,    -0.05185034922110926,   -0.20847706489723944,
        -0.08131406319192809,  -0.09394935407983676,   -0.17380240747044107}},
      {"cb",
       {-1.1102230246251565e-16, -1.1102230246251565e-16,
        -1.1102230246251565e-16}},
      {"s", {0.17030193698055254, 0.14733290928966938, -0.03544647557747029}},
      {"o", {-0.03577218266893939, 0.3734369824140359, -0.08737571080856238}},
      {"fw", {0.08609235106233974,  0.0,
              0.49403231711369394,  0.556663038978766,
              0.11795317055269516,  0.02225528182426544,
              0.24952278064446315,  0.3595322382435095,
              0.17650241827375893,  0.08400714923036302,
              0.07784221236143124,  0.1661535707628983,
              0.06005210941345109,  0.0,
              -0.23449262806916252, -0.1640916227869093,
              0.07180026837193969,  0.015523755625749269,
              -0.20732548113099847, -0.1769216907790452,
              0.05116198329582252,  0.05859761587229641,
              -0.10725287418396855, -0.13576423631818849,
              0.007533920838502782, 0.0,
              0.049269546265695616, 0.05447185898203765,
              0.010431260094919315, 0.0019475543347767976,
              0.0258114022537367,   0.035921292629208484,
              0.016195782522983686, 0.007351445330045148,
              0.008496065939170322, 0.017163554725663964,
              -0.15367838131429365, 0.0,
              -0.308809235310227,   -0.44704327517389447,
              -0.2001846990195542,  -0.039726591784791515,
              -0.06800870176720139, -0.2185318400936728,
              -0.24386018409256519, -0.1499562104327046,
              0.020914595883366992, -0.047552889170373785}},
      {"fb",
       {0.4503001947585509, -0.1199349369822994, 0.043930328896557694,
        -0.3742955866728092}},
  };
  for (auto &[name, expected] : grads) {
    const Tensor &before = init.variables.at(name),
                 &after = stepped.variables.at(name);
    ASSERT_EQ((size_t)before.numElements(), expected.size()) << name;
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(before.data[i] - after.data[i], expected[i], 1e-8)
          << name << "[" << i << "]";
  }
  std::vector<double> rm = {-0.3995428241685273, -0.338768746607439,
                            -0.2320570102519612},
                      rv = {0.8125084248005917, 0.9753093622210012,
                            1.133256343046657};
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(stepped.variables["rm"].data[c], rm[c], 1e-6);
    EXPECT_NEAR(stepped.variables["rv"].data[c], rv[c], 1e-6);
  }
}

TEST_F(GradientCheck, OptimizerUpdatesMatchTorchOptim) {
  // Three steps of sgd_update / adam_update as the training step emits them
  // (step counter read, incremented, written) against torch.optim.SGD
  // (momentum 0.9, weight_decay 0.01, lr 0.1), Adam and AdamW (lr 0.01,
  // weight_decay 0.1) in float64, gradients 0.5 sin(0.37 i + 10 + t)
  // (torch_optim_reference.py). Attributes are f32 (lr, betas, epsilon
  // rounded), which moves the results by ~1e-8; tolerance 1e-7.
  const char *text = R"mlir(
  module {
    dlgraph.variable @p : tensor<4xf32>
    dlgraph.variable @pb : tensor<4xf32>
    dlgraph.variable @q : tensor<4xf32>
    dlgraph.variable @qm : tensor<4xf32>
    dlgraph.variable @qv : tensor<4xf32>
    dlgraph.variable @r : tensor<4xf32>
    dlgraph.variable @rm : tensor<4xf32>
    dlgraph.variable @rv : tensor<4xf32>
    dlgraph.variable @__step : tensor<f32>
    func.func @step(%g: tensor<4xf32>) -> tensor<f32> {
      %s0 = dlgraph.read_variable @__step : tensor<f32>
      %one = dlgraph.constant dense<1.0> : tensor<f32>
      %s = dlgraph.add %s0, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
      dlgraph.write_variable @__step, %s : tensor<f32>
      %p = dlgraph.read_variable @p : tensor<4xf32>
      %pb = dlgraph.read_variable @pb : tensor<4xf32>
      %lr0 = dlgraph.constant dense<0.1> : tensor<f32>
      %p1, %pb1 = dlgraph.sgd_update %p, %g, %pb, %s, %lr0 {momentum = 0.9 : f32, weight_decay = 0.01 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
      dlgraph.write_variable @p, %p1 : tensor<4xf32>
      dlgraph.write_variable @pb, %pb1 : tensor<4xf32>
      %q = dlgraph.read_variable @q : tensor<4xf32>
      %qm = dlgraph.read_variable @qm : tensor<4xf32>
      %qv = dlgraph.read_variable @qv : tensor<4xf32>
      %lr1 = dlgraph.constant dense<0.01> : tensor<f32>
      %q1, %qm1, %qv1 = dlgraph.adam_update %q, %g, %qm, %qv, %s, %lr1 {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      dlgraph.write_variable @q, %q1 : tensor<4xf32>
      dlgraph.write_variable @qm, %qm1 : tensor<4xf32>
      dlgraph.write_variable @qv, %qv1 : tensor<4xf32>
      %r = dlgraph.read_variable @r : tensor<4xf32>
      %rm = dlgraph.read_variable @rm : tensor<4xf32>
      %rv = dlgraph.read_variable @rv : tensor<4xf32>
      %lr2 = dlgraph.constant dense<0.01> : tensor<f32>
      %r1, %rm1, %rv1 = dlgraph.adam_update %r, %g, %rm, %rv, %s, %lr2 {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, weight_decay = 0.1 : f32, decoupled} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      dlgraph.write_variable @r, %r1 : tensor<4xf32>
      dlgraph.write_variable @rm, %rm1 : tensor<4xf32>
      dlgraph.write_variable @rv, %rv1 : tensor<4xf32>
      return %s : tensor<f32>
    }
  })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  auto step = module->lookupSymbol<func::FuncOp>("step");
  auto interp = Interpreter::create(*module);
  ASSERT_TRUE(succeeded(interp));
  for (const char *name : {"p", "q", "r"})
    interp->variables[name] = sinFill({4}, 1);
  for (int t = 0; t < 3; ++t) {
    auto s = interp->run(step, {sinFill({4}, 10 + t)});
    ASSERT_TRUE(succeeded(s));
    EXPECT_EQ((*s)[0].data[0], t + 1.0);
  }
  std::map<std::string, std::vector<double>> expected = {
      {"p",
       {0.6137664251286974, 0.6950209219371503, 0.6822075974519467,
        0.5770606750321371}},
      {"q",
       {0.44979762480024954, 0.5182169200297343, 0.5184154937274404,
        0.4504857156040487}},
      {"r",
       {0.4487165697388497, 0.5171103404129831, 0.5178199828136077,
        0.4505204600523753}}};
  for (auto &[name, values] : expected)
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(interp->variables[name].data[i], values[i], 1e-7)
          << name << "[" << i << "]";
}

} // namespace

namespace {

// dlgraph.attention's gradient rule (dlgraph.attention_grad, evaluated by
// the reference from the saved log-sum-exp) against finite differences:
// grouped-query heads (4 query heads on 2 K/V heads), Q stored [B, S, H, D]
// (seq_first) with a different V head size, a causal mask over Sq < Skv
// (bottom-right aligned) and an additive mask from an input, and the
// fused op's dropout (ratio 0.3: the same mask on every evaluation).
TEST_F(GradientCheck, FusedAttentionGroupedCausalMaskedDropout) {
  const char *text = R"mlir(
  module {
    dlgraph.variable @wq : tensor<2x3x4x5xf32>
    dlgraph.variable @wk : tensor<2x2x4x5xf32>
    dlgraph.variable @wv : tensor<2x2x4x3xf32>
    func.func @main(%x: tensor<2x3x4x5xf32>, %m: tensor<2x1x1x4xf32>, %s: tensor<f32>) -> tensor<24x3xf32> {
      %wq = dlgraph.read_variable @wq : tensor<2x3x4x5xf32>
      %k = dlgraph.read_variable @wk : tensor<2x2x4x5xf32>
      %v = dlgraph.read_variable @wv : tensor<2x2x4x3xf32>
      %q = dlgraph.add %x, %wq : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
      %o, %lse = dlgraph.attention %q, %k, %v mask %m step %s {scale = 0.7 : f64, causal = true, seq_first = array<i1: true, false, false, false>, dropout_ratio = 0.3 : f32, seed = 11 : i64} : (tensor<2x3x4x5xf32>, tensor<2x2x4x5xf32>, tensor<2x2x4x3xf32>, tensor<2x1x1x4xf32>, tensor<f32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3xf32>)
      %y = dlgraph.reshape %o : tensor<2x4x3x3xf32> to tensor<24x3xf32>
      return %y : tensor<24x3xf32>
    }
  })mlir";
  Prepared p = prepare(text);
  ASSERT_TRUE(p.trainStep);
  auto interp = Interpreter::create(*p.module);
  ASSERT_TRUE(succeeded(interp));
  interp->variables["wq"] = random({2, 3, 4, 5});
  interp->variables["wk"] = random({2, 2, 4, 5});
  interp->variables["wv"] = random({2, 2, 4, 3});
  Tensor step(std::vector<int64_t>{});
  step.data = {3.0};
  Tensor mask = random({2, 1, 1, 4});
  mask.data[3] = -1e30; // one key masked out of the first sample
  Tensor labels({24});
  for (int i = 0; i < 24; ++i)
    labels.data[i] = i % 3;
  check(p, *interp, {random({2, 3, 4, 5}), mask, step, labels}, 3);
}

} // namespace
