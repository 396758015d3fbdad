//===- CudaBlasLt.cpp - GEMMs of the CUDA device through cuBLASLt ---------===//
// gemm and batched_gemm as cuBLASLt matmuls (f32 compute, no TF32), with the
// heuristic's algorithm cached per problem and the epilogues (bias, ReLU,
// ReLU bit-mask, bias gradient, f32 bias) fused where cuBLASLt has an
// algorithm, else run as fallbacks: plain products, products with ones and
// small NVRTC kernels of the device's own.
#include "runtime/cuda/CudaDeviceImpl.h"
#include "runtime/cuda/KernelCompiler.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace dlrt::cuda {
namespace {

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

/// Largest power of two (<= 256) dividing the address of |p|, in bytes.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

/// The cuBLASLt type of a library call's element type (f32, f16, bf16).
cudaDataType cublasType(ElementType type) {
  return type == ElementType::F16    ? CUDA_R_16F
         : type == ElementType::BF16 ? CUDA_R_16BF
                                     : CUDA_R_32F;
}

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

} // namespace

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

} // namespace dlrt::cuda

namespace dlrt {

std::vector<std::pair<std::string, std::string>> cudaRuntimeKernelSources() {
  return {{cuda::kReluKernelName, cuda::kReluKernelSource},
          {cuda::kMaskKernelNames[0], cuda::kMaskKernelSources[0]},
          {cuda::kMaskKernelNames[1], cuda::kMaskKernelSources[1]}};
}

} // namespace dlrt
