//===- CodegenBuiltinTest.cpp - built-in kernel templates on the host -----===//
//
// The built-in templates (pooling, softmax, cross entropy) run on the host
// against reference loops written here, and compile with NVRTC; tolerances
// as in CodegenTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "test/Codegen/CodegenTestUtils.h"

#include "dialects/Exec/ExecOps.h"

#include <array>
#include <map>

using namespace mlir;
using namespace dlc::codegen;
using namespace dlc::codegen::test;

namespace {

//===----------------------------------------------------------------------===//
// Built-in templates
//===----------------------------------------------------------------------===//

// x [2, 3, 5, 6] pooled by 3x2 windows, strides (2, 2), pads
// [top 1, left 0, bottom 1, right 1]: OH = (5 + 2 - 3) / 2 + 1 = 3,
// OW = (6 + 1 - 2) / 2 + 1 = 3.
const int N = 2, C = 3, H = 5, W = 6, OH = 3, OW = 3, KH = 3, KW = 2, SH = 2,
          SW = 2, PT = 1, PL = 0, PB = 1, PR = 1;

const char *kPooling = R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<2x3x5x6xf32>
  %dy = dlexec.input "dy" : memref<2x3x3x3xf32>
  %y = dlexec.alloc : memref<2x3x3x3xf32>
  %dx = dlexec.alloc : memref<2x3x5x6xf32>
  %ay = dlexec.alloc : memref<2x3x3x3xf32>
  %adx = dlexec.alloc : memref<2x3x5x6xf32>
  %ay2 = dlexec.alloc : memref<2x3x3x3xf32>
  %adx2 = dlexec.alloc : memref<2x3x5x6xf32>
  %idx = dlexec.alloc : memref<2x3x3x3xi32>
  %dxi = dlexec.alloc : memref<2x3x5x6xf32>
  dlexec.builtin_kernel @mp "max_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%y : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       dilations = array<i64: 1, 1>, ceil_mode = 0 : i64}
  dlexec.builtin_kernel @mp_grad "max_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%dx : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @mp_idx "max_pool2d_indices" ins(%x : memref<2x3x5x6xf32>) outs(%idx : memref<2x3x3x3xi32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @mp_idx_grad "max_pool2d_indices_grad" ins(%idx, %dy : memref<2x3x3x3xi32>, memref<2x3x3x3xf32>)
      outs(%dxi : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @ap "average_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%ay : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 0 : i64}
  dlexec.builtin_kernel @ap_grad "average_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%adx : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 0 : i64}
  dlexec.builtin_kernel @ap_pad "average_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%ay2 : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 1 : i64}
  dlexec.builtin_kernel @ap_pad_grad "average_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%adx2 : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 1 : i64}
}
)mlir";

/// Reference pooling by scatter (the opposite formulation of the kernels).
struct PoolReference {
  std::vector<float> maxY, maxDx, avgY, avgDx, avgPadY, avgPadDx;
  /// Per output: the flat index ih * W + iw of its first maximum.
  std::vector<int32_t> argmax;
  PoolReference(const std::vector<float> &x, const std::vector<float> &dy) {
    maxY.assign(N * C * OH * OW, 0);
    avgY = avgPadY = maxY;
    maxDx.assign(N * C * H * W, 0);
    avgDx = avgPadDx = maxDx;
    for (int nc = 0; nc < N * C; ++nc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          int o = (nc * OH + oh) * OW + ow;
          float best = -INFINITY, sum = 0;
          int bestIdx = -1, count = 0;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              int ih = oh * SH - PT + kh, iw = ow * SW - PL + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              int idx = (nc * H + ih) * W + iw;
              if (bestIdx < 0 || x[idx] > best) {
                best = x[idx];
                bestIdx = idx;
              }
              sum += x[idx];
              ++count;
            }
          // Padded window size, clipped to the padded input (PyTorch).
          int hs = oh * SH - PT, ws = ow * SW - PL;
          int he = std::min(hs + KH, H + PB), we = std::min(ws + KW, W + PR);
          int padCount = (he - hs) * (we - ws);
          maxY[o] = best;
          maxDx[bestIdx] += dy[o];
          argmax.push_back(bestIdx - nc * H * W);
          avgY[o] = sum / count;
          avgPadY[o] = sum / padCount;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              int ih = oh * SH - PT + kh, iw = ow * SW - PL + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              int idx = (nc * H + ih) * W + iw;
              avgDx[idx] += dy[o] / count;
              avgPadDx[idx] += dy[o] / padCount;
            }
        }
  }
};

