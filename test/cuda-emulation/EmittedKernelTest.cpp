//===- EmittedKernelTest.cpp - dlc's emitted kernels on the emulator ----===//
//
// Each kernel file is the verbatim output for the CNN's training step; the
// launch is the runtime's (256 threads a block, enough blocks to cover the
// kernel's thread count), and the result is compared with a plain C++ loop
// doing the same float operations in the same order, so equality is exact.
//
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

// Standard headers go before the emulation header (see Launch.h).
#include "dlc_cuda_emulation/Launch.h"

// Every emitted file repeats the prelude's static helpers, so each gets its
// own namespace.
namespace relu {
#include "kernels/dlc_forward_relu.cu"
}
namespace pool {
#include "kernels/dlc_max_pool.cu"
}
namespace mean {
#include "kernels/dlc_reduce_mean.cu"
}
namespace xent {
#include "kernels/dlc_softmax_cross_entropy.cu"
}
namespace epilogue {
#include "kernels/dlc_reduction_epilogue.cu"
}
namespace xent_grad {
#include "kernels/dlc_softmax_cross_entropy_grad.cu"
}
namespace ln_warp {
#include "kernels/dlc_layer_norm_warp.cu"
}
namespace ln_block {
#include "kernels/dlc_layer_norm_block.cu"
}

namespace {

using dlc_emu::launch;
using dlc_emu::options;

dim3 gridFor(long long threads) {
  return dim3((unsigned)((threads + 255) / 256));
}

std::vector<float> values(size_t n, float scale, unsigned salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * (float)((int)((i * 2654435761u + salt) % 2001u) - 1000) /
           1000.0f;
  return v;
}

struct BatchNormRelu {
  std::vector<float> x = values(4 * 8 * 28 * 28, 3.0f, 1),
                     scale = values(8, 1.0f, 2), bias = values(8, 0.5f, 3),
                     mean = values(8, 0.2f, 4), var = values(8, 1.0f, 5),
                     y = std::vector<float>(4 * 8 * 28 * 28, -1.0f);
  BatchNormRelu() {
    for (float &v : var)
      v = std::fabs(v) + 0.1f;
    x[123] = NAN; // the kernel keeps NaNs through the ReLU
  }
  std::vector<float> reference() const {
    std::vector<float> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      size_t c = i / 784 % 8;
      float v = (float)((x[i] - mean[c]) / sqrtf(var[c] + 9.999999747e-06f));
      v = v * scale[c] + bias[c];
      out[i] = (v > 0.0f || v != v) ? v : 0.0f;
    }
    return out;
  }
  dlc_emu::result run(const options &o) {
    return launch(relu::forward_k1_relu, gridFor(25088), dim3(256), o, x.data(),
                  scale.data(), bias.data(), mean.data(), var.data(), y.data());
  }
};

void expectSameFloats(const std::vector<float> &got,
                      const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << i;
    else
      EXPECT_EQ(got[i], want[i]) << i;
  }
}

TEST(EmittedKernels, ElementwiseBatchNormRelu) {
  for (int fibers : {0, 1}) {
    BatchNormRelu k;
    options o;
    o.fibers = fibers;
    o.threads = 2;
    o.seed = 7;
    auto r = k.run(o);
    ASSERT_TRUE(r.ok()) << r.message;
    expectSameFloats(k.y, k.reference());
  }
}

TEST(EmittedKernels, MaxPool2x2) {
  std::vector<float> x = values(32 * 28 * 28, 5.0f, 9), y(32 * 14 * 14, 0.0f);
  x[28 * 3 + 7] = NAN;
  auto r = launch(pool::forward_k2_max_pool, gridFor(6272), dim3(256),
                  options(), x.data(), y.data());
  ASSERT_TRUE(r.ok()) << r.message;
  std::vector<float> want(y.size());
  for (int nc = 0; nc < 32; ++nc)
    for (int oh = 0; oh < 14; ++oh)
      for (int ow = 0; ow < 14; ++ow) {
        float m = -INFINITY;
        bool any = false;
        for (int kh = 0; kh < 2; ++kh)
          for (int kw = 0; kw < 2; ++kw) {
            float v = x[nc * 784 + (2 * oh + kh) * 28 + 2 * ow + kw];
            if (!any || v > m || v != v)
              m = v;
            any = true;
          }
        want[(nc * 14 + oh) * 14 + ow] = m;
      }
  expectSameFloats(y, want);
  EXPECT_TRUE(std::isnan(y[1 * 14 + 3])); // the window holding x[28 * 3 + 7]
}

