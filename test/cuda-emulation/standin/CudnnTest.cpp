//===- CudnnTest.cpp - tests of the stand-in cuDNN ------------------------===//
// The stand-in's convolutions against a naive double-precision reference
// (every geometry the runtime can ask for, layouts and strides the runtime
// does not use yet, alpha/beta), its algorithm lists and workspace checks,
// its rejections, and planted bugs in the runtime's descriptor set-up
// (CudaDevice::describeConv) that must give an error or wrong numbers.
#include "CudnnTestSupport.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace dnntest;

namespace {
//===----------------------------------------------------------------------===//
// Numbers against the reference
//===----------------------------------------------------------------------===//

struct Case {
  const char *name;
  Geometry g;
  Layout layout = Layout::Nchw;
  cudnnTensorFormat_t filterFormat = CUDNN_TENSOR_NCHW;
};

class CudnnConvolution : public CudnnTest,
                         public ::testing::WithParamInterface<Case> {};

// Both sides sum the same float inputs in double; they differ by the final
// rounding to float (2^-24 relative) and the summation order (~1e-15).
TEST_P(CudnnConvolution, MatchesReferenceWithBetaZero) {
  const Case &c = GetParam();
  checkAll(c.g, c.layout, c.filterFormat, 1.0, 0.0);
}

TEST_P(CudnnConvolution, MatchesReferenceWithAlphaBeta) {
  const Case &c = GetParam();
  checkAll(c.g, c.layout, c.filterFormat, 0.5, -2.0);
}

const Case kCases[] = {
    {"Basic3x3", {2, 3, 4, 1, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}},
    {"Stride2NonSquare", {2, 3, 5, 1, {7, 9}, {3, 3}, {1, 1}, {2, 2}, {1, 1}}},
    {"AsymmetricStrideFilter",
     {1, 2, 3, 1, {8, 11}, {2, 4}, {0, 2}, {1, 3}, {1, 1}}},
    {"Dilation2", {2, 2, 3, 1, {9, 8}, {3, 3}, {2, 2}, {1, 1}, {2, 2}}},
    {"Groups2", {2, 4, 6, 2, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}},
    {"Depthwise", {2, 5, 5, 5, {7, 6}, {3, 3}, {1, 1}, {2, 1}, {1, 1}}},
    {"DepthwiseMultiplier2",
     {1, 3, 6, 3, {5, 5}, {3, 3}, {0, 0}, {1, 1}, {1, 1}}},
    {"OneByOneStride2", {2, 6, 4, 1, {7, 8}, {1, 1}, {0, 0}, {2, 2}, {1, 1}}},
    {"ThreeD",
     {2, 2, 3, 1, {4, 5, 6}, {3, 2, 3}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}}},
    {"ThreeDGroups",
     {1, 4, 4, 2, {3, 4, 4}, {1, 3, 3}, {0, 1, 1}, {1, 1, 1}, {1, 1, 1}}},
    {"Nhwc",
     {2, 3, 4, 1, {6, 7}, {3, 3}, {1, 1}, {2, 1}, {1, 1}},
     Layout::Nhwc,
     CUDNN_TENSOR_NHWC},
    {"NhwcGrouped",
     {1, 4, 6, 2, {5, 6}, {3, 2}, {1, 0}, {1, 1}, {1, 2}},
     Layout::Nhwc,
     CUDNN_TENSOR_NHWC},
    {"PaddedStrides",
     {2, 3, 4, 1, {6, 7}, {3, 3}, {1, 1}, {1, 2}, {1, 1}},
     Layout::Padded},
    {"PaddedStrides3D",
     {1, 2, 2, 1, {3, 4, 5}, {2, 3, 3}, {0, 1, 1}, {1, 1, 1}, {1, 1, 1}},
     Layout::Padded,
     CUDNN_TENSOR_NHWC},
    {"TrueConvolution",
     {2, 3, 4, 1, {6, 5}, {3, 2}, {1, 1}, {1, 1}, {1, 1}, CUDNN_CONVOLUTION}},
    {"TrueConvolution3D",
     {1,
      2,
      2,
      1,
      {4, 4, 4},
      {2, 3, 2},
      {1, 1, 0},
      {1, 1, 1},
      {1, 1, 1},
      CUDNN_CONVOLUTION}},
};

INSTANTIATE_TEST_SUITE_P(Geometries, CudnnConvolution,
                         ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &param) {
                           return std::string(param.param.name);
                         });

// The reference itself: a true convolution with a 1x1 filter is a
// cross-correlation, and a 2x1 one at stride 1 reverses the taps.
TEST(CudnnReference, FlipsTheFilterForATrueConvolution) {
  Geometry g{1,      1,      1,      1,      {1, 3},
             {1, 2}, {0, 0}, {1, 1}, {1, 1}, CUDNN_CONVOLUTION};
  Reference r = reference(g, {1, 2, 3}, {10, 100}, {0, 0});
  EXPECT_EQ(r.y, (std::vector<double>{1 * 100 + 2 * 10, 2 * 100 + 3 * 10}));
}