TEST_F(CodegenTest, PoolingTemplatesOnHost) {
  auto module = parse(kPooling);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  std::vector<float> x = randomVector(N * C * H * W, 4);
  // Ties: the gradient must go to the first maximum in scan order only.
  for (int i = 0; i < W; ++i)
    x[W + i] = x[i] = 5.0f;
  std::vector<float> dy = randomVector(N * C * OH * OW, 5);
  PoolReference ref(x, dy);
  auto run = [&](const char *name, std::vector<float> out, bool grad) {
    HostKernel k = lib.get(name);
    EXPECT_TRUE(k) << name;
    if (!k)
      return out;
    std::vector<void *> args = {x.data()};
    if (grad)
      args.push_back(dy.data());
    args.push_back(out.data());
    k(args.data());
    return out;
  };
  std::vector<float> ySize(N * C * OH * OW, -7), xSize(N * C * H * W, -7);
  expectClose(run("mp", ySize, false), ref.maxY, 0.0f, "max_pool2d");
  expectClose(run("mp_grad", xSize, true), ref.maxDx, 1e-6f, "max_pool2d_grad");
  // The argmax form: the indices of the first maxima, and a gradient
  // bit-identical to max_pool2d_grad's.
  std::vector<int32_t> idx(N * C * OH * OW, -7);
  if (HostKernel k = lib.get("mp_idx")) {
    std::vector<void *> args = {x.data(), idx.data()};
    k(args.data());
  }
  EXPECT_EQ(idx, ref.argmax) << "max_pool2d_indices";
  std::vector<float> dxi(N * C * H * W, -7);
  if (HostKernel k = lib.get("mp_idx_grad")) {
    std::vector<void *> args = {idx.data(), dy.data(), dxi.data()};
    k(args.data());
  }
  std::vector<float> dx = run("mp_grad", xSize, true);
  EXPECT_EQ(0, std::memcmp(dxi.data(), dx.data(), dx.size() * sizeof(float)))
      << "max_pool2d_indices_grad differs from max_pool2d_grad";
  expectClose(run("ap", ySize, false), ref.avgY, 1e-6f, "average_pool2d");
  expectClose(run("ap_grad", xSize, true), ref.avgDx, 1e-6f,
              "average_pool2d_grad");
  expectClose(run("ap_pad", ySize, false), ref.avgPadY, 1e-6f,
              "average_pool2d count_include_pad");
  expectClose(run("ap_pad_grad", xSize, true), ref.avgPadDx, 1e-6f,
              "average_pool2d_grad count_include_pad");
}

TEST_F(CodegenTest, PoolingTemplatesCompileWithNVRTC) {
  auto module = parse(kPooling);
  ASSERT_TRUE(module);
  checkCuda(*module, 8);
}

// softmax / log_softmax over the middle axis of [2, 3, 4]; cross entropy of
// logits [2, 2, 3] with labels [2, 2].
const char *kSoftmax = R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<2x3x4xf32>
  %y = dlexec.alloc : memref<2x3x4xf32>
  %ly = dlexec.alloc : memref<2x3x4xf32>
  %logits = dlexec.input "logits" : memref<2x2x3xf32>
  %labels = dlexec.input "labels" : memref<2x2xi64>
  %g = dlexec.input "g" : memref<f32>
  %loss = dlexec.alloc : memref<f32>
  %dl = dlexec.alloc : memref<2x2x3xf32>
  dlexec.builtin_kernel @sm "softmax" ins(%x : memref<2x3x4xf32>) outs(%y : memref<2x3x4xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @lsm "log_softmax" ins(%x : memref<2x3x4xf32>) outs(%ly : memref<2x3x4xf32>) {axis = -2 : i64}
  dlexec.builtin_kernel @ce "softmax_cross_entropy" ins(%logits, %labels : memref<2x2x3xf32>, memref<2x2xi64>)
      outs(%loss : memref<f32>)
  dlexec.builtin_kernel @ce_grad "softmax_cross_entropy_grad"
      ins(%logits, %labels, %g : memref<2x2x3xf32>, memref<2x2xi64>, memref<f32>) outs(%dl : memref<2x2x3xf32>)
}
)mlir";

