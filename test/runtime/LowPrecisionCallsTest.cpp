//===- LowPrecisionCallsTest.cpp - f16/bf16 library calls on every device -===//
// gemm, batched_gemm and the convolutions with f16 and bf16 operands
// (LibraryCalls.h ElementType: f32 accumulation, one rounding). Each result
// is checked two ways:
//  - against the device's own f32 call on the f32-widened operands, rounded
//    once: bit for bit on the host (which computes exactly that), within 1
//    ulp of the 16-bit type on CUDA (cuBLASLt/cuDNN may sum in another
//    order, which can move an f32 sum across a 16-bit rounding boundary);
//  - against a naive loop in double here, rounded once, independent of
//    oneDNN: within 1 ulp of the 16-bit type, or, where the result cancels
//    to far below its terms, within the f32 accumulation error bound
//    2 * K * 2^-24 * sum |terms| (Higham, "Accuracy and Stability of
//    Numerical Algorithms", 2nd ed., eq. 3.5, doubled for the order).
// A call that ignored the dtype (reading 16-bit data as f32), rounded twice
// (e.g. after the products and again after the bias) or truncated would fail
// the bit-exact host check; wrong strides or layouts fail the naive check.
#include <cmath>
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "runtime/device/Device.h"
#include "runtime/device/HalfConversions.h"
#include "TestPackage.h"

using namespace dlrt;
using dlc::exec::ElementType;
using dlrt::test::randomVector;

