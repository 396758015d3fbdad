//===- CublasLtTest.cpp - tests of the stand-in cuBLASLt ------------------===//
// cublasLtMatmul against a double-precision reference over transposes,
// orders, padded leading dimensions, strided batches, alpha/beta,
// epilogues and 16-bit inputs; the exact status of every rejection; and a
// planted bug (a wrong leading dimension in the runtime's row-major GEMM)
// that must not go unnoticed. Memory comes from the stand-in driver.
#include "CublasLtKernel.h"
#include "CublasLtTestSupport.h"

#include <cublasLt.h>
#include <cuda.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace dlc::standin::lt::test;
using dlc::standin::lt::gelu;
using dlc::standin::lt::geluGrad;

class CublasLtTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUdevice device;
    ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream(), CU_STREAM_DEFAULT), CUDA_SUCCESS);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(cuStreamDestroy(stream()), CUDA_SUCCESS);
    stream() = nullptr;
    // The last release destroys the context and stops its stream workers.
    EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  }
  void SetUp() override {
    ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
    ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS);
  }

  /// Runs |p| through heuristic + matmul on the default stream and
  /// downloads D into p.d. Returns the first failing status.
  cublasStatus_t run(Problem &p) {
    Descriptors ds;
    describe(p, ds);
    DeviceBuffer a(p.a.values.size() * sizeOf(p.a.type)),
        b(p.b.values.size() * sizeOf(p.b.type)),
        c(p.c.values.size() * sizeOf(p.c.type)),
        d(p.d.values.size() * sizeOf(p.d.type)),
        bias(p.bias.size() * sizeOf(p.d.type));
    upload(p.a, a);
    upload(p.b, b);
    upload(p.c, c);
    upload(p.d, d);
    if (!p.bias.empty()) {
      Mat v = matrix(int64_t(p.bias.size()), 1, p.d.type);
      v.values = p.bias;
      upload(v, bias);
      void *ptr = bias.get();
      EXPECT_EQ(
          cublasLtMatmulDescSetAttribute(
              ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, sizeof ptr),
          CUBLAS_STATUS_SUCCESS);
    }
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
        handle, ds.desc, ds.a, ds.b, ds.c, ds.d, ds.pref, 1, &result, &found);
    if (s != CUBLAS_STATUS_SUCCESS)
      return s;
    EXPECT_EQ(found, 1);
    DeviceBuffer workspace(result.workspaceSize);
    s = cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(), ds.b,
                       &p.beta, c.get(), ds.c, d.get(), ds.d, &result.algo,
                       workspace.get(), result.workspaceSize, stream());
    if (s != CUBLAS_STATUS_SUCCESS)
      return s;
    download(p.d, d);
    return s;
  }

  /// Asserts D matches the reference within f32 accumulation error (and
  /// D's rounding), and that padding was left alone.
  void expectMatches(const Problem &p, const std::string &what) {
    const double outEps = p.d.type == CUDA_R_16F    ? 1.0 / 1024
                          : p.d.type == CUDA_R_16BF ? 1.0 / 128
                                                    : 0.0;
    int bad = 0;
    for (int32_t bt = 0; bt < p.d.batch; ++bt)
      for (int64_t i = 0; i < p.m(); ++i)
        for (int64_t j = 0; j < p.n(); ++j) {
          double scale;
          double want = p.reference(bt, i, j, &scale);
          double got = p.d.at(bt, i, j);
          // f32 accumulation over k terms: k * 2^-24 of the sum of |terms|.
          double tol = (p.k() + 4) * 6e-8 * scale + outEps * std::fabs(want);
          if (!(std::fabs(got - want) <= tol) && bad++ < 3)
            ADD_FAILURE() << what << ": D[" << bt << "](" << i << "," << j
                          << ") = " << got << ", want " << want << " +- "
                          << tol;
        }
    EXPECT_EQ(bad, 0) << what;
  }

  static CUcontext context;
  cublasLtHandle_t handle = nullptr;
};
CUcontext CublasLtTest::context = nullptr;

