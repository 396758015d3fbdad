//===- CudaDevice.cpp - the CUDA device of libdlrt ------------------------===//
// One primary context and one non-blocking stream per device; memory from a
// stream-ordered pool; kernels from package cubins or NVRTC (cached on
// disk); GEMM through cuBLASLt and convolutions through cuDNN, f32 without
// TF32, f16 and bf16 with f32 compute and one rounding (LibraryCalls.h
// ElementType), with scratch only from the session's planned workspace
// (Device::setWorkspace). Every library is opened with dlopen (CudaApi.h).
#include "CudaDevice.h"

#include "CudaApi.h"
#include "KernelCompiler.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace dlrt {
namespace {

using namespace dlrt::cuda;

#define DLRT_TRY(expr)                                                         \
  do {                                                                         \
    ::dlrt::Status dlrtStatus_ = (expr);                                       \
    if (!dlrtStatus_.ok())                                                     \
      return dlrtStatus_;                                                      \
  } while (0)

/// Runs a cleanup when the scope ends.
class Defer {
public:
  explicit Defer(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~Defer() { fn_(); }
  Defer(const Defer &) = delete;
  Defer &operator=(const Defer &) = delete;

private:
  std::function<void()> fn_;
};

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

/// The line codegen puts in the CUDA source of a kernel that walks its
/// elements in a grid-stride loop (codegen/Emitters.cpp, wrapCuda).
constexpr const char *kGridStrideMarker = "\n// dlc: grid-stride loop\n";

/// Largest power of two (<= 256) dividing the address of |p|, in bytes.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

using dlc::exec::ElementType;

/// The cuBLASLt type of a library call's element type (f32, f16, bf16).
cudaDataType cublasType(ElementType type) {
  return type == ElementType::F16    ? CUDA_R_16F
         : type == ElementType::BF16 ? CUDA_R_16BF
                                     : CUDA_R_32F;
}

/// The cuDNN type of a library call's element type (f32, f16, bf16).
cudnnDataType_t cudnnType(ElementType type) {
  return type == ElementType::F16    ? CUDNN_DATA_HALF
         : type == ElementType::BF16 ? CUDNN_DATA_BFLOAT16
                                     : CUDNN_DATA_FLOAT;
}

/// The error for an element type no CUDA library call takes (f64).
Status unsupportedType(const char *call, ElementType type) {
  return Status::error(DLRT_INTERNAL,
                       std::string(call) + ": element type " +
                           dlc::exec::elementTypeName(type) +
                           " is not supported (f32, f16 and bf16 are)");
}

/// |base| advanced by |elements| elements of |bytes| bytes each.
const void *offsetBy(const void *base, int64_t elements, size_t bytes) {
  return static_cast<const char *>(base) + elements * int64_t(bytes);
}
void *offsetBy(void *base, int64_t elements, size_t bytes) {
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

/// Row-major Y[M,N] = op(A) op(B) as cuBLASLt's column-major
/// Y^T[N,M] = op(B)^T op(A)^T: B is the first operand and A the second, each
/// viewed column-major; C and D are Y, alpha from |p|, beta 0.
Matmul rowMajorMatmul(const GemmParams &p, const void *a, const void *b,
                      void *y) {
  const uint64_t M = uint64_t(p.m), N = uint64_t(p.n), K = uint64_t(p.k);
  Matmul mm;
  mm.type = cublasType(p.dtype);
  mm.m = N;
  mm.n = M;
  mm.k = K;
  mm.a = b;
  mm.opA = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  mm.rowsA = p.trans_b ? K : N;
  mm.colsA = p.trans_b ? N : K;
  mm.b = a;
  mm.opB = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  mm.rowsB = p.trans_a ? M : K;
  mm.colsB = p.trans_a ? K : M;
  mm.c = y;
  mm.d = y;
  mm.alpha = p.alpha;
  return mm;
}

/// Row-major T[M,N] = every row the vector |row|[N], as cuBLASLt's
/// column-major rank-1 product T^T[N,M] = row[N,1] ones[1,M] (|ones|: M ones
/// of |type|); alpha 1, beta 0. Broadcasts a gemm's bias where no bias
/// epilogue runs.
Matmul rowBroadcastMatmul(cudaDataType type, const void *row, const void *ones,
                          uint64_t M, uint64_t N, void *t) {
  Matmul broadcast;
  broadcast.type = type;
  broadcast.m = N;
  broadcast.n = M;
  broadcast.k = 1;
  broadcast.a = row;
  broadcast.rowsA = N;
  broadcast.colsA = 1;
  broadcast.b = ones;
  broadcast.rowsB = 1;
  broadcast.colsB = M;
  broadcast.c = t;
  broadcast.d = t;
  return broadcast;
}

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

/// True when some spatial dim of |p| is padded more on one side.
bool asymmetricPadding(const ConvParams &p) {
  return p.pad_top != p.pad_bottom || p.pad_left != p.pad_right ||
         (p.spatial == 3 && p.pad_front != p.pad_back);
}

/// |p| on the input padded explicitly by its pads: the input grows by both
/// pads of each spatial dim, the pads become 0, the output is the same.
ConvParams padded(const ConvParams &p) {
  ConvParams q = p;
  q.h += p.pad_top + p.pad_bottom;
  q.w += p.pad_left + p.pad_right;
  q.pad_top = q.pad_bottom = q.pad_left = q.pad_right = 0;
  if (p.spatial == 3) {
    q.d += p.pad_front + p.pad_back;
    q.pad_front = q.pad_back = 0;
  }
  return q;
}

/// The cuDNN math type of |p|: FMA for f32 (no TF32 rounding of operands);
/// the default (tensor cores allowed, f32 accumulation) for f16 and bf16.
cudnnMathType_t convMathType(const ConvParams &p) {
  return p.dtype == ElementType::F32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

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

Status CudaDevice::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status::OK();
  return Status::error(result == CUDA_ERROR_OUT_OF_MEMORY ? DLRT_OUT_OF_MEMORY
                                                          : DLRT_INTERNAL,
                       describeCuResult(*cu_, result, call));
}

Status CudaDevice::checkLt(cublasStatus_t status, const char *call) const {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::OK();
  const char *name = ctx_->lt->cublasLtGetStatusName(status);
  const char *text = ctx_->lt->cublasLtGetStatusString(status);
  return Status::error(status == CUBLAS_STATUS_ALLOC_FAILED ? DLRT_OUT_OF_MEMORY
                                                            : DLRT_INTERNAL,
                       std::string(call) + " failed: " + (name ? name : "?") +
                           " (" + (text ? text : "") + ")");
}

Status CudaDevice::checkDnn(cudnnStatus_t status, const char *call) const {
  if (status == CUDNN_STATUS_SUCCESS)
    return Status::OK();
  const char *text = ctx_->dnn->cudnnGetErrorString(status);
  return Status::error(
      status == CUDNN_STATUS_ALLOC_FAILED ? DLRT_OUT_OF_MEMORY : DLRT_INTERNAL,
      std::string(call) + " failed: " +
          (text ? text : "cudnnStatus " + std::to_string(int(status))));
}

Status CudaDevice::makeCurrent() {
  return check(cu_->cuCtxSetCurrent(ctx_->context), "cuCtxSetCurrent");
}

Status CudaDevice::createImpl(int ordinal, std::unique_ptr<Device> *out) {
  out->reset();
  const DriverApi *cu = nullptr;
  DLRT_TRY(loadDriver(&cu));
  auto unavailable = [&](CUresult r, const char *call) {
    return Status::error(DLRT_UNAVAILABLE, describeCuResult(*cu, r, call));
  };
  int count = 0;
  if (CUresult r = cu->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGetCount");
  if (count == 0)
    return Status::error(DLRT_UNAVAILABLE, "no CUDA device found");
  if (ordinal < 0 || ordinal >= count)
    return Status::error(DLRT_UNAVAILABLE,
                         "CUDA device " + std::to_string(ordinal) +
                             " does not exist (" + std::to_string(count) +
                             " device(s) found)");
  // The libraries are needed by every package with kernels or library
  // calls; a missing one is reported now rather than at the first use.
  const NvrtcApi *nvrtc = nullptr;
  DLRT_TRY(loadNvrtc(&nvrtc));
  auto ctx = std::make_shared<CudaContext>();
  ctx->cu = cu;
  DLRT_TRY(loadCublasLt(&ctx->lt));
  DLRT_TRY(loadCudnn(&ctx->dnn));

  if (CUresult r = cu->cuDeviceGet(&ctx->device, ordinal); r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGet");
  int poolsSupported = 0;
  if (CUresult r = cu->cuDeviceGetAttribute(
          &poolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
          ctx->device);
      r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGetAttribute");
  if (!poolsSupported)
    return Status::error(DLRT_UNAVAILABLE,
                         "CUDA device " + std::to_string(ordinal) +
                             " does not support stream-ordered memory pools");
  CUcontext context = nullptr;
  if (CUresult r = cu->cuDevicePrimaryCtxRetain(&context, ctx->device);
      r != CUDA_SUCCESS)
    return unavailable(r, "cuDevicePrimaryCtxRetain");
  ctx->context = context; // released by ~CudaContext from here on

  std::unique_ptr<CudaDevice> device(new CudaDevice(ctx));
  device->cu_ = cu;
  DLRT_TRY(device->makeCurrent());
  DLRT_TRY(device->check(
      cu->cuDeviceGetAttribute(&device->ccMajor_,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               ctx->device),
      "cuDeviceGetAttribute"));
  DLRT_TRY(device->check(
      cu->cuDeviceGetAttribute(&device->ccMinor_,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               ctx->device),
      "cuDeviceGetAttribute"));
  device->arch_ = "sm_" + std::to_string(device->ccMajor_) +
                  std::to_string(device->ccMinor_);
  // Launch sizes of grid-stride kernels; 0 (not reported) leaves them
  // uncapped.
  if (cu->cuDeviceGetAttribute(&device->smCount_,
                               CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               ctx->device) != CUDA_SUCCESS)
    device->smCount_ = 0;
  if (cu->cuDeviceGetAttribute(&device->threadsPerSm_,
                               CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                               ctx->device) != CUDA_SUCCESS)
    device->threadsPerSm_ = 0;
  char deviceName[256] = {};
  DLRT_TRY(device->check(
      cu->cuDeviceGetName(deviceName, sizeof deviceName - 1, ctx->device),
      "cuDeviceGetName"));
  device->name_ = "cuda:" + std::to_string(ordinal) + " " + deviceName + " (" +
                  device->arch_ + ")";

  DLRT_TRY(
      device->check(cu->cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING),
                    "cuStreamCreate"));
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ctx->device;
  DLRT_TRY(device->check(cu->cuMemPoolCreate(&ctx->pool, &props),
                         "cuMemPoolCreate"));
  // Keep freed memory in the pool across synchronizations: a training step
  // frees and reallocates the same sizes every iteration.
  cuuint64_t threshold = UINT64_MAX;
  DLRT_TRY(device->check(
      cu->cuMemPoolSetAttribute(ctx->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                &threshold),
      "cuMemPoolSetAttribute"));
  // cuBLASLt 13 and cuDNN 9 for CUDA 13 need a driver for CUDA >= 13.0;
  // name the driver's version when they refuse to start.
  const std::string driverNote =
      " (the CUDA driver supports CUDA " +
      std::to_string(cu->driver_version / 1000) + "." +
      std::to_string(cu->driver_version % 1000 / 10) + ")";
  if (Status status = device->checkLt(ctx->lt->cublasLtCreate(&ctx->ltHandle),
                                      "cublasLtCreate");
      !status.ok())
    return Status::error(status.code, status.message + driverNote);
  if (Status status = device->checkDnn(ctx->dnn->cudnnCreate(&ctx->dnnHandle),
                                       "cudnnCreate");
      !status.ok())
    return Status::error(status.code, status.message + driverNote);
  DLRT_TRY(device->checkDnn(
      ctx->dnn->cudnnSetStream(ctx->dnnHandle, ctx->stream), "cudnnSetStream"));
  *out = std::move(device);
  return Status::OK();
}

Status CudaDevice::allocate(size_t bytes, DeviceBuffer *out) {
  *out = DeviceBuffer();
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  CUdeviceptr ptr = 0;
  if (CUresult r =
          cu_->cuMemAllocFromPoolAsync(&ptr, bytes, ctx_->pool, ctx_->stream);
      r != CUDA_SUCCESS) {
    Status status = check(r, "cuMemAllocFromPoolAsync");
    status.message += " (" + std::to_string(bytes) + " bytes)";
    return status;
  }
  if (ptr % 256 != 0) {
    cu_->cuMemFreeAsync(ptr, ctx_->stream);
    return Status::error(DLRT_INTERNAL,
                         "cuMemAllocFromPoolAsync returned memory that is "
                         "not 256-byte aligned");
  }
  out->data = reinterpret_cast<void *>(ptr);
  out->bytes = bytes;
  return Status::OK();
}

void CudaDevice::release(DeviceBuffer &buffer) {
  if (buffer.data) {
    Status status = makeCurrent();
    if (status.ok())
      status =
          check(cu_->cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(buffer.data),
                                    ctx_->stream),
                "cuMemFreeAsync");
    if (!status.ok() && deferred_.ok())
      deferred_ = status;
  }
  buffer = DeviceBuffer();
}

Status CudaDevice::memoryUsage(MemoryUsage *out) {
  *out = MemoryUsage();
  DLRT_TRY(makeCurrent());
  const std::pair<CUmemPool_attribute, int64_t *> attributes[] = {
      {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &out->reservedBytes},
      {CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &out->reservedPeakBytes},
      {CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &out->usedBytes},
      {CU_MEMPOOL_ATTR_USED_MEM_HIGH, &out->usedPeakBytes}};
  for (const auto &[attribute, field] : attributes) {
    cuuint64_t value = 0;
    DLRT_TRY(check(cu_->cuMemPoolGetAttribute(ctx_->pool, attribute, &value),
                   "cuMemPoolGetAttribute"));
    *field = int64_t(value);
  }
  return Status::OK();
}

Status CudaDevice::scratch(size_t bytes, size_t *offset, DeviceBuffer *own,
                           void **out) {
  *own = DeviceBuffer();
  if (bytes <= workspaceBytesAt(*offset)) {
    *out = workspaceAt(*offset);
    *offset = std::min(workspaceBytes_, (*offset + bytes + 255) / 256 * 256);
    return Status::OK();
  }
  // A graph would hold this call's own allocation: such steps run step by
  // step (the session falls back when the capture fails).
  if (capturing_)
    return Status::error(DLRT_UNAVAILABLE,
                         "a library call needs " + std::to_string(bytes) +
                             " bytes of scratch beyond the planned workspace");
  DLRT_TRY(allocate(bytes, own));
  *out = own->data;
  return Status::OK();
}

Status CudaDevice::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  // From pageable memory the call returns once |src| has been staged, so
  // the caller may reuse it immediately.
  return check(cu_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                      bytes, ctx_->stream),
               "cuMemcpyHtoDAsync");
}

Status CudaDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  DLRT_TRY(check(cu_->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                        bytes, ctx_->stream),
                 "cuMemcpyDtoHAsync"));
  return synchronize();
}

