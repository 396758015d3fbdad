//===- CudnnTestSupport.h - fixture and reference of CudnnTest.cpp -*- C++
//-*-===//
// What the stand-in cuDNN's tests share: convolution geometries and memory
// layouts, a naive double-precision reference for the forward, backward-data
// and backward-filter convolutions, and a fixture that uploads tensors at any
// strides, sets descriptors and checks all three convolutions against the
// reference. Included by CudnnTest.cpp only.
#ifndef DLC_TEST_CUDA_STANDIN_CUDNNTESTSUPPORT_H
#define DLC_TEST_CUDA_STANDIN_CUDNNTESTSUPPORT_H

#include <cuda.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dnntest {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A convolution's shape; spatial vectors have 2 or 3 entries.
struct Geometry {
  int n, c, k, groups;
  std::vector<int> in, filt, pad, stride, dil;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;

  int spatial() const { return int(in.size()); }
  int out(int s) const {
    int span = (filt[s] - 1) * dil[s] + 1;
    return 1 + (in[s] + 2 * pad[s] - span) / stride[s];
  }
  std::vector<int> xDims() const {
    std::vector<int> d = {n, c};
    d.insert(d.end(), in.begin(), in.end());
    return d;
  }
  std::vector<int> yDims() const {
    std::vector<int> d = {n, k};
    for (int s = 0; s < spatial(); ++s)
      d.push_back(out(s));
    return d;
  }
  std::vector<int> wDims() const {
    std::vector<int> d = {k, c / groups};
    d.insert(d.end(), filt.begin(), filt.end());
    return d;
  }
};

inline int64_t count(const std::vector<int> &dims) {
  int64_t n = 1;
  for (int d : dims)
    n *= d;
  return n;
}

/// How a tensor lies in memory.
enum class Layout { Nchw, Nhwc, Padded };

inline std::vector<int> stridesOf(const std::vector<int> &dims, Layout layout) {
  size_t rank = dims.size();
  std::vector<int> s(rank);
  if (layout == Layout::Nhwc) {
    int v = dims[1];
    s[1] = 1;
    for (size_t i = rank; i-- > 2;) {
      s[i] = v;
      v *= dims[i];
    }
    s[0] = v;
    return s;
  }
  // Padded: rows 3 longer, a gap of 5 after each channel and 7 after each
  // image, so a kernel that assumes packed strides reads the gaps (NaN).
  int v = 1;
  for (size_t i = rank; i-- > 0;) {
    s[i] = v;
    v *= dims[i];
    if (layout == Layout::Padded)
      v += i == rank - 1 ? 3 * v / dims[i] : i == 2 ? 5 : i == 1 ? 7 : 0;
  }
  return s;
}

/// The element offset of each logical (row-major) index.
inline std::vector<int64_t> offsets(const std::vector<int> &dims,
                                    const std::vector<int> &strides) {
  std::vector<int64_t> out(static_cast<size_t>(count(dims)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    int64_t rest = i, off = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      off += (rest % dims[d]) * strides[d];
      rest /= dims[d];
    }
    out[size_t(i)] = off;
  }
  return out;
}

inline int64_t span(const std::vector<int> &dims,
                    const std::vector<int> &strides) {
  int64_t last = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    last += int64_t(dims[i] - 1) * strides[i];
  return last + 1;
}

/// The filter's strides for a format, logical dims (K, C, spatial...).
inline std::vector<int> filterStrides(const std::vector<int> &dims,
                                      cudnnTensorFormat_t format) {
  return stridesOf(dims,
                   format == CUDNN_TENSOR_NHWC ? Layout::Nhwc : Layout::Nchw);
}

inline std::vector<double> randomValues(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-64, 64);
  std::vector<double> v(static_cast<size_t>(n));
  // Multiples of 1/64: exact in half, bfloat16 and float.
  for (double &x : v)
    x = dist(rng) / 64.0;
  return v;
}

/// Floats with full 24-bit mantissas (TF32 rounding changes them).
inline std::vector<double> randomFloats(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v)
    x = dist(rng);
  return v;
}

/// y, dx and dw of one convolution, by summing over every output position
/// and filter tap in double: y = conv(x, w); dx and dw are its adjoints
/// applied to dy.
struct Reference {
  std::vector<double> y, dx, dw;
};