TEST(CublasLtInit, CreateBeforeCuInitIsNotInitialized) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A fresh process, where cuInit has not run.
  EXPECT_EXIT(
      {
        cublasLtHandle_t h = reinterpret_cast<cublasLtHandle_t>(1);
        cublasStatus_t s = cublasLtCreate(&h);
        std::exit(s == CUBLAS_STATUS_NOT_INITIALIZED && h == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "cuInit has not been called");
}

TEST(CublasLtInfo, VersionAndStatusNames) {
  EXPECT_EQ(cublasLtGetVersion(), size_t(CUBLAS_VERSION));
  EXPECT_EQ(cublasLtGetVersion() / 10000, 13u);
  EXPECT_EQ(cublasLtGetCudartVersion(), size_t(CUDA_VERSION));
  const std::pair<cublasStatus_t, const char *> names[] = {
      {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH"},
      {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
      {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR"}};
  std::vector<std::string> strings;
  for (auto [status, name] : names) {
    EXPECT_STREQ(cublasLtGetStatusName(status), name);
    std::string text = cublasLtGetStatusString(status);
    EXPECT_FALSE(text.empty()) << name;
    for (const std::string &other : strings)
      EXPECT_NE(text, other) << name;
    strings.push_back(text);
  }
}

TEST_F(CublasLtTest, AttributesCheckSizesAndRoundTrip) {
  cublasLtMatmulDesc_t desc;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  cublasOperation_t op = CUBLAS_OP_T;
  EXPECT_EQ(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, 8),
      CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           nullptr, sizeof op),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &op, sizeof op),
            CUBLAS_STATUS_SUCCESS);
  int32_t got = -1;
  size_t written = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &got, sizeof got, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, CUBLAS_OP_T);
  EXPECT_EQ(written, 4u);
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(
                desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(void *));
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(
                desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  uint32_t epilogue = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof epilogue, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(epilogue, uint32_t(CUBLASLT_EPILOGUE_DEFAULT));
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(
                desc, cublasLtMatmulDescAttributes_t(9), &got, 4, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);

  cublasLtMatrixLayout_t layout;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16F, 3, 5, 7),
            CUBLAS_STATUS_SUCCESS);
  uint64_t rows = 0;
  int32_t batch = 0;
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(layout,
                                             CUBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                             sizeof rows, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(layout,
                                             CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                             &batch, sizeof batch, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(batch, 1);
  int32_t ld32 = 9; // LD is int64_t
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_LD,
                                             &ld32, sizeof ld32),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);

  cublasLtMatmulPreference_t pref;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  uint32_t alignment = 0;
  EXPECT_EQ(cublasLtMatmulPreferenceGetAttribute(
                pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignment,
                sizeof alignment, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(alignment, 256u); // cublasLt.h's default
  uint32_t small = 1 << 20;   // MAX_WORKSPACE_BYTES is uint64_t
  EXPECT_EQ(
      cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &small, sizeof small),
      CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

TEST_F(CublasLtTest, EveryTransposeAndOrderWithPaddedLd) {
  const cublasLtOrder_t orders[] = {CUBLASLT_ORDER_COL, CUBLASLT_ORDER_ROW};
  for (cublasOperation_t opA : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (cublasOperation_t opB : {CUBLAS_OP_N, CUBLAS_OP_T})
      for (int mask = 0; mask < 8; ++mask) {
        const int64_t m = 37, n = 29, k = 23;
        Problem p;
        p.opA = opA;
        p.opB = opB;
        p.a = opA == CUBLAS_OP_N
                  ? matrix(m, k, CUDA_R_32F, orders[mask & 1], 3)
                  : matrix(k, m, CUDA_R_32F, orders[mask & 1], 3);
        p.b = opB == CUBLAS_OP_N
                  ? matrix(k, n, CUDA_R_32F, orders[(mask >> 1) & 1], 5)
                  : matrix(n, k, CUDA_R_32F, orders[(mask >> 1) & 1], 5);
        p.c = matrix(m, n, CUDA_R_32F, orders[(mask >> 2) & 1], 2);
        // C and D may differ in ld only (cuBLAS docs, cublasLtMatmul).
        p.d = matrix(m, n, CUDA_R_32F, orders[(mask >> 2) & 1], 1);
        p.alpha = 1.5f;
        p.beta = -0.5f;
        std::string what = std::string("op ") + (opA ? "T" : "N") +
                           (opB ? "T" : "N") + " orders " +
                           std::to_string(mask);
        ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS) << what;
        expectMatches(p, what);
        // Padding of D is never written.
        EXPECT_TRUE(
            std::isnan(p.d.values[p.d.order == CUBLASLT_ORDER_COL ? m : n]))
            << what;
      }
  // C row-major, D column-major: refused.
  Problem p = problem(6, 5, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  p.c = matrix(6, 5, CUDA_R_32F, CUBLASLT_ORDER_ROW);
  p.beta = 1.0f;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(p), CUBLAS_STATUS_NOT_SUPPORTED);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("C and D must have the same memory order"),
            std::string::npos)
      << err;
}

TEST_F(CublasLtTest, StridedBatchBroadcastAndPaddedStrides) {
  const int64_t m = 70, n = 65, k = 33; // more than one 64 x 64 tile
  Problem p;
  p.opB = CUBLAS_OP_T;
  p.a = matrix(m, k, CUDA_R_32F, CUBLASLT_ORDER_COL, 0, 3, 0,
               /*broadcast=*/true);
  p.b = matrix(n, k, CUDA_R_32F, CUBLASLT_ORDER_COL, 2, 3, 11);
  p.c = matrix(m, n, CUDA_R_32F, CUBLASLT_ORDER_COL, 0, 3, 7);
  p.d = matrix(m, n, CUDA_R_32F, CUBLASLT_ORDER_COL, 0, 3, 5);
  p.alpha = 0.5f;
  p.beta = 2.0f;
  ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS);
  expectMatches(p, "batch of 3, A broadcast");
  // The gap between D's batches stays untouched.
  EXPECT_TRUE(std::isnan(p.d.values[m * n + 2]));
}

TEST_F(CublasLtTest, BetaZeroDoesNotReadC) {
  Problem p = problem(20, 30, 40, CUBLAS_OP_T, CUBLAS_OP_N);
  std::fill(p.c.values.begin(), p.c.values.end(), kNaN);
  ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS);
  expectMatches(p, "beta 0 with NaN C");
  p.beta = 1.0f; // now C is read and its NaN shows
  ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS);
  EXPECT_TRUE(std::isnan(p.d.values[0]));
}

