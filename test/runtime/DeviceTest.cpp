//===- DeviceTest.cpp - library calls and kernels of every device ---------===//
// The same GEMM and convolution checks run on the host device and, where
// one is usable, the CUDA device, against naive loops in double precision.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "runtime/device/Device.h"
#include "TestPackage.h"

using namespace dlrt;
using dlrt::test::expectClose;
using dlrt::test::randomVector;

namespace {


class DeviceTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "host") {
      device = createHostDevice();
    } else {
      Status s = createCudaDevice(0, &device);
      if (!s.ok() || !device)
        GTEST_SKIP() << "no CUDA device: " << s.message;
    }
  }
  void TearDown() override {
    if (device)
      for (DeviceBuffer &b : buffers)
        device->release(b);
  }

  float *upload(const std::vector<float> &v) {
    DeviceBuffer b;
    Status s = device->allocate(v.size() * 4, &b);
    EXPECT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 256, 0u);
    if (!v.empty())
      EXPECT_TRUE(device->copyToDevice(b.data, v.data(), v.size() * 4).ok());
    buffers.push_back(b);
    return static_cast<float *>(b.data);
  }
  std::vector<float> download(const float *p, size_t n) {
    std::vector<float> v(n);
    EXPECT_TRUE(device->synchronize().ok());
    EXPECT_TRUE(device->copyToHost(v.data(), p, n * 4).ok());
    return v;
  }

  std::unique_ptr<Device> device;
  std::vector<DeviceBuffer> buffers;
};

struct GemmCase {
  bool transA, transB, hasC, rowVector;
  float alpha, beta;
};

TEST_P(DeviceTest, Gemm) {
  const int64_t M = 5, N = 7, K = 3;
  const GemmCase cases[] = {
      {false, false, false, false, 1.0f, 0.0f},
      {true, false, false, false, 2.0f, 0.0f},
      {false, true, true, true, 1.0f, 1.0f},    // Y = A B^T + bias row
      {true, true, true, false, 0.5f, -2.0f},   // full C
      {false, false, false, false, 1.0f, 1.0f}, // accumulate into Y
  };
  int idx = 0;
  for (const GemmCase &c : cases) {
    SCOPED_TRACE("case " + std::to_string(idx++));
    auto a = randomVector(M * K, 1, 1), b = randomVector(K * N, 2, 1);
    auto cv = randomVector(c.rowVector ? N : M * N, 3, 1);
    auto y0 = randomVector(M * N, 4, 1);
    std::vector<double> ref(M * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(c.transA ? a[k * M + i] : a[i * K + k]) *
                 (c.transB ? b[j * K + k] : b[k * N + j]);
        double prev = c.hasC ? cv[c.rowVector ? j : i * N + j] : y0[i * N + j];
        ref[i * N + j] = c.alpha * acc + c.beta * prev;
      }
    GemmParams p;
    p.m = M;
    p.n = N;
    p.k = K;
    p.trans_a = c.transA;
    p.trans_b = c.transB;
    p.has_c = c.hasC;
    p.c_is_row_vector = c.rowVector;
    p.alpha = c.alpha;
    p.beta = c.beta;
    float *y = upload(y0);
    Status s =
        device->gemm(p, upload(a), upload(b), c.hasC ? upload(cv) : nullptr, y,
                     nullptr);
    ASSERT_TRUE(s.ok()) << s.message;
    expectClose(download(y, M * N), ref, "Y");
  }
}

struct EpilogueCase {
  dlc::exec::GemmEpilogue epilogue;
  bool transA, transB, hasC, rowVector;
  float alpha, beta;
};

