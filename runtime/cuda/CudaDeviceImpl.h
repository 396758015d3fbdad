//===- CudaDeviceImpl.h - what the CUDA device's sources share --*- C++ -*-===//
// The CUDA device class and the objects its sources share, private to
// runtime/cuda: CudaDevice.cpp (context, memory pool, streams, CUDA graphs),
// CudaKernels.cpp (kernel load and launch), CudaBlasLt.cpp (cuBLASLt matmuls
// and the epilogue fallbacks) and CudaDnn.cpp (cuDNN convolutions).
#ifndef DLRT_CUDA_CUDADEVICEIMPL_H
#define DLRT_CUDA_CUDADEVICEIMPL_H

#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/CudaDevice.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dlrt::cuda {

/// Returns the status of |expr| from the enclosing function when it fails.
#define DLRT_TRY(expr)                                                         \
  do {                                                                         \
    ::dlrt::Status dlrtStatus_ = (expr);                                       \
    if (!dlrtStatus_.ok())                                                     \
      return dlrtStatus_;                                                      \
  } while (0)

/// The CUDA objects of one device. Shared by the device and its kernels, so
/// the context outlives every module loaded into it.
struct CudaContext {
  const DriverApi *cu = nullptr;
  const CublasLtApi *lt = nullptr;
  const CudnnApi *dnn = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  cublasLtHandle_t ltHandle = nullptr;
  cudnnHandle_t dnnHandle = nullptr;

  ~CudaContext() {
    if (!context)
      return;
    cu->cuCtxSetCurrent(context);
    if (stream)
      cu->cuStreamSynchronize(stream);
    if (dnnHandle)
      dnn->cudnnDestroy(dnnHandle);
    if (ltHandle)
      lt->cublasLtDestroy(ltHandle);
    // Allocations still outstanding are released by the driver once freed.
    if (pool)
      cu->cuMemPoolDestroy(pool);
    if (stream)
      cu->cuStreamDestroy(stream);
    cu->cuDevicePrimaryCtxRelease(device);
  }
};

/// A kernel: its own module (one kernel per CUDA translation unit).
class CudaKernel final : public DeviceKernel {
public:
  CudaKernel(std::shared_ptr<CudaContext> context, CUmodule mod, CUfunction fn,
             std::string kernelName, int64_t threads, int32_t block)
      : ctx(std::move(context)), module(mod), function(fn),
        name(std::move(kernelName)), num_threads(threads), block_size(block) {}
  ~CudaKernel() override {
    ctx->cu->cuCtxSetCurrent(ctx->context);
    ctx->cu->cuModuleUnload(module);
  }

  std::shared_ptr<CudaContext> ctx;
  CUmodule module;
  CUfunction function;
  std::string name;
  int64_t num_threads;
  int32_t block_size;
  /// A grid-stride kernel (its source holds kGridStrideMarker) covers every
  /// element with any grid: launches cap its grid at |max_blocks| (0: no
  /// cap), one wave of the device at the kernel's occupancy.
  int64_t max_blocks = 0;
};

using dlc::exec::ElementType;

/// The error for an element type no CUDA library call takes (f64).
inline Status unsupportedType(const char *call, ElementType type) {
  return Status::error(DLRT_INTERNAL,
                       std::string(call) + ": element type " +
                           dlc::exec::elementTypeName(type) +
                           " is not supported (f32, f16 and bf16 are)");
}

/// |base| advanced by |elements| elements of |bytes| bytes each.
inline const void *offsetBy(const void *base, int64_t elements, size_t bytes) {
  return static_cast<const char *>(base) + elements * int64_t(bytes);
}
inline void *offsetBy(void *base, int64_t elements, size_t bytes) {
  return static_cast<char *>(base) + elements * int64_t(bytes);
}

