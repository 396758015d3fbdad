//===- CublasLtKernel.h - the stand-in cuBLASLt's host GEMM -----*- C++ -*-===//
// What CublasLt.cpp (the API: descriptors, heuristic, checks) hands to
// CublasLtKernel.cpp (the arithmetic) once a cublasLtMatmul call has been
// validated. Test-only; part of libdlrt-cuda-standin.so.
#ifndef DLC_TEST_CUDA_STANDIN_CUBLASLTKERNEL_H
#define DLC_TEST_CUDA_STANDIN_CUBLASLTKERNEL_H

#include <cublasLt.h>

#include <cstdint>

namespace dlc::standin::lt {

/// One matrix operand as its layout describes it: |rows| x |cols| elements
/// of |type| in |order| (CUBLASLT_ORDER_COL or _ROW) with leading dimension
/// |ld|; batch i starts |stride| elements after batch i - 1.
struct Operand {
  const void *data = nullptr;
  cudaDataType type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

/// A validated matmul: per batch, D = alpha * op(A) op(B) + beta * C (C not
/// read when beta == 0), then |epilogue|, accumulated in f32. op(A) is m x k,
/// op(B) k x n, C and D m x n.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
  bool transA = false, transB = false;
  Operand a, b, c, d;
  float alpha = 1.0f, beta = 0.0f;
  /// CUBLAS_COMPUTE_32F, or _FAST_TF32/_FAST_16F/_FAST_16BF: A and B are
  /// rounded to tf32/f16/bf16 before the f32 multiply-accumulate, as those
  /// compute types allow the tensor cores to do.
  cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  /// Bias (read) or bias gradient (written), of |biasType|, batch i at
  /// |biasStride| elements after batch i - 1.
  void *bias = nullptr;
  cudaDataType biasType = CUDA_R_32F;
  int64_t biasStride = 0;
  /// Epilogue auxiliary matrix: GELU input (of |auxType|, |auxLd| elements
  /// per column) or ReLU bit-mask (|auxLd| bits per column).
  void *aux = nullptr;
  cudaDataType auxType = CUDA_R_32F;
  int64_t auxLd = 0, auxStride = 0;
};

/// Bytes per element of a type the stand-in supports (f32, f16, bf16); 0
/// for any other.
size_t elementSize(cudaDataType type);

/// GELU as the cuBLASLt epilogue computes it: the tanh approximation
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel
/// 2016), and its derivative for CUBLASLT_EPILOGUE_DGELU.
float gelu(float x);
float geluGrad(float x);

/// Runs |plan| on the calling thread, splitting D into tiles over the
/// stand-in's worker pool (parallelFor). Never fails: everything was
/// checked before.
void runMatmul(const MatmulPlan &plan);

} // namespace dlc::standin::lt

#endif