Status CudaDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  return check(cu_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                      reinterpret_cast<CUdeviceptr>(src), bytes,
                                      ctx_->stream),
               "cuMemcpyDtoDAsync");
}

Status CudaDevice::fillZero(void *dst, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  return check(cu_->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), 0,
                                    bytes, ctx_->stream),
               "cuMemsetD8Async");
}

Status CudaDevice::synchronize() {
  DLRT_TRY(makeCurrent());
  if (CUresult r = cu_->cuStreamSynchronize(ctx_->stream); r != CUDA_SUCCESS)
    return Status::error(DLRT_INTERNAL,
                         describeCuResult(*cu_, r, "cuStreamSynchronize") +
                             " (reported by an earlier kernel, copy or "
                             "library call on the stream)");
  if (!deferred_.ok()) {
    Status status = deferred_;
    deferred_ = Status::OK();
    return status;
  }
  return Status::OK();
}

namespace {
/// An instantiated CUDA graph of a session's steps.
class CudaGraph : public Device::Graph {
public:
  CudaGraph(const DriverApi *cu, CUgraphExec exec) : cu_(cu), exec_(exec) {}
  ~CudaGraph() override { cu_->cuGraphExecDestroy(exec_); }
  CUgraphExec exec() const { return exec_; }

private:
  const DriverApi *cu_;
  CUgraphExec exec_;
};
} // namespace

Status CudaDevice::beginCapture() {
  if (!cu_->has_graphs)
    return Status::error(
        DLRT_UNAVAILABLE,
        "the CUDA driver has no graph API (cuStreamBeginCapture "
        "and cuGraphLaunch)");
  DLRT_TRY(makeCurrent());
  // Thread-local mode: only this thread's calls may not be ones a capture
  // forbids (a synchronous copy or allocation); other threads are free.
  if (CUresult r = cu_->cuStreamBeginCapture(
          ctx_->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return Status::error(DLRT_UNAVAILABLE,
                         describeCuResult(*cu_, r, "cuStreamBeginCapture"));
  capturing_ = true;
  return Status::OK();
}

Status CudaDevice::endCapture(std::unique_ptr<Graph> *out) {
  out->reset();
  if (!capturing_)
    return Status::error(DLRT_UNAVAILABLE, "no capture in progress");
  capturing_ = false;
  DLRT_TRY(makeCurrent());
  CUgraph graph = nullptr;
  if (CUresult r = cu_->cuStreamEndCapture(ctx_->stream, &graph);
      r != CUDA_SUCCESS || !graph) {
    if (graph)
      cu_->cuGraphDestroy(graph);
    return Status::error(DLRT_UNAVAILABLE,
                         describeCuResult(*cu_, r, "cuStreamEndCapture"));
  }
  CUgraphExec exec = nullptr;
  CUresult r = cu_->cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu_->cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS || !exec)
    return Status::error(
        DLRT_UNAVAILABLE,
        describeCuResult(*cu_, r, "cuGraphInstantiateWithFlags"));
  *out = std::make_unique<CudaGraph>(cu_, exec);
  return Status::OK();
}

Status CudaDevice::launchGraph(Graph &graph) {
  DLRT_TRY(makeCurrent());
  return check(
      cu_->cuGraphLaunch(static_cast<CudaGraph &>(graph).exec(), ctx_->stream),
      "cuGraphLaunch");
}

Status CudaDevice::loadModule(const std::string &name,
                              const std::vector<uint8_t> &image,
                              CUmodule *module, CUfunction *function) {
  *module = nullptr;
  *function = nullptr;
  if (CUresult r = cu_->cuModuleLoadData(module, image.data());
      r != CUDA_SUCCESS) {
    *module = nullptr;
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + name + "': " +
                             describeCuResult(*cu_, r, "cuModuleLoadData"));
  }
  if (CUresult r = cu_->cuModuleGetFunction(function, *module, name.c_str());
      r != CUDA_SUCCESS) {
    cu_->cuModuleUnload(*module);
    *module = nullptr;
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + name + "': " +
                             describeCuResult(*cu_, r, "cuModuleGetFunction"));
  }
  return Status::OK();
}