// The cuBLASLt epilogues (LibraryCalls.h GemmEpilogue) against naive loops:
// ReLU after a bias row, after nothing and after a full C; the bias
// gradient of op(A) and op(B) with each transpose. The ReLU cases have
// negative and positive sums (random operands around 0), so a missing or
// misplaced ReLU changes Y.
TEST_P(DeviceTest, GemmEpilogues) {
  using dlc::exec::GemmEpilogue;
  const int64_t M = 6, N = 9, K = 5;
  const EpilogueCase cases[] = {
      {GemmEpilogue::Relu, false, true, true, true, 1.0f, 1.0f},
      {GemmEpilogue::Relu, true, false, false, false, 2.0f, 0.0f},
      {GemmEpilogue::Relu, false, false, true, false, 1.0f, 0.5f},
      {GemmEpilogue::BiasGradA, true, false, false, false, 1.0f, 0.0f},
      {GemmEpilogue::BiasGradA, false, true, false, false, 1.0f, 0.0f},
      {GemmEpilogue::BiasGradB, true, false, false, false, 1.0f, 0.0f},
      {GemmEpilogue::BiasGradB, false, true, false, false, 0.5f, 0.0f},
  };
  int idx = 0;
  for (const EpilogueCase &c : cases) {
    SCOPED_TRACE("case " + std::to_string(idx++) + " (" +
                 dlc::exec::gemmEpilogueName(c.epilogue) + ")");
    auto a = randomVector(M * K, 11, 1), b = randomVector(K * N, 12, 1);
    auto cv = randomVector(c.rowVector ? N : M * N, 13, 1);
    std::vector<double> ref(M * N);
    int negatives = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(c.transA ? a[k * M + i] : a[i * K + k]) *
                 (c.transB ? b[j * K + k] : b[k * N + j]);
        double v = c.alpha * acc +
                   (c.hasC ? c.beta * cv[c.rowVector ? j : i * N + j] : 0.0);
        if (c.epilogue == GemmEpilogue::Relu) {
          negatives += v < 0;
          v = v > 0 ? v : 0;
        }
        ref[i * N + j] = v;
      }
    if (c.epilogue == GemmEpilogue::Relu)
      ASSERT_GT(negatives, 0) << "the case does not exercise the ReLU";
    // dBias: the sum over k of op(A) [M] or of op(B) [N], without alpha.
    const bool ofA = c.epilogue == GemmEpilogue::BiasGradA;
    const int64_t length = ofA ? M : N;
    std::vector<double> gradRef(length);
    for (int64_t r = 0; r < length; ++r)
      for (int64_t k = 0; k < K; ++k)
        gradRef[r] += ofA ? (c.transA ? a[k * M + r] : a[r * K + k])
                          : (c.transB ? b[r * K + k] : b[k * N + r]);
    GemmParams p;
    p.m = M;
    p.n = N;
    p.k = K;
    p.trans_a = c.transA;
    p.trans_b = c.transB;
    p.has_c = c.hasC;
    p.c_is_row_vector = c.rowVector;
    p.alpha = c.alpha;
    p.beta = c.beta;
    p.epilogue = c.epilogue;
    const bool bgrad = dlc::exec::writesBiasGradient(c.epilogue);
    float *y = upload(randomVector(M * N, 14, 1));
    float *grad = bgrad ? upload(randomVector(length, 15, 1)) : nullptr;
    Status s = device->gemm(p, upload(a), upload(b),
                            c.hasC ? upload(cv) : nullptr, y, grad);
    ASSERT_TRUE(s.ok()) << s.message;
    expectClose(download(y, M * N), ref, "Y");
    if (bgrad)
      expectClose(download(grad, length), gradRef, "dBias");
  }
}

