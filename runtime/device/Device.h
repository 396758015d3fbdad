//===- Device.h - the device interface every backend implements -*- C++ -*-===//
// The executor talks to devices only through this interface; the host and
// CUDA devices implement it and pass the same tests.
#ifndef DLRT_DEVICE_DEVICE_H
#define DLRT_DEVICE_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/schema/LibraryCalls.h"
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

/// Device memory a device has allocated through Device::allocate, bytes,
/// since the device was created (docs/dlrt.md, "Memory").
struct MemoryUsage {
  /// Bytes the allocator holds from the system now and at most: on the host
  /// every allocation rounded up to its 256-byte alignment; on CUDA the
  /// stream-ordered pool's reserved memory (CU_MEMPOOL_ATTR_RESERVED_MEM_*),
  /// which a real GPU grows in chunks (typically 2 MiB), so it can exceed
  /// the bytes in use.
  int64_t reservedBytes = 0;
  int64_t reservedPeakBytes = 0;
  /// Bytes of live allocations now and at most: on the host exactly the
  /// sizes asked for; on CUDA the pool's used memory
  /// (CU_MEMPOOL_ATTR_USED_MEM_*), each allocation as the pool rounds it.
  int64_t usedBytes = 0;
  int64_t usedPeakBytes = 0;
};

/// One compiled kernel of a package, ready to launch.
class DeviceKernel {
public:
  virtual ~DeviceKernel() = default;
};