Status
CudaDevice::loadKernels(const std::vector<uint8_t> &,
                        const std::vector<KernelSpec> &kernels,
                        std::vector<std::unique_ptr<DeviceKernel>> *out) {
  out->clear();
  DLRT_TRY(makeCurrent());
  const size_t count = kernels.size();
  const std::string digits =
      std::to_string(ccMajor_) + std::to_string(ccMinor_);
  std::vector<std::vector<uint8_t>> images(count);
  std::vector<Status> errors(count);
  std::vector<char> embedded(count, 0), cacheHit(count, 0);
  std::vector<size_t> toCompile;
  for (size_t i = 0; i < count; ++i) {
    const KernelSpec &spec = kernels[i];
    auto it = std::find_if(
        spec.cubins.begin(), spec.cubins.end(),
        [&](const auto &c) { return c.first == arch_ || c.first == digits; });
    if (it != spec.cubins.end() && !it->second.empty()) {
      images[i] = it->second;
      embedded[i] = 1;
    } else if (spec.cuda_source.empty()) {
      return Status::error(DLRT_INTERNAL, "kernel '" + spec.name +
                                              "' has no cubin for " + arch_ +
                                              " and no CUDA source");
    } else {
      toCompile.push_back(i);
    }
  }

  // NVRTC compilations are independent: run them on several threads.
  const std::string cacheDir = kernelCacheDir();
  auto compile = [&](size_t i) {
    CompiledKernel compiled;
    errors[i] = compileKernel(kernels[i].name, kernels[i].cuda_source, arch_,
                              cacheDir, &compiled);
    images[i] = std::move(compiled.cubin);
    cacheHit[i] = compiled.cache_hit;
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next++) < toCompile.size();)
      compile(toCompile[j]);
  };
  // At most 16 threads: every NVRTC compilation needs its own memory.
  size_t threads = std::min<size_t>(
      {toCompile.size(), size_t(16),
       size_t(std::max(1u, std::thread::hardware_concurrency()))});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();

  std::vector<std::unique_ptr<DeviceKernel>> loaded;
  for (size_t i = 0; i < count; ++i) {
    DLRT_TRY(errors[i]);
    const KernelSpec &spec = kernels[i];
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    Status status = loadModule(spec.name, images[i], &module, &function);
    if (!status.ok() && embedded[i] && !spec.cuda_source.empty()) {
      // A package cubin the driver rejects (e.g. built by a newer
      // toolkit): fall back to compiling the source here.
      CompiledKernel compiled;
      DLRT_TRY(compileKernel(spec.name, spec.cuda_source, arch_, cacheDir,
                             &compiled));
      embedded[i] = 0;
      cacheHit[i] = compiled.cache_hit;
      status = loadModule(spec.name, compiled.cubin, &module, &function);
    }
    DLRT_TRY(status);
    if (embedded[i])
      ++embedded_;
    else if (cacheHit[i])
      ++cacheHits_;
    else
      ++compiled_;
    auto kernel = std::make_unique<CudaKernel>(
        ctx_, module, function, spec.name, spec.num_threads, spec.block_size);
    if (spec.cuda_source.find(kGridStrideMarker) != std::string::npos)
      kernel->max_blocks = oneWave(function, spec.block_size);
    loaded.push_back(std::move(kernel));
  }
  *out = std::move(loaded);
  return Status::OK();
}

int64_t CudaDevice::oneWave(CUfunction function, int32_t blockSize) const {
  const int block = blockSize > 0 ? blockSize : 256;
  if (smCount_ <= 0)
    return 0;
  // Blocks of this kernel one multiprocessor holds at once (registers,
  // shared memory and the thread limit; the driver's occupancy calculator
  // where it has one, else the thread limit alone).
  int perSm = 0;
  if (!cu_->cuOccupancyMaxActiveBlocksPerMultiprocessor ||
      cu_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, function, block,
                                                       0) != CUDA_SUCCESS ||
      perSm <= 0)
    perSm = threadsPerSm_ > 0 ? std::max(1, threadsPerSm_ / block) : 0;
  return int64_t(perSm) * smCount_;
}

Status CudaDevice::launch(DeviceKernel &kernel,
                          const std::vector<void *> &args) {
  auto *k = dynamic_cast<CudaKernel *>(&kernel);
  if (!k || k->ctx != ctx_)
    return Status::error(DLRT_INTERNAL,
                         "launch: the kernel was not loaded by this device");
  if (k->num_threads <= 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  const int64_t block = k->block_size > 0 ? k->block_size : 256;
  int64_t grid = (k->num_threads + block - 1) / block;
  // A grid-stride kernel needs no more blocks than the device runs at once:
  // each thread takes several elements (or vectors) instead.
  if (k->max_blocks > 0)
    grid = std::min(grid, k->max_blocks);
  if (grid > INT_MAX)
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + k->name +
                             "': " + std::to_string(k->num_threads) +
                             " threads need more blocks than a grid holds");
  // cuLaunchKernel takes a pointer to each argument value.
  std::vector<void *> values(args);
  std::vector<void *> params(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    params[i] = &values[i];
  if (CUresult r = cu_->cuLaunchKernel(
          k->function, unsigned(grid), 1, 1, unsigned(block), 1, 1, 0,
          ctx_->stream, params.empty() ? nullptr : params.data(), nullptr);
      r != CUDA_SUCCESS)
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + k->name + "' (" + std::to_string(grid) +
                             " x " + std::to_string(block) + " threads): " +
                             describeCuResult(*cu_, r, "cuLaunchKernel"));
  return Status::OK();
}