// The ReLU-mask epilogues (LibraryCalls.h GemmEpilogue ReluAux, DRelu,
// DReluBiasGrad): a forward gemm writes H = relu(X W^T [+ b]) and the
// bit-mask; the backward gemm dH = dY W2 reads the mask and writes
// dZ = select(H > 0, dH, 0) and dBias = the sum of dZ over rows. Against
// the unfused computation on the same device: a plain gemm for dH, then the
// select and the f64 row-order sum in the test. N = 130 spans two 128-bit
// mask blocks (AUX_LD 256 bits, 8 words per row). Y, dZ and the mask bits
// must be exact (a select, no arithmetic); dBias too on the host (it sums
// in f64 in row order, as its unfused column-sum kernel), within 1e-5
// relative elsewhere (the CUDA fallback sums by a product with ones in f32).
TEST_P(DeviceTest, GemmReluMaskEpilogues) {
  using dlc::exec::GemmEpilogue;
  const int64_t M = 5, N = 130, K = 7, K2 = 3;
  const int64_t words = dlc::exec::reluMaskWords(N);
  ASSERT_EQ(words, 8);
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "relu_aux with a bias row" : "relu_aux without C");
    auto x = randomVector(M * K, 21, 1), w = randomVector(N * K, 22, 1);
    auto b = randomVector(N, 23, 1);
    GemmParams f;
    f.m = M, f.n = N, f.k = K;
    f.trans_b = true;
    f.has_c = f.c_is_row_vector = bias;
    f.beta = bias ? 1.0f : 0.0f;
    f.epilogue = GemmEpilogue::ReluAux;
    float *dx = upload(x), *dw = upload(w), *db = upload(b);
    float *h = upload(randomVector(M * N, 24, 1));
    // The mask starts as all ones, so bits the epilogue fails to clear show.
    std::vector<float> ones(M * words);
    std::memset(ones.data(), 0xff, ones.size() * 4);
    float *mask = upload(ones);
    Status s = device->gemm(f, dx, dw, bias ? db : nullptr, h, nullptr, mask);
    ASSERT_TRUE(s.ok()) << s.message;
    // The same product with the plain relu epilogue: H must match exactly.
    GemmParams plain = f;
    plain.epilogue = GemmEpilogue::Relu;
    float *hRef = upload(std::vector<float>(M * N));
    s = device->gemm(plain, dx, dw, bias ? db : nullptr, hRef, nullptr);
    ASSERT_TRUE(s.ok()) << s.message;
    std::vector<float> hv = download(h, M * N), hr = download(hRef, M * N);
    ASSERT_EQ(std::memcmp(hv.data(), hr.data(), hv.size() * 4), 0);
    std::vector<float> mv = download(mask, M * words);
    std::vector<uint32_t> bits(mv.size());
    std::memcpy(bits.data(), mv.data(), bits.size() * 4);
    int zeros = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        bool bit = (bits[i * words + j / 32] >> (j % 32)) & 1u;
        zeros += hv[i * N + j] == 0.0f;
        ASSERT_EQ(bit, hv[i * N + j] > 0.0f) << "mask bit (" << i << ", " << j
                                             << ")";
      }
    ASSERT_GT(zeros, 0) << "the case does not exercise the ReLU";
    ASSERT_LT(zeros, M * N);

    // Backward: dH = dY W2 (dY [M, K2], W2 [K2, N]).
    auto dyv = randomVector(M * K2, 25, 1), w2 = randomVector(K2 * N, 26, 1);
    float *dY = upload(dyv), *dW2 = upload(w2);
    GemmParams g;
    g.m = M, g.n = N, g.k = K2;
    float *dH = upload(std::vector<float>(M * N));
    ASSERT_TRUE(device->gemm(g, dY, dW2, nullptr, dH, nullptr).ok());
    std::vector<float> dh = download(dH, M * N);
    std::vector<float> dzRef(M * N);
    std::vector<double> sum(N, 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        dzRef[i * N + j] = hv[i * N + j] > 0.0f ? dh[i * N + j] : 0.0f;
        sum[j] += double(dzRef[i * N + j]);
      }
    for (GemmEpilogue e : {GemmEpilogue::DRelu, GemmEpilogue::DReluBiasGrad}) {
      SCOPED_TRACE(dlc::exec::gemmEpilogueName(e));
      g.epilogue = e;
      const bool bgrad = e == GemmEpilogue::DReluBiasGrad;
      float *dz = upload(randomVector(M * N, 27, 1));
      float *dBias = bgrad ? upload(randomVector(N, 28, 1)) : nullptr;
      s = device->gemm(g, dY, dW2, nullptr, dz, dBias, mask);
      ASSERT_TRUE(s.ok()) << s.message;
      std::vector<float> dzv = download(dz, M * N);
      for (int64_t i = 0; i < M * N; ++i)
        ASSERT_EQ(std::memcmp(&dzv[i], &dzRef[i], 4), 0)
            << "dZ[" << i << "] " << dzv[i] << " vs " << dzRef[i];
      if (!bgrad)
        continue;
      std::vector<float> dbv = download(dBias, N);
      for (int64_t j = 0; j < N; ++j) {
        if (GetParam() == "host")
          EXPECT_EQ(dbv[j], float(sum[j])) << "dBias[" << j << "]";
        else
          EXPECT_NEAR(dbv[j], sum[j], 1e-5 * (1 + std::fabs(sum[j])))
              << "dBias[" << j << "]";
      }
    }
  }
}

TEST_P(DeviceTest, GemmReluMaskNeedsItsBuffer) {
  GemmParams p;
  p.m = p.n = p.k = 2;
  std::vector<float> v(4, 1.0f);
  for (dlc::exec::GemmEpilogue e :
       {dlc::exec::GemmEpilogue::ReluAux, dlc::exec::GemmEpilogue::DRelu}) {
    p.epilogue = e;
    Status s = device->gemm(p, upload(v), upload(v), nullptr, upload(v),
                            nullptr, nullptr);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message.find("Aux"), std::string::npos) << s.message;
  }
}

