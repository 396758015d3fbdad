//===- CheckingDevice.h - a device that checks, for the fuzz targets -*- C++ -*-===//
// A dlrt::Device for fuzzing the package loader and checkpoint restore: it
// never loads a kernel (no dlopen of package bytes) and computes nothing,
// but every call checks that the memory it would touch lies inside one
// allocation, and aborts (a fuzzer finding) when it does not. A package that
// the loader accepts must never trip it: the loader's promise is that the
// executor can trust what it accepted.
#ifndef DLC_TEST_FUZZ_CHECKINGDEVICE_H
#define DLC_TEST_FUZZ_CHECKINGDEVICE_H

#include "runtime/device/Device.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace dlrt::fuzz {

/// Stops the process with |what|: a finding for libFuzzer.
[[noreturn]] inline void violation(const std::string &what) {
  std::fprintf(stderr, "CheckingDevice: %s\n", what.c_str());
  std::abort();
}

class CheckingDevice : public Device {
public:
  /// Allocations beyond |limitBytes| in total fail with DLRT_OUT_OF_MEMORY,
  /// as a real device's would, so a package may ask for any size.
  explicit CheckingDevice(size_t limitBytes = size_t(64) << 20)
      : limit_(limitBytes) {}
  ~CheckingDevice() override {
    if (!live_.empty())
      violation(std::to_string(live_.size()) + " allocations not released");
  }

  dlrt_device_kind_t kind() const override { return DLRT_DEVICE_HOST; }
  std::string name() const override { return "checking"; }

  Status allocate(size_t bytes, DeviceBuffer *out) override {
    if (bytes > limit_ - used_)
      return Status::error(DLRT_OUT_OF_MEMORY,
                           "cannot allocate " + std::to_string(bytes) +
                               " bytes (checking device limit)");
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p)
      return Status::error(DLRT_OUT_OF_MEMORY, "malloc failed");
    used_ += bytes;
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
    out->data = p;
    out->bytes = bytes;
    return Status::OK();
  }
  void release(DeviceBuffer &buffer) override {
    auto it = live_.find(reinterpret_cast<uintptr_t>(buffer.data));
    if (it == live_.end() || it->second != buffer.bytes)
      violation("release of an unknown buffer");
    used_ -= it->second;
    live_.erase(it);
    std::free(buffer.data);
    buffer = DeviceBuffer();
  }
  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    check(dst, bytes, "copyToDevice");
    if (bytes)
      std::memcpy(dst, src, bytes);
    return Status::OK();
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    check(src, bytes, "copyToHost");
    if (bytes)
      std::memcpy(dst, src, bytes);
    return Status::OK();
  }
  Status fillZero(void *dst, size_t bytes) override {
    check(dst, bytes, "fillZero");
    if (bytes)
      std::memset(dst, 0, bytes);
    return Status::OK();
  }

  Status loadKernels(const std::vector<uint8_t> &,
                     const std::vector<KernelSpec> &kernels,
                     std::vector<std::unique_ptr<DeviceKernel>> *out) override {
    out->clear();
    for (size_t i = 0; i < kernels.size(); ++i)
      out->push_back(std::make_unique<DeviceKernel>());
    return Status::OK();
  }
  /// A kernel may touch any of its buffers; their sizes are not passed, so
  /// only the base pointers are checked.
  Status launch(DeviceKernel &, const std::vector<void *> &args) override {
    for (void *a : args)
      check(a, 0, "launch");
    return Status::OK();
  }

  Status gemm(const GemmParams &p, const void *a, const void *b, const void *c,
              void *y, void *biasGrad, void *reluMask = nullptr) override {
    if (p.m <= 0 || p.n <= 0 || p.k <= 0)
      violation("gemm with non-positive sizes");
    checkElements(p.dtype, a, {p.m, p.k}, "gemm A");
    checkElements(p.dtype, b, {p.k, p.n}, "gemm B");
    if (p.has_c)
      checkElements(p.dtype, c,
                    p.c_is_row_vector ? std::vector<int64_t>{p.n}
                                      : std::vector<int64_t>{p.m, p.n},
                    "gemm C");
    checkElements(p.dtype, y, {p.m, p.n}, "gemm Y");
    if (dlc::exec::writesBiasGradient(p.epilogue))
      checkElements(p.dtype, biasGrad,
                    {p.epilogue == dlc::exec::GemmEpilogue::BiasGradA ? p.m
                                                                      : p.n},
                    "gemm dBias");
    if (dlc::exec::writesReluMask(p.epilogue) ||
        dlc::exec::readsReluMask(p.epilogue))
      check(reluMask,
            size_t(mul(mul(p.m, dlc::exec::reluMaskWords(p.n)), 4)),
            "gemm ReLU mask");
    return Status::OK();
  }
  Status batchedGemm(const BatchedGemmParams &p, const void *a, const void *b,
                     void *y) override {
    if (p.batch.size() != p.stride_a.size() ||
        p.batch.size() != p.stride_b.size())
      violation("batched_gemm with ragged batch/stride lists");
    int64_t lastA = 0, lastB = 0, count = 1;
    for (size_t i = 0; i < p.batch.size(); ++i) {
      if (p.batch[i] <= 0 || p.stride_a[i] < 0 || p.stride_b[i] < 0)
        violation("batched_gemm with a bad batch dim or stride");
      lastA = add(lastA, mul(p.batch[i] - 1, p.stride_a[i]));
      lastB = add(lastB, mul(p.batch[i] - 1, p.stride_b[i]));
      count = mul(count, p.batch[i]);
    }
    checkElements(p.dtype, a, {add(lastA, mul(p.m, p.k))}, "batched_gemm A");
    checkElements(p.dtype, b, {add(lastB, mul(p.k, p.n))}, "batched_gemm B");
    checkElements(p.dtype, y, {count, p.m, p.n}, "batched_gemm Y");
    return Status::OK();
  }
  Status convForward(const ConvParams &p, const void *x, const void *w,
                     const void *bias, void *y) override {
    checkConv(p);
    checkElements(p.dtype, x, xDims(p), "conv X");
    checkElements(p.dtype, w, wDims(p), "conv W");
    if (p.has_bias)
      checkElements(p.dtype, bias, {p.k}, "conv bias");
    checkElements(p.dtype, y, yDims(p), "conv Y");
    return Status::OK();
  }
  Status convBackwardData(const ConvParams &p, const void *dy, const void *w,
                          void *dx) override {
    checkConv(p);
    checkElements(p.dtype, dy, yDims(p), "conv dY");
    checkElements(p.dtype, w, wDims(p), "conv W");
    checkElements(p.dtype, dx, xDims(p), "conv dX");
    return Status::OK();
  }
  Status convBackwardFilter(const ConvParams &p, const void *x, const void *dy,
                            void *dw) override {
    checkConv(p);
    checkElements(p.dtype, x, xDims(p), "conv X");
    checkElements(p.dtype, dy, yDims(p), "conv dY");
    checkElements(p.dtype, dw, wDims(p), "conv dW");
    return Status::OK();
  }
  Status synchronize() override { return Status::OK(); }