Status CudaDevice::matmul(const Matmul &mm, size_t offset) {
  const CublasLtApi &lt = *ctx_->lt;
  cublasLtMatmulDesc_t desc = nullptr;
  DLRT_TRY(checkLt(
      lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  Defer destroyDesc([&] { lt.cublasLtMatmulDescDestroy(desc); });
  DLRT_TRY(
      checkLt(lt.cublasLtMatmulDescSetAttribute(
                  desc, CUBLASLT_MATMUL_DESC_TRANSA, &mm.opA, sizeof mm.opA),
              "cublasLtMatmulDescSetAttribute(TRANSA)"));
  DLRT_TRY(
      checkLt(lt.cublasLtMatmulDescSetAttribute(
                  desc, CUBLASLT_MATMUL_DESC_TRANSB, &mm.opB, sizeof mm.opB),
              "cublasLtMatmulDescSetAttribute(TRANSB)"));
  const cublasLtEpilogue_t epilogue =
      mm.epilogue == CUBLASLT_EPILOGUE_DEFAULT && mm.bias
          ? CUBLASLT_EPILOGUE_BIAS
          : mm.epilogue;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    DLRT_TRY(checkLt(
        lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof epilogue),
        "cublasLtMatmulDescSetAttribute(EPILOGUE)"));
  if (mm.bias) {
    const void *bias = mm.bias;
    DLRT_TRY(checkLt(
        lt.cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
    if (mm.f32Bias) {
      const int32_t biasType = CUDA_R_32F;
      DLRT_TRY(checkLt(lt.cublasLtMatmulDescSetAttribute(
                           desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                           sizeof biasType),
                       "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)"));
    }
  }
  if (mm.aux) {
    void *aux = mm.aux;
    DLRT_TRY(checkLt(lt.cublasLtMatmulDescSetAttribute(
                         desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                         sizeof aux),
                     "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)"));
    DLRT_TRY(checkLt(lt.cublasLtMatmulDescSetAttribute(
                         desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &mm.auxLd,
                         sizeof mm.auxLd),
                     "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)"));
  }
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr,
                         layoutC = nullptr;
  Defer destroyLayouts([&] {
    for (cublasLtMatrixLayout_t l : {layoutA, layoutB, layoutC})
      if (l)
        lt.cublasLtMatrixLayoutDestroy(l);
  });
  DLRT_TRY(checkLt(lt.cublasLtMatrixLayoutCreate(&layoutA, mm.type, mm.rowsA,
                                                 mm.colsA, int64_t(mm.rowsA)),
                   "cublasLtMatrixLayoutCreate"));
  DLRT_TRY(checkLt(lt.cublasLtMatrixLayoutCreate(&layoutB, mm.type, mm.rowsB,
                                                 mm.colsB, int64_t(mm.rowsB)),
                   "cublasLtMatrixLayoutCreate"));
  DLRT_TRY(checkLt(lt.cublasLtMatrixLayoutCreate(
                       &layoutC, mm.f32Output ? CUDA_R_32F : mm.type, mm.m,
                       mm.n, int64_t(mm.m)),
                   "cublasLtMatrixLayoutCreate"));
  if (mm.batch > 1) {
    const std::pair<cublasLtMatrixLayout_t, int64_t> batched[] = {
        {layoutA, mm.strideA}, {layoutB, mm.strideB}, {layoutC, mm.strideD}};
    for (const auto &[layout, stride] : batched) {
      DLRT_TRY(checkLt(lt.cublasLtMatrixLayoutSetAttribute(
                           layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                           &mm.batch, sizeof mm.batch),
                       "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
      DLRT_TRY(checkLt(lt.cublasLtMatrixLayoutSetAttribute(
                           layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                           &stride, sizeof stride),
                       "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)"));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  DLRT_TRY(checkLt(lt.cublasLtMatmulPreferenceCreate(&pref),
                   "cublasLtMatmulPreferenceCreate"));
  Defer destroyPref([&] { lt.cublasLtMatmulPreferenceDestroy(pref); });
  // The heuristic returns only algorithms that fit the planned workspace.
  uint64_t maxWorkspace = workspaceBytesAt(offset);
  DLRT_TRY(checkLt(lt.cublasLtMatmulPreferenceSetAttribute(
                       pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                       &maxWorkspace, sizeof maxWorkspace),
                   "cublasLtMatmulPreferenceSetAttribute"));
  // The heuristic assumes 256-byte aligned operands unless told otherwise;
  // arena views may be less aligned.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void *>
      alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, mm.a},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, mm.b},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, mm.c},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, mm.d}};
  for (const auto &[attribute, pointer] : alignments) {
    uint32_t alignment = alignmentOf(pointer);
    DLRT_TRY(checkLt(lt.cublasLtMatmulPreferenceSetAttribute(
                         pref, attribute, &alignment, sizeof alignment),
                     "cublasLtMatmulPreferenceSetAttribute"));
  }
  // The heuristic query costs far more than the matmul of a small layer:
  // remember its answer per problem (shapes, ops, epilogue, alignments).
  std::vector<int64_t> key = {int64_t(mm.m),     int64_t(mm.n),
                              int64_t(mm.k),     int64_t(mm.opA),
                              int64_t(mm.opB),   int64_t(mm.rowsA),
                              int64_t(mm.rowsB), int64_t(epilogue)};
  for (const auto &entry : alignments)
    key.push_back(alignmentOf(entry.second));
  key.push_back(alignmentOf(mm.bias)); // the heuristic looks at it too
  if (mm.aux)
    key.insert(key.end(), {int64_t(alignmentOf(mm.aux)), mm.auxLd});
  if (mm.batch > 1)
    key.insert(key.end(), {mm.batch, mm.strideA, mm.strideB, mm.strideD});
  if (mm.type != CUDA_R_32F)
    key.insert(key.end(), {int64_t(mm.type), mm.f32Bias, mm.f32Output});
  key.push_back(int64_t(maxWorkspace));
  cublasLtMatmulHeuristicResult_t heuristic;
  std::memset(&heuristic, 0, sizeof heuristic);
  {
    std::lock_guard<std::mutex> lock(algoMutex_);
    auto it = matmulAlgos_.find(key);
    if (it != matmulAlgos_.end()) {
      heuristic = it->second;
    } else {
      int found = 0;
      DLRT_TRY(checkLt(lt.cublasLtMatmulAlgoGetHeuristic(
                           ctx_->ltHandle, desc, layoutA, layoutB, layoutC,
                           layoutC, pref, 1, &heuristic, &found),
                       "cublasLtMatmulAlgoGetHeuristic"));
      if (found == 0)
        return Status::error(DLRT_INTERNAL,
                             "cublasLtMatmulAlgoGetHeuristic found no "
                             "algorithm for a " +
                                 std::to_string(mm.m) + "x" +
                                 std::to_string(mm.n) + "x" +
                                 std::to_string(mm.k) +
                                 (mm.type == CUDA_R_16BF  ? " bf16"
                                  : mm.type == CUDA_R_16F ? " f16"
                                                          : " f32") +
                                 " matmul");
      matmulAlgos_.emplace(std::move(key), heuristic);
    }
  }
  return checkLt(lt.cublasLtMatmul(ctx_->ltHandle, desc, &mm.alpha, mm.a,
                                   layoutA, mm.b, layoutB, &mm.beta, mm.c,
                                   layoutC, mm.d, layoutC, &heuristic.algo,
                                   workspaceAt(offset), maxWorkspace,
                                   ctx_->stream),
                 "cublasLtMatmul");
}

Status CudaDevice::gemm(const GemmParams &p, const void *a, const void *b,
                        const void *c, void *y, void *biasGrad,
                        void *reluMask) {
  if (p.dtype == ElementType::F64)
    return unsupportedType("gemm", p.dtype);
  if (p.m < 0 || p.n < 0 || p.k < 0)
    return Status::error(DLRT_INTERNAL, "gemm: negative size");
  if (p.m == 0 || p.n == 0)
    return Status::OK();
  if (p.k == 0)
    return Status::error(DLRT_INTERNAL, "gemm: K = 0 is not supported");
  if (p.has_c && !c)
    return Status::error(DLRT_INTERNAL, "gemm: has_c is set but C is null");
  if (dlc::exec::writesReluMask(p.epilogue) ||
      dlc::exec::readsReluMask(p.epilogue)) {
    if (!reluMask)
      return Status::error(DLRT_INTERNAL,
                           "gemm: the ReLU-mask epilogue has no Aux");
    if (dlc::exec::writesBiasGradient(p.epilogue) && !biasGrad)
      return Status::error(DLRT_INTERNAL,
                           "gemm: the bias-gradient epilogue has no dBias");
    return gemmWithReluMask(p, a, b, c, y, biasGrad, reluMask);
  }
  if (dlc::exec::writesBiasGradient(p.epilogue)) {
    if (!biasGrad)
      return Status::error(DLRT_INTERNAL,
                           "gemm: the bias-gradient epilogue has no dBias");
    return gemmWithBiasGradient(p, a, b, c, y, biasGrad);
  }
  if (p.f32_bias)
    return gemmWithF32Bias(p, a, b, c, y);
  const bool relu = p.epilogue == dlc::exec::GemmEpilogue::Relu;
  DLRT_TRY(makeCurrent());
  const uint64_t M = uint64_t(p.m), N = uint64_t(p.n), K = uint64_t(p.k);
  // Row-major Y[M,N] is column-major Y^T[N,M] = op(B)^T * op(A)^T: pass B
  // as the first operand and A as the second, each viewed column-major.
  const bool low = p.dtype != ElementType::F32;
  Matmul mm = rowMajorMatmul(p, a, b, y);
  mm.beta = p.beta;
  if (p.has_c && !p.c_is_row_vector) {
    mm.c = c;
  } else if (p.has_c && p.beta == 0.0f) {
    // beta * C vanishes.
  } else if (p.has_c) {
    if (p.beta == 1.0f) {
      // The row vector is the bias epilogue's per-row vector of Y^T.
      Matmul withBias = mm;
      withBias.bias = c;
      withBias.beta = 0.0f;
      withBias.epilogue =
          relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
      if (matmul(withBias).ok())
        return Status::OK();
      // No epilogue algorithm for this problem: broadcast C instead (the
      // main matmul below applies a ReLU as its RELU epilogue).
      ++fallbacks_;
    }
    // Y = beta * broadcast(C) first, as the rank-1 product C * ones^T, then
    // accumulate the product onto it. f16/bf16: Y = broadcast(C) exactly
    // (beta 1), and the main matmul applies beta in f32, so Y is rounded
    // once.
    DeviceBuffer own;
    void *ones = nullptr;
    size_t offset = 0;
    Status status = onesVector(size_t(M), low ? p.dtype : ElementType::F32,
                               &offset, &own, &ones);
    if (status.ok()) {
      Matmul broadcast = rowBroadcastMatmul(mm.type, c, ones, M, N, y);
      broadcast.alpha = low ? 1.0f : p.beta;
      status = matmul(broadcast, offset);
    }
    release(own); // stream-ordered: freed after the matmul has run
    DLRT_TRY(status);
    mm.beta = low ? p.beta : 1.0f;
  }
  // The whole workspace again: the ones are dead once the broadcast has run
  // (one stream). A ReLU is the RELU epilogue, applied after beta * C.
  if (relu) {
    Matmul fused = mm;
    fused.epilogue = CUBLASLT_EPILOGUE_RELU;
    if (matmul(fused).ok())
      return Status::OK();
    // No algorithm for the epilogue: the product, then a ReLU kernel.
    ++fallbacks_;
  }
  DLRT_TRY(matmul(mm));
  return relu ? reluInPlace(y, M * N, p.dtype) : Status::OK();
}

namespace {

/// The ReLU of gemm()'s fallback, on the bits so that it needs no CUDA
/// header: an element becomes +0 when its sign bit is set or it is a NaN
/// (magnitude bits above |inf|, the infinity's), as cuBLASLt's max(x, 0);
/// |wide|: 32-bit elements (f32), else 16-bit (f16, bf16).
constexpr const char *kReluKernelName = "dlrt_gemm_relu_fallback";
constexpr const char *kReluKernelSource = R"(
extern "C" __global__ void dlrt_gemm_relu_fallback(void *y,
                                                   unsigned long long n,
                                                   int wide,
                                                   unsigned int inf) {
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  if (wide) {
    unsigned int *p = (unsigned int *)y;
    unsigned int u = p[i];
    if ((u >> 31) || (u & 0x7fffffffu) > inf)
      p[i] = 0u;
  } else {
    unsigned short *p = (unsigned short *)y;
    unsigned int u = p[i];
    if ((u >> 15) || (u & 0x7fffu) > inf)
      p[i] = 0;
  }
}
)";

} // namespace

Status CudaDevice::reluInPlace(void *y, uint64_t count, ElementType type) {
  CUfunction function = nullptr;
  {
    std::lock_guard<std::mutex> lock(reluMutex_);
    if (!reluKernel_) {
      CompiledKernel compiled;
      DLRT_TRY(compileKernel(kReluKernelName, kReluKernelSource, arch_,
                             kernelCacheDir(), &compiled));
      CUmodule module = nullptr;
      DLRT_TRY(loadModule(kReluKernelName, compiled.cubin, &module, &function));
      reluKernel_ = std::make_unique<CudaKernel>(ctx_, module, function,
                                                 kReluKernelName, 0, 256);
    }
    function = reluKernel_->function;
  }
  if (count == 0)
    return Status::OK();
  const unsigned block = 256;
  const uint64_t grid = (count + block - 1) / block;
  if (grid > INT_MAX)
    return Status::error(DLRT_INTERNAL, "gemm ReLU: too many elements");
  void *ptr = y;
  unsigned long long n = count;
  int wide = type == ElementType::F32;
  unsigned int inf = wide                           ? 0x7f800000u
                     : type == ElementType::F16 ? 0x7c00u
                                                    : 0x7f80u;
  void *params[] = {&ptr, &n, &wide, &inf};
  return check(cu_->cuLaunchKernel(function, unsigned(grid), 1, 1, block, 1,
                                   1, 0, ctx_->stream, params, nullptr),
               "cuLaunchKernel(gemm ReLU)");
}

namespace {

/// gemmWithF32Bias's fallback rounding: y[i] = round(max?(t[i], 0)) from
/// f32 to f16 or bf16 (to nearest even, CUDA's conversions); with |relu| a
/// NaN becomes +0, as cuBLASLt's max(x, 0).
constexpr const char *kRoundKernelNames[2] = {"dlrt_gemm_round_f16",
                                              "dlrt_gemm_round_bf16"};
constexpr const char *kRoundKernelSources[2] = {R"(
#include <cuda_fp16.h>
extern "C" __global__ void dlrt_gemm_round_f16(const float *t, __half *y,
                                               unsigned long long n,
                                               int relu) {
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = t[i];
  if (relu && !(v > 0.0f))
    v = 0.0f;
  y[i] = __float2half_rn(v);
}
)",
                                                R"(
#include <cuda_bf16.h>
extern "C" __global__ void dlrt_gemm_round_bf16(const float *t,
                                                __nv_bfloat16 *y,
                                                unsigned long long n,
                                                int relu) {
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = t[i];
  if (relu && !(v > 0.0f))
    v = 0.0f;
  y[i] = __float2bfloat16_rn(v);
}
)"};

} // namespace