TEST_P(DeviceTest, GemmBiasGradientNeedsItsOutput) {
  GemmParams p;
  p.m = p.n = p.k = 2;
  p.trans_a = true;
  p.epilogue = dlc::exec::GemmEpilogue::BiasGradA;
  std::vector<float> v(4, 1.0f);
  Status s =
      device->gemm(p, upload(v), upload(v), nullptr, upload(v), nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("dBias"), std::string::npos) << s.message;
}

TEST_P(DeviceTest, BatchedGemmBroadcasts) {
  // Batch dims [2, 3]: A holds 2 matrices repeated along dim 1 (stride 0),
  // B holds 3 repeated along dim 0, Y is contiguous [6, M, N].
  const int64_t M = 4, N = 5, K = 3;
  BatchedGemmParams p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.batch = {2, 3};
  p.stride_a = {M * K, 0};
  p.stride_b = {0, K * N};
  auto a = randomVector(2 * M * K, 5, 1), b = randomVector(3 * K * N, 6, 1);
  std::vector<double> ref(6 * M * N);
  for (int64_t i0 = 0; i0 < 2; ++i0)
    for (int64_t i1 = 0; i1 < 3; ++i1)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(a[i0 * M * K + i * K + k]) *
                   b[i1 * K * N + k * N + j];
          ref[((i0 * 3 + i1) * M + i) * N + j] = acc;
        }
  float *y = upload(randomVector(6 * M * N, 7, 1));
  Status s = device->batchedGemm(p, upload(a), upload(b), y);
  ASSERT_TRUE(s.ok()) << s.message;
  expectClose(download(y, 6 * M * N), ref, "Y");
}

TEST_P(DeviceTest, BatchedGemmTransposes) {
  // All four trans_a / trans_b combinations, with the batch split in two
  // dims (A along the outer, B broadcast over it), so the CUDA device runs
  // the flags both through its strided batch and across its outer loop.
  // Each stored matrix is the transpose of the op() operand: A[p] is [K, M]
  // with trans_a, B[p] [N, K] with trans_b.
  const int64_t M = 4, N = 5, K = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " +
                   (tb ? "1" : "0"));
      BatchedGemmParams p;
      p.m = M;
      p.n = N;
      p.k = K;
      p.trans_a = ta;
      p.trans_b = tb;
      p.batch = {2, 3};
      p.stride_a = {3 * M * K, M * K};
      p.stride_b = {0, K * N};
      auto a = randomVector(6 * M * K, 11, 1),
           b = randomVector(3 * K * N, 12, 1);
      std::vector<double> ref(6 * M * N);
      for (int64_t i0 = 0; i0 < 2; ++i0)
        for (int64_t i1 = 0; i1 < 3; ++i1)
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              const float *ap = &a[i0 * 3 * M * K + i1 * M * K];
              const float *bp = &b[i1 * K * N];
              double acc = 0;
              for (int64_t k = 0; k < K; ++k)
                acc += double(ta ? ap[k * M + i] : ap[i * K + k]) *
                       (tb ? bp[j * K + k] : bp[k * N + j]);
              ref[((i0 * 3 + i1) * M + i) * N + j] = acc;
            }
      float *y = upload(randomVector(6 * M * N, 13, 1));
      Status s = device->batchedGemm(p, upload(a), upload(b), y);
      ASSERT_TRUE(s.ok()) << s.message;
      expectClose(download(y, 6 * M * N), ref, "Y");
    }
}

/// Naive convolution: forward (y), backward data (dx), backward filter (dw).
struct ConvRef {
  std::vector<double> y, dx, dw;
};