namespace {

uint16_t toBits(float v, ElementType t) {
  return t == ElementType::BF16 ? floatToBFloat16Bits(v) : floatToHalfBits(v);
}
float fromBits(uint16_t b, ElementType t) {
  return t == ElementType::BF16 ? bfloat16BitsToFloat(b) : halfBitsToFloat(b);
}
uint16_t doubleToBits(double v, ElementType t) {
  return t == ElementType::BF16 ? doubleToBFloat16Bits(v) : doubleToHalfBits(v);
}

/// Position of a 16-bit float pattern on the number line (monotonic), so
/// that the difference of two is their distance in ulps.
int32_t ordinal(uint16_t bits) {
  return bits & 0x8000u ? -int32_t(bits & 0x7fffu) : int32_t(bits);
}
int32_t ulps(uint16_t a, uint16_t b) {
  return std::abs(ordinal(a) - ordinal(b));
}

/// One ulp of the 16-bit type at |v| (the gap to the next larger magnitude).
double ulpAt(double v, ElementType t) {
  uint16_t b = doubleToBits(std::fabs(v), t);
  return double(fromBits(uint16_t(b + 1), t)) - double(fromBits(b, t));
}

/// Operands rounded to the 16-bit type: the device's bits and their exact
/// f32 values.
struct Operand {
  std::vector<uint16_t> bits;
  std::vector<float> wide;
};
Operand makeOperand(size_t n, uint32_t seed, ElementType t) {
  Operand o;
  for (float v : randomVector(n, seed, 3)) {
    o.bits.push_back(toBits(v, t));
    o.wide.push_back(fromBits(o.bits.back(), t));
  }
  return o;
}

/// A naive reference result: the exact-ish value (double) of each element
/// and the sum of the magnitudes of its terms (for the accumulation bound).
struct Reference {
  std::vector<double> value, magnitude;
  int64_t terms = 0; // K: the products summed per element
};

class LowPrecisionCalls
    : public ::testing::TestWithParam<std::tuple<std::string, ElementType>> {
protected:
  void SetUp() override {
    type = std::get<1>(GetParam());
    host = createHostDevice();
    if (std::get<0>(GetParam()) == "host") {
      device = createHostDevice();
    } else {
      Status s = createCudaDevice(0, &device);
      if (!s.ok() || !device)
        GTEST_SKIP() << "no CUDA device: " << s.message;
    }
  }
  void TearDown() override {
    for (DeviceBuffer &b : buffers)
      device->release(b);
  }
  bool onHost() const { return std::get<0>(GetParam()) == "host"; }

  void *upload(const void *data, size_t bytes) {
    DeviceBuffer b;
    Status s = device->allocate(bytes, &b);
    EXPECT_TRUE(s.ok()) << s.message;
    if (bytes)
      EXPECT_TRUE(device->copyToDevice(b.data, data, bytes).ok());
    buffers.push_back(b);
    return b.data;
  }
  void *upload(const std::vector<uint16_t> &v) {
    return upload(v.data(), v.size() * 2);
  }
  void *upload(const std::vector<float> &v) {
    return upload(v.data(), v.size() * 4);
  }
  template <typename T> std::vector<T> download(const void *p, size_t n) {
    std::vector<T> v(n);
    EXPECT_TRUE(device->synchronize().ok());
    EXPECT_TRUE(device->copyToHost(v.data(), p, n * sizeof(T)).ok());
    return v;
  }

  /// Checks the 16-bit result |got| against |expected| (the f32 call on
  /// widened operands, rounded once) and the naive |ref|.
  void check(const std::vector<uint16_t> &got, const std::vector<float> &f32,
             const Reference &ref, const char *what) {
    ASSERT_EQ(got.size(), f32.size());
    ASSERT_EQ(got.size(), ref.value.size());
    int mismatches = 0;
    for (size_t i = 0; i < got.size() && mismatches < 5; ++i) {
      uint16_t expected = toBits(f32[i], type);
      int32_t own = ulps(got[i], expected);
      bool ok = onHost() ? own == 0 : own <= 1;
      if (!ok)
        ++mismatches;
      EXPECT_TRUE(ok) << what << "[" << i << "]: got " << fromBits(got[i], type)
                      << " (0x" << std::hex << got[i]
                      << "), the f32 call rounded once gives "
                      << fromBits(expected, type) << " (0x" << expected
                      << std::dec << ")";
      uint16_t naive = doubleToBits(ref.value[i], type);
      double bound = ulpAt(ref.value[i], type) + 2.0 * double(ref.terms) *
                                                     std::ldexp(1.0, -24) *
                                                     ref.magnitude[i];
      double err = std::fabs(double(fromBits(got[i], type)) - ref.value[i]);
      bool near = ulps(got[i], naive) <= 1 || err <= bound;
      if (!near)
        ++mismatches;
      EXPECT_TRUE(near) << what << "[" << i << "]: got "
                        << fromBits(got[i], type) << ", naive reference "
                        << ref.value[i] << " (error " << err << " > " << bound
                        << ")";
    }
  }

  ElementType type = ElementType::BF16;
  std::unique_ptr<Device> device, host;
  std::vector<DeviceBuffer> buffers;
};

struct GemmCase {
  bool transA, transB, hasC, rowVector;
  float alpha, beta;
};

TEST_P(LowPrecisionCalls, Gemm) {
  const int64_t M = 6, N = 9, K = 37;
  const GemmCase cases[] = {
      {false, false, false, false, 1.0f, 0.0f},
      {true, false, false, false, 0.75f, 0.0f},
      {false, true, true, true, 1.0f, 1.0f},    // bias row (epilogue)
      {false, false, true, true, 1.5f, -0.25f}, // scaled row: broadcast
      {true, true, true, false, 0.5f, -2.0f},   // full C
      {false, false, false, false, 1.0f, 0.5f}, // accumulate into Y
  };
  int idx = 0;
  for (const GemmCase &c : cases) {
    SCOPED_TRACE("case " + std::to_string(idx++));
    Operand a = makeOperand(M * K, 21 + idx, type);
    Operand b = makeOperand(K * N, 31 + idx, type);
    Operand cv = makeOperand(c.rowVector ? N : M * N, 41 + idx, type);
    Operand y0 = makeOperand(M * N, 51 + idx, type);
    GemmParams p;
    p.m = M, p.n = N, p.k = K;
    p.trans_a = c.transA, p.trans_b = c.transB;
    p.has_c = c.hasC, p.c_is_row_vector = c.rowVector;
    p.alpha = c.alpha, p.beta = c.beta;
    p.dtype = type;

    Reference ref;
    ref.terms = K + 1;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          double t = double(a.wide[c.transA ? k * M + i : i * K + k]) *
                     b.wide[c.transB ? j * K + k : k * N + j];
          acc += t;
          mag += std::fabs(t);
        }
        double v = c.alpha * acc;
        mag *= std::fabs(c.alpha);
        double prior =
            c.hasC ? cv.wide[c.rowVector ? j : i * N + j] : y0.wide[i * N + j];
        if (c.beta != 0.0f) {
          v += c.beta * prior;
          mag += std::fabs(c.beta * prior);
        }
        ref.value.push_back(v);
        ref.magnitude.push_back(mag);
      }