TEST_F(CudnnTest, DoubleData) {
  checkAll({2, 3, 4, 1, {5, 6}, {3, 3}, {1, 1}, {1, 2}, {1, 1}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW, 0.75, 0.25, CUDNN_DATA_DOUBLE, 1e-12);
}

// HALF in and out: the only error is the final rounding to half (2^-11).
TEST_F(CudnnTest, HalfData) {
  checkAll({1, 2, 3, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW, 1.0, 0.0, CUDNN_DATA_HALF, 1e-3);
}

// BFLOAT16 (PSEUDO_BFLOAT16_CONFIG): the final rounding is 2^-8 relative.
TEST_F(CudnnTest, Bfloat16Data) {
  checkAll({2, 4, 4, 2, {5, 6}, {3, 3}, {1, 1}, {2, 1}, {1, 1}}, Layout::Nhwc,
           CUDNN_TENSOR_NHWC, 1.0, 0.5, CUDNN_DATA_BFLOAT16, 8e-3);
}

// Without CUDNN_FMA_MATH a Hopper GPU may use TF32 for FLOAT: the inputs
// lose 13 mantissa bits, so results move by ~1e-4 relative, far outside
// the FMA path's 1e-6.
TEST_F(CudnnTest, DefaultMathRoundsFloatInputsToTf32) {
  Geometry g{1, 4, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  std::vector<double> xv(static_cast<size_t>(count(g.xDims())));
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = 1.0 + double(i) / 4097.0; // Not representable in TF32.
  std::vector<double> wv(size_t(count(g.wDims())), 1.0 + 1.0 / 3000.0);
  // FMA math, default math, default math with NVIDIA_TF32_OVERRIDE=0.
  std::vector<double> results[3];
  for (int run = 0; run < 3; ++run) {
    describe(g, Layout::Nchw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
             run ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
    if (run == 2)
      setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    std::vector<int> xd = g.xDims(), yd = g.yDims(), wd = g.wDims();
    void *xp = upload(xv, xd, stridesOf(xd, Layout::Nchw));
    void *wp = upload(wv, wd, stridesOf(wd, Layout::Nchw));
    void *yp = allocate(size_t(count(yd)) * 4);
    float one = 1, zero = 0;
    ASSERT_EQ(cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      nullptr, 0, &zero, y, yp),
              CUDNN_STATUS_SUCCESS);
    unsetenv("NVIDIA_TF32_OVERRIDE");
    results[run] = download(yp, yd, stridesOf(yd, Layout::Nchw));
  }
  Reference ref =
      reference(g, xv, wv, std::vector<double>(size_t(count(g.yDims()))));
  EXPECT_TRUE(near(results[0], ref.y, 1e-6));
  double diff = maxDifference(results[1], results[0]);
  EXPECT_GT(diff, 1e-4);
  EXPECT_LT(diff, 1e-1);
  EXPECT_EQ(results[2], results[0]);
}

//===----------------------------------------------------------------------===//
// Algorithms and workspaces
//===----------------------------------------------------------------------===//

TEST_F(CudnnTest, AlgorithmListsLookLikeTheRealOnes) {
  Geometry g{2, 8, 8, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  describe(g, Layout::Nchw, CUDNN_TENSOR_NCHW);
  cudnnConvolutionFwdAlgoPerf_t fwd[16];
  int returned = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, 16,
                                                   &returned, fwd),
            CUDNN_STATUS_SUCCESS);
  // Eight algorithms, plus a tensor-op entry for IMPLICIT_PRECOMP_GEMM.
  EXPECT_EQ(returned, CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 1);
  bool sawTensorOps = false, sawDirect = false;
  float previous = 0;
  bool inSupported = true;
  for (int i = 0; i < returned; ++i) {
    const auto &p = fwd[i];
    if (p.status == CUDNN_STATUS_SUCCESS) {
      EXPECT_TRUE(inSupported) << "a supported entry after an unsupported one";
      EXPECT_GE(p.time, previous) << "not sorted by time at " << i;
      previous = p.time;
      size_t bytes = 1;
      ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y,
                                                        p.algo, &bytes),
                CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(bytes, p.memory) << "algorithm " << p.algo;
    } else {
      inSupported = false;
      EXPECT_EQ(p.status, CUDNN_STATUS_NOT_SUPPORTED);
    }
    sawTensorOps |= p.mathType == CUDNN_TENSOR_OP_MATH;
    if (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT) {
      sawDirect = true;
      EXPECT_EQ(p.status, CUDNN_STATUS_NOT_SUPPORTED);
    }
    if (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) {
      EXPECT_EQ(p.memory, 0u);
    }
    if (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
        p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD) {
      EXPECT_GT(p.memory, 0u) << "algorithm " << p.algo;
    }
    EXPECT_EQ(p.determinism, CUDNN_DETERMINISTIC);
  }
  EXPECT_TRUE(sawTensorOps);
  EXPECT_TRUE(sawDirect);
  // The tensor-op entry is the fastest: a caller must filter on mathType.
  EXPECT_EQ(fwd[0].mathType, CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(fwd[1].mathType, CUDNN_FMA_MATH);

  // Backward: the non-deterministic algorithms are there and come first, so
  // preferring determinism changes the pick.
  cudnnConvolutionBwdFilterAlgoPerf_t bwf[16];
  ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x, y, conv, w,
                                                          16, &returned, bwf),
            CUDNN_STATUS_SUCCESS);
  int firstFma = 0;
  while (bwf[firstFma].mathType == CUDNN_TENSOR_OP_MATH)
    ++firstFma;
  EXPECT_EQ(bwf[firstFma].determinism, CUDNN_NON_DETERMINISTIC);
  EXPECT_EQ(pick(bwf, returned, false), int(bwf[firstFma].algo));
  int deterministic = pick(bwf, returned, true);
  EXPECT_NE(deterministic, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  EXPECT_NE(deterministic, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
  cudnnConvolutionBwdDataAlgoPerf_t bwd[2];
  ASSERT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w, y, conv, x,
                                                        2, &returned, bwd),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, 2) << "requestedAlgoCount caps the list";
  EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w, y, conv, x,
                                                        0, &returned, bwd),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnTest, WorkspaceSizesRejectUnsupportedAlgorithms) {
  size_t bytes = 0;
  // Stride 2: no FFT, no Winograd.
  describe({1, 4, 4, 1, {16, 16}, {3, 3}, {1, 1}, {2, 2}, {1, 1}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_FFT, &bytes),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cudnnGetConvolutionForwardWorkspaceSize(
          handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &bytes),
      CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, w, y, conv, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, &bytes),
      CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, size_t(4 * 3 * 3 * 8 * 8 * 4)) << "one image's im2col";
  // 5x5 stride 1: WINOGRAD_NONFUSED yes, fused WINOGRAD (3x3 only) no.
  describe({1, 4, 4, 1, {16, 16}, {5, 5}, {2, 2}, {1, 1}, {1, 1}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW);
  EXPECT_EQ(
      cudnnGetConvolutionForwardWorkspaceSize(
          handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &bytes),
      CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y,
                CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_GT(bytes, 0u);
  // Dilation 2: no FFT.
  describe({1, 4, 4, 1, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {2, 2}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, x, y, conv, w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, &bytes),
      CUDNN_STATUS_NOT_SUPPORTED);
  // Input + 2 * pad above 256: no FFT; FFT_TILING is fine.
  describe({1, 1, 1, 1, {300, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, Layout::Nchw,
           CUDNN_TENSOR_NCHW);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_FFT, &bytes),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cudnnGetConvolutionForwardWorkspaceSize(
          handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, &bytes),
      CUDNN_STATUS_SUCCESS);
  // Not an algorithm at all.
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y, cudnnConvolutionFwdAlgo_t(99), &bytes),
            CUDNN_STATUS_BAD_PARAM);
  // Backward filter's WINOGRAD is not implemented by cuDNN.
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                handle, x, y, conv, w,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, &bytes),
            CUDNN_STATUS_NOT_SUPPORTED);
}