TEST_F(CublasLtTest, BiasReluGeluEpilogues) {
  for (uint32_t e : {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS,
                     CUBLASLT_EPILOGUE_GELU_BIAS, CUBLASLT_EPILOGUE_RELU,
                     CUBLASLT_EPILOGUE_GELU}) {
    Problem p = problem(45, 38, 19, CUBLAS_OP_N, CUBLAS_OP_T);
    p.epilogue = e;
    if (e & CUBLASLT_EPILOGUE_BIAS)
      for (int64_t i = 0; i < p.m(); ++i)
        p.bias.push_back(float(i % 7) - 3.0f);
    ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS) << e;
    expectMatches(p, "epilogue " + std::to_string(e));
    // ReLU clamps (some zeros, no negatives); the others keep negatives.
    int zeros = 0, negatives = 0;
    for (int64_t i = 0; i < p.m(); ++i) {
      zeros += p.d.at(0, i, 0) == 0.0f;
      negatives += p.d.at(0, i, 0) < 0.0f;
    }
    if (e & CUBLASLT_EPILOGUE_RELU)
      EXPECT_TRUE(zeros > 0 && negatives == 0) << e;
    else
      EXPECT_GT(negatives, 0) << e;
  }
  // GELU is the tanh approximation, not x * Phi(x): they differ by ~1e-4
  // around |x| = 2, far above the f32 tolerance.
  EXPECT_NEAR(gelu(2.0f), 1.9545977f, 2e-6f);
  const float erfGelu = 2.0f * 0.5f * (1 + std::erf(2.0f / std::sqrt(2.0f)));
  EXPECT_GT(std::fabs(gelu(2.0f) - erfGelu), 5e-5f);
}

TEST_F(CublasLtTest, GeluAuxForwardAndDgeluBackward) {
  const int64_t m = 40, n = 12, k = 9, auxLd = 48; // ld: multiple of 8
  Problem p = problem(m, n, k, CUBLAS_OP_N, CUBLAS_OP_N);
  p.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  for (int64_t i = 0; i < m; ++i)
    p.bias.push_back(0.25f * float(i % 5));
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4), bias(m * 4), aux(auxLd * n * 4),
      grad(p.d.values.size() * 4);
  upload(p.a, a);
  upload(p.b, b);
  Mat bv = matrix(m, 1);
  bv.values = p.bias;
  upload(bv, bias);
  void *biasPtr = bias.get(), *auxPtr = aux.get();
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr, 8),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &auxPtr, 8),
            CUBLAS_STATUS_SUCCESS);
  int64_t badLd = 44; // not a multiple of 8
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &badLd, 8),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_INVALID_VALUE);
  int64_t ld = auxLd;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, 8),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "GELU_AUX_BIAS output");
  Mat auxMat = matrix(auxLd, n); // aux is m x n with ld auxLd
  download(auxMat, aux);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double scale;
      Problem pre = p;
      pre.epilogue = CUBLASLT_EPILOGUE_BIAS;
      double want = pre.reference(0, i, j, &scale);
      ASSERT_NEAR(auxMat.at(0, i, j), want, 1e-5 * scale) << i << "," << j;
    }

  // Backward: D = (A B) * gelu'(aux), with aux the forward's GELU input.
  uint32_t dgelu = CUBLASLT_EPILOGUE_DGELU;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &dgelu, sizeof dgelu),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, grad.get(), ds.c, grad.get(), ds.d,
                           &r.algo, nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  Mat g = p.d;
  download(g, grad);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      auto [v, scale] = p.product(0, i, j);
      double want = v * geluGrad(auxMat.at(0, i, j));
      ASSERT_NEAR(g.at(0, i, j), want, 1e-5 * (scale + 1)) << i << "," << j;
    }
}