    // The f32 call on the widened operands (host device).
    std::vector<float> f32 = y0.wide;
    GemmParams p32 = p;
    p32.dtype = ElementType::F32;
    Status s = host->gemm(p32, a.wide.data(), b.wide.data(),
                          c.hasC ? cv.wide.data() : nullptr, f32.data(),
                          nullptr);
    ASSERT_TRUE(s.ok()) << s.message;

    void *dy = upload(y0.bits);
    s = device->gemm(p, upload(a.bits), upload(b.bits),
                     c.hasC ? upload(cv.bits) : nullptr, dy, nullptr);
    ASSERT_TRUE(s.ok()) << s.message;
    check(download<uint16_t>(dy, M * N), f32, ref, "Y");
  }
}

// A 16-bit gemm with an f32 bias row (GemmParams::f32_bias, cuBLASLt's
// BIAS / RELU_BIAS with BIAS_DATA_TYPE CUDA_R_32F; FuseGemmEpilogues folds a
// mixed-precision bias add into it): Y = round(op(A) op(B) + bias) (ReLU
// before the rounding), the f32 bias not rounded to the 16-bit type. The
// bias values have f32 bits below the 16-bit mantissa, and the case checks
// that rounding the product first (the unfused two roundings) would differ
// somewhere, so a device that rounded twice or narrowed the bias fails.
TEST_P(LowPrecisionCalls, GemmF32Bias) {
  using dlc::exec::GemmEpilogue;
  const int64_t M = 7, N = 33, K = 29;
  int idx = 0;
  for (GemmEpilogue epilogue : {GemmEpilogue::None, GemmEpilogue::Relu}) {
    for (bool transB : {false, true}) {
      SCOPED_TRACE("case " + std::to_string(idx++));
      Operand a = makeOperand(M * K, 71 + idx, type);
      Operand b = makeOperand(K * N, 81 + idx, type);
      std::vector<float> bias = randomVector(N, 91 + idx, 3);
      GemmParams p;
      p.m = M, p.n = N, p.k = K;
      p.trans_b = transB;
      p.has_c = true, p.c_is_row_vector = true, p.f32_bias = true;
      p.beta = 1.0f;
      p.epilogue = epilogue;
      p.dtype = type;
      const bool relu = epilogue == GemmEpilogue::Relu;

      Reference ref;
      ref.terms = K + 1;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = bias[j], mag = std::fabs(bias[j]);
          for (int64_t k = 0; k < K; ++k) {
            double t = double(a.wide[i * K + k]) *
                       b.wide[transB ? j * K + k : k * N + j];
            acc += t;
            mag += std::fabs(t);
          }
          ref.value.push_back(relu && !(acc > 0) ? 0.0 : acc);
          ref.magnitude.push_back(mag);
        }

      // The f32 call on the widened operands with the same f32 bias.
      std::vector<float> f32(M * N);
      GemmParams p32 = p;
      p32.dtype = ElementType::F32;
      p32.f32_bias = false;
      Status s = host->gemm(p32, a.wide.data(), b.wide.data(), bias.data(),
                            f32.data(), nullptr);
      ASSERT_TRUE(s.ok()) << s.message;
      // The unfused kernels round the product, then the sum: somewhere
      // that differs from the one rounding.
      std::vector<float> product(M * N);
      GemmParams plain = p32;
      plain.has_c = false, plain.c_is_row_vector = false, plain.beta = 0.0f;
      plain.epilogue = GemmEpilogue::None;
      ASSERT_TRUE(host->gemm(plain, a.wide.data(), b.wide.data(), nullptr,
                             product.data(), nullptr)
                      .ok());
      int differs = 0;
      for (int64_t i = 0; i < M * N; ++i) {
        float twice = fromBits(toBits(product[i], type), type) + bias[i % N];
        if (relu && !(twice > 0))
          twice = 0;
        differs += toBits(twice, type) != toBits(f32[i], type);
      }
      ASSERT_GT(differs, 0) << "the case cannot tell one rounding from two";

      void *dy = upload(makeOperand(M * N, 99, type).bits);
      s = device->gemm(p, upload(a.bits), upload(b.bits), upload(bias), dy,
                       nullptr);
      ASSERT_TRUE(s.ok()) << s.message;
      check(download<uint16_t>(dy, M * N), f32, ref, "Y");
    }
  }
}