Status CudaDevice::gemmWithF32Bias(const GemmParams &p, const void *a,
                                   const void *b, const void *c, void *y) {
  const bool relu = p.epilogue == dlc::exec::GemmEpilogue::Relu;
  const uint64_t M = uint64_t(p.m), N = uint64_t(p.n);
  DLRT_TRY(makeCurrent());
  Matmul mm = rowMajorMatmul(p, a, b, y);
  mm.bias = c;
  mm.f32Bias = true;
  mm.epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  if (matmul(mm).ok())
    return Status::OK();
  ++fallbacks_;
  // No epilogue algorithm: T = broadcast(bias) as the f32 rank-1 product
  // bias[N,1] ones[1,M] (column-major T^T[N,M]), then T += the product.
  const int which = p.dtype == ElementType::BF16 ? 1 : 0;
  CUfunction function = nullptr;
  {
    std::lock_guard<std::mutex> lock(reluMutex_);
    if (!roundKernels_[which]) {
      CompiledKernel compiled;
      DLRT_TRY(compileKernel(kRoundKernelNames[which],
                             kRoundKernelSources[which], arch_,
                             kernelCacheDir(), &compiled));
      CUmodule module = nullptr;
      DLRT_TRY(loadModule(kRoundKernelNames[which], compiled.cubin, &module,
                          &function));
      roundKernels_[which] = std::make_unique<CudaKernel>(
          ctx_, module, function, kRoundKernelNames[which], 0, 256);
    }
    function = roundKernels_[which]->function;
  }
  DeviceBuffer ownT, ownOnes;
  void *t = nullptr, *ones = nullptr;
  size_t offset = 0;
  DLRT_TRY(scratch(M * N * sizeof(float), &offset, &ownT, &t));
  Status status =
      onesVector(size_t(M), ElementType::F32, &offset, &ownOnes, &ones);
  if (status.ok())
    status = matmul(rowBroadcastMatmul(CUDA_R_32F, c, ones, M, N, t), offset);
  if (status.ok()) {
    Matmul product = rowMajorMatmul(p, a, b, t);
    product.f32Output = true;
    product.beta = 1.0f;
    status = matmul(product, offset);
  }
  if (status.ok()) {
    const unsigned block = 256;
    const uint64_t count = M * N, grid = (count + block - 1) / block;
    if (grid > INT_MAX)
      status = Status::error(DLRT_INTERNAL, "gemm rounding: too many elements");
    const void *from = t;
    void *to = y;
    unsigned long long n = count;
    int withRelu = relu;
    void *params[] = {&from, &to, &n, &withRelu};
    if (status.ok())
      status =
          check(cu_->cuLaunchKernel(function, unsigned(grid), 1, 1, block, 1, 1,
                                    0, ctx_->stream, params, nullptr),
                "cuLaunchKernel(gemm rounding)");
  }
  release(ownOnes); // stream-ordered: freed after the kernels have run
  release(ownT);
  return status;
}

Status CudaDevice::gemmWithBiasGradient(const GemmParams &p, const void *a,
                                        const void *b, const void *c, void *y,
                                        void *biasGrad) {
  // Row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T (see
  // gemm()): the row-major A is cuBLASLt's B, so the sum of op(A) over k
  // (BiasGradA) is BGRADB there and the sum of op(B) is BGRADA.
  const bool ofA = p.epilogue == dlc::exec::GemmEpilogue::BiasGradA;
  // An f32 dBias of a 16-bit gemm (f32_bias): BIAS_DATA_TYPE CUDA_R_32F,
  // and in the fallback the ones product writes f32 (16-bit A/B, f32 D).
  if (!p.has_c && p.beta == 0.0f) {
    DLRT_TRY(makeCurrent());
    Matmul mm = rowMajorMatmul(p, a, b, y);
    mm.bias = biasGrad;
    mm.f32Bias = p.f32_bias;
    mm.epilogue = ofA ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BGRADA;
    if (matmul(mm).ok())
      return Status::OK();
    // No algorithm for the epilogue: the product, then the sum below.
  }
  ++fallbacks_;
  GemmParams plain = p;
  plain.epilogue = dlc::exec::GemmEpilogue::None;
  plain.f32_bias = false;
  DLRT_TRY(gemm(plain, a, b, c, y, nullptr));
  // dBias as a matrix-vector product with ones, summed in f32 and rounded
  // once like the epilogue (or not at all, into an f32 dBias): BiasGradA
  // dBias[M,1] = op(A)[M,K] ones[K,1], BiasGradB dBias[1,N] = ones[1,K]
  // op(B)[K,N].
  DeviceBuffer own;
  void *ones = nullptr;
  size_t offset = 0;
  Status status = onesVector(size_t(p.k), p.dtype, &offset, &own, &ones);
  if (status.ok()) {
    GemmParams sum;
    sum.dtype = p.dtype;
    sum.k = p.k;
    if (ofA)
      sum.m = p.m, sum.n = 1, sum.trans_a = p.trans_a;
    else
      sum.m = 1, sum.n = p.n, sum.trans_b = p.trans_b;
    Matmul product = ofA ? rowMajorMatmul(sum, a, ones, biasGrad)
                         : rowMajorMatmul(sum, ones, b, biasGrad);
    product.f32Output = p.f32_bias;
    status = matmul(product, offset);
  }
  release(own); // stream-ordered: freed after the matmul has run
  return status;
}

Status CudaDevice::onesVector(size_t count, ElementType type, size_t *offset,
                              DeviceBuffer *own, void **ones) {
  // Filled as 32-bit words: one f32 one, or two f16/bf16 ones.
  const bool low = type != ElementType::F32;
  const size_t words = low ? (count + 1) / 2 : count;
  const uint32_t one = !low                       ? 0x3f800000u
                       : type == ElementType::F16 ? 0x3c003c00u
                                                  : 0x3f803f80u;
  DLRT_TRY(scratch(words * 4, offset, own, ones));
  return check(cu_->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(*ones), one,
                                     words, ctx_->stream),
               "cuMemsetD32Async");
}

Status CudaDevice::gemmWithReluMask(const GemmParams &p, const void *a,
                                    const void *b, const void *c, void *y,
                                    void *biasGrad, void *mask) {
  using dlc::exec::GemmEpilogue;
  const bool forward = dlc::exec::writesReluMask(p.epilogue);
  const bool bgrad = p.epilogue == GemmEpilogue::DReluBiasGrad;
  const uint64_t M = uint64_t(p.m), N = uint64_t(p.n);
  DLRT_TRY(makeCurrent());
  // Row-major Y[M,N] is column-major Y^T[N,M] (see gemm()): the mask of
  // Y^T has N rows, so its AUX_LD is N rounded up to 128 bits, and each
  // row of Y is one column of it. DRELU_BGRAD sums the rows of Y^T, i.e.
  // dBias[N] = the sum of Y over m.
  Matmul mm = rowMajorMatmul(p, a, b, y);
  mm.aux = mask;
  mm.auxLd = dlc::exec::reluMaskWords(p.n) * 32;
  bool eligible = true;
  if (forward) {
    mm.epilogue = CUBLASLT_EPILOGUE_RELU_AUX;
    if (p.has_c && p.c_is_row_vector && p.beta == 1.0f) {
      mm.bias = c;
      mm.epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    } else if (p.has_c || p.beta != 0.0f) {
      eligible = false; // the verifier allows only a bias row or no C
    }
  } else {
    mm.epilogue = bgrad ? CUBLASLT_EPILOGUE_DRELU_BGRAD : CUBLASLT_EPILOGUE_DRELU;
    if (bgrad)
      mm.bias = biasGrad;
    eligible = !p.has_c && p.beta == 0.0f;
  }
  if (eligible && matmul(mm).ok())
    return Status::OK();
  ++fallbacks_;
  // No algorithm for the epilogue: the product (with its ReLU), then the
  // mask kernel and, for DRELU_BGRAD, dBias[1,N] = ones[1,M] Y[M,N].
  GemmParams plain = p;
  plain.epilogue = forward ? GemmEpilogue::Relu : GemmEpilogue::None;
  DLRT_TRY(gemm(plain, a, b, c, y, nullptr));
  DLRT_TRY(reluMaskKernel(forward, y, mask, M, N, p.dtype));
  if (!bgrad)
    return Status::OK();
  DeviceBuffer own;
  void *ones = nullptr;
  size_t offset = 0;
  Status status = onesVector(size_t(M), p.dtype, &offset, &own, &ones);
  if (status.ok()) {
    GemmParams sum;
    sum.dtype = p.dtype;
    sum.m = 1, sum.n = p.n, sum.k = p.m;
    status = gemmFrom(sum, ones, y, biasGrad, offset);
  }
  release(own); // stream-ordered: freed after the matmul has run
  return status;
}

namespace {

/// gemmWithReluMask's fallback kernels, on the bits so that they need no
/// CUDA header. The mask of an [m, n] result is m rows of |words| 32-bit
/// words; bit j % 32 of word j / 32 of row i belongs to element (i, j).
/// dlrt_gemm_relu_mask_write: one thread per word; an element's bit is set
/// when it is > 0 (sign clear, not zero, not NaN); bits past n are 0.
/// dlrt_gemm_relu_mask_apply: one thread per element; +0 where the bit is
/// clear. |wide|: 32-bit elements (f32), else 16-bit (f16, bf16).
constexpr const char *kMaskKernelNames[2] = {"dlrt_gemm_relu_mask_apply",
                                             "dlrt_gemm_relu_mask_write"};
constexpr const char *kMaskKernelSources[2] = {R"(
extern "C" __global__ void dlrt_gemm_relu_mask_apply(
    void *y, const unsigned int *mask, unsigned long long m,
    unsigned long long n, unsigned long long words, int wide,
    unsigned int inf) {
  unsigned long long e =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= m * n)
    return;
  unsigned long long i = e / n, j = e % n;
  if ((mask[i * words + j / 32] >> (j % 32)) & 1u)
    return;
  if (wide)
    ((unsigned int *)y)[e] = 0u;
  else
    ((unsigned short *)y)[e] = 0;
}
)",
                                               R"(