/// A column-major cuBLASLt matmul: D[m,n] = alpha * op(A) * op(B) +
/// beta * C (+ bias[m] added to every column when |bias| is set). A is
/// stored rowsA x colsA with leading dimension rowsA, likewise B; C and D
/// are m x n with leading dimension m. Every matrix and the bias have
/// element type |type|; compute and scale type are f32 (CUBLAS_COMPUTE_32F,
/// CUDA_R_32F), so 16-bit operands accumulate in f32 and D is rounded once.
struct Matmul {
  uint64_t m = 0, n = 0, k = 0;
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  cudaDataType type = CUDA_R_32F;
  const void *a = nullptr;
  uint64_t rowsA = 0, colsA = 0;
  const void *b = nullptr;
  uint64_t rowsB = 0, colsB = 0;
  const void *c = nullptr;
  void *d = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  /// The epilogue's vector: the bias it adds (BIAS, RELU_BIAS) or the bias
  /// gradient it writes (BGRADA, BGRADB). With |epilogue| DEFAULT, a bias
  /// means BIAS.
  const void *bias = nullptr;
  /// The bias vector is f32 while |type| is 16-bit
  /// (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE CUDA_R_32F; GemmParams::f32_bias).
  bool f32Bias = false;
  /// C and D are f32 while A and B have the 16-bit |type| (a CUBLAS_COMPUTE_32F
  /// combination of cuBLAS's type table).
  bool f32Output = false;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  /// The ReLU bit-mask that RELU_AUX(_BIAS) writes and DRELU(_BGRAD) reads
  /// (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER): one bit per element of D,
  /// column-major with |auxLd| bits per column (EPILOGUE_AUX_LD, a multiple
  /// of 128, at least m); null for the other epilogues.
  void *aux = nullptr;
  int64_t auxLd = 0;
  /// Strided batch: |batch| matmuls, operand i at a + i * strideA elements
  /// (likewise B, and C/D with strideD); stride 0 repeats one matrix.
  int32_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideD = 0;
};

/// Which cuDNN convolution a chosen algorithm belongs to.
enum class ConvKind { Forward = 0, BackwardData = 1, BackwardFilter = 2 };

/// cuDNN descriptors of one convolution, destroyed with the object.
struct ConvDescriptors {
  const CudnnApi *dnn = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvDescriptors() {
    if (x)
      dnn->cudnnDestroyTensorDescriptor(x);
    if (y)
      dnn->cudnnDestroyTensorDescriptor(y);
    if (bias)
      dnn->cudnnDestroyTensorDescriptor(bias);
    if (w)
      dnn->cudnnDestroyFilterDescriptor(w);
    if (conv)
      dnn->cudnnDestroyConvolutionDescriptor(conv);
  }
};

/// The CUDA device (Device.h): one primary context and one non-blocking
/// stream, memory from a stream-ordered pool. Its members are defined by
/// concern in CudaDevice.cpp, CudaKernels.cpp, CudaBlasLt.cpp and CudaDnn.cpp.
class CudaDevice final : public Device {
public:
  /// Errors: DLRT_UNAVAILABLE for every failure (so DLRT_DEVICE_AUTO can
  /// fall back to the host), DLRT_OUT_OF_MEMORY.
  static Status create(int ordinal, std::unique_ptr<Device> *out) {
    Status status = createImpl(ordinal, out);
    if (status.code == DLRT_INTERNAL)
      status.code = DLRT_UNAVAILABLE;
    return status;
  }

  dlrt_device_kind_t kind() const override { return DLRT_DEVICE_CUDA; }
  std::string name() const override { return name_; }

  Status allocate(size_t bytes, DeviceBuffer *out) override;
  void release(DeviceBuffer &buffer) override;
  Status copyToDevice(void *dst, const void *src, size_t bytes) override;
  /// Blocks until the copy is done, so |dst| holds the data on return.
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status fillZero(void *dst, size_t bytes) override;
  Status copyOnDevice(void *dst, const void *src, size_t bytes) override;
  void *stream() override {
    if (!makeCurrent().ok())
      return nullptr;
    return ctx_->stream;
  }
  /// The pool's reserved and used bytes and their high-water marks.
  Status memoryUsage(MemoryUsage *out) override;
  void setWorkspace(void *data, size_t bytes) override {
    workspace_ = data;
    workspaceBytes_ = data ? bytes : 0;
  }
  Status loadKernels(const std::vector<uint8_t> &host_library,
                     const std::vector<KernelSpec> &kernels,
                     std::vector<std::unique_ptr<DeviceKernel>> *out) override;
  Status launch(DeviceKernel &kernel, const std::vector<void *> &args) override;
  Status gemm(const GemmParams &p, const void *a, const void *b, const void *c,
              void *y, void *bias_grad, void *relu_mask = nullptr) override;
  Status batchedGemm(const BatchedGemmParams &p, const void *a, const void *b,
                     void *y) override;
  Status convForward(const ConvParams &p, const void *x, const void *w,
                     const void *bias, void *y) override;
  Status convBackwardData(const ConvParams &p, const void *dy, const void *w,
                          void *dx) override;
  Status convBackwardFilter(const ConvParams &p, const void *x, const void *dy,
                            void *dw) override;
  Status synchronize() override;
  Status beginCapture() override;
  Status endCapture(std::unique_ptr<Graph> *out) override;
  Status launchGraph(Graph &graph) override;