TEST_F(CublasLtTest, ReluMaskAndBiasGradients) {
  const int64_t m = 70, n = 9, k = 6, maskLd = 128;
  Problem p = problem(m, n, k, CUBLAS_OP_T, CUBLAS_OP_N);
  p.epilogue = CUBLASLT_EPILOGUE_RELU_AUX;
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4), mask(maskLd * n / 8), bgrad(m * 4);
  upload(p.a, a);
  upload(p.b, b);
  void *maskPtr = mask.get(), *bgradPtr = bgrad.get();
  int64_t ld = maskLd;
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(
          ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &maskPtr, 8),
      CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, 8),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, nullptr,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "RELU_AUX");
  std::vector<uint8_t> bits(maskLd * n / 8);
  ASSERT_EQ(cuMemcpyDtoH(bits.data(), mask.ptr, bits.size()), CUDA_SUCCESS);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      int64_t bit = j * maskLd + i;
      double scale;
      bool positive = p.reference(0, i, j, &scale) > 0;
      ASSERT_EQ(bool((bits[bit / 8] >> (bit % 8)) & 1), positive)
          << i << "," << j;
    }

  // DRELU_BGRAD: D = (A B) where the mask is set, else 0; bias gradient =
  // row sums of that D.
  uint32_t e = CUBLASLT_EPILOGUE_DRELU_BGRAD;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, 4),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bgradPtr, 8),
            CUBLAS_STATUS_SUCCESS);
  Problem q = problem(m, n, k, CUBLAS_OP_T, CUBLAS_OP_N); // fresh A, B
  upload(q.a, a);
  upload(q.b, b);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &q.alpha, a.get(), ds.a, b.get(),
                           ds.b, &q.beta, d.get(), ds.c, d.get(), ds.d, nullptr,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(q.d, d);
  Mat grad = matrix(m, 1);
  download(grad, bgrad);
  for (int64_t i = 0; i < m; ++i) {
    double rowSum = 0, rowScale = 1;
    for (int64_t j = 0; j < n; ++j) {
      int64_t bit = j * maskLd + i;
      auto [v, scale] = q.product(0, i, j);
      double want = ((bits[bit / 8] >> (bit % 8)) & 1) ? v : 0.0;
      ASSERT_NEAR(q.d.at(0, i, j), want, 1e-5 * (scale + 1)) << i << "," << j;
      rowSum += want;
      rowScale += scale;
    }
    EXPECT_NEAR(grad.values[i], rowSum, 1e-5 * rowScale) << i;
  }
}

TEST_F(CublasLtTest, BgradbSumsOpBOverK) {
  Problem p = problem(8, 21, 17, CUBLAS_OP_N, CUBLAS_OP_T);
  p.epilogue = CUBLASLT_EPILOGUE_BGRADB;
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4), bgrad(p.n() * 4);
  upload(p.a, a);
  upload(p.b, b);
  void *ptr = bgrad.get();
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, 8),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, nullptr,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "BGRADB output");
  Mat grad = matrix(p.n(), 1);
  download(grad, bgrad);
  for (int64_t j = 0; j < p.n(); ++j) {
    double sum = 0;
    for (int64_t q = 0; q < p.k(); ++q)
      sum += p.opb(0, q, j);
    EXPECT_NEAR(grad.values[j], sum, 1e-5) << j;
  }
}