inline Reference reference(const Geometry &g, const std::vector<double> &x,
                           const std::vector<double> &w,
                           const std::vector<double> &dy) {
  // Pad to three spatial dims (depth 1 for 2-D).
  int lead = 3 - g.spatial();
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, f[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0}, st[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
  for (int s = 0; s < g.spatial(); ++s) {
    in[lead + s] = g.in[s], out[lead + s] = g.out(s), f[lead + s] = g.filt[s];
    pad[lead + s] = g.pad[s], st[lead + s] = g.stride[s],
               dil[lead + s] = g.dil[s];
  }
  int64_t cg = g.c / g.groups, kg = g.k / g.groups;
  Reference r;
  r.y.assign(size_t(g.n * g.k * out[0] * out[1] * out[2]), 0);
  r.dx.assign(x.size(), 0);
  r.dw.assign(w.size(), 0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            int64_t yi =
                (((n * g.k + k) * out[0] + o0) * out[1] + o1) * out[2] + o2;
            for (int64_t j = 0; j < cg; ++j)
              for (int64_t t0 = 0; t0 < f[0]; ++t0)
                for (int64_t t1 = 0; t1 < f[1]; ++t1)
                  for (int64_t t2 = 0; t2 < f[2]; ++t2) {
                    int64_t i0 = o0 * st[0] - pad[0] + t0 * dil[0];
                    int64_t i1 = o1 * st[1] - pad[1] + t1 * dil[1];
                    int64_t i2 = o2 * st[2] - pad[2] + t2 * dil[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                        i2 < 0 || i2 >= in[2])
                      continue;
                    int64_t c = (k / kg) * cg + j;
                    int64_t xi =
                        (((n * g.c + c) * in[0] + i0) * in[1] + i1) * in[2] +
                        i2;
                    // A true convolution applies the filter reversed.
                    bool flip = g.mode == CUDNN_CONVOLUTION;
                    int64_t u0 = flip ? f[0] - 1 - t0 : t0;
                    int64_t u1 = flip ? f[1] - 1 - t1 : t1;
                    int64_t u2 = flip ? f[2] - 1 - t2 : t2;
                    int64_t wi =
                        (((k * cg + j) * f[0] + u0) * f[1] + u1) * f[2] + u2;
                    r.y[size_t(yi)] += w[size_t(wi)] * x[size_t(xi)];
                    r.dx[size_t(xi)] += w[size_t(wi)] * dy[size_t(yi)];
                    r.dw[size_t(wi)] += x[size_t(xi)] * dy[size_t(yi)];
                  }
          }
  return r;
}

/// |got| matches |want| elementwise within |tolerance| * max(1, |want|).
inline ::testing::AssertionResult near(const std::vector<double> &got,
                                       const std::vector<double> &want,
                                       double tolerance) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "sizes " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <=
          tolerance * std::max(1.0, std::fabs(want[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

inline double maxDifference(const std::vector<double> &a,
                            const std::vector<double> &b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::isnan(a[i]) ? INFINITY : std::fabs(a[i] - b[i]));
  return m;
}

inline uint16_t toHalf(double v) {
  // Exact for the multiples of 1/64 in [-1, 1] the tests use.
  float f = float(v);
  if (f == 0)
    return std::signbit(f) ? 0x8000 : 0;
  int e;
  float m = std::frexp(std::fabs(f), &e); // f = m * 2^e, m in [0.5, 1)
  uint16_t sign = f < 0 ? 0x8000 : 0;
  int biased = e - 1 + 15;
  uint16_t mantissa = uint16_t(std::lround((m * 2 - 1) * 1024));
  return uint16_t(sign | (biased << 10) | mantissa);
}

/// The upper half of the float: exact for the values the tests use.
inline uint16_t toBfloat16(double v) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t(bits >> 16);
}

inline double fromBfloat16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline double fromHalf(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  if (e == 31)
    v = m ? kNaN : INFINITY;
  return h & 0x8000 ? -v : v;
}

class CudnnTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    CUdevice device;
    ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
    CUcontext context;
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context), CUDA_SUCCESS);
  }

  void SetUp() override {
    ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
    for (auto *t : {&x, &y, &bias})
      ASSERT_EQ(cudnnCreateTensorDescriptor(t), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateFilterDescriptor(&w), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateConvolutionDescriptor(&conv), CUDNN_STATUS_SUCCESS);
  }

  void TearDown() override {
    EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (CUdeviceptr p : buffers)
      cuMemFree(p);
    for (auto t : {x, y, bias})
      cudnnDestroyTensorDescriptor(t);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroy(handle);
  }

  /// A device buffer of |bytes| (at least 1), freed after the test.
  void *allocate(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cuMemAlloc(&p, std::max<size_t>(bytes, 1)), CUDA_SUCCESS);
    buffers.push_back(p);
    return reinterpret_cast<void *>(p);
  }

  /// Uploads logical |values| to a new buffer laid out at |strides| (the
  /// gaps hold NaN) in |type|; |extra| elements more than the span.
  void *upload(const std::vector<double> &values, const std::vector<int> &dims,
               const std::vector<int> &strides,
               cudnnDataType_t type = CUDNN_DATA_FLOAT, int64_t extra = 0) {
    int64_t n = span(dims, strides) + extra;
    std::vector<int64_t> at = offsets(dims, strides);
    void *p = nullptr;
    if (type == CUDNN_DATA_DOUBLE) {
      std::vector<double> host(size_t(n), kNaN);
      for (size_t i = 0; i < at.size(); ++i)
        host[size_t(at[i])] = values[i];
      p = allocate(host.size() * 8);
      EXPECT_EQ(cuMemcpyHtoD(CUdeviceptr(p), host.data(), host.size() * 8),
                CUDA_SUCCESS);
    } else if (type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16) {
      bool half = type == CUDNN_DATA_HALF;
      std::vector<uint16_t> host(size_t(n), half ? 0x7e00 : 0x7fc0);
      for (size_t i = 0; i < at.size(); ++i)
        host[size_t(at[i])] = half ? toHalf(values[i]) : toBfloat16(values[i]);
      p = allocate(host.size() * 2);
      EXPECT_EQ(cuMemcpyHtoD(CUdeviceptr(p), host.data(), host.size() * 2),
                CUDA_SUCCESS);
    } else {
      std::vector<float> host(size_t(n), NAN);
      for (size_t i = 0; i < at.size(); ++i)
        host[size_t(at[i])] = float(values[i]);
      p = allocate(host.size() * 4);
      EXPECT_EQ(cuMemcpyHtoD(CUdeviceptr(p), host.data(), host.size() * 4),
                CUDA_SUCCESS);
    }
    return p;
  }

  /// Waits for the stream and reads the logical values back.
  std::vector<double> download(const void *p, const std::vector<int> &dims,
                               const std::vector<int> &strides,
                               cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    int64_t n = span(dims, strides);
    std::vector<int64_t> at = offsets(dims, strides);
    std::vector<double> out(at.size());
    size_t es = type == CUDNN_DATA_DOUBLE                                ? 8
                : type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16 ? 2
                                                                         : 4;
    std::vector<unsigned char> host(size_t(n) * es);
    EXPECT_EQ(cuMemcpyDtoH(host.data(), CUdeviceptr(p), host.size()),
              CUDA_SUCCESS);
    for (size_t i = 0; i < at.size(); ++i) {
      const unsigned char *e = host.data() + size_t(at[i]) * es;
      if (type == CUDNN_DATA_DOUBLE) {
        double v;
        std::memcpy(&v, e, 8);
        out[i] = v;
      } else if (type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16) {
        uint16_t v;
        std::memcpy(&v, e, 2);
        out[i] = type == CUDNN_DATA_HALF ? fromHalf(v) : fromBfloat16(v);
      } else {
        float v;
        std::memcpy(&v, e, 4);
        out[i] = v;
      }
    }
    return out;
  }

  /// Sets x, y, w and conv for |g|: tensors at |layout|'s strides (through
  /// cudnnSetTensorNdDescriptor), the filter in |filterFormat|.
  void describe(const Geometry &g, Layout layout,
                cudnnTensorFormat_t filterFormat,
                cudnnDataType_t type = CUDNN_DATA_FLOAT,
                cudnnMathType_t math = CUDNN_FMA_MATH) {
    std::vector<int> xd = g.xDims(), yd = g.yDims(), wd = g.wDims();
    std::vector<int> xs = stridesOf(xd, layout), ys = stridesOf(yd, layout);
    ASSERT_EQ(cudnnSetTensorNdDescriptor(x, type, int(xd.size()), xd.data(),
                                         xs.data()),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetTensorNdDescriptor(y, type, int(yd.size()), yd.data(),
                                         ys.data()),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetFilterNdDescriptor(w, type, filterFormat, int(wd.size()),
                                         wd.data()),
              CUDNN_STATUS_SUCCESS);
    cudnnDataType_t compute =
        type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    ASSERT_EQ(cudnnSetConvolutionNdDescriptor(conv, g.spatial(), g.pad.data(),
                                              g.stride.data(), g.dil.data(),
                                              g.mode, compute),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolutionGroupCount(conv, g.groups),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolutionMathType(conv, math), CUDNN_STATUS_SUCCESS);
  }

  /// The runtime's pickAlgo: the fastest successful non-tensor-op entry,
  /// deterministic first when |deterministic|.
  template <typename Perf>
  int pick(const Perf *perf, int returned, bool deterministic) {
    for (int pass = deterministic ? 0 : 1; pass < 2; ++pass)
      for (int i = 0; i < returned; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS &&
            perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
            perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
            (pass == 1 || perf[i].determinism == CUDNN_DETERMINISTIC))
          return int(perf[i].algo);
    ADD_FAILURE() << "no usable algorithm";
    return 0;
  }

  /// Runs the three convolutions of |g| through the descriptors |describe|
  /// set, with |alpha| and |beta| (beta == 0: the outputs start as NaN),
  /// and checks them against the reference within |tolerance|.
  void checkAll(const Geometry &g, Layout layout,
                cudnnTensorFormat_t filterFormat, double alpha, double beta,
                cudnnDataType_t type = CUDNN_DATA_FLOAT,
                double tolerance = 1e-6) {
    describe(g, layout, filterFormat, type);
    if (HasFatalFailure())
      return;
    std::vector<int> xd = g.xDims(), yd = g.yDims(), wd = g.wDims();
    std::vector<int> xs = stridesOf(xd, layout), ys = stridesOf(yd, layout);
    std::vector<int> ws = filterStrides(wd, filterFormat);
    auto xv = randomValues(count(xd), 1), wv = randomValues(count(wd), 2);
    auto dyv = randomValues(count(yd), 3);
    Reference ref = reference(g, xv, wv, dyv);
    auto initial = [&](const std::vector<int> &dims, unsigned seed) {
      return beta == 0 ? std::vector<double>(size_t(count(dims)), kNaN)
                       : randomValues(count(dims), seed);
    };
    auto blend = [&](const std::vector<double> &r,
                     const std::vector<double> &old) {
      std::vector<double> out(r.size());
      for (size_t i = 0; i < r.size(); ++i)
        out[i] = alpha * r[i] + (beta == 0 ? 0 : beta * old[i]);
      return out;
    };
    float af = float(alpha), bf = float(beta);
    const void *a = type == CUDNN_DATA_DOUBLE ? (const void *)&alpha : &af;
    const void *b = type == CUDNN_DATA_DOUBLE ? (const void *)&beta : &bf;
    void *xp = upload(xv, xd, xs, type), *wp = upload(wv, wd, ws, type);
    void *dyp = upload(dyv, yd, ys, type);

    // Forward.
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    ASSERT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(
                  handle, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                  &returned, fwd),
              CUDNN_STATUS_SUCCESS);
    auto fa = cudnnConvolutionFwdAlgo_t(pick(fwd, returned, false));
    size_t bytes = 0;
    ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y, fa,
                                                      &bytes),
              CUDNN_STATUS_SUCCESS);
    auto y0 = initial(yd, 4);
    void *yp = upload(y0, yd, ys, type);
    ASSERT_EQ(cudnnConvolutionForward(handle, a, x, xp, w, wp, conv, fa,
                                      bytes ? allocate(bytes) : nullptr, bytes,
                                      b, y, yp),
              CUDNN_STATUS_SUCCESS);
    EXPECT_TRUE(near(download(yp, yd, ys, type), blend(ref.y, y0), tolerance))
        << "forward, algorithm " << fa;

    // Backward data.
    cudnnConvolutionBwdDataAlgoPerf_t
        bwd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    ASSERT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  handle, w, y, conv, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                  &returned, bwd),
              CUDNN_STATUS_SUCCESS);
    auto da = cudnnConvolutionBwdDataAlgo_t(pick(bwd, returned, true));
    ASSERT_EQ(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w, y, conv,
                                                           x, da, &bytes),
              CUDNN_STATUS_SUCCESS);
    auto dx0 = initial(xd, 5);
    void *dxp = upload(dx0, xd, xs, type);
    ASSERT_EQ(cudnnConvolutionBackwardData(handle, a, w, wp, y, dyp, conv, da,
                                           bytes ? allocate(bytes) : nullptr,
                                           bytes, b, x, dxp),
              CUDNN_STATUS_SUCCESS);
    EXPECT_TRUE(
        near(download(dxp, xd, xs, type), blend(ref.dx, dx0), tolerance))
        << "backward data, algorithm " << da;

    // Backward filter.
    cudnnConvolutionBwdFilterAlgoPerf_t
        bwf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                  handle, x, y, conv, w,
                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, bwf),
              CUDNN_STATUS_SUCCESS);
    auto wa = cudnnConvolutionBwdFilterAlgo_t(pick(bwf, returned, true));
    ASSERT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x, y, conv,
                                                             w, wa, &bytes),
              CUDNN_STATUS_SUCCESS);
    auto dw0 = initial(wd, 6);
    void *dwp = upload(dw0, wd, ws, type);
    ASSERT_EQ(cudnnConvolutionBackwardFilter(handle, a, x, xp, y, dyp, conv, wa,
                                             bytes ? allocate(bytes) : nullptr,
                                             bytes, b, w, dwp),
              CUDNN_STATUS_SUCCESS);
    EXPECT_TRUE(
        near(download(dwp, wd, ws, type), blend(ref.dw, dw0), tolerance))
        << "backward filter, algorithm " << wa;
  }

  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<CUdeviceptr> buffers;
};

} // namespace dnntest

#endif