// BatchNorm's mean over N, H, W of [4, 8, 28, 28]: one block of 256 threads
// per channel, thread s adding steps s, s + 256, ... in double, thread 0
// adding the 256 partials in order. Every thread order (seed) must give the
// reference's bits.
TEST(EmittedKernels, ReduceMeanSplitOverABlock) {
  std::vector<float> x = values(4 * 8 * 28 * 28, 2.0f, 11);
  for (unsigned seed : {1u, 2u}) {
    std::vector<float> y(8, NAN);
    options o = options();
    o.seed = seed;
    auto r = launch(mean::train_step_k5_reduce_mean, gridFor(2048), dim3(256),
                    o, x.data(), y.data());
    ASSERT_TRUE(r.ok()) << r.message;
    for (int c = 0; c < 8; ++c) {
      double part[256];
      for (int s = 0; s < 256; ++s)
        part[s] = s == 0 ? 0.0 : -0.0;
      for (int t = 0; t < 3136; ++t) {
        const int n = t / 784, i = t % 784;
        part[t % 256] +=
            (double)(float)(x[n * 6272 + c * 784 + i] * 3.188775445e-04f);
      }
      double acc = part[0];
      for (int s = 1; s < 256; ++s)
        acc += part[s];
      EXPECT_EQ(y[c], (float)acc) << c << ", seed " << seed;
    }
  }
}

// The same split reduction with an epilogue (reduction epilogue fusion):
// thread 0 of each channel's block stores mean(x * x), reads it back and
// stores rsqrt(var) * gamma, as the separate rsqrt and mul kernels would.
// Every thread order (seed) must give the reference's bits for both.
TEST(EmittedKernels, ReductionEpilogueAfterTheBlockCombine) {
  std::vector<float> x = values(4 * 8 * 28 * 28, 2.0f, 17),
                     gamma = values(8, 1.5f, 19);
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<float> var(8, NAN), scale(8, NAN);
    options o = options();
    o.seed = seed;
    auto r = launch(epilogue::forward_k1_reduce_mean, gridFor(2048), dim3(256),
                    o, x.data(), gamma.data(), var.data(), scale.data());
    ASSERT_TRUE(r.ok()) << r.message;
    for (int c = 0; c < 8; ++c) {
      double part[256];
      for (int s = 0; s < 256; ++s)
        part[s] = s == 0 ? 0.0 : -0.0;
      for (int t = 0; t < 3136; ++t) {
        const int n = t / 784, i = t % 784;
        const float v = x[n * 6272 + c * 784 + i];
        part[t % 256] += (double)(float)((float)(v * v) * 3.188775445e-04f);
      }
      double acc = part[0];
      for (int s = 1; s < 256; ++s)
        acc += part[s];
      const float want = (float)acc;
      EXPECT_EQ(var[c], want) << c << ", seed " << seed;
      EXPECT_EQ(scale[c], (float)((1.0f / sqrtf(want)) * gamma[c]))
          << c << ", seed " << seed;
    }
  }
}