// BGRADA: the bias gradient of a weight-gradient GEMM whose op(A) is dY^T
// (the CUDA device's row-major dW = X^T dY of a MatMul layer): sums of
// op(A)'s rows over k, with D the plain product.
TEST_F(CublasLtTest, BgradaSumsOpAOverK) {
  Problem p = problem(19, 7, 12, CUBLAS_OP_T, CUBLAS_OP_N);
  p.epilogue = CUBLASLT_EPILOGUE_BGRADA;
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4), bgrad(p.m() * 4);
  upload(p.a, a);
  upload(p.b, b);
  void *ptr = bgrad.get();
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, 8),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, nullptr,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "BGRADA output");
  Mat grad = matrix(p.m(), 1);
  download(grad, bgrad);
  for (int64_t i = 0; i < p.m(); ++i) {
    double sum = 0, scale = 0;
    for (int64_t q = 0; q < p.k(); ++q) {
      sum += p.opa(0, i, q);
      scale += std::fabs(p.opa(0, i, q));
    }
    EXPECT_NEAR(grad.values[i], sum, 1e-6 * (scale + 1)) << i;
  }
}

TEST_F(CublasLtTest, HalfAndBfloat16Inputs) {
  const std::pair<cudaDataType, cudaDataType> types[] = {
      {CUDA_R_16F, CUDA_R_32F},
      {CUDA_R_16BF, CUDA_R_32F},
      {CUDA_R_16F, CUDA_R_16F},
      {CUDA_R_16BF, CUDA_R_16BF}};
  for (auto [in, out] : types) {
    Problem p = problem(33, 66, 47, CUBLAS_OP_T, CUBLAS_OP_N, in, out);
    p.beta = 0.5f;
    ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS) << in << " -> " << out;
    expectMatches(p,
                  "types " + std::to_string(in) + " -> " + std::to_string(out));
  }
  // f16 inputs with bf16 output is not in the table.
  Problem bad =
      problem(4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N, CUDA_R_16F, CUDA_R_16BF);
  EXPECT_EQ(run(bad), CUBLAS_STATUS_NOT_SUPPORTED);
  Problem f64 = problem(4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  f64.a.type = f64.b.type = CUDA_R_64F;
  Descriptors ds;
  describe(f64, ds);
  cublasLtMatmulHeuristicResult_t r;
  int found = -1;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(found, 0);
}

// 16-bit inputs with COMPUTE_32F accumulate in float, add beta * C in float
// and round D once to D's type. Products 1 and u/4 (u: the ulp at 1) plus a
// C of u/2 give 1 + u with one rounding and 1 with two (the product rounds
// to 1, then the tie 1 + u/2 rounds to even); an f32 D keeps 1 + 3u/4.
TEST_F(CublasLtTest, SixteenBitInputsRoundOnceToTheOutputType) {
  for (cudaDataType in : {CUDA_R_16F, CUDA_R_16BF})
    for (cudaDataType out : {in, CUDA_R_32F}) {
      SCOPED_TRACE(std::to_string(in) + " -> " + std::to_string(out));
      const float u = in == CUDA_R_16F ? 1.0f / 1024 : 1.0f / 128;
      Problem p = problem(1, 1, 2, CUBLAS_OP_N, CUBLAS_OP_N, in, out);
      p.a.values = {1.0f, u / 4};
      p.b.values = {1.0f, 1.0f};
      p.c.values = {u / 2};
      p.alpha = 1.0f;
      p.beta = 1.0f;
      ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(p.d.values[0], out == in ? 1.0f + u : 1.0f + 0.75f * u);
    }
}