// A 16-bit gemm's bias_grad_a/bias_grad_b with an f32 dBias (f32_bias:
// mixed precision's bias gradient, the f32 column sum of a 16-bit dY; on
// CUDA BGRADA/BGRADB with BIAS_DATA_TYPE CUDA_R_32F, or the product with
// ones into f32 where cuBLASLt has no algorithm, which the stand-in's
// DLRT_CUDA_STANDIN_LT_NO_EPILOGUE run reaches). dBias is the f32 sum,
// not rounded to the 16-bit type: bit for bit the f32 call's on the host,
// within the f32 accumulation bound on CUDA, where the case asserts that a
// 16-bit rounding would not be.
TEST_P(LowPrecisionCalls, GemmF32BiasGrad) {
  using dlc::exec::GemmEpilogue;
  const int64_t M = 7, N = 33, K = 29;
  int idx = 0;
  for (GemmEpilogue epilogue :
       {GemmEpilogue::BiasGradA, GemmEpilogue::BiasGradB}) {
    for (bool trans : {false, true}) {
      SCOPED_TRACE("case " + std::to_string(idx++));
      const bool ofA = epilogue == GemmEpilogue::BiasGradA;
      Operand a = makeOperand(M * K, 171 + idx, type);
      Operand b = makeOperand(K * N, 181 + idx, type);
      GemmParams p;
      p.m = M, p.n = N, p.k = K;
      (ofA ? p.trans_a : p.trans_b) = trans;
      p.f32_bias = true;
      p.epilogue = epilogue;
      p.dtype = type;

      Reference ref;
      ref.terms = K;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            double t = double(a.wide[p.trans_a ? k * M + i : i * K + k]) *
                       b.wide[p.trans_b ? j * K + k : k * N + j];
            acc += t;
            mag += std::fabs(t);
          }
          ref.value.push_back(acc);
          ref.magnitude.push_back(mag);
        }
      const int64_t length = ofA ? M : N;
      std::vector<double> sum(length, 0.0), mag(length, 0.0);
      for (int64_t i = 0; i < length; ++i)
        for (int64_t k = 0; k < K; ++k) {
          double v = ofA ? a.wide[p.trans_a ? k * M + i : i * K + k]
                         : b.wide[p.trans_b ? i * K + k : k * N + i];
          sum[i] += v;
          mag[i] += std::fabs(v);
        }

      // The f32 call on the widened operands: Y and the f32 dBias.
      std::vector<float> f32(M * N), g32(length);
      GemmParams p32 = p;
      p32.dtype = ElementType::F32;
      p32.f32_bias = false;
      Status s = host->gemm(p32, a.wide.data(), b.wide.data(), nullptr,
                            f32.data(), g32.data());
      ASSERT_TRUE(s.ok()) << s.message;

      void *dy = upload(makeOperand(M * N, 199, type).bits);
      void *dg = upload(std::vector<float>(length, -7.0f));
      s = device->gemm(p, upload(a.bits), upload(b.bits), nullptr, dy, dg);
      ASSERT_TRUE(s.ok()) << s.message;
      check(download<uint16_t>(dy, M * N), f32, ref, "Y");
      std::vector<float> got = download<float>(dg, length);
      int roundingShows = 0;
      for (int64_t i = 0; i < length; ++i) {
        double bound = 2.0 * K * std::ldexp(1.0, -24) * mag[i];
        if (onHost())
          EXPECT_EQ(got[i], g32[i]) << "dBias[" << i << "]";
        EXPECT_LE(std::fabs(double(got[i]) - sum[i]), bound)
            << "dBias[" << i << "]: got " << got[i] << ", naive " << sum[i];
        roundingShows +=
            std::fabs(double(fromBits(toBits(g32[i], type), type)) - sum[i]) >
            bound;
      }
      ASSERT_GT(roundingShows, 0)
          << "the case cannot tell an f32 dBias from a rounded one";
    }
  }
}