//===----------------------------------------------------------------------===//
// Rejections
//===----------------------------------------------------------------------===//

class CudnnRejection : public CudnnTest {
protected:
  /// A 3x3 stride-1 pad-1 convolution of [2, 4, 6, 8] with its buffers.
  void SetUp() override {
    CudnnTest::SetUp();
    describe(g, Layout::Nchw, CUDNN_TENSOR_NCHW);
    xp = allocate(size_t(count(g.xDims())) * 4);
    wp = allocate(size_t(count(g.wDims())) * 4);
    yp = allocate(size_t(count(g.yDims())) * 4);
  }

  cudnnStatus_t forward(cudnnConvolutionFwdAlgo_t algo, void *workspace,
                        size_t bytes, void *out = nullptr) {
    float one = 1, zero = 0;
    return cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv, algo,
                                   workspace, bytes, &zero, y, out ? out : yp);
  }

  Geometry g{2, 4, 6, 1, {6, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  void *xp = nullptr, *wp = nullptr, *yp = nullptr;
};

TEST_F(CudnnRejection, OutputDimsThatDoNotMatch) {
  // y one row short: the forward convolution calls that NOT_SUPPORTED, the
  // backward ones BAD_PARAM (each function's reference).
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       2, 6, 5, 8),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_NOT_SUPPORTED);
  float one = 1, zero = 0;
  EXPECT_EQ(cudnnConvolutionBackwardData(handle, &one, w, wp, y, yp, conv,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                         nullptr, 0, &zero, x, xp),
            CUDNN_STATUS_BAD_PARAM);
  // y's channels are not the filter's K.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       2, 5, 6, 8),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
  // A 4-d y for a 4-d x but a 5-d filter.
  int dims5[5] = {6, 4, 1, 3, 3};
  ASSERT_EQ(cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                       5, dims5),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnRejection, ChannelsNotDivisibleByGroups) {
  // x has 4 channels; groups 3 with a filter C of 1 covers only 3.
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                       6, 1, 3, 3),
            CUDNN_STATUS_SUCCESS);
  int n, c, h, wo;
  EXPECT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wo),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
  // Groups 2 divide C = 4 (filter C = 2) but not K = 5.
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv, 2), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                       5, 2, 3, 3),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       2, 5, 6, 8),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolutionGroupCount(conv, 0), CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnRejection, WorkspaceTooSmall) {
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_FFT, &bytes),
            CUDNN_STATUS_SUCCESS);
  ASSERT_GT(bytes, 0u);
  void *workspace = allocate(bytes);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, workspace, bytes - 1),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, workspace, bytes),
            CUDNN_STATUS_SUCCESS);
  // Claiming the size of a smaller allocation is caught as an operand past
  // its allocation.
  void *small = allocate(bytes / 2);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, small, bytes),
            CUDNN_STATUS_EXECUTION_FAILED);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("workSpace"),
            std::string::npos);
}