TEST_F(CodegenTest, SoftmaxTemplatesOnHost) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel sm = lib.get("sm"), lsm = lib.get("lsm");
  ASSERT_TRUE(sm && lsm);
  std::vector<float> x = randomVector(24, 6, -30.0f, 30.0f);
  std::vector<float> y(24, -1), ly(24, -1), wantY(24), wantLy(24);
  void *args1[] = {x.data(), y.data()};
  sm(args1);
  void *args2[] = {x.data(), ly.data()};
  lsm(args2);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) {
      double sum = 0;
      for (int k = 0; k < 3; ++k)
        sum += std::exp((double)x[(a * 3 + k) * 4 + c]);
      for (int k = 0; k < 3; ++k) {
        int i = (a * 3 + k) * 4 + c;
        wantY[i] = float(std::exp((double)x[i]) / sum);
        wantLy[i] = float((double)x[i] - std::log(sum));
      }
    }
  expectClose(y, wantY, 1e-5f, "softmax");
  expectClose(ly, wantLy, 1e-5f, "log_softmax");
}

TEST_F(CodegenTest, CrossEntropyMatchesHandComputation) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel ce = lib.get("ce"), ceGrad = lib.get("ce_grad");
  ASSERT_TRUE(ce && ceGrad);
  // Rows: [0,0,0] label 1; [1,2,3] label 2; [ln 1, ln 2, ln 5] label 0
  // (probabilities 1/8, 2/8, 5/8); [100, 0, 0] label 0.
  std::vector<float> logits = {
      0, 0, 0, 1, 2, 3, 0, std::log(2.0f), std::log(5.0f), 100, 0, 0};
  std::vector<int64_t> labels = {1, 2, 0, 0};
  float g = 2.0f, loss = -1;
  double l0 = std::log(3.0);
  double l1 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  double l2 = std::log(8.0);
  double l3 = std::log1p(2 * std::exp(-100.0));
  float want = float((l0 + l1 + l2 + l3) / 4);
  void *args[] = {logits.data(), labels.data(), &loss};
  ce(args);
  EXPECT_NEAR(loss, want, 1e-6f * want);
  EXPECT_NEAR(loss, 0.8964149f, 1e-6f); // (ln 3 + 0.4076060 + ln 8 + 0) / 4

  std::vector<float> dl(12, -5);
  void *gargs[] = {logits.data(), labels.data(), &g, dl.data()};
  ceGrad(gargs);
  // d/dlogit = (softmax - onehot) * g / 4
  std::vector<float> wantDl = {1.0f / 3 * 0.5f,
                               (1.0f / 3 - 1) * 0.5f,
                               1.0f / 3 * 0.5f,
                               0,
                               0,
                               0, // filled below
                               (1.0f / 8 - 1) * 0.5f,
                               2.0f / 8 * 0.5f,
                               5.0f / 8 * 0.5f,
                               0,
                               0,
                               0};
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  wantDl[3] = float(std::exp(1.0) / s * 0.5);
  wantDl[4] = float(std::exp(2.0) / s * 0.5);
  wantDl[5] = float((std::exp(3.0) / s - 1) * 0.5);
  wantDl[10] = float(std::exp(-100.0) * 0.5);
  wantDl[11] = wantDl[10];
  expectClose(dl, wantDl, 1e-6f, "softmax_cross_entropy_grad");
}

TEST_F(CodegenTest, SoftmaxTemplatesCompileWithNVRTC) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  checkCuda(*module, 4);
}

TEST_F(CodegenTest, UnknownTemplateIsAVerifierError) {
  // The template table (dialects/Exec/BuiltinTemplates.def) is checked when
  // the op is verified, before codegen sees it.
  std::string errors = captureErrors([&] {
    auto module = parseSourceString<ModuleOp>(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<4xf32>
  %y = dlexec.alloc : memref<4xf32>
  dlexec.builtin_kernel @k "lp_pool" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
}
)mlir",
                                              &ctx);
    EXPECT_FALSE(module);
  });
  EXPECT_NE(errors.find("unknown kernel template 'lp_pool'"), std::string::npos)
      << errors;
}