TEST_F(CublasLtTest, ComputeTypesAndOperations) {
  // FAST_TF32 may round inputs to 10 mantissa bits; 32F may not.
  const float fine = 1.0f + std::ldexp(1.0f, -20);
  for (auto [compute, want] : {std::pair{CUBLAS_COMPUTE_32F, fine},
                               std::pair{CUBLAS_COMPUTE_32F_FAST_TF32, 1.0f}}) {
    Problem p = problem(1, 1, 1, CUBLAS_OP_N, CUBLAS_OP_N);
    p.compute = compute;
    p.a.values[0] = fine;
    p.b.values[0] = 1.0f;
    ASSERT_EQ(run(p), CUBLAS_STATUS_SUCCESS) << compute;
    EXPECT_EQ(p.d.values[0], want) << compute;
  }
  auto heuristic = [&](const Problem &p, cudaDataType scale) {
    Descriptors ds;
    describe(p, ds);
    int32_t s = scale;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(
                  ds.desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &s, sizeof s),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    return cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                          ds.d, ds.pref, 1, &r, &found);
  };
  Problem p = problem(4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  EXPECT_EQ(heuristic(p, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(heuristic(p, CUDA_R_16F), CUBLAS_STATUS_NOT_SUPPORTED);
  p.compute = CUBLAS_COMPUTE_16F; // stored at creation, refused when used
  EXPECT_EQ(heuristic(p, CUDA_R_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  p.compute = CUBLAS_COMPUTE_32F;
  p.opA = CUBLAS_OP_C; // conjugate transpose: complex types only
  EXPECT_EQ(heuristic(p, CUDA_R_32F), CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtTest, HeuristicReturnsAlgorithmsWithWorkspaceWithinLimit) {
  Problem small = problem(16, 16, 16, CUBLAS_OP_N, CUBLAS_OP_N);
  Problem large = problem(64, 64, 4096, CUBLAS_OP_N, CUBLAS_OP_N);
  for (Problem *p : {&small, &large})
    for (uint64_t limit :
         {uint64_t(0), uint64_t(64) << 10, uint64_t(64) << 20}) {
      p->maxWorkspace = limit;
      Descriptors ds;
      describe(*p, ds);
      cublasLtMatmulHeuristicResult_t r[5];
      int found = 0;
      EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b,
                                               ds.c, ds.d, ds.pref, 0, r,
                                               &found),
                CUBLAS_STATUS_INVALID_VALUE);
      ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b,
                                               ds.c, ds.d, ds.pref, 5, r,
                                               &found),
                CUBLAS_STATUS_SUCCESS);
      ASSERT_GE(found, 2);
      for (int i = 0; i < found; ++i) {
        EXPECT_EQ(r[i].state, CUBLAS_STATUS_SUCCESS);
        EXPECT_LE(r[i].workspaceSize, limit);
      }
      if (p == &small || limit == 0)
        EXPECT_EQ(r[0].workspaceSize, 0u) << limit;
      else
        EXPECT_GT(r[0].workspaceSize, 0u) << limit;
    }
}

TEST_F(CublasLtTest, WorkspaceSmallerThanTheAlgorithmsIsInvalid) {
  Problem p = problem(64, 32, 2048, CUBLAS_OP_T, CUBLAS_OP_N);
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4);
  upload(p.a, a);
  upload(p.b, b);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_GT(r.workspaceSize, 0u);
  DeviceBuffer workspace(r.workspaceSize);
  testing::internal::CaptureStderr();
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           workspace.get(), r.workspaceSize - 256, stream()),
            CUBLAS_STATUS_INVALID_VALUE);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(
      err.find("workspaceSizeInBytes " + std::to_string(r.workspaceSize - 256)),
      std::string::npos)
      << err;
  // A workspace pointer whose memory is shorter than the size claimed.
  DeviceBuffer shortSpace(r.workspaceSize / 2);
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           shortSpace.get(), r.workspaceSize, stream()),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           workspace.get(), r.workspaceSize, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "k = 2048 with workspace");
}