TEST_F(CudnnRejection, AlgorithmUnsupportedForTheDescriptors) {
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0),
            CUDNN_STATUS_NOT_SUPPORTED);
  int pads[2] = {1, 1}, strides[2] = {2, 2}, dil[2] = {1, 1};
  ASSERT_EQ(cudnnSetConvolutionNdDescriptor(conv, 2, pads, strides, dil,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       2, 6, 3, 4),
            CUDNN_STATUS_SUCCESS);
  void *workspace = allocate(size_t(1) << 20);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, workspace, 1 << 20),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_FFT, workspace, 1 << 20),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(forward(cudnnConvolutionFwdAlgo_t(-1), workspace, 1 << 20),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_SUCCESS);
}

TEST_F(CudnnRejection, OperandPastItsAllocation) {
  void *shortY = allocate(size_t(count(g.yDims())) * 4 - 4);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(
      forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, shortY),
      CUDNN_STATUS_EXECUTION_FAILED);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cudnnConvolutionForward: y"), std::string::npos) << err;
  EXPECT_NE(err.find("past the allocation"), std::string::npos) << err;
  // Host memory is not device memory.
  std::vector<float> host(static_cast<size_t>(count(g.xDims())));
  float one = 1, zero = 0;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cudnnConvolutionForward(handle, &one, x, host.data(), w, wp, conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &zero, y, yp),
            CUDNN_STATUS_EXECUTION_FAILED);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cudnnConvolutionForward: x"), std::string::npos) << err;
  EXPECT_EQ(forward(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0),
            CUDNN_STATUS_SUCCESS);
  // Null data, null scale.
  EXPECT_EQ(cudnnConvolutionForward(handle, &one, x, nullptr, w, wp, conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &zero, y, yp),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionForward(handle, nullptr, x, xp, w, wp, conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &zero, y, yp),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnTest, DescriptorChecks) {
  int dims[4] = {1, 2, 3, 4}, strides[4] = {24, 12, 4, 1};
  EXPECT_EQ(cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 2, dims, strides),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 9, dims, strides),
            CUDNN_STATUS_NOT_SUPPORTED);
  int zeroDim[4] = {1, 0, 3, 4}, zeroStride[4] = {24, 12, 0, 1};
  EXPECT_EQ(
      cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 4, zeroDim, strides),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 4, dims, zeroStride),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnSetTensorNdDescriptor(x, cudnnDataType_t(77), 4, dims, strides),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(x, cudnnTensorFormat_t(9),
                                       CUDNN_DATA_FLOAT, 1, 2, 3, 4),
            CUDNN_STATUS_BAD_PARAM);
  // NHWC's packed strides, as the getter reports them.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2,
                                       3, 4, 5),
            CUDNN_STATUS_SUCCESS);
  cudnnDataType_t type;
  int n, c, h, wd, ns, cs, hs, ws;
  ASSERT_EQ(
      cudnnGetTensor4dDescriptor(x, &type, &n, &c, &h, &wd, &ns, &cs, &hs, &ws),
      CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(type, CUDNN_DATA_HALF);
  EXPECT_EQ((std::vector<int>{n, c, h, wd, ns, cs, hs, ws}),
            (std::vector<int>{2, 3, 4, 5, 60, 1, 15, 3}));
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetTensorSizeInBytes(x, &bytes), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, 2u * 120);
  EXPECT_EQ(
      cudnnSetTensorNdDescriptor(x, CUDNN_DATA_BFLOAT16, 4, dims, strides),
      CUDNN_STATUS_SUCCESS);
  // A 5-d NDHWC tensor from the format, and 4-d strides given one by one.
  int d5[5] = {2, 3, 4, 5, 6}, got[5], gotStrides[5], nbDims = 0;
  ASSERT_EQ(cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                         5, d5),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetTensorNdDescriptor(x, 5, &type, &nbDims, got, gotStrides),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(nbDims, 5);
  EXPECT_EQ(std::vector<int>(gotStrides, gotStrides + 5),
            (std::vector<int>{360, 1, 90, 18, 3}));
  EXPECT_EQ(cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                         9, d5),
            CUDNN_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(cudnnSetTensor4dDescriptorEx(x, CUDNN_DATA_FLOAT, 1, 2, 3, 4, 100,
                                         40, 8, 2),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetTensorSizeInBytes(x, &bytes), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, 4u * (40 + 2 * 8 + 3 * 2 + 1)) << "the last element's end";
  EXPECT_EQ(cudnnSetTensor4dDescriptorEx(x, CUDNN_DATA_FLOAT, 1, 2, 3, 4, 24,
                                         12, -4, 1),
            CUDNN_STATUS_BAD_PARAM);

  // Filters: at least 3 dims, positive.
  int f2[2] = {4, 4}, f4[4] = {8, 4, 0, 3};
  EXPECT_EQ(
      cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 2, f2),
      CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, f4),
      CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                       8, 4, 3, 2),
            CUDNN_STATUS_SUCCESS);
  cudnnTensorFormat_t format;
  int k, fc, fh, fw;
  ASSERT_EQ(cudnnGetFilter4dDescriptor(w, &type, &format, &k, &fc, &fh, &fw),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(format, CUDNN_TENSOR_NHWC);
  EXPECT_EQ((std::vector<int>{k, fc, fh, fw}), (std::vector<int>{8, 4, 3, 2}));

  // Convolutions: pads >= 0, strides and dilations > 0, a valid mode.
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv, -1, 0, 1, 1, 1, 1,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv, 0, 0, 0, 1, 1, 1,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 0,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1,
                                            cudnnConvolutionMode_t(2),
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolutionMathType(conv, cudnnMathType_t(7)),
            CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(
                conv, 2, 1, 3, 2, 1, 2, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  int ph, pw, u, v, dh, dw;
  cudnnConvolutionMode_t mode;
  ASSERT_EQ(cudnnGetConvolution2dDescriptor(conv, &ph, &pw, &u, &v, &dh, &dw,
                                            &mode, &type),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ((std::vector<int>{ph, pw, u, v, dh, dw}),
            (std::vector<int>{2, 1, 3, 2, 1, 2}));
  EXPECT_EQ(mode, CUDNN_CONVOLUTION);
}

TEST_F(CudnnTest, OutputDimsFollowTheDocumentedFormula) {
  // 1 + (in + 2 pad - ((filter - 1) dilation + 1)) / stride, per dim.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       3, 4, 17, 10),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                       7, 4, 3, 2),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv, 1, 0, 2, 3, 2, 1,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  int n, c, h, wo;
  ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wo),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ((std::vector<int>{n, c, h, wo}),
            (std::vector<int>{3, 7, 1 + (17 + 2 - 5) / 2, 1 + (10 - 2) / 3}));
  int out[4];
  EXPECT_EQ(cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 5, out),
            CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4, out),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(out[2], h);
  // An empty output: a dilated filter wider than the padded input.
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 10,
                                            CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wo),
            CUDNN_STATUS_BAD_PARAM);
  // Different data types.
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 7,
                                       4, 3, 2),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wo),
            CUDNN_STATUS_BAD_PARAM);
}