TEST_P(LowPrecisionCalls, BatchedGemm) {
  // Y[b0, b1] = A[b0, b1] B[b1]: B broadcast over the outer batch dim.
  BatchedGemmParams p;
  p.m = 3, p.n = 5, p.k = 19;
  p.batch = {2, 3};
  p.stride_a = {3 * p.m * p.k, p.m * p.k};
  p.stride_b = {0, p.k * p.n};
  p.dtype = type;
  const int64_t count = 6;
  Operand a = makeOperand(count * p.m * p.k, 61, type);
  Operand b = makeOperand(3 * p.k * p.n, 62, type);
  Reference ref;
  ref.terms = p.k;
  for (int64_t b0 = 0; b0 < 2; ++b0)
    for (int64_t b1 = 0; b1 < 3; ++b1)
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < p.k; ++k) {
            double t = double(a.wide[b0 * p.stride_a[0] + b1 * p.stride_a[1] +
                                     i * p.k + k]) *
                       b.wide[b1 * p.stride_b[1] + k * p.n + j];
            acc += t;
            mag += std::fabs(t);
          }
          ref.value.push_back(acc);
          ref.magnitude.push_back(mag);
        }
  std::vector<float> f32(count * p.m * p.n);
  BatchedGemmParams p32 = p;
  p32.dtype = ElementType::F32;
  Status s = host->batchedGemm(p32, a.wide.data(), b.wide.data(), f32.data());
  ASSERT_TRUE(s.ok()) << s.message;
  void *y = upload(std::vector<uint16_t>(f32.size(), 0x7fff));
  s = device->batchedGemm(p, upload(a.bits), upload(b.bits), y);
  ASSERT_TRUE(s.ok()) << s.message;
  check(download<uint16_t>(y, f32.size()), f32, ref, "Y");
}

TEST_P(LowPrecisionCalls, BatchedGemmTransposes) {
  // The four trans_a / trans_b combinations of one strided batch (A[p] is
  // [K, M] with trans_a, B[p] [N, K] with trans_b), against the host's f32
  // call rounded once and the naive loop.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " +
                   (tb ? "1" : "0"));
      BatchedGemmParams p;
      p.m = 3, p.n = 5, p.k = 19;
      p.trans_a = ta, p.trans_b = tb;
      p.batch = {4};
      p.stride_a = {p.m * p.k};
      p.stride_b = {p.k * p.n};
      p.dtype = type;
      const int64_t count = 4;
      Operand a = makeOperand(count * p.m * p.k, 71, type);
      Operand b = makeOperand(count * p.k * p.n, 72, type);
      Reference ref;
      ref.terms = p.k;
      for (int64_t q = 0; q < count; ++q)
        for (int64_t i = 0; i < p.m; ++i)
          for (int64_t j = 0; j < p.n; ++j) {
            const float *ap = &a.wide[q * p.stride_a[0]];
            const float *bp = &b.wide[q * p.stride_b[0]];
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < p.k; ++k) {
              double t = double(ta ? ap[k * p.m + i] : ap[i * p.k + k]) *
                         (tb ? bp[j * p.k + k] : bp[k * p.n + j]);
              acc += t;
              mag += std::fabs(t);
            }
            ref.value.push_back(acc);
            ref.magnitude.push_back(mag);
          }
      std::vector<float> f32(count * p.m * p.n);
      BatchedGemmParams p32 = p;
      p32.dtype = ElementType::F32;
      Status s =
          host->batchedGemm(p32, a.wide.data(), b.wide.data(), f32.data());
      ASSERT_TRUE(s.ok()) << s.message;
      void *y = upload(std::vector<uint16_t>(f32.size(), 0x7fff));
      s = device->batchedGemm(p, upload(a.bits), upload(b.bits), y);
      ASSERT_TRUE(s.ok()) << s.message;
      check(download<uint16_t>(y, f32.size()), f32, ref, "Y");
    }
}