  int64_t gemmEpilogueFallbacks() const override { return fallbacks_; }

  CudaKernelStats stats() const {
    CudaKernelStats s;
    s.embedded = embedded_;
    s.cache_hits = cacheHits_;
    s.compiled = compiled_;
    return s;
  }

private:
  explicit CudaDevice(std::shared_ptr<CudaContext> ctx)
      : ctx_(std::move(ctx)) {}
  static Status createImpl(int ordinal, std::unique_ptr<Device> *out);

  Status makeCurrent();
  Status check(CUresult result, const char *call) const;
  Status checkLt(cublasStatus_t status, const char *call) const;
  Status checkDnn(cudnnStatus_t status, const char *call) const;
  /// Blocks of |blockSize| threads of |function| that fill every
  /// multiprocessor once at its occupancy: the grid of a grid-stride kernel;
  /// 0 where the device reports no multiprocessor count.
  int64_t oneWave(CUfunction function, int32_t blockSize) const;
  /// Runs |mm| with the workspace past its first |offset| bytes (the
  /// caller's scratch) as cuBLASLt's workspace.
  Status matmul(const Matmul &mm, size_t offset = 0);
  /// gemm() with a BiasGradA/BiasGradB epilogue: cuBLASLt's BGRADB/BGRADA
  /// when the heuristic has an algorithm (and there is no C), else the
  /// plain product and dBias as a product with a vector of ones.
  Status gemmWithBiasGradient(const GemmParams &p, const void *a,
                              const void *b, const void *c, void *y,
                              void *biasGrad);
  /// gemm() with a ReluAux, DRelu or DReluBiasGrad epilogue: cuBLASLt's
  /// RELU_AUX(_BIAS) / DRELU(_BGRAD) with |mask| as the epilogue's aux
  /// bit-mask when the heuristic has an algorithm, else the Relu / plain
  /// gemm, then a kernel of its own that writes or applies the mask (same
  /// layout: LibraryCalls.h GemmEpilogue) and dBias as a product with ones.
  Status gemmWithReluMask(const GemmParams &p, const void *a, const void *b,
                          const void *c, void *y, void *biasGrad, void *mask);
  /// gemm() of f16/bf16 operands with an f32 bias row (f32_bias): cuBLASLt's
  /// BIAS / RELU_BIAS with BIAS_DATA_TYPE CUDA_R_32F when the heuristic has
  /// an algorithm, else T[M, N] = the f32 bias broadcast (an f32 rank-1
  /// product), T += op(A) op(B) (f32 C and D), and Y = round(T) (after the
  /// ReLU) by a kernel of its own: either way the one rounding is Y's.
  Status gemmWithF32Bias(const GemmParams &p, const void *a, const void *b,
                         const void *c, void *y);
  /// The mask kernel of gemmWithReluMask's fallback (NVRTC-compiled on
  /// first use): |write|: the bit of each element of the [M, N] result |y|
  /// that is > 0 (bits past N cleared), else y = +0 where the bit is clear.
  Status reluMaskKernel(bool write, void *y, void *mask, uint64_t m,
                        uint64_t n, ElementType type);
  /// Y = max(Y, 0) over |count| elements of |type| by a kernel of its own
  /// (NVRTC-compiled on first use): gemm()'s ReLU when cuBLASLt has no
  /// algorithm for the RELU epilogue.
  Status reluInPlace(void *y, uint64_t count, ElementType type);
  /// Y = op(A) op(B) of |p| (no C, alpha 1, beta 0, no epilogue) with the
  /// workspace past |offset|.
  Status gemmFrom(const GemmParams &p, const void *a, const void *b, void *y,
                  size_t offset);
  /// |count| ones of |type| (f32, f16 or bf16) in scratch (see scratch()),
  /// filled on the stream: the vector that the bias-gradient fallbacks
  /// multiply by to sum rows or columns in a gemm.
  Status onesVector(size_t count, ElementType type, size_t *offset,
                    DeviceBuffer *own, void **ones);
  /// |bytes| of scratch for one library call: at |*offset| in the workspace,
  /// advancing |*offset| past it (256-byte aligned), when they fit there;
  /// else a pool allocation of its own in |*own| (release it after the
  /// call), memory the plan did not predict, which memoryUsage then shows.
  Status scratch(size_t bytes, size_t *offset, DeviceBuffer *own, void **out);
  /// The workspace past its first |offset| bytes, and its size.
  void *workspaceAt(size_t offset) const {
    return offset < workspaceBytes_ ? static_cast<char *>(workspace_) + offset
                                    : nullptr;
  }
  size_t workspaceBytesAt(size_t offset) const {
    return offset < workspaceBytes_ ? workspaceBytes_ - offset : 0;
  }
  Status describeConv(const ConvParams &p, const char *what,
                      ConvDescriptors *d);
  /// The N-D (NCDHW) descriptors of a conv3d_* call (spatial == 3);
  /// describeConv has created them and checked the 2-D part.
  Status describeConv3d(const ConvParams &p, const std::string &prefix,
                        ConvDescriptors *d);
  /// Copies between a packed NCHW/NCDHW tensor of |p|'s input shape and
  /// the interior of its zero-padded copy (the input of padded(p)):
  /// |toPadded| fills |padded| (zeros, then the interior) from |x|; else
  /// the interior of |padded| is copied to |x|. cuDNN's legacy API takes
  /// one pad per spatial dim, so asymmetric ONNX pads run as the
  /// convolution of the explicitly padded input with pads 0.
  Status copyPadded(const ConvParams &p, bool toPadded, const void *from,
                    void *to);
  /// Runs |fn| on padded(p), a zero-padded copy of the input |x| (scratch)
  /// and the workspace offset past that copy.
  Status withPaddedInput(const ConvParams &p, const void *x,
                         const std::function<Status(const ConvParams &,
                                                    const void *, size_t)> &fn);
  /// The convolutions with the workspace past its first |offset| bytes.
  Status convForwardAt(const ConvParams &p, const void *x, const void *w,
                       const void *bias, void *y, size_t offset);
  Status convBackwardDataAt(const ConvParams &p, const void *dy, const void *w,
                            void *dx, size_t offset);
  Status convBackwardFilterAt(const ConvParams &p, const void *x,
                              const void *dy, void *dw, size_t offset);
  /// Picks the algorithm of |kind| for |p| among those needing at most
  /// |limit| bytes of workspace; |*workspace| is what it needs.
  Status chooseConvAlgo(ConvKind kind, const ConvParams &p,
                        const ConvDescriptors &d, size_t limit, int *algo,
                        size_t *workspace);
  Status loadModule(const std::string &name, const std::vector<uint8_t> &image,
                    CUmodule *module, CUfunction *function);