extern "C" __global__ void dlrt_gemm_relu_mask_write(
    void *y, unsigned int *mask, unsigned long long m, unsigned long long n,
    unsigned long long words, int wide, unsigned int inf) {
  unsigned long long t =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= m * words)
    return;
  unsigned long long i = t / words, w = t % words;
  unsigned int bits = 0;
  for (unsigned int b = 0; b < 32; ++b) {
    unsigned long long j = w * 32 + b;
    if (j >= n)
      break;
    unsigned int u, sign, magnitude;
    if (wide) {
      u = ((const unsigned int *)y)[i * n + j];
      sign = u >> 31, magnitude = u & 0x7fffffffu;
    } else {
      u = ((const unsigned short *)y)[i * n + j];
      sign = u >> 15, magnitude = u & 0x7fffu;
    }
    if (!sign && magnitude != 0 && magnitude <= inf)
      bits |= 1u << b;
  }
  mask[t] = bits;
}
)"};

} // namespace

Status CudaDevice::reluMaskKernel(bool write, void *y, void *mask, uint64_t m,
                                  uint64_t n, ElementType type) {
  CUfunction function = nullptr;
  {
    std::lock_guard<std::mutex> lock(reluMutex_);
    std::unique_ptr<CudaKernel> &kernel = maskKernels_[write ? 1 : 0];
    if (!kernel) {
      const char *name = kMaskKernelNames[write ? 1 : 0];
      CompiledKernel compiled;
      DLRT_TRY(compileKernel(name, kMaskKernelSources[write ? 1 : 0], arch_,
                             kernelCacheDir(), &compiled));
      CUmodule module = nullptr;
      DLRT_TRY(loadModule(name, compiled.cubin, &module, &function));
      kernel = std::make_unique<CudaKernel>(ctx_, module, function, name, 0,
                                            256);
    }
    function = kernel->function;
  }
  unsigned long long words = uint64_t(dlc::exec::reluMaskWords(int64_t(n)));
  const uint64_t count = write ? m * words : m * n;
  if (count == 0)
    return Status::OK();
  const unsigned block = 256;
  const uint64_t grid = (count + block - 1) / block;
  if (grid > INT_MAX)
    return Status::error(DLRT_INTERNAL, "gemm ReLU mask: too many elements");
  void *yp = y, *maskp = mask;
  unsigned long long rows = m, cols = n;
  int wide = type == ElementType::F32;
  unsigned int inf = wide                       ? 0x7f800000u
                     : type == ElementType::F16 ? 0x7c00u
                                                : 0x7f80u;
  void *params[] = {&yp, &maskp, &rows, &cols, &words, &wide, &inf};
  return check(cu_->cuLaunchKernel(function, unsigned(grid), 1, 1, block, 1,
                                   1, 0, ctx_->stream, params, nullptr),
               "cuLaunchKernel(gemm ReLU mask)");
}

Status CudaDevice::gemmFrom(const GemmParams &p, const void *a, const void *b,
                            void *y, size_t offset) {
  return matmul(rowMajorMatmul(p, a, b, y), offset);
}

Status CudaDevice::batchedGemm(const BatchedGemmParams &p, const void *a,
                               const void *b, void *y) {
  if (p.dtype == ElementType::F64)
    return unsupportedType("batched_gemm", p.dtype);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return Status::error(DLRT_INTERNAL, "batched_gemm: non-positive size");
  DLRT_TRY(makeCurrent());
  // The innermost batch dim runs as one strided-batch cuBLASLt call; outer
  // dims (left when broadcasting keeps dims from merging) loop here.
  size_t r = p.batch.size();
  int64_t inner = r ? p.batch[r - 1] : 1, outer = 1;
  for (size_t d = 0; d + 1 < r; ++d)
    outer *= p.batch[d];
  if (inner > INT32_MAX)
    return Status::error(DLRT_INTERNAL, "batched_gemm: batch too large");
  const uint64_t M = uint64_t(p.m), N = uint64_t(p.n), K = uint64_t(p.k);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offA = 0, offB = 0, rest = o;
    for (size_t d = r ? r - 1 : 0; d-- > 0;) {
      offA += (rest % p.batch[d]) * p.stride_a[d];
      offB += (rest % p.batch[d]) * p.stride_b[d];
      rest /= p.batch[d];
    }
    // Row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T (as
    // in gemm(), rowMajorMatmul): a row-major [K, N] B is a column-major
    // [N, K] matrix, a transposed one ([N, K] row-major) a column-major
    // [K, N] read with CUBLAS_OP_T; the batch strides count whole matrices
    // either way.
    const size_t size = dlc::exec::elementTypeBytes(p.dtype);
    Matmul mm;
    mm.type = cublasType(p.dtype);
    mm.m = N;
    mm.n = M;
    mm.k = K;
    mm.a = offsetBy(b, offB, size);
    mm.opA = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    mm.rowsA = p.trans_b ? K : N;
    mm.colsA = p.trans_b ? N : K;
    mm.b = offsetBy(a, offA, size);
    mm.opB = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    mm.rowsB = p.trans_a ? M : K;
    mm.colsB = p.trans_a ? K : M;
    mm.d = offsetBy(y, o * inner * p.m * p.n, size);
    mm.c = mm.d;
    mm.batch = int32_t(inner);
    mm.strideA = r ? p.stride_b[r - 1] : 0;
    mm.strideB = r ? p.stride_a[r - 1] : 0;
    mm.strideD = p.m * p.n;
    DLRT_TRY(matmul(mm));
  }
  return Status::OK();
}

Status CudaDevice::describeConv(const ConvParams &p, const char *what,
                                ConvDescriptors *d) {
  const CudnnApi &dnn = *ctx_->dnn;
  d->dnn = &dnn;
  std::string prefix = std::string(what) + ": ";
  // convForward/convBackward* have made the padding symmetric.
  if (asymmetricPadding(p))
    return Status::error(DLRT_INTERNAL,
                         prefix + "asymmetric padding reached cuDNN");
  for (int64_t v : {p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.p, p.q, p.stride_h,
                    p.stride_w, p.dilation_h, p.dilation_w, p.group})
    if (v <= 0 || v > INT_MAX)
      return Status::error(DLRT_INTERNAL,
                           prefix + "sizes, strides, dilations and group "
                                    "must be positive 32-bit integers");
  if (p.pad_top < 0 || p.pad_left < 0 || p.pad_top > INT_MAX ||
      p.pad_left > INT_MAX)
    return Status::error(DLRT_INTERNAL, prefix + "bad padding");
  if (p.c % p.group != 0 || p.k % p.group != 0)
    return Status::error(DLRT_INTERNAL,
                         prefix + "channels (" + std::to_string(p.c) + " in, " +
                             std::to_string(p.k) +
                             " out) are not divisible by group " +
                             std::to_string(p.group));
  DLRT_TRY(checkDnn(dnn.cudnnCreateTensorDescriptor(&d->x),
                    "cudnnCreateTensorDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnCreateTensorDescriptor(&d->y),
                    "cudnnCreateTensorDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnCreateFilterDescriptor(&d->w),
                    "cudnnCreateFilterDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnCreateConvolutionDescriptor(&d->conv),
                    "cudnnCreateConvolutionDescriptor"));
  if (p.spatial == 3)
    return describeConv3d(p, prefix, d);
  // Tensors and filter in the call's type; the convolution computes in f32
  // (FLOAT_CONFIG, PSEUDO_HALF_CONFIG, PSEUDO_BFLOAT16_CONFIG).
  const cudnnDataType_t type = cudnnType(p.dtype);
  DLRT_TRY(checkDnn(dnn.cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW,
                                                   type, int(p.n), int(p.c),
                                                   int(p.h), int(p.w)),
                    "cudnnSetTensor4dDescriptor(x)"));
  if (p.y_strides.empty()) {
    DLRT_TRY(checkDnn(dnn.cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW,
                                                     type, int(p.n), int(p.k),
                                                     int(p.p), int(p.q)),
                      "cudnnSetTensor4dDescriptor(y)"));
  } else {
    // A strided output (ConvParams::y_strides, a channel slice of a
    // concatenation's buffer): cuDNN writes y through the descriptor's
    // strides.
    if (p.y_strides.size() != 4)
      return Status::error(DLRT_INTERNAL, prefix + "y_strides needs 4 values");
    int dims[4] = {int(p.n), int(p.k), int(p.p), int(p.q)}, strides[4];
    for (int i = 0; i < 4; ++i) {
      if (p.y_strides[i] <= 0 || p.y_strides[i] > INT_MAX)
        return Status::error(DLRT_INTERNAL, prefix + "bad y_strides");
      strides[i] = int(p.y_strides[i]);
    }
    DLRT_TRY(checkDnn(
        dnn.cudnnSetTensorNdDescriptor(d->y, type, 4, dims, strides),
        "cudnnSetTensorNdDescriptor(y)"));
  }
  DLRT_TRY(checkDnn(
      dnn.cudnnSetFilter4dDescriptor(d->w, type, CUDNN_TENSOR_NCHW, int(p.k),
                                     int(p.c / p.group), int(p.r), int(p.s)),
      "cudnnSetFilter4dDescriptor"));
  DLRT_TRY(
      checkDnn(dnn.cudnnSetConvolution2dDescriptor(
                   d->conv, int(p.pad_top), int(p.pad_left), int(p.stride_h),
                   int(p.stride_w), int(p.dilation_h), int(p.dilation_w),
                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "cudnnSetConvolution2dDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnSetConvolutionGroupCount(d->conv, int(p.group)),
                    "cudnnSetConvolutionGroupCount"));
  // FMA only: CUDNN_DEFAULT_MATH allows TF32 tensor cores for f32 on
  // Ampere and later, which would break agreement with f32 references.
  // 16-bit operands lose nothing on tensor cores (f32 accumulation).
  DLRT_TRY(checkDnn(dnn.cudnnSetConvolutionMathType(d->conv, convMathType(p)),
                    "cudnnSetConvolutionMathType"));
  int n = 0, k = 0, outH = 0, outW = 0;
  DLRT_TRY(checkDnn(dnn.cudnnGetConvolution2dForwardOutputDim(
                        d->conv, d->x, d->w, &n, &k, &outH, &outW),
                    "cudnnGetConvolution2dForwardOutputDim"));
  if (n != p.n || k != p.k || outH != p.p || outW != p.q)
    return Status::error(
        DLRT_INTERNAL,
        prefix + "output shape [" + std::to_string(p.n) + "," +
            std::to_string(p.k) + "," + std::to_string(p.p) + "," +
            std::to_string(p.q) + "] differs from cuDNN's [" +
            std::to_string(n) + "," + std::to_string(k) + "," +
            std::to_string(outH) + "," + std::to_string(outW) + "]");
  return Status::OK();
}

