//===- Device.h - the device interface every backend implements -*- C++ -*-===//
// The executor talks to devices only through this interface; the host and
// CUDA devices implement it and pass the same tests.
#ifndef DLRT_SRC_DEVICE_H
#define DLRT_SRC_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlrt/dlrt.h"

namespace dlrt {

/// Result of a fallible runtime operation: a code and a one-line message.
struct Status {
  dlrt_status_code_t code = DLRT_OK;
  std::string message;
  bool ok() const { return code == DLRT_OK; }
  static Status OK() { return {}; }
  static Status error(dlrt_status_code_t code, std::string message) {
    return {code, std::move(message)};
  }
};

/// A device memory region; `data` is a device pointer (host pointer on the
/// host device).
struct DeviceBuffer {
  void *data = nullptr;
  size_t bytes = 0;
};

/// One compiled kernel of a package, ready to launch.
class DeviceKernel {
public:
  virtual ~DeviceKernel() = default;
};

/// Parameters of a `gemm` library call (row-major, f32):
/// Y[M,N] = alpha * op(A) * op(B) + beta * C, where op(A) is [M,K] (A is
/// [K,M] when trans_a), op(B) is [K,N] (B is [N,K] when trans_b). C is a
/// row vector [N] broadcast over rows (c_is_row_vector), a full [M,N], or
/// absent: then beta scales the previous contents of Y (accumulation).
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, has_c = false, c_is_row_vector = false;
  float alpha = 1.0f, beta = 0.0f;
};

/// Parameters of a `batched_gemm` library call (row-major f32, no
/// transposes): Y[p] = A[p] * B[p] for every index p of the batch dims
/// `batch`, where A[p] is [m,k] at element offset sum_i p_i * stride_a[i]
/// of A, B[p] is [k,n] at sum_i p_i * stride_b[i] of B (stride 0 broadcasts
/// an operand along that dim) and Y is contiguous [prod(batch), m, n].
struct BatchedGemmParams {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch, stride_a, stride_b;
};

/// Parameters of 2-D convolution calls (NCHW input, KCRS filter, f32):
/// input [N,C,H,W], filter [K,C/group,R,S], output [N,K,P,Q]. With
/// spatial = 3 (conv3d_* calls) the operands are [N,C,D,H,W],
/// [K,C/group,T,R,S] and [N,K,O,P,Q]; the depth fields are 1/0 otherwise.
struct ConvParams {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, p = 0, q = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, group = 1;
  bool has_bias = false;
  int spatial = 2;
  int64_t d = 1, t = 1, o = 1, stride_d = 1, pad_front = 0, pad_back = 0,
          dilation_d = 1;
};

/// A compute device. All calls are issued in order on one stream; the
/// device may run them asynchronously until synchronize().
class Device {
public:
  virtual ~Device() = default;
  virtual dlrt_device_kind_t kind() const = 0;
  /// One line, e.g. "host" or "cuda:0 NVIDIA H100 (sm_90)".
  virtual std::string name() const = 0;

  /// Allocates |bytes| (256-byte aligned). Errors: DLRT_OUT_OF_MEMORY.
  virtual Status allocate(size_t bytes, DeviceBuffer *out) = 0;
  virtual void release(DeviceBuffer &buffer) = 0;
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual Status fillZero(void *dst, size_t bytes) = 0;

  /// Prepares the kernels of a package for launch. |host_library| is the
  /// package's host shared object (ELF bytes); |cuda_sources| and |cubins|
  /// give each kernel's CUDA C++ and any precompiled images (arch -> image).
  /// |names| are the kernel entry points. Errors: DLRT_INTERNAL.
  struct KernelSpec {
    std::string name;
    std::string cuda_source;
    int64_t num_threads = 0;
    int32_t block_size = 256;
    std::vector<std::pair<std::string, std::vector<uint8_t>>> cubins;
  };
  virtual Status loadKernels(const std::vector<uint8_t> &host_library,
                             const std::vector<KernelSpec> &kernels,
                             std::vector<std::unique_ptr<DeviceKernel>> *out) = 0;
  /// Launches |kernel| with buffer base pointers |args| (inputs then
  /// outputs, in the order of the package's LaunchKernel.args).
  virtual Status launch(DeviceKernel &kernel, const std::vector<void *> &args) = 0;

  /// Library calls; pointers are device pointers.
  virtual Status gemm(const GemmParams &p, const float *a, const float *b,
                      const float *c, float *y) = 0;
  /// The default runs one gemm() per batch index; devices with a strided
  /// batched GEMM override it.
  virtual Status batchedGemm(const BatchedGemmParams &p, const float *a,
                             const float *b, float *y) {
    GemmParams g;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    int64_t count = 1;
    for (int64_t d : p.batch)
      count *= d;
    for (int64_t i = 0; i < count; ++i) {
      int64_t offA = 0, offB = 0, rest = i;
      for (size_t d = p.batch.size(); d-- > 0;) {
        offA += (rest % p.batch[d]) * p.stride_a[d];
        offB += (rest % p.batch[d]) * p.stride_b[d];
        rest /= p.batch[d];
      }
      Status st = gemm(g, a + offA, b + offB, nullptr, y + i * p.m * p.n);
      if (!st.ok())
        return st;
    }
    return Status::OK();
  }
  virtual Status convForward(const ConvParams &p, const float *x,
                             const float *w, const float *bias, float *y) = 0;
  virtual Status convBackwardData(const ConvParams &p, const float *dy,
                                  const float *w, float *dx) = 0;
  virtual Status convBackwardFilter(const ConvParams &p, const float *x,
                                    const float *dy, float *dw) = 0;

  /// Waits until everything issued has finished. Errors: DLRT_INTERNAL.
  virtual Status synchronize() = 0;
};

/// Creates the host device. Never fails.
std::unique_ptr<Device> createHostDevice();
/// Creates CUDA device |ordinal|, loading the driver (libcuda.so.1) with
/// dlopen. Errors: DLRT_UNAVAILABLE when there is no driver or no GPU,
/// naming which.
Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out);

} // namespace dlrt

#endif