ConvRef naiveConv(const ConvParams &p, const std::vector<float> &x,
                  const std::vector<float> &w, const std::vector<float> &bias,
                  const std::vector<float> &dy) {
  ConvRef r;
  int64_t cg = p.c / p.group, kg = p.k / p.group;
  r.y.assign(p.n * p.k * p.p * p.q, 0);
  r.dx.assign(x.size(), 0);
  r.dw.assign(w.size(), 0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t oh = 0; oh < p.p; ++oh)
        for (int64_t ow = 0; ow < p.q; ++ow) {
          int64_t yi = ((n * p.k + k) * p.p + oh) * p.q + ow;
          double acc = bias.empty() ? 0 : bias[k];
          int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t fr = 0; fr < p.r; ++fr)
              for (int64_t fs = 0; fs < p.s; ++fs) {
                int64_t ih = oh * p.stride_h - p.pad_top + fr * p.dilation_h;
                int64_t iw = ow * p.stride_w - p.pad_left + fs * p.dilation_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                  continue;
                int64_t xi = ((n * p.c + g * cg + c) * p.h + ih) * p.w + iw;
                int64_t wi = ((k * cg + c) * p.r + fr) * p.s + fs;
                acc += double(x[xi]) * w[wi];
                r.dx[xi] += double(dy[yi]) * w[wi];
                r.dw[wi] += double(x[xi]) * dy[yi];
              }
          r.y[yi] = acc;
        }
  return r;
}

ConvParams convParams(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                      int64_t r, int64_t s, int64_t stride, int64_t padTL,
                      int64_t padBR, int64_t dilation, int64_t group,
                      bool bias) {
  ConvParams p;
  p.n = n;
  p.c = c;
  p.h = h;
  p.w = w;
  p.k = k;
  p.r = r;
  p.s = s;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = padTL;
  p.pad_bottom = p.pad_right = padBR;
  p.dilation_h = p.dilation_w = dilation;
  p.group = group;
  p.has_bias = bias;
  p.p = (h + 2 * 0 + padTL + padBR - dilation * (r - 1) - 1) / stride + 1;
  p.q = (w + padTL + padBR - dilation * (s - 1) - 1) / stride + 1;
  return p;
}

TEST_P(DeviceTest, Convolution) {
  const ConvParams cases[] = {
      // stride 2, pad 1, group 2, with bias
      convParams(2, 4, 7, 6, 6, 3, 3, 2, 1, 1, 1, 2, true),
      // dilation 2, asymmetric pads, no groups, no bias
      convParams(1, 3, 6, 6, 4, 3, 2, 1, 2, 0, 2, 1, false),
  };
  int idx = 0;
  for (const ConvParams &p : cases) {
    SCOPED_TRACE("case " + std::to_string(idx++));
    auto x = randomVector(p.n * p.c * p.h * p.w, 11, 1);
    auto w = randomVector(p.k * (p.c / p.group) * p.r * p.s, 12, 1);
    auto bias = p.has_bias ? randomVector(p.k, 13, 1) : std::vector<float>();
    auto dy = randomVector(p.n * p.k * p.p * p.q, 14, 1);
    ConvRef ref = naiveConv(p, x, w, bias, dy);

    float *dX = upload(x), *dW = upload(w), *dDy = upload(dy);
    float *dB = p.has_bias ? upload(bias) : nullptr;
    float *y = upload(std::vector<float>(ref.y.size(), 99.0f));
    float *dx = upload(std::vector<float>(ref.dx.size(), 99.0f));
    float *dw = upload(std::vector<float>(ref.dw.size(), 99.0f));
    Status s = device->convForward(p, dX, dW, dB, y);
    ASSERT_TRUE(s.ok()) << s.message;
    s = device->convBackwardData(p, dDy, dW, dx);
    ASSERT_TRUE(s.ok()) << s.message;
    s = device->convBackwardFilter(p, dX, dDy, dw);
    ASSERT_TRUE(s.ok()) << s.message;
    expectClose(download(y, ref.y.size()), ref.y, "y");
    expectClose(download(dx, ref.dx.size()), ref.dx, "dx");
    expectClose(download(dw, ref.dw.size()), ref.dw, "dw");
    // Primitives are cached by shape: a second call gives the same result.
    ASSERT_TRUE(device->convForward(p, dX, dW, dB, y).ok());
    expectClose(download(y, ref.y.size()), ref.y, "y (cached)");
  }
}