Status CudaDevice::describeConv3d(const ConvParams &p, const std::string &prefix,
                                  ConvDescriptors *d) {
  const CudnnApi &dnn = *ctx_->dnn;
  for (int64_t v : {p.d, p.t, p.o, p.stride_d, p.dilation_d})
    if (v <= 0 || v > INT_MAX)
      return Status::error(DLRT_INTERNAL,
                           prefix + "depth sizes, stride and dilation must be "
                                    "positive 32-bit integers");
  if (p.pad_front < 0 || p.pad_front > INT_MAX)
    return Status::error(DLRT_INTERNAL, prefix + "bad depth padding");
  // Packed NCDHW tensors: strides are suffix products of the dims.
  auto setTensor = [&](cudnnTensorDescriptor_t t, std::array<int, 5> dims,
                       const char *which) {
    std::array<int, 5> strides;
    int s = 1;
    for (int i = 4; i >= 0; --i) {
      strides[i] = s;
      s *= dims[i];
    }
    std::string call = std::string("cudnnSetTensorNdDescriptor(") + which + ")";
    return checkDnn(dnn.cudnnSetTensorNdDescriptor(t, cudnnType(p.dtype), 5,
                                                   dims.data(), strides.data()),
                    call.c_str());
  };
  DLRT_TRY(setTensor(d->x, {int(p.n), int(p.c), int(p.d), int(p.h), int(p.w)},
                     "x"));
  DLRT_TRY(setTensor(d->y, {int(p.n), int(p.k), int(p.o), int(p.p), int(p.q)},
                     "y"));
  int wDims[5] = {int(p.k), int(p.c / p.group), int(p.t), int(p.r), int(p.s)};
  DLRT_TRY(checkDnn(dnn.cudnnSetFilterNdDescriptor(d->w, cudnnType(p.dtype),
                                                   CUDNN_TENSOR_NCHW, 5, wDims),
                    "cudnnSetFilterNdDescriptor"));
  int pads[3] = {int(p.pad_front), int(p.pad_top), int(p.pad_left)};
  int strides[3] = {int(p.stride_d), int(p.stride_h), int(p.stride_w)};
  int dil[3] = {int(p.dilation_d), int(p.dilation_h), int(p.dilation_w)};
  DLRT_TRY(checkDnn(dnn.cudnnSetConvolutionNdDescriptor(
                        d->conv, 3, pads, strides, dil,
                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                    "cudnnSetConvolutionNdDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnSetConvolutionGroupCount(d->conv, int(p.group)),
                    "cudnnSetConvolutionGroupCount"));
  // As for 2-D.
  DLRT_TRY(checkDnn(dnn.cudnnSetConvolutionMathType(d->conv, convMathType(p)),
                    "cudnnSetConvolutionMathType"));
  int out[5] = {0, 0, 0, 0, 0};
  DLRT_TRY(checkDnn(dnn.cudnnGetConvolutionNdForwardOutputDim(d->conv, d->x,
                                                              d->w, 5, out),
                    "cudnnGetConvolutionNdForwardOutputDim"));
  if (out[0] != p.n || out[1] != p.k || out[2] != p.o || out[3] != p.p ||
      out[4] != p.q)
    return Status::error(
        DLRT_INTERNAL,
        prefix + "output shape [" + std::to_string(p.n) + "," +
            std::to_string(p.k) + "," + std::to_string(p.o) + "," +
            std::to_string(p.p) + "," + std::to_string(p.q) +
            "] differs from cuDNN's [" + std::to_string(out[0]) + "," +
            std::to_string(out[1]) + "," + std::to_string(out[2]) + "," +
            std::to_string(out[3]) + "," + std::to_string(out[4]) + "]");
  return Status::OK();
}

/// Picks the first algorithm of |perf| (sorted fastest first by cuDNN) that
/// ran successfully, does not use tensor cores unless |allowTensorOps| (f16
/// and bf16 data; never with conversion) and, in the first pass when
/// |preferDeterministic|, is deterministic; |workspaceOf| returns false for
/// algorithms the descriptors (FMA math) do not support.
template <typename Perf, typename WorkspaceFn>
bool pickAlgo(const Perf *perf, int count, bool preferDeterministic,
              bool allowTensorOps, WorkspaceFn workspaceOf, int *algo,
              size_t *workspace) {
  for (int pass = preferDeterministic ? 0 : 1; pass < 2; ++pass)
    for (int i = 0; i < count; ++i) {
      const Perf &candidate = perf[i];
      if (candidate.status != CUDNN_STATUS_SUCCESS ||
          (candidate.mathType == CUDNN_TENSOR_OP_MATH && !allowTensorOps) ||
          candidate.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        continue;
      if (pass == 0 && candidate.determinism != CUDNN_DETERMINISTIC)
        continue;
      size_t bytes = 0;
      if (!workspaceOf(candidate.algo, &bytes))
        continue;
      *algo = int(candidate.algo);
      *workspace = bytes;
      return true;
    }
  return false;
}

Status CudaDevice::chooseConvAlgo(ConvKind kind, const ConvParams &p,
                                  const ConvDescriptors &d, size_t limit,
                                  int *algo, size_t *workspace) {
  std::vector<int64_t> key = {
      int64_t(kind), p.n,        p.c,       p.h,        p.w,
      p.k,           p.r,        p.s,       p.p,        p.q,
      p.stride_h,    p.stride_w, p.pad_top, p.pad_left, p.dilation_h,
      p.dilation_w,  p.group,    p.spatial, p.d,        p.t,
      p.o,           p.stride_d, p.pad_front, p.dilation_d};
  if (p.dtype != ElementType::F32)
    key.push_back(int64_t(p.dtype));
  key.push_back(int64_t(limit));
  // A strided output (a channel slot) may rule out algorithms.
  key.insert(key.end(), p.y_strides.begin(), p.y_strides.end());
  std::lock_guard<std::mutex> lock(algoMutex_);
  if (auto it = convAlgos_.find(key); it != convAlgos_.end()) {
    *algo = it->second.first;
    *workspace = it->second.second;
    return Status::OK();
  }
  const CudnnApi &dnn = *ctx_->dnn;
  cudnnHandle_t h = ctx_->dnnHandle;
  const bool tensorOps = convMathType(p) != CUDNN_FMA_MATH;
  bool found = false;
  const char *what = "";
  switch (kind) {
  case ConvKind::Forward: {
    what = "cudnnGetConvolutionForwardAlgorithm_v7";
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    DLRT_TRY(checkDnn(dnn.cudnnGetConvolutionForwardAlgorithm_v7(
                          h, d.x, d.w, d.conv, d.y,
                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                      what));
    found = pickAlgo(
        perf, returned, false, tensorOps,
        [&](cudnnConvolutionFwdAlgo_t a, size_t *bytes) {
          return dnn.cudnnGetConvolutionForwardWorkspaceSize(
                     h, d.x, d.w, d.conv, d.y, a, bytes) ==
                     CUDNN_STATUS_SUCCESS &&
                 *bytes <= limit;
        },
        algo, workspace);
    break;
  }
  case ConvKind::BackwardData: {
    what = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    cudnnConvolutionBwdDataAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int returned = 0;
    DLRT_TRY(
        checkDnn(dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                     h, d.w, d.y, d.conv, d.x,
                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf),
                 what));
    found = pickAlgo(
        perf, returned, true, tensorOps,
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t *bytes) {
          return dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
                     h, d.w, d.y, d.conv, d.x, a, bytes) ==
                     CUDNN_STATUS_SUCCESS &&
                 *bytes <= limit;
        },
        algo, workspace);
    break;
  }
  case ConvKind::BackwardFilter: {
    what = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    cudnnConvolutionBwdFilterAlgoPerf_t
        perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int returned = 0;
    DLRT_TRY(
        checkDnn(dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                     h, d.x, d.y, d.conv, d.w,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf),
                 what));
    found = pickAlgo(
        perf, returned, true, tensorOps,
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t *bytes) {
          return dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     h, d.x, d.y, d.conv, d.w, a, bytes) ==
                     CUDNN_STATUS_SUCCESS &&
                 *bytes <= limit;
        },
        algo, workspace);
    break;
  }
  }
  if (!found)
    return Status::error(DLRT_INTERNAL,
                         std::string(what) + " returned no usable " +
                             (tensorOps ? dlc::exec::elementTypeName(p.dtype)
                                        : "FMA (non-TF32)") +
                             " algorithm within the " + std::to_string(limit) +
                             "-byte workspace");
  convAlgos_[key] = {*algo, *workspace};
  return Status::OK();
}

