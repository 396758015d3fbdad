//===- TestKernels.cpp - host kernels of dlrt's CLI test package ----------===//
// Softmax regression trained with momentum SGD, written by hand so the CLI
// tests (resume bit-identity, run, info) have a real training package
// without dlc. Layout: x [B, F] f32, labels [B] i64, w [F, C], b [C].
// Compiled into a shared object that MakeTestPackage embeds as the
// package's host library (kernels take `void **args`, inputs then outputs).
#include "runtime/device/HalfConversions.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace {
struct Dims {
  int batch, features, classes;
  float lr;
};

/// logits[i, c] = sum_f x[i, f] w[f, c] + b[c]
void logits(const Dims &d, const float *x, const float *w, const float *b,
            float *out) {
  for (int i = 0; i < d.batch; ++i)
    for (int c = 0; c < d.classes; ++c) {
      float s = b[c];
      for (int f = 0; f < d.features; ++f)
        s += x[i * d.features + f] * w[f * d.classes + c];
      out[i * d.classes + c] = s;
    }
}

void trainStep(const Dims &d, void **args) {
  const float *x = static_cast<const float *>(args[0]);
  const int64_t *labels = static_cast<const int64_t *>(args[1]);
  float *w = static_cast<float *>(args[2]);
  float *b = static_cast<float *>(args[3]);
  float *vw = static_cast<float *>(args[4]);
  float *vb = static_cast<float *>(args[5]);
  float *step = static_cast<float *>(args[6]);
  float *loss = static_cast<float *>(args[7]);
  const float lr = d.lr, momentum = 0.9f;
  std::vector<float> zv(d.batch * d.classes), gwv(d.features * d.classes),
      gbv(d.classes);
  float *z = zv.data(), *gw = gwv.data(), *gb = gbv.data();
  logits(d, x, w, b, z);
  float total = 0;
  for (int i = 0; i < d.batch; ++i) {
    float *row = z + i * d.classes;
    float m = row[0];
    for (int c = 1; c < d.classes; ++c)
      m = std::fmax(m, row[c]);
    float sum = 0;
    for (int c = 0; c < d.classes; ++c)
      sum += std::exp(row[c] - m);
    int64_t l = labels[i];
    if (l < 0 || l >= d.classes)
      l = 0;
    total += std::log(sum) + m - row[l];
    // d loss / d logits = (softmax - onehot) / batch
    for (int c = 0; c < d.classes; ++c) {
      float g = (std::exp(row[c] - m) / sum - (c == l ? 1.f : 0.f)) /
                static_cast<float>(d.batch);
      gb[c] += g;
      for (int f = 0; f < d.features; ++f)
        gw[f * d.classes + c] += x[i * d.features + f] * g;
    }
  }
  *loss = total / static_cast<float>(d.batch);
  for (int k = 0; k < d.features * d.classes; ++k) {
    vw[k] = momentum * vw[k] + gw[k];
    w[k] -= lr * vw[k];
  }
  for (int c = 0; c < d.classes; ++c) {
    vb[c] = momentum * vb[c] + gb[c];
    b[c] -= lr * vb[c];
  }
  *step += 1.0f;
}
} // namespace

// Three shapes: the default model (F = 4), a wider one (F = 5) whose
// checkpoints do not fit the default model, and Fashion-MNIST (batch 64,
// 784 pixels, 10 classes).
namespace {
constexpr Dims kF4 = {4, 4, 3, 0.1f}, kF5 = {4, 5, 3, 0.1f},
               kMnist = {64, 784, 10, 0.001f};
void forward(const Dims &d, void **args) {
  logits(d, static_cast<const float *>(args[0]),
         static_cast<const float *>(args[1]),
         static_cast<const float *>(args[2]), static_cast<float *>(args[3]));
}
} // namespace
extern "C" void train_step_f4(void **args) { trainStep(kF4, args); }
extern "C" void train_step_f5(void **args) { trainStep(kF5, args); }
extern "C" void train_step_mnist(void **args) { trainStep(kMnist, args); }
extern "C" void forward_f4(void **args) { forward(kF4, args); }
extern "C" void forward_f5(void **args) { forward(kF5, args); }
extern "C" void forward_mnist(void **args) { forward(kMnist, args); }

/// The f16/bf16 package (dlrt-test-package --half): xh f16 [2, 3], xb bf16
/// [2, 3], s bf16 [3] -> yh = f16(2 xh) f16 [2, 3], yb = bf16(xb * s[c])
/// bf16 [2, 3], computed in f32 and rounded once.
extern "C" void forward_half(void **args) {
  const uint16_t *xh = static_cast<const uint16_t *>(args[0]);
  const uint16_t *xb = static_cast<const uint16_t *>(args[1]);
  const uint16_t *s = static_cast<const uint16_t *>(args[2]);
  uint16_t *yh = static_cast<uint16_t *>(args[3]);
  uint16_t *yb = static_cast<uint16_t *>(args[4]);
  for (int i = 0; i < 6; ++i) {
    yh[i] = dlrt::floatToHalfBits(2.0f * dlrt::halfBitsToFloat(xh[i]));
    yb[i] = dlrt::floatToBFloat16Bits(dlrt::bfloat16BitsToFloat(xb[i]) *
                                      dlrt::bfloat16BitsToFloat(s[i % 3]));
  }
}