// The loss: one block of 4 warps (one per row), each row's maximum and sum
// combined by an xor butterfly of shuffles, the rows' losses added by lane 0
// in double and the warps' sums by thread 0 in warp order. The reference does
// the butterfly's additions in the same order; every thread order (seed)
// must give the same bits.
struct CrossEntropyRows {
  std::vector<float> logits = values(40, 4.0f, 13);
  std::vector<long long> labels = {3, 0, 9, 42}; // 42: out of range, skipped
  // Lane l holds element l (rows have 10 < 32 elements); the butterfly
  // combines lanes l and l ^ o at each level o = 16, 8, 4, 2, 1.
  static float butterflySum(const float *v, int n) {
    float lane[32];
    for (int l = 0; l < 32; ++l)
      lane[l] = l < n ? v[l] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) {
      float next[32];
      for (int l = 0; l < 32; ++l)
        next[l] = lane[l] + lane[l ^ o];
      std::copy(next, next + 32, lane);
    }
    return lane[0];
  }
  void stats(int row, float *m, float *s) const {
    const float *x = logits.data() + row * 10;
    *m = -INFINITY;
    for (int k = 0; k < 10; ++k)
      *m = x[k] > *m ? x[k] : *m;
    float e[10];
    for (int k = 0; k < 10; ++k)
      e[k] = expf(x[k] - *m);
    *s = butterflySum(e, 10);
  }
};

TEST(EmittedKernels, SoftmaxCrossEntropyWarpPerRow) {
  CrossEntropyRows c;
  double total = 0;
  for (int row = 0; row < 3; ++row) {
    float m, s;
    c.stats(row, &m, &s);
    total += (double)(m + logf(s) - c.logits[row * 10 + c.labels[row]]);
  }
  const float want = (float)(total / 4.0);
  for (unsigned seed : {1u, 2u, 3u, 4u}) {
    std::vector<float> loss(1, NAN);
    options o = options();
    o.seed = seed;
    o.fibers = 1;
    auto r = launch(xent::train_step_k2_softmax_cross_entropy, dim3(1),
                    dim3(128), o, c.logits.data(), c.labels.data(),
                    loss.data());
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(loss[0], want) << "seed " << seed;
  }
}

TEST(EmittedKernels, SoftmaxCrossEntropyGradWarpPerRow) {
  CrossEntropyRows c;
  const float seed = 0.5f; // d loss
  std::vector<float> want(40);
  for (int row = 0; row < 4; ++row) {
    float m, s;
    c.stats(row, &m, &s);
    const bool valid = c.labels[row] >= 0 && c.labels[row] < 10;
    for (int k = 0; k < 10; ++k)
      want[row * 10 + k] =
          valid ? (expf(c.logits[row * 10 + k] - m) / s -
                   (k == c.labels[row] ? 1.0f : 0.0f)) *
                      (seed / 4.0f)
                : 0.0f;
  }
  for (unsigned rseed : {1u, 2u, 3u}) {
    std::vector<float> dx(40, NAN), dloss(1, seed);
    options o = options();
    o.seed = rseed;
    o.fibers = 1;
    auto r = launch(xent_grad::train_step_k3_softmax_cross_entropy_grad,
                    dim3(1), dim3(256), o, c.logits.data(), c.labels.data(),
                    dloss.data(), dx.data());
    ASSERT_TRUE(r.ok()) << r.message;
    expectSameFloats(dx, want);
  }
}

// Not a pass/fail figure: prints emulated threads per second for an
// elementwise kernel (README.md quotes them), after checking the results.
TEST(EmittedKernels, ThroughputFigures) {
  BatchNormRelu k;
  const std::vector<float> want = k.reference();
  for (int fibers : {0, 1}) {
    for (unsigned threads : {1u, 2u}) {
      options o;
      o.fibers = fibers;
      o.threads = threads;
      const int launches = fibers ? 4 : 40;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < launches; ++i)
        ASSERT_TRUE(k.run(o).ok());
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      expectSameFloats(k.y, want);
      printf("[ figures  ] forward_k1_relu, fibers = %d, %u OS thread(s): %.3g "
             "emulated threads/s\n",
             fibers, threads, 25088.0 * launches / seconds);
    }
  }
}