TEST_F(CublasLtTest, RejectsInconsistentShapesAndShortLd) {
  Problem p = problem(8, 6, 5, CUBLAS_OP_N, CUBLAS_OP_N);
  p.b = matrix(4, 6); // k = 5 for A, 4 for B
  Descriptors ds;
  describe(p, ds);
  cublasLtMatmulHeuristicResult_t r;
  int found = -1;
  testing::internal::CaptureStderr();
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_NOT_SUPPORTED);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("op(A) is 8 x 5, op(B) 4 x 6"), std::string::npos) << err;
  EXPECT_EQ(found, 0);
  DeviceBuffer buffer(1024);
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, buffer.get(), ds.a,
                           buffer.get(), ds.b, &p.beta, buffer.get(), ds.c,
                           buffer.get(), ds.d, nullptr, nullptr, 0, stream()),
            CUBLAS_STATUS_INVALID_VALUE);

  // ld < rows (column-major): the layout is created, the problem refused.
  Problem q = problem(8, 6, 5, CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t shortLd = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&shortLd, CUDA_R_32F, 8, 5, 7),
            CUBLAS_STATUS_SUCCESS);
  Descriptors dq;
  describe(q, dq);
  testing::internal::CaptureStderr();
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, dq.desc, shortLd, dq.b, dq.c,
                                           dq.d, dq.pref, 1, &r, &found),
            CUBLAS_STATUS_INVALID_VALUE);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("A is 8 x 5 (ld 7): ld must be >= 8"), std::string::npos)
      << err;
  EXPECT_EQ(cublasLtMatmul(handle, dq.desc, &q.alpha, buffer.get(), shortLd,
                           buffer.get(), dq.b, &q.beta, buffer.get(), dq.c,
                           buffer.get(), dq.d, nullptr, nullptr, 0, stream()),
            CUBLAS_STATUS_INVALID_VALUE);
  // Row-major: ld counts columns.
  int32_t row = CUBLASLT_ORDER_ROW;
  ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(
                shortLd, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, dq.desc, shortLd, dq.b, dq.c,
                                           dq.d, dq.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayoutDestroy(shortLd);

  // Batch counts must agree.
  int32_t two = 2;
  ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(
                dq.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &two, sizeof two),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, dq.desc, dq.a, dq.b, dq.c,
                                           dq.d, dq.pref, 1, &r, &found),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtTest, MisalignedPointerAgainstTheAlgorithmsAssumption) {
  Problem p = problem(16, 16, 16, CUBLAS_OP_N, CUBLAS_OP_N);
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(p.a.values.size() * 4 + 64), b(p.b.values.size() * 4),
      d(p.d.values.size() * 4);
  upload(p.a, a, 4); // A one float into its allocation: 4-byte aligned
  upload(p.b, b);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  testing::internal::CaptureStderr();
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(4), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_NOT_SUPPORTED);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("A at"), std::string::npos) << err;
  EXPECT_NE(err.find("16-byte aligned"), std::string::npos) << err;
  // Told the truth, the heuristic picks an algorithm that copes.
  uint32_t four = 4;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &four,
                sizeof four),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(4), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_SUCCESS);
  download(p.d, d);
  expectMatches(p, "A at 4-byte alignment");
  // Below the element size there is no algorithm at all.
  uint32_t two = 2;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(
                ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &two,
                sizeof two),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasLtTest, DevicePointerModeAndAliasingAreRefused) {
  Problem p = problem(8, 8, 8, CUBLAS_OP_N, CUBLAS_OP_N);
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(256), b(256), d(256), d2(512);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, ds.desc, ds.a, ds.b, ds.c,
                                           ds.d, ds.pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  int32_t device = CUBLASLT_POINTER_MODE_DEVICE;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(ds.desc,
                                           CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                           &device, sizeof device),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &r.algo,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_NOT_SUPPORTED);
  int32_t host = CUBLASLT_POINTER_MODE_HOST;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &host, sizeof host),
            CUBLAS_STATUS_SUCCESS);
  // In place with C's ld differing from D's.
  cublasLtMatrixLayout_t c16 = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&c16, CUDA_R_32F, 8, 8, 16),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d2.get(), c16, d2.get(), ds.d,
                           &r.algo, nullptr, 0, stream()),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(c16);
  // A made-up algo.
  cublasLtMatmulAlgo_t zero{};
  EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                           ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d, &zero,
                           nullptr, 0, stream()),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(CublasLtTest, OperandPastItsAllocationIsNamed) {
  Problem p = problem(16, 8, 4, CUBLAS_OP_N, CUBLAS_OP_N);
  p.bias.assign(16, 1.0f);
  p.epilogue = CUBLASLT_EPILOGUE_BIAS;
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(16 * 4 * 4), b(4 * 8 * 4), d(16 * 8 * 4), bias(16 * 4),
      shortBias(15 * 4), shortB(4 * 8 * 4 - 4);
  void *biasPtr = bias.get();
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr, 8),
            CUBLAS_STATUS_SUCCESS);
  auto call = [&](const void *bPtr) {
    return cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, bPtr, ds.b,
                          &p.beta, d.get(), ds.c, d.get(), ds.d, nullptr,
                          nullptr, 0, stream());
  };
  EXPECT_EQ(call(b.get()), CUBLAS_STATUS_SUCCESS);
  testing::internal::CaptureStderr();
  EXPECT_EQ(call(shortB.get()), CUBLAS_STATUS_INVALID_VALUE);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cublasLtMatmul: CUBLAS_STATUS_INVALID_VALUE: B"),
            std::string::npos)
      << err;
  biasPtr = shortBias.get();
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(
                ds.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr, 8),
            CUBLAS_STATUS_SUCCESS);
  testing::internal::CaptureStderr();
  EXPECT_EQ(call(b.get()), CUBLAS_STATUS_INVALID_VALUE);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("INVALID_VALUE: bias"), std::string::npos) << err;
  ASSERT_EQ(cuStreamSynchronize(stream()), CUDA_SUCCESS);
}