  std::shared_ptr<CudaContext> ctx_;
  const DriverApi *cu_ = nullptr;
  std::string name_;
  std::string arch_; // "sm_90"
  int ccMajor_ = 0, ccMinor_ = 0;
  /// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT and
  /// MAX_THREADS_PER_MULTIPROCESSOR, for grid-stride launch sizes.
  int smCount_ = 0, threadsPerSm_ = 0;
  Status deferred_; // first error of a call that cannot return one
  void *workspace_ = nullptr; // setWorkspace: the session's, for this run
  size_t workspaceBytes_ = 0;
  bool capturing_ = false; // between beginCapture and endCapture
  std::atomic<int64_t> embedded_{0}, cacheHits_{0}, compiled_{0};
  std::atomic<int64_t> fallbacks_{0}; // gemmEpilogueFallbacks()
  std::mutex algoMutex_;
  std::map<std::vector<int64_t>, std::pair<int, size_t>> convAlgos_;
  std::map<std::vector<int64_t>, cublasLtMatmulHeuristicResult_t> matmulAlgos_;
  std::mutex reluMutex_;
  std::unique_ptr<CudaKernel> reluKernel_; // reluInPlace's, once compiled
  // reluMaskKernel's two kernels (write the mask, apply it), once compiled.
  std::unique_ptr<CudaKernel> maskKernels_[2];
  // gemmWithF32Bias's rounding kernel (f16, bf16), once compiled.
  std::unique_ptr<CudaKernel> roundKernels_[2];
};

} // namespace dlrt::cuda

#endif // DLRT_CUDA_CUDADEVICEIMPL_H