// LayerNorm as one row kernel (--dlexec-fuse-layer-norm): |threads| threads
// a row, thread t holding elements t, t + threads, ...; each thread sums its
// elements in double, in order; a warp's 32 sums combine by the xor
// butterfly, a block's warp sums in warp order. The reference does the
// same additions in the same order (and the decomposition's roundings), so
// every thread order (seed) must give its bits for y, mean and rstd.
struct LayerNormRef {
  std::vector<float> y, mean, rstd;
};
LayerNormRef layerNormReference(const std::vector<float> &x,
                                const std::vector<float> &w,
                                const std::vector<float> &b, int rows, int n,
                                int threads) {
  const float c = (float)(1.0 / n), eps = 9.999999747e-06f;
  LayerNormRef out{std::vector<float>(x.size()), std::vector<float>(rows),
                   std::vector<float>(rows)};
  // Sum of |term(k)| over the row in the kernel's order.
  auto rowSum = [&](auto term) {
    std::vector<double> part(threads, 0.0);
    for (int t = 0; t < threads; ++t)
      for (int k = t; k < n; k += threads)
        part[t] += term(k);
    std::vector<double> warpSum;
    for (int w0 = 0; w0 < threads; w0 += 32) {
      double lane[32];
      std::copy(part.begin() + w0, part.begin() + w0 + 32, lane);
      for (int o = 16; o > 0; o >>= 1) {
        double next[32];
        for (int l = 0; l < 32; ++l)
          next[l] = lane[l] + lane[l ^ o];
        std::copy(next, next + 32, lane);
      }
      warpSum.push_back(lane[0]);
    }
    double total = warpSum[0];
    for (size_t i = 1; i < warpSum.size(); ++i)
      total += warpSum[i];
    return total;
  };
  for (int r = 0; r < rows; ++r) {
    const float *xr = x.data() + (size_t)r * n;
    const float m =
        (float)rowSum([&](int k) { return (double)(float)(xr[k] * c); });
    const float var = (float)rowSum([&](int k) {
      const float d = (float)(xr[k] - m);
      return (double)(float)((float)(d * d) * c);
    });
    const float rs = 1.0f / sqrtf((float)(var + eps));
    out.mean[r] = m;
    out.rstd[r] = rs;
    for (int k = 0; k < n; ++k) {
      const float d = (float)(xr[k] - m);
      out.y[(size_t)r * n + k] = (float)((float)((float)(d * rs) * w[k]) + b[k]);
    }
  }
  return out;
}

template <typename Kernel>
void checkLayerNorm(Kernel kernel, int rows, int n, int threads, dim3 grid,
                    dim3 block) {
  // Rows far from zero (offset 50): the two-pass variance keeps them exact
  // where E[x^2] - E[x]^2 would cancel.
  std::vector<float> x = values((size_t)rows * n, 3.0f, 23),
                     w = values(n, 1.5f, 29), b = values(n, 0.5f, 31);
  for (float &v : x)
    v += 50.0f;
  const LayerNormRef want = layerNormReference(x, w, b, rows, n, threads);
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<float> y(x.size(), NAN), mean(rows, NAN), rstd(rows, NAN);
    options o = options();
    o.seed = seed;
    auto r = launch(kernel, grid, block, o, x.data(), w.data(), b.data(),
                    y.data(), mean.data(), rstd.data());
    ASSERT_TRUE(r.ok()) << r.message;
    expectSameFloats(mean, want.mean);
    expectSameFloats(rstd, want.rstd);
    expectSameFloats(y, want.y);
  }
  // Not a vacuous comparison: the rows are normalized (mean 0, variance
  // near 1 before the affine).
  double s = 0;
  for (int k = 0; k < n; ++k)
    s += (want.y[k] - b[k]) / w[k];
  EXPECT_NEAR(s / n, 0.0, 1e-4);
  EXPECT_NEAR(want.mean[0], 50.0, 1.0);
}

TEST(EmittedKernels, LayerNormWarpPerRow) {
  checkLayerNorm(ln_warp::forward_k8_layer_norm, 3, 40, 32, gridFor(256),
                 dim3(256));
}

TEST(EmittedKernels, LayerNormBlockPerRow) {
  checkLayerNorm(ln_block::forward_k9_layer_norm, 2, 1500, 256, dim3(2),
                 dim3(256));
}

} // namespace