/// The runtime's row-major GEMM (CudaDevice::gemm): Y[M,N] = A[M,K] B[K,N]
/// runs as column-major Y^T = B^T A^T, B first (N x K, ld N), A second
/// (K x M, ld K). |ldA| is the second operand's leading dimension.
cublasStatus_t rowMajorGemm(cublasLtHandle_t handle, int64_t M, int64_t N,
                            int64_t K, int64_t ldA, const DeviceBuffer &a,
                            const DeviceBuffer &b, const DeviceBuffer &y) {
  Problem p;
  p.a = matrix(N, K); // shapes only: the data is already on the device
  p.b = matrix(K, M);
  p.b.ld = ldA;
  p.c = p.d = matrix(N, M);
  Descriptors ds;
  describe(p, ds);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
      handle, ds.desc, ds.a, ds.b, ds.c, ds.d, ds.pref, 1, &r, &found);
  if (s != CUBLAS_STATUS_SUCCESS)
    return s;
  return cublasLtMatmul(handle, ds.desc, &p.alpha, b.get(), ds.a, a.get(), ds.b,
                        &p.beta, y.get(), ds.c, y.get(), ds.d, &r.algo, nullptr,
                        0, stream());
}

TEST_F(CublasLtTest, PlantedBugWrongLeadingDimensionIsNoticed) {
  const int64_t M = 12, N = 10, K = 7;
  std::vector<float> a(M * K), b(K * N), want(M * N, 0.0f);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &x : a)
    x = dist(rng());
  for (float &x : b)
    x = dist(rng());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t q = 0; q < K; ++q)
        want[i * N + j] += a[i * K + q] * b[q * N + j];
  // A sits inside a larger arena, as the runtime's views do, so that the
  // wrong ld stays within allocated memory.
  DeviceBuffer arena(4096 * 4), exactA(M * K * 4), db(K * N * 4), y(M * N * 4);
  ASSERT_EQ(cuMemcpyHtoD(arena.ptr, a.data(), a.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(exactA.ptr, a.data(), a.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(db.ptr, b.data(), b.size() * 4), CUDA_SUCCESS);
  auto result = [&]() {
    std::vector<float> got(M * N);
    EXPECT_EQ(cuStreamSynchronize(stream()), CUDA_SUCCESS);
    EXPECT_EQ(cuMemcpyDtoH(got.data(), y.ptr, got.size() * 4), CUDA_SUCCESS);
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i)
      err = std::max(err, double(std::fabs(got[i] - want[i])));
    return err;
  };
  ASSERT_EQ(rowMajorGemm(handle, M, N, K, K, arena, db, y),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_LT(result(), 1e-5);
  // The bug: ld = K + 1 for the K-row operand. Inside the arena the numbers
  // come out wrong...
  ASSERT_EQ(rowMajorGemm(handle, M, N, K, K + 1, arena, db, y),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_GT(result(), 1e-2);
  // ...and with A in an allocation of exactly M * K floats, its extent runs
  // past the end and the call is refused, naming the operand.
  testing::internal::CaptureStderr();
  EXPECT_EQ(rowMajorGemm(handle, M, N, K, K + 1, exactA, db, y),
            CUBLAS_STATUS_INVALID_VALUE);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("INVALID_VALUE: B"), std::string::npos) << err;
}

TEST_F(CublasLtTest, Throughput512Cubed) {
  const int64_t s = 512;
  Problem p = problem(s, s, s, CUBLAS_OP_T, CUBLAS_OP_N);
  Descriptors ds;
  describe(p, ds);
  DeviceBuffer a(s * s * 4), b(s * s * 4), d(s * s * 4);
  upload(p.a, a);
  upload(p.b, b);
  auto once = [&] {
    EXPECT_EQ(cublasLtMatmul(handle, ds.desc, &p.alpha, a.get(), ds.a, b.get(),
                             ds.b, &p.beta, d.get(), ds.c, d.get(), ds.d,
                             nullptr, nullptr, 0, stream()),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cuStreamSynchronize(stream()), CUDA_SUCCESS);
  };
  once(); // warm up
  auto start = std::chrono::steady_clock::now();
  const int reps = 3;
  for (int i = 0; i < reps; ++i)
    once();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double gflops = reps * 2.0 * s * s * s / seconds / 1e9;
  std::printf("cublasLtMatmul 512x512x512 f32: %.2f GFLOP/s\n", gflops);
  RecordProperty("gflops", std::to_string(gflops));
  download(p.d, d);
  // Spot-check a row against the reference.
  for (int64_t j = 0; j < s; j += 97) {
    double scale;
    double want = p.reference(0, 5, j, &scale);
    EXPECT_NEAR(p.d.at(0, 5, j), want, 1e-5 * scale);
  }
}

} // namespace