//===----------------------------------------------------------------------===//
// cudnnAddTensor
//===----------------------------------------------------------------------===//

TEST_F(CudnnTest, AddTensorBroadcastsTheBias) {
  // [1, K, 1, 1] onto [N, K, H, W] (the runtime's conv bias), then a 5-d
  // [1, K, 1, 1, 1] bias and a [N, 1, H, 1] one with beta 0.5.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<int> cd = variant == 1 ? std::vector<int>{2, 3, 2, 4, 5}
                                       : std::vector<int>{2, 3, 4, 5};
    std::vector<int> ad(cd.size(), 1);
    if (variant == 2) {
      ad[0] = cd[0];
      ad[2] = cd[2];
    } else {
      ad[1] = cd[1];
    }
    std::vector<int> cs = stridesOf(cd, Layout::Nchw),
                     as = stridesOf(ad, Layout::Nchw);
    ASSERT_EQ(cudnnSetTensorNdDescriptor(y, CUDNN_DATA_FLOAT, int(cd.size()),
                                         cd.data(), cs.data()),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetTensorNdDescriptor(bias, CUDNN_DATA_FLOAT, int(ad.size()),
                                         ad.data(), as.data()),
              CUDNN_STATUS_SUCCESS);
    auto cv = randomValues(count(cd), 7), av = randomValues(count(ad), 8);
    void *cp = upload(cv, cd, cs), *ap = upload(av, ad, as);
    float alpha = 2, beta = variant == 2 ? 0.5f : 1;
    ASSERT_EQ(cudnnAddTensor(handle, &alpha, bias, ap, &beta, y, cp),
              CUDNN_STATUS_SUCCESS);
    std::vector<double> want(cv.size());
    std::vector<int64_t> cIndex(cd.size());
    for (int64_t i = 0; i < count(cd); ++i) {
      int64_t rest = i, ai = 0, scale = 1;
      for (size_t d = cd.size(); d-- > 0;) {
        int64_t idx = rest % cd[d];
        rest /= cd[d];
        ai += (ad[d] == 1 ? 0 : idx) * scale;
        scale *= ad[d];
      }
      want[size_t(i)] = alpha * av[size_t(ai)] + beta * cv[size_t(i)];
    }
    EXPECT_TRUE(near(download(cp, cd, cs), want, 1e-6))
        << "variant " << variant;
  }
}

TEST_F(CudnnTest, AddTensorRejections) {
  float one = 1;
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       2, 4, 3, 3),
            CUDNN_STATUS_SUCCESS);
  void *cp = allocate(2 * 4 * 3 * 3 * 4), *ap = allocate(64);
  // A dim that is neither 1 nor C's.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW,
                                       CUDNN_DATA_FLOAT, 1, 3, 1, 1),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnAddTensor(handle, &one, bias, ap, &one, y, cp),
            CUDNN_STATUS_BAD_PARAM);
  // Another rank.
  int d5[5] = {1, 4, 1, 1, 1}, s5[5] = {4, 1, 1, 1, 1};
  ASSERT_EQ(cudnnSetTensorNdDescriptor(bias, CUDNN_DATA_FLOAT, 5, d5, s5),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnAddTensor(handle, &one, bias, ap, &one, y, cp),
            CUDNN_STATUS_BAD_PARAM);
  // Another data type.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF,
                                       1, 4, 1, 1),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnAddTensor(handle, &one, bias, ap, &one, y, cp),
            CUDNN_STATUS_BAD_PARAM);
  // Rank 6 is beyond what the routine supports.
  int d6[6] = {1, 2, 1, 1, 1, 2}, s6[6] = {4, 2, 2, 2, 2, 1};
  int c6[6] = {2, 2, 1, 1, 1, 2}, t6[6] = {4, 2, 2, 2, 2, 1};
  ASSERT_EQ(cudnnSetTensorNdDescriptor(bias, CUDNN_DATA_FLOAT, 6, d6, s6),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensorNdDescriptor(y, CUDNN_DATA_FLOAT, 6, c6, t6),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnAddTensor(handle, &one, bias, ap, &one, y, cp),
            CUDNN_STATUS_NOT_SUPPORTED);
}