TEST_F(CodegenTest, BuiltinParamsAreTyped) {
  // BuiltinKernelOp::getParams gives each family's attributes typed, with
  // the defaults of absent ones and every list spelling read alike; the
  // verifier and the codegen builders take them from there.
  auto module = parse(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<2x3x5x6xf32>
  %y = dlexec.alloc : memref<2x3x3x3xf32>
  %y2 = dlexec.alloc : memref<2x3x5x6xf32>
  %s = dlexec.input "step" : memref<f32>
  %m = dlexec.alloc : memref<2x3x5x6xi1>
  %r = dlexec.alloc : memref<2x3x10x12xf32>
  %l = dlexec.input "labels" : memref<2x3x5xi64>
  %loss = dlexec.alloc : memref<f32>
  dlexec.builtin_kernel @pool "average_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%y : memref<2x3x3x3xf32>)
      {kernel_shape = [3, 2], strides = dense<2> : tensor<2xi64>, pads = array<i64: 1, 0, 1, 1>, count_include_pad = true}
  dlexec.builtin_kernel @pool_defaults "max_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%y : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>}
  dlexec.builtin_kernel @sm "log_softmax" ins(%x : memref<2x3x5x6xf32>) outs(%y2 : memref<2x3x5x6xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @sm_default "softmax" ins(%x : memref<2x3x5x6xf32>) outs(%y2 : memref<2x3x5x6xf32>)
  dlexec.builtin_kernel @drop "dropout" ins(%x, %s : memref<2x3x5x6xf32>, memref<f32>) outs(%y2, %m : memref<2x3x5x6xf32>, memref<2x3x5x6xi1>)
      {ratio = 0.25 : f32, seed = -7 : i64}
  dlexec.builtin_kernel @ce "softmax_cross_entropy" ins(%x, %l : memref<2x3x5x6xf32>, memref<2x3x5xi64>) outs(%loss : memref<f32>)
      {label_smoothing = 0.5 : f32}
  dlexec.builtin_kernel @rs "resize" ins(%x : memref<2x3x5x6xf32>) outs(%r : memref<2x3x10x12xf32>)
      {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
}
)mlir");
  ASSERT_TRUE(module);
  std::map<std::string, dlc::exec::BuiltinKernelParams> params;
  module->walk([&](dlc::exec::BuiltinKernelOp op) {
    auto p = op.getParams();
    ASSERT_TRUE(succeeded(p)) << op.getSymName().str();
    params[op.getSymName().str()] = *p;
  });
  const dlc::exec::PoolParams &pool = params["pool"].pool;
  EXPECT_EQ(params["pool"].family, dlc::exec::BuiltinFamily::Pool);
  EXPECT_EQ(pool.kernelShape, (std::array<int64_t, 2>{3, 2}));
  EXPECT_EQ(pool.strides, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(pool.pads, (std::array<int64_t, 4>{1, 0, 1, 1}));
  EXPECT_EQ(pool.dilations, (std::array<int64_t, 2>{1, 1}));
  EXPECT_TRUE(pool.countIncludePad);
  const dlc::exec::PoolParams &defaults = params["pool_defaults"].pool;
  EXPECT_EQ(defaults.strides, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(defaults.pads, (std::array<int64_t, 4>{0, 0, 0, 0}));
  EXPECT_FALSE(defaults.countIncludePad);
  EXPECT_EQ(params["sm"].softmax.axis, 1);
  EXPECT_EQ(params["sm_default"].softmax.axis, -1);
  EXPECT_EQ(params["drop"].family, dlc::exec::BuiltinFamily::Dropout);
  EXPECT_EQ(params["drop"].dropout.ratio, 0.25f);
  EXPECT_EQ(params["drop"].dropout.seed, -7);
  EXPECT_EQ(params["ce"].crossEntropy.labelSmoothing, 0.5f);
  const dlc::exec::ResizeParams &rs = params["rs"].resize;
  EXPECT_EQ(rs.mode, "nearest");
  EXPECT_EQ(rs.coordinateTransformationMode, "asymmetric");
  EXPECT_EQ(rs.nearestMode, "floor");
  EXPECT_EQ(rs.scales, (std::vector<double>{1.0, 1.0, 2.0, 2.0}));
}

} // namespace