/// The parameters of the library calls (gemm, batched_gemm, conv*): the
/// structs of the shared library-call table (runtime/schema/LibraryCalls.h),
/// which the compiler fills and the package stores.
using GemmParams = dlc::exec::GemmParams;
using BatchedGemmParams = dlc::exec::BatchedGemmParams;
using ConvParams = dlc::exec::ConvParams;

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
  /// Copies |bytes| between two device buffers (ordered after the work
  /// already issued). The default stages them through host memory; devices
  /// with a direct copy override it.
  virtual Status copyOnDevice(void *dst, const void *src, size_t bytes) {
    if (bytes == 0)
      return Status::OK();
    std::vector<uint8_t> host(bytes);
    if (Status st = copyToHost(host.data(), src, bytes); !st.ok())
      return st;
    return copyToDevice(dst, host.data(), bytes);
  }

  /// The memory this device has allocated (MemoryUsage). Errors:
  /// DLRT_UNAVAILABLE (the device does not measure its memory),
  /// DLRT_INTERNAL (the driver's query failed).
  virtual Status memoryUsage(MemoryUsage *out) {
    *out = MemoryUsage();
    return Status::error(DLRT_UNAVAILABLE,
                         "device '" + name() + "' does not measure its memory");
  }

  /// The library-call workspace: |bytes| of device memory at |data| (from
  /// allocate, owned by the caller) that the library calls issued from now
  /// on may use as scratch, until the next setWorkspace; (nullptr, 0) for
  /// none. A session sets its planned workspace for the length of each run
  /// (the package's MemoryPlan workspace_bytes; docs/memory.md). The CUDA
  /// device allocates no workspace of its own: cuBLASLt and cuDNN get at
  /// most |bytes| (algorithms that need more are not chosen), and the
  /// temporaries of a call (a padded input, a vector of ones) come from it
  /// when they fit. Devices that need no scratch (the host) ignore it.
  virtual void setWorkspace(void *data, size_t bytes) {
    (void)data;
    (void)bytes;
  }

  /// How many times since the device was created a gemm call's cuBLASLt
  /// epilogue (bias, ReLU, bias gradient, ReLU mask, an f32 bias of a
  /// 16-bit gemm) found no algorithm, or could not be used, so that the
  /// device ran its own fallback (broadcast products, products with ones,
  /// small kernels; one call may count twice when its fallback's own gemm
  /// falls back). Calls replayed from a CUDA graph are not counted again.
  /// 0 on devices without epilogues (the host computes each directly).
  virtual int64_t gemmEpilogueFallbacks() const { return 0; }

  /// The CUDA stream (a CUstream) on which this device issues its work,
  /// with the device's CUDA context made current on the calling thread, for
  /// the NCCL communicator (comm::createNcclCommunicator); null for devices
  /// without streams (the host).
  virtual void *stream() { return nullptr; }

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

  /// Library calls; pointers are device pointers to elements of the
  /// params' `dtype` (f32, f16 or bf16; LibraryCalls.h): every operand of
  /// a call has that type. f16/bf16 calls accumulate in f32, apply alpha,
  /// beta and the bias in f32 and round the result once to the dtype.
  /// Errors: DLRT_INTERNAL (including an unsupported dtype).
  /// gemm: |p.epilogue| (LibraryCalls.h GemmEpilogue) applies ReLU to Y or
  /// writes the bias gradient to |bias_grad| ([M] for BiasGradA, [N] for
  /// BiasGradB and DReluBiasGrad, summed in at least f32, rounded once);
  /// |bias_grad| is null otherwise. |relu_mask| is the ReLU bit-mask
  /// ([M, reluMaskWords(N)] i32 words) that ReluAux writes and DRelu /
  /// DReluBiasGrad read; null for the other epilogues.
  virtual Status gemm(const GemmParams &p, const void *a, const void *b,
                      const void *c, void *y, void *bias_grad,
                      void *relu_mask = nullptr) = 0;
  /// The default runs one gemm() per batch index; devices with a strided
  /// batched GEMM override it.
  virtual Status batchedGemm(const BatchedGemmParams &p, const void *a,
                             const void *b, void *y) {
    GemmParams g;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.trans_a = p.trans_a;
    g.trans_b = p.trans_b;
    g.dtype = p.dtype;
    const int64_t size = int64_t(dlc::exec::elementTypeBytes(p.dtype));
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
      Status st = gemm(g, static_cast<const char *>(a) + offA * size,
                       static_cast<const char *>(b) + offB * size, nullptr,
                       static_cast<char *>(y) + i * p.m * p.n * size,
                       nullptr);
      if (!st.ok())
        return st;
    }
    return Status::OK();
  }
  virtual Status convForward(const ConvParams &p, const void *x, const void *w,
                             const void *bias, void *y) = 0;
  virtual Status convBackwardData(const ConvParams &p, const void *dy,
                                  const void *w, void *dx) = 0;
  virtual Status convBackwardFilter(const ConvParams &p, const void *x,
                                    const void *dy, void *dw) = 0;

  /// Waits until everything issued has finished. Errors: DLRT_INTERNAL.
  virtual Status synchronize() = 0;

  /// Step graphs (CUDA Graphs): the calls issued between beginCapture and
  /// endCapture are recorded, not run, into a graph that launchGraph then
  /// replays with the same pointers and parameters, as one submission.
  /// A device without graphs (the host) says DLRT_UNAVAILABLE from
  /// beginCapture. A call the device cannot record (one that would
  /// allocate memory outside the session's plan, say) makes endCapture
  /// fail; the caller then issues the calls again without a graph.
  class Graph {
  public:
    virtual ~Graph() = default;
  };
  virtual Status beginCapture() {
    return Status::error(DLRT_UNAVAILABLE,
                         "device '" + name() + "' has no step graphs");
  }
  /// Ends the capture begun by beginCapture; on success |*out| replays it.
  /// Errors: DLRT_UNAVAILABLE (the capture could not be completed: the
  /// calls issued since beginCapture did not run).
  virtual Status endCapture(std::unique_ptr<Graph> *out) {
    (void)out;
    return Status::error(DLRT_UNAVAILABLE, "no capture in progress");
  }
  /// Issues |graph| (from this device's endCapture) on the device's stream.
  /// Errors: DLRT_INTERNAL.
  virtual Status launchGraph(Graph &graph) {
    (void)graph;
    return Status::error(DLRT_UNAVAILABLE, "no step graphs");
  }
};

/// Creates the host device. Never fails.
std::unique_ptr<Device> createHostDevice();
/// Creates CUDA device |ordinal|, loading the driver (libcuda.so.1) with
/// dlopen. Errors: DLRT_UNAVAILABLE when there is no driver or no GPU,
/// naming which.
Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out);

} // namespace dlrt

#endif