/// A 2-D (d = t = o = 1) or 3-D convolution's parameters.
ConvParams convCase(int spatial, int64_t n, int64_t c, int64_t d, int64_t hw,
                    int64_t k, int64_t t, int64_t rs, int64_t stride,
                    int64_t padBegin, int64_t padEnd, int64_t dilation,
                    int64_t group, bool bias) {
  ConvParams p;
  p.spatial = spatial;
  p.n = n, p.c = c, p.k = k, p.group = group, p.has_bias = bias;
  p.h = p.w = hw;
  p.r = p.s = rs;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = padBegin;
  p.pad_bottom = p.pad_right = padEnd;
  p.dilation_h = p.dilation_w = dilation;
  auto out = [&](int64_t in, int64_t f) {
    return (in + padBegin + padEnd - dilation * (f - 1) - 1) / stride + 1;
  };
  p.p = p.q = out(hw, rs);
  if (spatial == 3) {
    p.d = d, p.t = t, p.stride_d = stride, p.dilation_d = dilation;
    p.pad_front = padBegin, p.pad_back = padEnd;
    p.o = out(d, t);
  }
  return p;
}

/// Visits every (output, input, filter) element triple of |p| that meets.
void forEachTap(
    const ConvParams &p,
    const std::function<void(int64_t y, int64_t x, int64_t w)> &fn) {
  const int64_t cg = p.c / p.group, kg = p.k / p.group;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t od = 0; od < p.o; ++od)
        for (int64_t oh = 0; oh < p.p; ++oh)
          for (int64_t ow = 0; ow < p.q; ++ow) {
            int64_t yi = (((n * p.k + k) * p.o + od) * p.p + oh) * p.q + ow;
            int64_t g = k / kg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t ft = 0; ft < p.t; ++ft)
                for (int64_t fr = 0; fr < p.r; ++fr)
                  for (int64_t fs = 0; fs < p.s; ++fs) {
                    int64_t id =
                        od * p.stride_d - p.pad_front + ft * p.dilation_d;
                    int64_t ih =
                        oh * p.stride_h - p.pad_top + fr * p.dilation_h;
                    int64_t iw =
                        ow * p.stride_w - p.pad_left + fs * p.dilation_w;
                    if (id < 0 || id >= p.d || ih < 0 || ih >= p.h || iw < 0 ||
                        iw >= p.w)
                      continue;
                    int64_t c = g * cg + ci;
                    int64_t xi =
                        (((n * p.c + c) * p.d + id) * p.h + ih) * p.w + iw;
                    int64_t wi =
                        (((k * cg + ci) * p.t + ft) * p.r + fr) * p.s + fs;
                    fn(yi, xi, wi);
                  }
          }
}