//===----------------------------------------------------------------------===//
// Handles, versions, statuses
//===----------------------------------------------------------------------===//

TEST(CudnnHandle, CreateFailsBeforeCuInit) {
  // A fresh process (re-executed), in which nothing has called cuInit.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        cudnnHandle_t h = reinterpret_cast<cudnnHandle_t>(1);
        cudnnStatus_t s = cudnnCreate(&h);
        _exit(s == CUDNN_STATUS_NOT_INITIALIZED && h == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(CudnnTest, StreamIsTheHandles) {
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(1);
  ASSERT_EQ(cudnnGetStream(handle, &stream), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(stream, nullptr) << "the legacy default stream";
  CUstream created;
  ASSERT_EQ(cuStreamCreate(&created, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(created)),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetStream(handle, &stream), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(reinterpret_cast<CUstream>(stream), created);
  // Work issued on the stream is done once that stream is synchronized.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                       1, 1, 1, 4096),
            CUDNN_STATUS_SUCCESS);
  std::vector<int> d = {1, 1, 1, 4096};
  void *cp =
      upload(std::vector<double>(4096, 1.0), d, stridesOf(d, Layout::Nchw));
  // A copy from pageable memory may still be in flight when cuMemcpyHtoD
  // returns, and a non-blocking stream does not wait for the legacy one.
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  float two = 2, zero = 0;
  ASSERT_EQ(cudnnAddTensor(handle, &two, y, cp, &zero, y, cp),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(created), CUDA_SUCCESS);
  std::vector<float> host(4096);
  ASSERT_EQ(cuMemcpyDtoH(host.data(), CUdeviceptr(cp), host.size() * 4),
            CUDA_SUCCESS);
  EXPECT_EQ(host[0], 2.0f);
  EXPECT_EQ(host[4095], 2.0f);
  ASSERT_EQ(cudnnSetStream(handle, nullptr), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(created), CUDA_SUCCESS);
}

TEST(CudnnStatus, VersionAndErrorStrings) {
  EXPECT_EQ(cudnnGetVersion(), size_t(CUDNN_VERSION));
  const std::pair<cudnnStatus_t, const char *> named[] = {
      {CUDNN_STATUS_SUCCESS, "CUDNN_STATUS_SUCCESS"},
      {CUDNN_STATUS_NOT_INITIALIZED, "CUDNN_STATUS_NOT_INITIALIZED"},
      {CUDNN_STATUS_BAD_PARAM, "CUDNN_STATUS_BAD_PARAM"},
      {CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"},
      {CUDNN_STATUS_INTERNAL_ERROR, "CUDNN_STATUS_INTERNAL_ERROR"},
      {CUDNN_STATUS_EXECUTION_FAILED, "CUDNN_STATUS_EXECUTION_FAILED"},
      {CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
       "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"},
      {CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"},
      {CUDNN_STATUS_EXECUTION_FAILED_CURAND,
       "CUDNN_STATUS_EXECUTION_FAILED_CURAND"},
  };
  for (const auto &[status, name] : named)
    EXPECT_STREQ(cudnnGetErrorString(status), name);
  // Every code in the header's ranges has its own name.
  int known = 0;
  for (int code = 0; code < 6000; ++code) {
    std::string s = cudnnGetErrorString(cudnnStatus_t(code));
    if (s == "CUDNN_UNKNOWN_STATUS")
      continue;
    ++known;
    EXPECT_EQ(s.rfind("CUDNN_STATUS_", 0), 0u) << code;
  }
  EXPECT_EQ(known, 49);
}

//===----------------------------------------------------------------------===//
// Planted bugs in the runtime's descriptor set-up
//===----------------------------------------------------------------------===//

/// What CudaDevice::describeConv and convForward do for a conv2d, with one
/// thing wrong (|bug|); returns the status of the first call that failed,
/// or SUCCESS with |*out| the result.
enum class Bug {
  None,
  SwapHWInX,
  SwapHWInXAndY,
  FilterCNotDivided,
  PadsSwapped,
  NhwcY,
  DefaultMath
};

class CudnnPlantedBug : public CudnnTest {
protected:
  cudnnStatus_t runtimeForward(const Geometry &g, Bug bug,
                               const std::vector<double> &xv,
                               const std::vector<double> &wv,
                               std::vector<double> *out) {
    int H = g.in[0], W = g.in[1], P = g.out(0), Q = g.out(1);
    // SwapHWInXAndY swaps H and W everywhere (x, y, pads): consistent
    // descriptors of a transposed problem, reading the data wrongly.
    bool swapX = bug == Bug::SwapHWInX || bug == Bug::SwapHWInXAndY;
    cudnnStatus_t s;
    if ((s = cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                        g.n, g.c, swapX ? W : H,
                                        swapX ? H : W)))
      return s;
    bool swapY = bug == Bug::SwapHWInXAndY;
    if ((s = cudnnSetTensor4dDescriptor(
             y, bug == Bug::NhwcY ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
             CUDNN_DATA_FLOAT, g.n, g.k, swapY ? Q : P, swapY ? P : Q)))
      return s;
    int filterC = bug == Bug::FilterCNotDivided ? g.c : g.c / g.groups;
    if ((s = cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                        g.k, filterC, g.filt[0], g.filt[1])))
      return s;
    bool swapPads = bug == Bug::PadsSwapped || bug == Bug::SwapHWInXAndY;
    if ((s = cudnnSetConvolution2dDescriptor(
             conv, swapPads ? g.pad[1] : g.pad[0],
             swapPads ? g.pad[0] : g.pad[1], g.stride[0], g.stride[1], g.dil[0],
             g.dil[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)))
      return s;
    if ((s = cudnnSetConvolutionGroupCount(conv, g.groups)))
      return s;
    if ((s = cudnnSetConvolutionMathType(conv, bug == Bug::DefaultMath
                                                   ? CUDNN_DEFAULT_MATH
                                                   : CUDNN_FMA_MATH)))
      return s;
    int n, k, oh, ow;
    if ((s = cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &k, &oh,
                                                   &ow)))
      return s;
    // The runtime compares cuDNN's dims with its own; that check is left
    // out here so the stand-in's own checks are what is tested.
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    if ((s = cudnnGetConvolutionForwardAlgorithm_v7(
             handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
             perf)))
      return s;
    auto algo = cudnnConvolutionFwdAlgo_t(pick(perf, returned, false));
    size_t bytes = 0;
    if ((s = cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y,
                                                     algo, &bytes)))
      return s;
    std::vector<int> xd = g.xDims(), yd = g.yDims(), wd = g.wDims();
    void *xp = upload(xv, xd, stridesOf(xd, Layout::Nchw));
    void *wp = upload(wv, wd, stridesOf(wd, Layout::Nchw));
    void *yp = allocate(size_t(count(yd)) * 4);
    float one = 1, zero = 0;
    if ((s = cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv, algo,
                                     bytes ? allocate(bytes) : nullptr, bytes,
                                     &zero, y, yp)))
      return s;
    *out = download(yp, yd, stridesOf(yd, Layout::Nchw));
    return CUDNN_STATUS_SUCCESS;
  }
};

TEST_F(CudnnPlantedBug, WrongDescriptorsGiveAnErrorOrWrongNumbers) {
  // Non-square input, asymmetric pads, groups: every swap is visible.
  Geometry g{2, 4, 6, 2, {7, 10}, {3, 3}, {1, 0}, {1, 1}, {1, 1}};
  auto xv = randomFloats(count(g.xDims()), 11);
  auto wv = randomFloats(count(g.wDims()), 12);
  Reference ref =
      reference(g, xv, wv, std::vector<double>(size_t(count(g.yDims()))));
  std::vector<double> got;
  ASSERT_EQ(runtimeForward(g, Bug::None, xv, wv, &got), CUDNN_STATUS_SUCCESS);
  EXPECT_TRUE(near(got, ref.y, 1e-6)) << "the correct set-up";

  // Errors from the stand-in itself.
  EXPECT_EQ(runtimeForward(g, Bug::SwapHWInX, xv, wv, &got),
            CUDNN_STATUS_NOT_SUPPORTED)
      << "y's spatial dims are not the output's";
  EXPECT_EQ(runtimeForward(g, Bug::FilterCNotDivided, xv, wv, &got),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(runtimeForward(g, Bug::PadsSwapped, xv, wv, &got),
            CUDNN_STATUS_NOT_SUPPORTED);

  // Consistent but wrong descriptors: numbers that do not match.
  for (Bug bug : {Bug::SwapHWInXAndY, Bug::NhwcY, Bug::DefaultMath}) {
    got.clear();
    ASSERT_EQ(runtimeForward(g, bug, xv, wv, &got), CUDNN_STATUS_SUCCESS)
        << int(bug);
    EXPECT_GT(maxDifference(got, ref.y), 1e-5) << "bug " << int(bug);
  }
}

//===----------------------------------------------------------------------===//
// Speed: the convolutions of one ResNet-18 training step
//===----------------------------------------------------------------------===//

TEST_F(CudnnTest, ResNet18TrainingStepConvolutions) {
  // Batch 2 at 64x64: conv1 7x7/2 (no backward data), then the four
  // stages' 3x3 convolutions and 1x1/2 shortcuts, each forward, backward
  // data and backward filter, as one training step runs them.
  struct Layer {
    int c, k, hw, f, stride, pad, repeat;
  };
  const Layer layers[] = {
      {3, 64, 64, 7, 2, 3, 1},   {64, 64, 16, 3, 1, 1, 4},
      {64, 128, 16, 3, 2, 1, 1}, {128, 128, 8, 3, 1, 1, 3},
      {64, 128, 16, 1, 2, 0, 1}, {128, 256, 8, 3, 2, 1, 1},
      {256, 256, 4, 3, 1, 1, 3}, {128, 256, 8, 1, 2, 0, 1},
      {256, 512, 4, 3, 2, 1, 1}, {512, 512, 2, 3, 1, 1, 3},
      {256, 512, 4, 1, 2, 0, 1},
  };
  auto start = std::chrono::steady_clock::now();
  double checksum = 0;
  for (const Layer &l : layers)
    for (int r = 0; r < l.repeat; ++r) {
      Geometry g{2,
                 l.c,
                 l.k,
                 1,
                 {l.hw, l.hw},
                 {l.f, l.f},
                 {l.pad, l.pad},
                 {l.stride, l.stride},
                 {1, 1}};
      describe(g, Layout::Nchw, CUDNN_TENSOR_NCHW);
      std::vector<int> xd = g.xDims(), yd = g.yDims(), wd = g.wDims();
      void *xp = allocate(size_t(count(xd)) * 4);
      void *wp = allocate(size_t(count(wd)) * 4);
      void *yp = allocate(size_t(count(yd)) * 4);
      void *dxp = allocate(size_t(count(xd)) * 4);
      void *dwp = allocate(size_t(count(wd)) * 4);
      ASSERT_EQ(cuMemsetD8Async(CUdeviceptr(xp), 0x3c, size_t(count(xd)) * 4,
                                nullptr),
                CUDA_SUCCESS);
      ASSERT_EQ(cuMemsetD8Async(CUdeviceptr(wp), 0x3c, size_t(count(wd)) * 4,
                                nullptr),
                CUDA_SUCCESS);
      float one = 1, zero = 0;
      ASSERT_EQ(
          cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                  nullptr, 0, &zero, y, yp),
          CUDNN_STATUS_SUCCESS);
      if (l.c != 3) {
        ASSERT_EQ(
            cudnnConvolutionBackwardData(handle, &one, w, wp, y, yp, conv,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                         nullptr, 0, &zero, x, dxp),
            CUDNN_STATUS_SUCCESS);
      }
      ASSERT_EQ(
          cudnnConvolutionBackwardFilter(handle, &one, x, xp, y, yp, conv,
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                         nullptr, 0, &zero, w, dwp),
          CUDNN_STATUS_SUCCESS);
      float first = 0;
      ASSERT_EQ(cuMemcpyDtoH(&first, CUdeviceptr(dwp), 4), CUDA_SUCCESS);
      checksum += first;
    }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("ResNet-18 training step convolutions (batch 2, 64x64): %.3f s\n",
              seconds);
  EXPECT_TRUE(std::isfinite(checksum));
  EXPECT_GT(checksum, 0);
  // Generous: a few seconds on two shared cores.
  EXPECT_LT(seconds, 60);
}

// PSEUDO_HALF_CONFIG / PSEUDO_BFLOAT16_CONFIG (16-bit data, FLOAT compute)
// as libdlrt uses them: the sum and beta * y are formed in float and y is
// rounded once. With taps 1 and u/4 (u: the ulp at 1) and a prior y of u/2,
// one rounding gives 1 + u (u/4 + u/2 is past half an ulp); rounding the
// convolution first gives 1 and then the tie 1 + u/2 rounds to even, 1.
TEST_F(CudnnTest, SixteenBitDataRoundsOnceWithFloatCompute) {
  for (cudnnDataType_t type : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    SCOPED_TRACE(type == CUDNN_DATA_HALF ? "half" : "bfloat16");
    const double u = type == CUDNN_DATA_HALF ? 1.0 / 1024 : 1.0 / 128;
    ASSERT_EQ(
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, 1, 2, 1, 1),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(
        cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, 1, 2, 1, 1),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, 1, 1, 1, 1),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1,
                                              CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT),
              CUDNN_STATUS_SUCCESS);
    void *xp = upload({1.0, u / 4}, {1, 2, 1, 1}, {2, 1, 1, 1}, type);
    void *wp = upload({1.0, 1.0}, {1, 2, 1, 1}, {2, 1, 1, 1}, type);
    void *yp = upload({u / 2}, {1, 1, 1, 1}, {1, 1, 1, 1}, type);
    float one = 1;
    ASSERT_EQ(cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      nullptr, 0, &one, y, yp),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(download(yp, {1, 1, 1, 1}, {1, 1, 1, 1}, type),
              std::vector<double>{1.0 + u});
  }
}