Status CudaDevice::copyPadded(const ConvParams &p, bool toPadded,
                              const void *from, void *to) {
  const CudnnApi &dnn = *ctx_->dnn;
  const ConvParams q = padded(p);
  const int rank = p.spatial == 3 ? 5 : 4;
  // Interior view of the padded tensor: p's input dims with q's strides.
  std::array<int, 5> dims = {int(p.n), int(p.c), int(p.d), int(p.h),
                             int(p.w)};
  std::array<int, 5> paddedDims = {int(q.n), int(q.c), int(q.d), int(q.h),
                                   int(q.w)};
  if (rank == 4) {
    dims = {dims[0], dims[1], dims[3], dims[4], 1};
    paddedDims = {paddedDims[0], paddedDims[1], paddedDims[3], paddedDims[4],
                  1};
  }
  std::array<int, 5> packed{}, viewStrides{};
  int64_t packedStride = 1, paddedStride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    packed[i] = int(packedStride);
    viewStrides[i] = int(paddedStride);
    packedStride *= dims[i];
    paddedStride *= paddedDims[i];
  }
  if (paddedStride > INT_MAX)
    return Status::error(DLRT_INTERNAL,
                         "convolution: the explicitly padded input has more "
                         "than 2^31 elements");
  int64_t offset = p.pad_top * q.w + p.pad_left;
  if (p.spatial == 3)
    offset += p.pad_front * q.h * q.w;
  ConvDescriptors d;
  d.dnn = &dnn;
  DLRT_TRY(checkDnn(dnn.cudnnCreateTensorDescriptor(&d.x),
                    "cudnnCreateTensorDescriptor"));
  DLRT_TRY(checkDnn(dnn.cudnnCreateTensorDescriptor(&d.y),
                    "cudnnCreateTensorDescriptor"));
  // A copy: exact in every type.
  const cudnnDataType_t type = cudnnType(p.dtype);
  const size_t size = dlc::exec::elementTypeBytes(p.dtype);
  DLRT_TRY(checkDnn(dnn.cudnnSetTensorNdDescriptor(d.x, type, rank, dims.data(),
                                                   packed.data()),
                    "cudnnSetTensorNdDescriptor(packed)"));
  DLRT_TRY(checkDnn(dnn.cudnnSetTensorNdDescriptor(d.y, type, rank, dims.data(),
                                                   viewStrides.data()),
                    "cudnnSetTensorNdDescriptor(padded interior)"));
  const float one = 1.0f, zero = 0.0f;
  if (toPadded) {
    DLRT_TRY(fillZero(to, size_t(paddedStride) * size));
    return checkDnn(dnn.cudnnTransformTensor(ctx_->dnnHandle, &one, d.x, from,
                                             &zero, d.y,
                                             offsetBy(to, offset, size)),
                    "cudnnTransformTensor(pad)");
  }
  return checkDnn(dnn.cudnnTransformTensor(ctx_->dnnHandle, &one, d.y,
                                           offsetBy(from, offset, size), &zero,
                                           d.x, to),
                  "cudnnTransformTensor(crop)");
}

Status CudaDevice::withPaddedInput(
    const ConvParams &p, const void *x,
    const std::function<Status(const ConvParams &, const void *, size_t)> &fn) {
  const ConvParams q = padded(p);
  DeviceBuffer own;
  void *xp = nullptr;
  size_t offset = 0;
  DLRT_TRY(scratch(size_t(q.n * q.c * q.d * q.h * q.w) *
                       dlc::exec::elementTypeBytes(p.dtype),
                   &offset, &own, &xp));
  Status status = copyPadded(p, true, x, xp);
  if (status.ok())
    status = fn(q, xp, offset);
  release(own); // stream-ordered: freed after the convolution has run
  return status;
}

Status CudaDevice::convForward(const ConvParams &p, const void *x,
                               const void *w, const void *bias, void *y) {
  return convForwardAt(p, x, w, bias, y, 0);
}

Status CudaDevice::convForwardAt(const ConvParams &p, const void *x,
                                 const void *w, const void *bias, void *y,
                                 size_t offset) {
  if (p.dtype == ElementType::F64)
    return unsupportedType("conv_forward", p.dtype);
  DLRT_TRY(makeCurrent());
  if (asymmetricPadding(p))
    return withPaddedInput(p, x,
                           [&](const ConvParams &q, const void *xp, size_t at) {
                             return convForwardAt(q, xp, w, bias, y, at);
                           });
  ConvDescriptors d;
  DLRT_TRY(describeConv(p, "conv2d_forward", &d));
  int algo = 0;
  size_t bytes = 0;
  DLRT_TRY(chooseConvAlgo(ConvKind::Forward, p, d, workspaceBytesAt(offset),
                          &algo, &bytes));
  if (p.has_bias && !bias)
    return Status::error(DLRT_INTERNAL,
                         "conv2d_forward: has_bias is set but bias is null");
  const float one = 1.0f, zero = 0.0f;
  // The bias as a [1, K, 1, ...] tensor of y's rank (cudnnAddTensor).
  auto describeBias = [&]() -> Status {
    DLRT_TRY(checkDnn(ctx_->dnn->cudnnCreateTensorDescriptor(&d.bias),
                      "cudnnCreateTensorDescriptor"));
    if (p.spatial == 3) {
      int dims[5] = {1, int(p.k), 1, 1, 1}, strides[5] = {int(p.k), 1, 1, 1, 1};
      return checkDnn(ctx_->dnn->cudnnSetTensorNdDescriptor(
                          d.bias, cudnnType(p.dtype), 5, dims, strides),
                      "cudnnSetTensorNdDescriptor(bias)");
    }
    return checkDnn(
        ctx_->dnn->cudnnSetTensor4dDescriptor(
            d.bias, CUDNN_TENSOR_NCHW, cudnnType(p.dtype), 1, int(p.k), 1, 1),
        "cudnnSetTensor4dDescriptor(bias)");
  };
  // f16/bf16: y = broadcast(bias) first (a copy, exact), then the
  // convolution adds onto it with beta 1 in f32, rounding y once; adding the
  // bias after the convolution would round twice.
  const bool biasFirst = p.has_bias && p.dtype != ElementType::F32;
  if (biasFirst) {
    DLRT_TRY(describeBias());
    DLRT_TRY(checkDnn(ctx_->dnn->cudnnAddTensor(ctx_->dnnHandle, &one, d.bias,
                                                bias, &zero, d.y, y),
                      "cudnnAddTensor"));
  }
  DLRT_TRY(checkDnn(ctx_->dnn->cudnnConvolutionForward(
                        ctx_->dnnHandle, &one, d.x, x, d.w, w, d.conv,
                        cudnnConvolutionFwdAlgo_t(algo), workspaceAt(offset),
                        bytes, biasFirst ? &one : &zero, d.y, y),
                    "cudnnConvolutionForward"));
  if (p.has_bias && !biasFirst) {
    DLRT_TRY(describeBias());
    DLRT_TRY(checkDnn(ctx_->dnn->cudnnAddTensor(ctx_->dnnHandle, &one, d.bias,
                                                bias, &one, d.y, y),
                      "cudnnAddTensor"));
  }
  return Status::OK();
}

Status CudaDevice::convBackwardData(const ConvParams &p, const void *dy,
                                    const void *w, void *dx) {
  return convBackwardDataAt(p, dy, w, dx, 0);
}

Status CudaDevice::convBackwardDataAt(const ConvParams &p, const void *dy,
                                      const void *w, void *dx, size_t offset) {
  if (p.dtype == ElementType::F64)
    return unsupportedType("conv_backward_data", p.dtype);
  DLRT_TRY(makeCurrent());
  if (asymmetricPadding(p)) {
    // The gradient of the padded input, cropped to the real one.
    const ConvParams q = padded(p);
    DeviceBuffer own;
    void *dxp = nullptr;
    DLRT_TRY(scratch(size_t(q.n * q.c * q.d * q.h * q.w) *
                         dlc::exec::elementTypeBytes(p.dtype),
                     &offset, &own, &dxp));
    Status status = convBackwardDataAt(q, dy, w, dxp, offset);
    if (status.ok())
      status = copyPadded(p, false, dxp, dx);
    release(own);
    return status;
  }
  ConvDescriptors d;
  DLRT_TRY(describeConv(p, "conv2d_backward_data", &d));
  int algo = 0;
  size_t bytes = 0;
  DLRT_TRY(chooseConvAlgo(ConvKind::BackwardData, p, d,
                          workspaceBytesAt(offset), &algo, &bytes));
  const float one = 1.0f, zero = 0.0f;
  return checkDnn(ctx_->dnn->cudnnConvolutionBackwardData(
                      ctx_->dnnHandle, &one, d.w, w, d.y, dy, d.conv,
                      cudnnConvolutionBwdDataAlgo_t(algo), workspaceAt(offset),
                      bytes, &zero, d.x, dx),
                  "cudnnConvolutionBackwardData");
}

Status CudaDevice::convBackwardFilter(const ConvParams &p, const void *x,
                                      const void *dy, void *dw) {
  return convBackwardFilterAt(p, x, dy, dw, 0);
}

Status CudaDevice::convBackwardFilterAt(const ConvParams &p, const void *x,
                                        const void *dy, void *dw,
                                        size_t offset) {
  if (p.dtype == ElementType::F64)
    return unsupportedType("conv_backward_filter", p.dtype);
  DLRT_TRY(makeCurrent());
  if (asymmetricPadding(p))
    return withPaddedInput(p, x,
                           [&](const ConvParams &q, const void *xp, size_t at) {
                             return convBackwardFilterAt(q, xp, dy, dw, at);
                           });
  ConvDescriptors d;
  DLRT_TRY(describeConv(p, "conv2d_backward_filter", &d));
  int algo = 0;
  size_t bytes = 0;
  DLRT_TRY(chooseConvAlgo(ConvKind::BackwardFilter, p, d,
                          workspaceBytesAt(offset), &algo, &bytes));
  const float one = 1.0f, zero = 0.0f;
  return checkDnn(ctx_->dnn->cudnnConvolutionBackwardFilter(
                      ctx_->dnnHandle, &one, d.x, x, d.y, dy, d.conv,
                      cudnnConvolutionBwdFilterAlgo_t(algo),
                      workspaceAt(offset), bytes, &zero, d.w, dw),
                  "cudnnConvolutionBackwardFilter");
}

} // namespace

Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out) {
  return CudaDevice::create(ordinal, out);
}

std::vector<std::pair<std::string, std::string>> cudaRuntimeKernelSources() {
  return {{kReluKernelName, kReluKernelSource},
          {kMaskKernelNames[0], kMaskKernelSources[0]},
          {kMaskKernelNames[1], kMaskKernelSources[1]}};
}

bool getCudaKernelStats(const Device &device, CudaKernelStats *out) {
  const auto *cuda = dynamic_cast<const CudaDevice *>(&device);
  if (!cuda)
    return false;
  *out = cuda->stats();
  return true;
}

} // namespace dlrt