private:
  static int64_t mul(int64_t a, int64_t b) {
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
      violation("size arithmetic overflows or is negative");
    return r;
  }
  static int64_t add(int64_t a, int64_t b) {
    int64_t r;
    if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
      violation("size arithmetic overflows or is negative");
    return r;
  }
  static void checkConv(const ConvParams &p) {
    for (int64_t v : {p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.p, p.q, p.group,
                      p.d, p.t, p.o, p.stride_h, p.stride_w, p.stride_d,
                      p.dilation_h, p.dilation_w, p.dilation_d})
      if (v <= 0)
        violation("conv with a non-positive size, stride or dilation");
    if (p.c % p.group != 0 || p.k % p.group != 0)
      violation("conv channels not divisible by the group");
  }
  // Operand shapes of a convolution (the depth factors are 1 in 2-D).
  static std::vector<int64_t> xDims(const ConvParams &p) {
    return {p.n, p.c, p.d, p.h, p.w};
  }
  static std::vector<int64_t> wDims(const ConvParams &p) {
    return {p.k, p.c / p.group, p.t, p.r, p.s};
  }
  static std::vector<int64_t> yDims(const ConvParams &p) {
    return {p.n, p.k, p.o, p.p, p.q};
  }

  /// Aborts unless |dims| elements of |type| at |ptr| lie in one allocation.
  void checkElements(dlc::exec::ElementType type, const void *ptr,
                     const std::vector<int64_t> &dims, const char *what) {
    int64_t n = int64_t(dlc::exec::elementTypeBytes(type));
    for (int64_t d : dims)
      n = mul(n, d);
    check(ptr, static_cast<size_t>(n), what);
  }

  /// Aborts unless [ptr, ptr + bytes) lies inside one live allocation (a
  /// zero-byte range may sit at its end).
  void check(const void *ptr, size_t bytes, const char *what) {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto it = live_.upper_bound(p);
    if (!ptr || it == live_.begin())
      violation(std::string(what) + ": pointer outside every allocation");
    --it;
    uintptr_t base = it->first;
    size_t size = it->second;
    if (p - base > size || bytes > size - (p - base))
      violation(std::string(what) + ": " + std::to_string(bytes) +
                " bytes at offset " + std::to_string(p - base) +
                " overrun an allocation of " + std::to_string(size));
  }

  size_t limit_;
  size_t used_ = 0;
  std::map<uintptr_t, size_t> live_;
};

} // namespace dlrt::fuzz

#endif