// A convolution writing its output into a channel slice of a larger buffer
// (ConvParams::y_strides: a dense block's slot of the concatenation's
// buffer): the slot holds the dense result, the channels around it keep
// their contents.
TEST_P(DeviceTest, ConvolutionWritesChannelSlot) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "with bias" : "without bias");
    ConvParams p = convParams(2, 4, 7, 6, 6, 3, 3, 2, 1, 1, 1, 2, bias);
    auto x = randomVector(p.n * p.c * p.h * p.w, 21, 1);
    auto w = randomVector(p.k * (p.c / p.group) * p.r * p.s, 22, 1);
    auto b = bias ? randomVector(p.k, 23, 1) : std::vector<float>();
    auto dy = randomVector(p.n * p.k * p.p * p.q, 24, 1);
    ConvRef ref = naiveConv(p, x, w, b, dy);
    // The slot: channels [3, 3 + K) of an [N, K + 5, P, Q] buffer.
    const int64_t total = p.k + 5, first = 3, plane = p.p * p.q;
    std::vector<float> init(size_t(p.n * total * plane));
    for (size_t i = 0; i < init.size(); ++i)
      init[i] = 1000.0f + float(i);
    float *dX = upload(x), *dW = upload(w);
    float *dB = bias ? upload(b) : nullptr;
    float *buf = upload(init);
    p.y_strides = {total * plane, plane, p.q, 1};
    Status s = device->convForward(p, dX, dW, dB, buf + first * plane);
    ASSERT_TRUE(s.ok()) << s.message;
    std::vector<float> got = download(buf, init.size()), slot;
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t c = 0; c < total; ++c)
        for (int64_t i = 0; i < plane; ++i) {
          size_t at = size_t((n * total + c) * plane + i);
          if (c >= first && c < first + p.k)
            slot.push_back(got[at]);
          else
            ASSERT_EQ(got[at], init[at]) << "n " << n << " channel " << c;
        }
    expectClose(slot, ref.y, "y in its slot");
    // The dense call gives the same values, bit for bit.
    float *dense = upload(std::vector<float>(ref.y.size(), 99.0f));
    ConvParams q = p;
    q.y_strides.clear();
    ASSERT_TRUE(device->convForward(q, dX, dW, dB, dense).ok());
    EXPECT_EQ(download(dense, ref.y.size()), slot);
  }
}

TEST_P(DeviceTest, MemoryRoundTrip) {
  std::vector<float> v = randomVector(1000, 5, 1);
  float *d = upload(v);
  EXPECT_EQ(download(d, v.size()), v);
  ASSERT_TRUE(device->fillZero(d, v.size() * 4).ok());
  EXPECT_EQ(download(d, v.size()), std::vector<float>(v.size(), 0.0f));
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceTest,
                         ::testing::Values(std::string("host"),
                                           std::string("cuda")),
                         [](const auto &info) { return info.param; });

TEST(HostDevice, LoadsAndLaunchesKernels) {
  std::string error;
  std::vector<uint8_t> lib = test::compileHostLibrary(R"(
    extern "C" void scale(void **args) {
      const float *x = static_cast<const float *>(args[0]);
      float *y = static_cast<float *>(args[1]);
      for (int i = 0; i < 8; ++i) y[i] = 3.0f * x[i];
    }
    extern "C" void shift(void **args) {
      float *y = static_cast<float *>(args[0]);
      for (int i = 0; i < 8; ++i) y[i] += 1.0f;
    }
  )",
                                                      &error);
  ASSERT_FALSE(lib.empty()) << error;
  auto device = createHostDevice();
  EXPECT_EQ(device->kind(), DLRT_DEVICE_HOST);
  EXPECT_EQ(device->name().rfind("host", 0), 0u) << device->name();
  std::vector<Device::KernelSpec> specs(2);
  specs[0].name = "shift";
  specs[1].name = "scale";
  std::vector<std::unique_ptr<DeviceKernel>> kernels;
  Status s = device->loadKernels(lib, specs, &kernels);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(kernels.size(), 2u);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(8);
  ASSERT_TRUE(device->launch(*kernels[1], {x.data(), y.data()}).ok());
  ASSERT_TRUE(device->launch(*kernels[0], {y.data()}).ok());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], 3.0f * x[i] + 1.0f);

  specs[0].name = "missing_kernel";
  s = device->loadKernels(lib, specs, &kernels);
  EXPECT_EQ(s.code, DLRT_INTERNAL);
  EXPECT_NE(s.message.find("missing_kernel"), std::string::npos) << s.message;

  std::vector<uint8_t> garbage(100, 0x42);
  s = device->loadKernels(garbage, specs, &kernels);
  EXPECT_EQ(s.code, DLRT_INTERNAL);
  EXPECT_NE(s.message.find("cannot load"), std::string::npos) << s.message;

  s = device->loadKernels({}, specs, &kernels);
  EXPECT_EQ(s.code, DLRT_INTERNAL);
}

} // namespace