TEST_P(LowPrecisionCalls, Convolutions) {
  const ConvParams cases[] = {
      // stride 2, symmetric pad 1, group 2, bias
      convCase(2, 2, 4, 1, 7, 6, 1, 3, 2, 1, 1, 1, 2, true),
      // dilation 2, asymmetric pads (explicit padding on CUDA), bias
      convCase(2, 1, 3, 1, 8, 5, 1, 3, 1, 1, 2, 2, 1, true),
      // 3-D, pad 1, no bias
      convCase(3, 1, 2, 4, 5, 3, 3, 3, 1, 1, 1, 1, 1, false),
  };
  int idx = 0;
  for (ConvParams p : cases) {
    SCOPED_TRACE("case " + std::to_string(idx++));
    p.dtype = type;
    const int64_t xN = p.n * p.c * p.d * p.h * p.w;
    const int64_t wN = p.k * (p.c / p.group) * p.t * p.r * p.s;
    const int64_t yN = p.n * p.k * p.o * p.p * p.q;
    Operand x = makeOperand(xN, 71 + idx, type);
    Operand w = makeOperand(wN, 72 + idx, type);
    Operand bias = makeOperand(p.k, 73 + idx, type);
    Operand dy = makeOperand(yN, 74 + idx, type);
    Reference y, dx, dw;
    y.value.assign(yN, 0), y.magnitude.assign(yN, 0);
    dx.value.assign(xN, 0), dx.magnitude.assign(xN, 0);
    dw.value.assign(wN, 0), dw.magnitude.assign(wN, 0);
    forEachTap(p, [&](int64_t yi, int64_t xi, int64_t wi) {
      double f = double(x.wide[xi]) * w.wide[wi];
      y.value[yi] += f, y.magnitude[yi] += std::fabs(f);
      double bd = double(dy.wide[yi]) * w.wide[wi];
      dx.value[xi] += bd, dx.magnitude[xi] += std::fabs(bd);
      double bf = double(dy.wide[yi]) * x.wide[xi];
      dw.value[wi] += bf, dw.magnitude[wi] += std::fabs(bf);
    });
    if (p.has_bias)
      for (int64_t i = 0; i < yN; ++i) {
        double b = bias.wide[(i / (p.o * p.p * p.q)) % p.k];
        y.value[i] += b, y.magnitude[i] += std::fabs(b);
      }
    // Terms per element: at most C/group * T*R*S taps (+ bias) forward,
    // K/group * T*R*S backward data, N * O*P*Q backward filter.
    y.terms = (p.c / p.group) * p.t * p.r * p.s + 1;
    dx.terms = (p.k / p.group) * p.t * p.r * p.s;
    dw.terms = p.n * p.o * p.p * p.q;

    ConvParams p32 = p;
    p32.dtype = ElementType::F32;
    std::vector<float> fy(yN), fdx(xN), fdw(wN);
    ASSERT_TRUE(host->convForward(p32, x.wide.data(), w.wide.data(),
                                  p.has_bias ? bias.wide.data() : nullptr,
                                  fy.data())
                    .ok());
    ASSERT_TRUE(
        host->convBackwardData(p32, dy.wide.data(), w.wide.data(), fdx.data())
            .ok());
    ASSERT_TRUE(
        host->convBackwardFilter(p32, x.wide.data(), dy.wide.data(), fdw.data())
            .ok());

    void *dX = upload(x.bits), *dW = upload(w.bits), *dDy = upload(dy.bits);
    void *dB = p.has_bias ? upload(bias.bits) : nullptr;
    // NaN-filled outputs: a result that is not written shows.
    void *oy = upload(std::vector<uint16_t>(yN, 0x7fff));
    void *odx = upload(std::vector<uint16_t>(xN, 0x7fff));
    void *odw = upload(std::vector<uint16_t>(wN, 0x7fff));
    Status s = device->convForward(p, dX, dW, dB, oy);
    ASSERT_TRUE(s.ok()) << s.message;
    s = device->convBackwardData(p, dDy, dW, odx);
    ASSERT_TRUE(s.ok()) << s.message;
    s = device->convBackwardFilter(p, dX, dDy, odw);
    ASSERT_TRUE(s.ok()) << s.message;
    check(download<uint16_t>(oy, yN), fy, y, "Y");
    check(download<uint16_t>(odx, xN), fdx, dx, "dX");
    check(download<uint16_t>(odw, wN), fdw, dw, "dW");
  }
}

