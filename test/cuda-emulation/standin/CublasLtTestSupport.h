//===- CublasLtTestSupport.h - fixtures of the cuBLASLt tests --*- C++ -*-===//
// Host matrices as cuBLASLt layouts describe them (f32/f16/bf16, COL/ROW,
// padded ld, strided batches, NaN padding), device buffers from the
// stand-in driver, a double-precision reference of one matmul problem and
// the descriptors that describe it. Used by CublasLtTest.cpp only.
#ifndef DLC_TEST_CUDA_STANDIN_CUBLASLTTESTSUPPORT_H
#define DLC_TEST_CUDA_STANDIN_CUBLASLTTESTSUPPORT_H

#include <cublasLt.h>
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dlc::standin::lt::test {

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();

inline float roundTo(cudaDataType type, float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (type == CUDA_R_16BF) {
    bits += 0x7fff + ((bits >> 16) & 1);
    bits &= 0xffff0000u;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  if (type == CUDA_R_16F) // values here are normal halves: keep 11 bits
    return std::ldexp(std::nearbyint(std::ldexp(x, 10 - std::ilogb(x))),
                      std::ilogb(x) - 10);
  return x;
}

/// Host-side bytes of a value of |type| (f32, or f16/bf16 bit patterns).
inline void encode(cudaDataType type, float x, void *out) {
  if (type == CUDA_R_32F) {
    std::memcpy(out, &x, 4);
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint16_t h;
  if (type == CUDA_R_16BF) {
    h = std::isnan(x) ? 0x7fc0 : uint16_t(bits >> 16); // x already rounded
  } else if (std::isnan(x)) {
    h = 0x7e00;
  } else if (x == 0.0f) {
    h = uint16_t((bits >> 16) & 0x8000);
  } else {
    int e = std::ilogb(x);
    uint32_t mantissa = uint32_t(std::ldexp(std::fabs(x), 10 - e)) & 0x3ff;
    h = uint16_t(((bits >> 16) & 0x8000) | uint32_t(e + 15) << 10 | mantissa);
  }
  std::memcpy(out, &h, 2);
}

inline float decode(cudaDataType type, const void *in) {
  if (type == CUDA_R_32F) {
    float x;
    std::memcpy(&x, in, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, in, 2);
  if (type == CUDA_R_16BF) {
    uint32_t bits = uint32_t(h) << 16;
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  int e = (h >> 10) & 0x1f;
  float m = float(h & 0x3ff);
  float v = e == 0    ? std::ldexp(m, -24)
            : e == 31 ? (m ? kNaN : INFINITY)
                      : std::ldexp(1024.0f + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

inline size_t sizeOf(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

/// A matrix as a layout describes it, with its host values (padding
/// included: NaN, so reading it shows in the result).
struct Mat {
  cudaDataType type = CUDA_R_32F;
  cublasLtOrder_t order = CUBLASLT_ORDER_COL;
  int64_t rows = 0, cols = 0, ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
  std::vector<float> values;

  int64_t index(int32_t b, int64_t i, int64_t j) const {
    return b * stride + (order == CUBLASLT_ORDER_COL ? i + j * ld : i * ld + j);
  }
  float at(int32_t b, int64_t i, int64_t j) const {
    return values[index(b, i, j)];
  }
  int64_t span() const {
    int64_t one = order == CUBLASLT_ORDER_COL ? (cols - 1) * ld + rows
                                              : (rows - 1) * ld + cols;
    return one + (batch - 1) * stride;
  }
};

inline std::mt19937 &rng() {
  static std::mt19937 r(1234);
  return r;
}

/// |rows| x |cols| with |pad| extra elements per leading dimension; batch
/// stride one matrix plus |stridePad| (or 0 with |broadcast|).
inline Mat matrix(int64_t rows, int64_t cols, cudaDataType type = CUDA_R_32F,
                  cublasLtOrder_t order = CUBLASLT_ORDER_COL, int64_t pad = 0,
                  int32_t batch = 1, int64_t stridePad = 0,
                  bool broadcast = false) {
  Mat m;
  m.type = type;
  m.order = order;
  m.rows = rows;
  m.cols = cols;
  m.ld = (order == CUBLASLT_ORDER_COL ? rows : cols) + pad;
  m.batch = batch;
  m.stride = broadcast ? 0
                       : m.ld * (order == CUBLASLT_ORDER_COL ? cols : rows) +
                             stridePad;
  m.values.assign(m.span(), kNaN);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int32_t b = 0; b < (broadcast ? 1 : batch); ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        // Away from 0 so that every value is a normal f16.
        m.values[m.index(b, i, j)] =
            roundTo(type, std::max(std::fabs(dist(rng())), 1e-3f) *
                              (dist(rng()) < 0 ? -1.0f : 1.0f));
  return m;
}

/// The stream every test runs on, created once and destroyed after the
/// last test. A blocking stream: cuMemcpyHtoD/DtoH run on the legacy
/// default stream, which a CU_STREAM_NON_BLOCKING stream would not wait for
/// (the stand-in driver models that race as the real one has it).
inline CUstream &stream() {
  static CUstream s = nullptr;
  return s;
}

/// Device memory from the stand-in driver, freed with the object.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    EXPECT_EQ(cuMemAlloc(&ptr, n ? n : 1), CUDA_SUCCESS);
  }
  ~DeviceBuffer() { cuMemFree(ptr); }
  void *get(size_t offset = 0) const {
    return reinterpret_cast<char *>(ptr) + offset;
  }
};

inline void upload(const Mat &m, const DeviceBuffer &buffer,
                   size_t offset = 0) {
  std::vector<char> bytes(m.values.size() * sizeOf(m.type));
  for (size_t i = 0; i < m.values.size(); ++i)
    encode(m.type, m.values[i], bytes.data() + i * sizeOf(m.type));
  ASSERT_EQ(cuMemcpyHtoD(buffer.ptr + offset, bytes.data(), bytes.size()),
            CUDA_SUCCESS);
}

inline void download(Mat &m, const DeviceBuffer &buffer, size_t offset = 0) {
  std::vector<char> bytes(m.values.size() * sizeOf(m.type));
  ASSERT_EQ(cuStreamSynchronize(stream()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(bytes.data(), buffer.ptr + offset, bytes.size()),
            CUDA_SUCCESS);
  for (size_t i = 0; i < m.values.size(); ++i)
    m.values[i] = decode(m.type, bytes.data() + i * sizeOf(m.type));
}

/// One matmul problem: D = alpha op(A) op(B) + beta C, then the epilogue.
struct Problem {
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  Mat a, b, c, d;
  float alpha = 1.0f, beta = 0.0f;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::vector<float> bias; // of D's type
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  uint64_t maxWorkspace = 64ull << 20;

  int64_t m() const { return d.rows; }
  int64_t n() const { return d.cols; }
  int64_t k() const { return opA == CUBLAS_OP_N ? a.cols : a.rows; }
  float opa(int32_t bt, int64_t i, int64_t p) const {
    return opA == CUBLAS_OP_N ? a.at(bt, i, p) : a.at(bt, p, i);
  }
  float opb(int32_t bt, int64_t p, int64_t j) const {
    return opB == CUBLAS_OP_N ? b.at(bt, p, j) : b.at(bt, j, p);
  }
  /// The product term and the sum of |terms| (the rounding scale).
  std::pair<double, double> product(int32_t bt, int64_t i, int64_t j) const {
    double sum = 0, scale = 0;
    for (int64_t p = 0; p < k(); ++p) {
      double t = double(opa(bt, i, p)) * opb(bt, p, j);
      sum += t;
      scale += std::fabs(t);
    }
    return {alpha * sum, std::fabs(alpha) * scale};
  }
  /// The reference value of D(bt, i, j) before rounding to D's type.
  double reference(int32_t bt, int64_t i, int64_t j, double *scale) const {
    auto [v, s] = product(bt, i, j);
    if (beta != 0.0f) {
      v += double(beta) * c.at(bt, i, j);
      s += std::fabs(beta * c.at(bt, i, j));
    }
    if (epilogue & CUBLASLT_EPILOGUE_BIAS)
      v += bias[i];
    if (epilogue & CUBLASLT_EPILOGUE_RELU)
      v = std::max(v, 0.0);
    if (epilogue & CUBLASLT_EPILOGUE_GELU)
      v = 0.5 * v *
          (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    *scale = s + 1.0;
    return v;
  }
};

inline Problem problem(int64_t m, int64_t n, int64_t k, cublasOperation_t opA,
                       cublasOperation_t opB, cudaDataType inType = CUDA_R_32F,
                       cudaDataType outType = CUDA_R_32F) {
  Problem p;
  p.opA = opA;
  p.opB = opB;
  p.a = opA == CUBLAS_OP_N ? matrix(m, k, inType) : matrix(k, m, inType);
  p.b = opB == CUBLAS_OP_N ? matrix(k, n, inType) : matrix(n, k, inType);
  p.c = matrix(m, n, outType);
  p.d = matrix(m, n, outType);
  return p;
}

/// Descriptors of a problem, destroyed with the object.
struct Descriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    cublasLtMatmulDescDestroy(desc);
    for (auto l : {a, b, c, d})
      cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulPreferenceDestroy(pref);
  }
};

inline cublasLtMatrixLayout_t layoutOf(const Mat &m) {
  cublasLtMatrixLayout_t l = nullptr;
  EXPECT_EQ(cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld),
            CUBLAS_STATUS_SUCCESS);
  int32_t order = m.order;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER,
                                             &order, sizeof order),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l,
                                             CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                             &m.batch, sizeof m.batch),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.stride,
                sizeof m.stride),
            CUBLAS_STATUS_SUCCESS);
  return l;
}

inline void describe(const Problem &p, Descriptors &ds) {
  ASSERT_EQ(cublasLtMatmulDescCreate(&ds.desc, p.compute, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(ds.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &p.opA, sizeof p.opA),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(ds.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                           &p.opB, sizeof p.opB),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(ds.desc,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &p.epilogue, sizeof p.epilogue),
            CUBLAS_STATUS_SUCCESS);
  ds.a = layoutOf(p.a);
  ds.b = layoutOf(p.b);
  ds.c = layoutOf(p.c);
  ds.d = layoutOf(p.d);
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&ds.pref), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &p.maxWorkspace, sizeof p.maxWorkspace),
            CUBLAS_STATUS_SUCCESS);
}

} // namespace dlc::standin::lt::test

#endif