// The compute types real cuDNN refuses for 16-bit data: HALF compute for
// BFLOAT16 (no TRUE_BFLOAT16_CONFIG) and DOUBLE compute for HALF, with
// CUDNN_STATUS_NOT_SUPPORTED when the convolution is asked for.
TEST_F(CudnnTest, RefusesUnsupportedComputeFor16BitData) {
  const struct {
    cudnnDataType_t data, compute;
  } cases[] = {{CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF},
               {CUDNN_DATA_HALF, CUDNN_DATA_DOUBLE}};
  for (const auto &c : cases) {
    SCOPED_TRACE(std::to_string(c.data) + " / " + std::to_string(c.compute));
    ASSERT_EQ(
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, c.data, 1, 1, 3, 3),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(
        cudnnSetFilter4dDescriptor(w, c.data, CUDNN_TENSOR_NCHW, 1, 1, 2, 2),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, c.data, 1, 1, 2, 2),
        CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolution2dDescriptor(
                  conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, c.compute),
              CUDNN_STATUS_SUCCESS);
    size_t bytes = 0;
    EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(
                  handle, x, w, conv, y,
                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &bytes),
              CUDNN_STATUS_NOT_SUPPORTED);
    void *xp = allocate(18), *wp = allocate(8), *yp = allocate(8);
    float one = 1, zero = 0;
    EXPECT_EQ(cudnnConvolutionForward(handle, &one, x, xp, w, wp, conv,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      nullptr, 0, &zero, y, yp),
              CUDNN_STATUS_NOT_SUPPORTED);
  }
}

} // namespace