// C, beta * C, the previous Y and the bias join the f32 sum before the one
// rounding. With products 1 and u/4 (u: the ulp at 1) and an addend of u/2,
// one rounding gives 1 + u; rounding the product first gives 1, and then
// the tie 1 + u/2 rounds to even: 1. The 1-ulp tolerances above cannot see
// that double rounding; this test sees nothing else.
TEST_P(LowPrecisionCalls, AddendsJoinTheSumBeforeTheOneRounding) {
  const float u = type == ElementType::F16 ? 1.0f / 1024 : 1.0f / 128;
  const uint16_t want = toBits(1.0f + u, type);
  auto bits = [&](std::vector<float> v) {
    std::vector<uint16_t> out;
    for (float f : v)
      out.push_back(toBits(f, type));
    return out;
  };
  // Y[1,1] = alpha [1, u/4] [1; 1] + addend.
  const struct {
    const char *name;
    bool hasC, rowVector;
    float alpha, beta, c;
  } cases[] = {
      {"bias row (beta 1)", true, true, 1.0f, 1.0f, u / 2},
      {"scaled row (beta 1/2)", true, true, 1.0f, 0.5f, u},
      {"full C", true, false, 1.0f, 1.0f, u / 2},
      {"previous Y (no C)", false, false, 1.0f, 1.0f, u / 2},
      {"alpha 2, beta 1/2", true, false, 2.0f, 0.5f, -2.0f + u},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    GemmParams p;
    p.m = 1, p.n = 1, p.k = 2;
    p.has_c = c.hasC, p.c_is_row_vector = c.rowVector;
    p.alpha = c.alpha, p.beta = c.beta;
    p.dtype = type;
    void *y = upload(bits({c.hasC ? 0.0f : c.c}));
    Status s =
        device->gemm(p, upload(bits({1.0f, u / 4})), upload(bits({1.0f, 1.0f})),
                     c.hasC ? upload(bits({c.c})) : nullptr, y, nullptr);
    ASSERT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(download<uint16_t>(y, 1)[0], want)
        << "got " << fromBits(download<uint16_t>(y, 1)[0], type);
  }
  // conv: x [1,2,1,1] = [1, u/4], w [1,2,1,1] = [1, 1], bias [u/2]; the
  // asymmetric pads variant goes through the explicitly padded input.
  for (int64_t padEnd : {0, 1}) {
    SCOPED_TRACE("conv, end pad " + std::to_string(padEnd));
    ConvParams p = convCase(2, 1, 2, 1, 1, 1, 1, 1, 1, 0, padEnd, 1, 1, true);
    p.dtype = type;
    const int64_t yN = p.p * p.q;
    void *y = upload(std::vector<uint16_t>(yN, 0x7fff));
    Status s = device->convForward(p, upload(bits({1.0f, u / 4})),
                                   upload(bits({1.0f, 1.0f})),
                                   upload(bits({u / 2})), y);
    ASSERT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(download<uint16_t>(y, yN)[0], want)
        << "got " << fromBits(download<uint16_t>(y, yN)[0], type);
  }
}

TEST_P(LowPrecisionCalls, RejectsF64) {
  GemmParams p;
  p.m = p.n = p.k = 2;
  p.dtype = ElementType::F64;
  std::vector<double> a(4, 1.0), y(4, 0.0);
  void *da = upload(a.data(), 32), *dy = upload(y.data(), 32);
  Status s = device->gemm(p, da, da, nullptr, dy, nullptr);
  EXPECT_EQ(s.code, DLRT_INTERNAL);
  EXPECT_NE(s.message.find("gemm: element type f64 is not supported (f32, "
                           "f16 and bf16 are)"),
            std::string::npos)
      << s.message;
}

INSTANTIATE_TEST_SUITE_P(
    Devices, LowPrecisionCalls,
    ::testing::Combine(::testing::Values(std::string("host"),
                                         std::string("cuda")),
                       ::testing::Values(ElementType::F16, ElementType::BF16)),
    [](const auto &info) {
      return std::get<0>(info.param) +
             (std::get<1>(info.param) == ElementType::F16 ? "_f16" : "_bf16");
    });

} // namespace
