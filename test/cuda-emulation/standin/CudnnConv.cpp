//===- CudnnConv.cpp - the stand-in cuDNN's convolutions ------------------===//
// cudnnConvolutionForward/BackwardData/BackwardFilter, their algorithm
// heuristics (cudnnGet*Algorithm_v7) and workspace sizes, computed on the
// host from exactly what the descriptors say: any strides, NCHW or NHWC
// filters, groups, dilation, both convolution modes, 2-D and 3-D. Every
// algorithm computes the same direct convolution (accumulated in double),
// but an algorithm is only accepted for the descriptors the real library
// accepts it for, and only with at least the workspace it asked for.
//
// Sources (docs.nvidia.com/deeplearning/cudnn, the cuDNN 8 and 9 API
// reference of the legacy convolution functions, as recalled; the search
// tool of this session did not return those pages in full):
//  - the statuses of cudnnConvolutionForward/BackwardData/BackwardFilter
//    ("Returns") and their "supported configurations" tables: FFT needs
//    stride 1, no dilation, NCHW HW-packed tensors, input + 2 * pad <= 256
//    and filter > pad; FFT_TILING stride 1, no dilation, filter <= 32 and
//    filter > pad; WINOGRAD stride 1, no dilation, 3x3 filters;
//    WINOGRAD_NONFUSED stride 1, no dilation, 3x3 or 5x5; FWD_ALGO_DIRECT
//    and BWD_FILTER_ALGO_WINOGRAD are not implemented; 3-D convolutions
//    have IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM, FFT_TILING (forward and
//    backward data) and ALGO_0/ALGO_1 (backward filter);
//  - an insufficient workspace makes the convolution return
//    CUDNN_STATUS_BAD_PARAM (github.com/chainer/chainer/issues/3922);
//  - cudnnMathType_t: CUDNN_DEFAULT_MATH permits TF32 tensor-core math for
//    FLOAT on A100 and later, CUDNN_FMA_MATH restricts to FMA kernels. The
//    stand-in models a Hopper GPU: without FMA_MATH, FLOAT operands are
//    rounded to TF32 (10-bit mantissa) before they are multiplied, unless
//    NVIDIA_TF32_OVERRIDE=0 (the CUDA libraries' switch) is set.
#include "CudnnState.h"
#include "Standin.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace dlc::standin;
using namespace dlc::standin::dnn;

namespace {

enum class Kind { Forward, BackwardData, BackwardFilter };

/// One convolution, normalized to three spatial dims (2-D: depth 1).
struct Problem {
  int spatial = 2;
  int64_t n = 0, c = 0, k = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, filt[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0}, stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
  bool flip = false;
  bool tf32 = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  std::vector<int> xDims, yDims, wDims;
  std::vector<int64_t> xStrides, yStrides, wStrides;
  /// The spatial dims of x and y are packed (innermost stride 1, each
  /// outer spatial stride the product of the inner extents) and C is
  /// outside them: the "NCHW HW-packed" the FFT algorithms need.
  bool spatialPacked = false;

  int64_t cg() const { return c / groups; }
  int64_t kg() const { return k / groups; }
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t filtSize() const { return filt[0] * filt[1] * filt[2]; }
};

bool spatialPackedNchw(const std::vector<int> &dims,
                       const std::vector<int64_t> &strides) {
  int64_t expected = 1;
  for (size_t i = dims.size(); i-- > 2;) {
    if (strides[i] != expected)
      return false;
    expected *= dims[i];
  }
  return strides[1] >= expected;
}

/// The descriptor checks every convolution entry point makes. |x| is the
/// input-shaped tensor (x, or dx for backward data), |y| the output-shaped
/// one (y or dy). Statuses per the "Returns" sections: BAD_PARAM for null
/// descriptors, ranks that differ or are below 3 or differ from the
/// convolution's, data types that differ, input channels not the filter's C
/// times the group count, output channels not a multiple of the group
/// count, a filter larger than the padded input; NOT_SUPPORTED for ranks
/// other than 4 or 5 and unsupported data type configurations. An output
/// whose spatial dims are not the forward output dims is NOT_SUPPORTED for
/// the forward convolution and BAD_PARAM for the backward ones (as each
/// function's reference lists it); a batch or channel count that differs
/// is BAD_PARAM.
cudnnStatus_t describe(Kind kind, const char *call, cudnnTensorDescriptor_t x,
                       cudnnFilterDescriptor_t w,
                       cudnnConvolutionDescriptor_t conv,
                       cudnnTensorDescriptor_t y, Problem *p) {
  if (!x || !w || !conv || !y || !x->set || !w->set || !conv->set || !y->set)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "a descriptor is null or was never set");
  size_t rank = x->dims.size();
  if (y->dims.size() != rank || w->dims.size() != rank)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "ranks differ: x " + std::to_string(rank) + ", y " +
                      std::to_string(y->dims.size()) + ", w " +
                      std::to_string(w->dims.size()));
  if (rank < 3 || conv->pads.size() + 2 != rank)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "x has " + std::to_string(rank) + " dims, the convolution " +
                      std::to_string(conv->pads.size()) + " spatial dims");
  if (rank != 4 && rank != 5)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "rank " + std::to_string(rank) + " is not 4 or 5");
  if (x->dataType != y->dataType || x->dataType != w->dataType)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "data types differ: x " + std::to_string(x->dataType) +
                      ", y " + std::to_string(y->dataType) + ", w " +
                      std::to_string(w->dataType));
  cudnnDataType_t type = x->dataType, compute = conv->computeType;
  // FLOAT_CONFIG, DOUBLE_CONFIG, TRUE_HALF_CONFIG, PSEUDO_HALF_CONFIG and
  // PSEUDO_BFLOAT16_CONFIG of the reference's tables.
  bool config = (type == CUDNN_DATA_FLOAT && compute == CUDNN_DATA_FLOAT) ||
                (type == CUDNN_DATA_DOUBLE && compute == CUDNN_DATA_DOUBLE) ||
                (type == CUDNN_DATA_HALF &&
                 (compute == CUDNN_DATA_HALF || compute == CUDNN_DATA_FLOAT)) ||
                (type == CUDNN_DATA_BFLOAT16 && compute == CUDNN_DATA_FLOAT);
  if (!config)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "data type " + std::to_string(type) + " with compute type " +
                      std::to_string(compute) + " is not supported");
  int groups = conv->groups;
  if (int64_t(w->dims[1]) * groups != x->dims[1])
    return reject(
        CUDNN_STATUS_BAD_PARAM, call,
        "x has " + std::to_string(x->dims[1]) +
            " channels but the filter has C = " + std::to_string(w->dims[1]) +
            " x group count " + std::to_string(groups));
  if (w->dims[0] % groups != 0)
    return reject(kind == Kind::BackwardData ? CUDNN_STATUS_NOT_SUPPORTED
                                             : CUDNN_STATUS_BAD_PARAM,
                  call,
                  "the filter's K = " + std::to_string(w->dims[0]) +
                      " is not a multiple of the group count " +
                      std::to_string(groups));
  if (y->dims[1] != w->dims[0] || y->dims[0] != x->dims[0])
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "y is [" + std::to_string(y->dims[0]) + ", " +
                      std::to_string(y->dims[1]) +
                      ", ...] but x has N = " + std::to_string(x->dims[0]) +
                      " and the filter K = " + std::to_string(w->dims[0]));
  p->spatial = int(rank) - 2;
  int first = 3 - p->spatial; // 2-D fills the last two of three slots.
  for (int s = 0; s < p->spatial; ++s) {
    int i = s + 2, slot = first + s;
    p->in[slot] = x->dims[i];
    p->filt[slot] = w->dims[i];
    p->pad[slot] = conv->pads[s];
    p->stride[slot] = conv->strides[s];
    p->dil[slot] = conv->dilations[s];
    int64_t span = (p->filt[slot] - 1) * p->dil[slot] + 1;
    int64_t padded = p->in[slot] + 2 * p->pad[slot];
    if (span > padded)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "spatial dim " + std::to_string(s) +
                        ": the dilated filter spans " + std::to_string(span) +
                        " but the padded input has " + std::to_string(padded));
    p->out[slot] = 1 + (padded - span) / p->stride[slot];
    if (y->dims[i] != p->out[slot]) {
      std::string dims;
      for (size_t j = 0; j < rank; ++j)
        dims += (j ? "," : "") + std::to_string(y->dims[j]);
      return reject(kind == Kind::Forward ? CUDNN_STATUS_NOT_SUPPORTED
                                          : CUDNN_STATUS_BAD_PARAM,
                    call,
                    "y is [" + dims + "] but spatial dim " + std::to_string(s) +
                        " of the output is " + std::to_string(p->out[slot]));
    }
  }
  p->n = x->dims[0];
  p->c = x->dims[1];
  p->k = w->dims[0];
  p->groups = groups;
  p->flip = conv->mode == CUDNN_CONVOLUTION;
  p->type = type;
  p->compute = compute;
  // NVIDIA_TF32_OVERRIDE=0 turns TF32 off process-wide, as for the real
  // libraries.
  const char *override = std::getenv("NVIDIA_TF32_OVERRIDE");
  p->tf32 = type == CUDNN_DATA_FLOAT && conv->mathType != CUDNN_FMA_MATH &&
            !(override && std::string(override) == "0");
  p->xDims = x->dims;
  p->yDims = y->dims;
  p->wDims = w->dims;
  p->xStrides.assign(x->strides.begin(), x->strides.end());
  p->yStrides.assign(y->strides.begin(), y->strides.end());
  p->wStrides = filterStrides(*w);
  p->spatialPacked = spatialPackedNchw(p->xDims, p->xStrides) &&
                     spatialPackedNchw(p->yDims, p->yStrides);
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Algorithms: which the real library runs for a problem, and its workspace
//===----------------------------------------------------------------------===//

int algoCount(Kind kind) {
  switch (kind) {
  case Kind::Forward:
    return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  case Kind::BackwardData:
    return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  case Kind::BackwardFilter:
    return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

/// The families the per-kind enumerators map to.
enum class Family {
  ImplicitGemm,
  ImplicitPrecompGemm,
  Gemm,
  Direct,
  Fft,
  FftTiling,
  Winograd,
  WinogradNonfused,
  Algo0,
  Algo1,
  Algo3,
  Invalid
};

Family familyOf(Kind kind, int algo) {
  switch (kind) {
  case Kind::Forward:
    switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return Family::ImplicitGemm;
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return Family::ImplicitPrecompGemm;
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return Family::Gemm;
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return Family::Direct;
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return Family::Fft;
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return Family::FftTiling;
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return Family::Winograd;
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return Family::WinogradNonfused;
    }
    break;
  case Kind::BackwardData:
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return Family::Algo0;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return Family::Algo1;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
      return Family::Fft;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return Family::FftTiling;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
      return Family::Winograd;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return Family::WinogradNonfused;
    }
    break;
  case Kind::BackwardFilter:
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
      return Family::Algo0;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
      return Family::Algo1;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
      return Family::Fft;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
      return Family::Algo3;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
      return Family::Winograd;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
      return Family::WinogradNonfused;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
      return Family::FftTiling;
    }
    break;
  }
  return Family::Invalid;
}

bool unitStrideNoDilation(const Problem &p) {
  for (int i = 0; i < 3; ++i)
    if (p.stride[i] != 1 || p.dil[i] != 1)
      return false;
  return true;
}

bool filterLargerThanPad(const Problem &p) {
  for (int i = 3 - p.spatial; i < 3; ++i)
    if (p.filt[i] <= p.pad[i])
      return false;
  return true;
}

/// Empty when |algo| supports |p|; otherwise why not.
std::string unsupportedBecause(Kind kind, int algo, const Problem &p) {
  Family family = familyOf(kind, algo);
  bool twoD = p.spatial == 2;
  bool doubles = p.type == CUDNN_DATA_DOUBLE;
  switch (family) {
  case Family::ImplicitGemm:
  case Family::ImplicitPrecompGemm:
  case Family::Algo0:
  case Family::Algo1:
    return "";
  case Family::Gemm:
    return twoD ? "" : "GEMM has no 3-D kernel";
  case Family::Direct:
    return "DIRECT is not implemented by cuDNN";
  case Family::Algo3:
    if (!twoD)
      return "ALGO_3 has no 3-D kernel";
    return p.dil[1] == 1 && p.dil[2] == 1 ? "" : "ALGO_3 needs dilation 1";
  case Family::Fft:
    if (!twoD || doubles)
      return "FFT is 2-D, FLOAT or HALF only";
    if (!unitStrideNoDilation(p))
      return "FFT needs stride 1 and dilation 1";
    if (!p.spatialPacked)
      return "FFT needs NCHW HW-packed tensors";
    for (int i = 1; i < 3; ++i)
      if (p.in[i] + 2 * p.pad[i] > 256)
        return "FFT needs input + 2 * pad <= 256 in each spatial dim";
    return filterLargerThanPad(p) ? "" : "FFT needs filter > pad";
  case Family::FftTiling:
    if (doubles)
      return "FFT_TILING is FLOAT or HALF only";
    if (kind == Kind::BackwardFilter && !twoD)
      return "FFT_TILING has no 3-D backward filter kernel";
    if (!unitStrideNoDilation(p))
      return "FFT_TILING needs stride 1 and dilation 1";
    if (!p.spatialPacked)
      return "FFT_TILING needs NCHW packed tensors";
    for (int i = 0; i < 3; ++i)
      if (p.filt[i] > 32)
        return "FFT_TILING needs filters of at most 32";
    return filterLargerThanPad(p) ? "" : "FFT_TILING needs filter > pad";
  case Family::Winograd:
    if (kind == Kind::BackwardFilter)
      return "BWD_FILTER_ALGO_WINOGRAD is not implemented by cuDNN";
    if (!twoD || doubles || p.type == CUDNN_DATA_BFLOAT16)
      return "WINOGRAD is 2-D, FLOAT or HALF only";
    if (!unitStrideNoDilation(p))
      return "WINOGRAD needs stride 1 and dilation 1";
    return p.filt[1] == 3 && p.filt[2] == 3 ? ""
                                            : "WINOGRAD needs a 3x3 filter";
  case Family::WinogradNonfused:
    if (!twoD || doubles || p.type == CUDNN_DATA_BFLOAT16)
      return "WINOGRAD_NONFUSED is 2-D, FLOAT or HALF only";
    if (!unitStrideNoDilation(p))
      return "WINOGRAD_NONFUSED needs stride 1 and dilation 1";
    if (p.filt[1] == 3 && p.filt[2] == 3)
      return "";
    if (p.filt[1] == 5 && p.filt[2] == 5)
      return p.compute == CUDNN_DATA_HALF
                 ? "WINOGRAD_NONFUSED 5x5 does not support TRUE_HALF_CONFIG"
                 : "";
    return "WINOGRAD_NONFUSED needs a 3x3 or 5x5 filter";
  case Family::Invalid:
    break;
  }
  return "invalid algorithm";
}

int64_t nextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

int64_t roundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/// The workspace an algorithm asks for, in bytes: zero for the implicit
/// GEMMs and ALGO_0, otherwise the buffers such an algorithm would need
/// (an im2col matrix, FFT'd operands, Winograd-transformed tiles).
size_t workspaceBytes(Kind kind, int algo, const Problem &p) {
  int64_t es = int64_t(elementSize(p.type));
  int64_t fftSize = 1, tileSize = 1;
  for (int i = 3 - p.spatial; i < 3; ++i) {
    fftSize *= nextPow2(p.in[i] + 2 * p.pad[i]);
    tileSize *= std::min<int64_t>(nextPow2(p.in[i] + 2 * p.pad[i]), 32);
  }
  int64_t tiles = ((p.out[1] + 3) / 4) * ((p.out[2] + 3) / 4);
  int64_t bytes = 0;
  switch (familyOf(kind, algo)) {
  case Family::ImplicitGemm:
  case Family::Algo0:
  case Family::Direct:
  case Family::Invalid:
    bytes = 0;
    break;
  case Family::ImplicitPrecompGemm:
    bytes = 4 * (p.cg() * p.filtSize() + 1);
    break;
  case Family::Gemm:
    bytes = es * p.cg() * p.filtSize() * p.outSize();
    break;
  case Family::Algo1:
    // Backward data runs ALGO_1 in place; backward filter reduces partial
    // filter gradients over the batch.
    bytes =
        kind == Kind::BackwardFilter ? es * p.k * p.cg() * p.filtSize() * 4 : 0;
    break;
  case Family::Algo3:
    bytes = es * p.k * p.cg() * p.filtSize();
    break;
  case Family::Fft:
    bytes = 8 * fftSize * (p.n * p.c + p.k * p.cg() + p.n * p.k);
    break;
  case Family::FftTiling:
    bytes = 8 * tileSize * (p.c + p.k * p.cg() + p.k) * 2;
    break;
  case Family::Winograd:
    bytes = es * p.k * p.cg() * 16;
    break;
  case Family::WinogradNonfused: {
    int64_t t = p.filt[1] == 5 ? 64 : 36;
    bytes = es * t * (p.k * p.cg() + (p.n * p.c + p.n * p.k) * tiles);
    break;
  }
  }
  return size_t(roundUp(bytes, 256));
}

bool deterministic(Kind kind, int algo) {
  Family f = familyOf(kind, algo);
  return !(kind != Kind::Forward && (f == Family::Algo0 || f == Family::Algo3));
}

/// A modeled time in milliseconds: multiply-adds at a rate per algorithm.
float modeledTime(Kind kind, int algo, const Problem &p, bool tensorOps) {
  double macs = double(p.n) * p.k * p.cg() * p.outSize() * p.filtSize();
  double rate = 1; // relative to IMPLICIT_GEMM
  switch (familyOf(kind, algo)) {
  case Family::ImplicitGemm:
    rate = 1;
    break;
  case Family::ImplicitPrecompGemm:
    rate = 1.6;
    break;
  case Family::Gemm:
    rate = 1.2;
    break;
  case Family::Fft:
    rate = 0.2 * p.filtSize();
    break;
  case Family::FftTiling:
    rate = 0.15 * p.filtSize();
    break;
  case Family::Winograd:
    rate = 2.2;
    break;
  case Family::WinogradNonfused:
    rate = p.filt[1] == 5 ? 3.0 : 2.0;
    break;
  case Family::Algo0:
    rate = 2.6; // Atomics make the non-deterministic ones the fastest.
    break;
  case Family::Algo1:
    rate = 1.3;
    break;
  case Family::Algo3:
    rate = 2.4;
    break;
  case Family::Direct:
  case Family::Invalid:
    rate = 0.1;
    break;
  }
  if (tensorOps)
    rate *= 4;
  return float(0.005 + macs / (rate * 2e9));
}

/// The heuristic list of cudnnGet*Algorithm_v7: every algorithm once with
/// FMA math (or the descriptor's math type), a tensor-op entry for the
/// GEMM-like ones on FLOAT/HALF/BFLOAT16 (the real list reports them for
/// Hopper whatever the descriptor asks for, so callers filter on mathType),
/// supported ones first by modeled time, then the unsupported with
/// CUDNN_STATUS_NOT_SUPPORTED and time -1.
template <typename Perf, typename Algo>
int algorithmList(Kind kind, const Problem &p, cudnnMathType_t math,
                  int requested, Perf *results) {
  std::vector<Perf> ok, bad;
  cudnnMathType_t plain =
      math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  for (int algo = 0; algo < algoCount(kind); ++algo) {
    std::string why = unsupportedBecause(kind, algo, p);
    for (int tensorOps = 0; tensorOps < 2; ++tensorOps) {
      Family f = familyOf(kind, algo);
      if (tensorOps && (p.type == CUDNN_DATA_DOUBLE ||
                        !(f == Family::ImplicitPrecompGemm ||
                          f == Family::Algo1 || f == Family::Algo0)))
        continue;
      Perf perf;
      std::memset(&perf, 0, sizeof perf);
      perf.algo = Algo(algo);
      perf.determinism = deterministic(kind, algo) ? CUDNN_DETERMINISTIC
                                                   : CUDNN_NON_DETERMINISTIC;
      perf.mathType = tensorOps ? CUDNN_TENSOR_OP_MATH : plain;
      if (why.empty()) {
        perf.status = CUDNN_STATUS_SUCCESS;
        perf.time = modeledTime(kind, algo, p, tensorOps);
        perf.memory = workspaceBytes(kind, algo, p);
        ok.push_back(perf);
      } else if (!tensorOps) {
        perf.status = CUDNN_STATUS_NOT_SUPPORTED;
        perf.time = -1;
        perf.memory = 0;
        bad.push_back(perf);
      }
    }
  }
  std::stable_sort(ok.begin(), ok.end(), [](const Perf &a, const Perf &b) {
    return a.time < b.time;
  });
  ok.insert(ok.end(), bad.begin(), bad.end());
  int count = std::min<int>(requested, int(ok.size()));
  std::copy(ok.begin(), ok.begin() + count, results);
  return count;
}

//===----------------------------------------------------------------------===//
// The computation
//===----------------------------------------------------------------------===//

/// Rounds a float to TF32 (8-bit exponent, 10-bit mantissa) to nearest even.
double roundTf32(double value) {
  float f = float(value);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {
    bits += 0xfffu + ((bits >> 13) & 1);
    bits &= ~0x1fffu;
  }
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Reads a tensor of |dims| (N or K, C, spatial...) at |strides| into a
/// packed row-major array of doubles, reversing the spatial indices when
/// |flip| (a true convolution's filter).
std::vector<double> gather(const void *base, cudnnDataType_t type,
                           const std::vector<int> &dims,
                           const std::vector<int64_t> &strides, bool flip,
                           bool tf32) {
  size_t rank = dims.size();
  int64_t inner = dims[rank - 1], total = 1;
  for (int d : dims)
    total *= d;
  std::vector<double> out(static_cast<size_t>(total));
  parallelFor(total / inner, [&](int64_t row) {
    int64_t offset = 0, rest = row;
    for (size_t i = rank - 1; i-- > 0;) {
      int64_t index = rest % dims[i];
      rest /= dims[i];
      if (flip && i >= 2)
        index = dims[i] - 1 - index;
      offset += index * strides[i];
    }
    double *dst = out.data() + row * inner;
    for (int64_t j = 0; j < inner; ++j) {
      int64_t index = flip ? inner - 1 - j : j;
      double v = loadElement(base, offset + index * strides[rank - 1], type);
      dst[j] = tf32 ? roundTf32(v) : v;
    }
  });
  return out;
}

/// Writes alpha * values + beta * old into the strided tensor (the old
/// value is not read when beta == 0, so NaN there does not survive).
void scatter(void *base, cudnnDataType_t type, const std::vector<int> &dims,
             const std::vector<int64_t> &strides, bool flip,
             const std::vector<double> &values, double alpha, double beta) {
  size_t rank = dims.size();
  int64_t inner = dims[rank - 1], total = 1;
  for (int d : dims)
    total *= d;
  parallelFor(total / inner, [&](int64_t row) {
    int64_t offset = 0, rest = row;
    for (size_t i = rank - 1; i-- > 0;) {
      int64_t index = rest % dims[i];
      rest /= dims[i];
      if (flip && i >= 2)
        index = dims[i] - 1 - index;
      offset += index * strides[i];
    }
    const double *src = values.data() + row * inner;
    for (int64_t j = 0; j < inner; ++j) {
      int64_t index = flip ? inner - 1 - j : j;
      int64_t at = offset + index * strides[rank - 1];
      double v = alpha * src[j];
      if (beta != 0)
        v += beta * loadElement(base, at, type);
      storeElement(base, at, type, v);
    }
  });
}

/// The output positions o in [0, outExtent) whose input position
/// o * stride + offset lies in [0, inExtent): [*lo, *hi).
void validRange(int64_t offset, int64_t stride, int64_t inExtent,
                int64_t outExtent, int64_t *lo, int64_t *hi) {
  int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = inExtent - 1 - offset; // o * stride <= last
  int64_t end = last < 0 ? 0 : last / stride + 1;
  *lo = std::min(first, outExtent);
  *hi = std::max(*lo, std::min(end, outExtent));
}

/// y[n][k][o] = sum over the group's c and the filter taps of
/// w[k][c][t] * x[n][c][o * stride - pad + t * dilation], all packed.
std::vector<double> forward(const Problem &p, const std::vector<double> &x,
                            const std::vector<double> &w) {
  const int64_t ID = p.in[0], IH = p.in[1], IW = p.in[2];
  const int64_t OD = p.out[0], OH = p.out[1], OW = p.out[2];
  const int64_t T = p.filt[0], R = p.filt[1], S = p.filt[2];
  std::vector<double> y(size_t(p.n * p.k * p.outSize()), 0.0);
  std::vector<int64_t> lo(S), hi(S), off(S);
  for (int64_t s = 0; s < S; ++s) {
    off[s] = s * p.dil[2] - p.pad[2];
    validRange(off[s], p.stride[2], IW, OW, &lo[s], &hi[s]);
  }
  const int64_t sw = p.stride[2];
  parallelFor(p.n * p.k * OD, [&](int64_t task) {
    int64_t od = task % OD, nk = task / OD;
    int64_t k = nk % p.k, n = nk / p.k, g = k / p.kg();
    double *yPlane = y.data() + ((n * p.k + k) * OD + od) * OH * OW;
    for (int64_t cg = 0; cg < p.cg(); ++cg) {
      int64_t c = g * p.cg() + cg;
      for (int64_t t = 0; t < T; ++t) {
        int64_t id = od * p.stride[0] - p.pad[0] + t * p.dil[0];
        if (id < 0 || id >= ID)
          continue;
        const double *xPlane = x.data() + ((n * p.c + c) * ID + id) * IH * IW;
        const double *wTap = w.data() + ((k * p.cg() + cg) * T + t) * R * S;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t oh = 0; oh < OH; ++oh) {
            int64_t ih = oh * p.stride[1] - p.pad[1] + r * p.dil[1];
            if (ih < 0 || ih >= IH)
              continue;
            const double *xRow = xPlane + ih * IW;
            double *yRow = yPlane + oh * OW;
            for (int64_t s = 0; s < S; ++s) {
              double wv = wTap[r * S + s];
              const int64_t o = off[s];
              for (int64_t ow = lo[s]; ow < hi[s]; ++ow)
                yRow[ow] += wv * xRow[ow * sw + o];
            }
          }
      }
    }
  });
  return y;
}

/// dx[n][c][i] = sum over the group's k and the taps that read i of
/// w[k][c][t] * dy[n][k][o]: forward's adjoint, one (n, c) plane per task.
std::vector<double> backwardData(const Problem &p,
                                 const std::vector<double> &dy,
                                 const std::vector<double> &w) {
  const int64_t ID = p.in[0], IH = p.in[1], IW = p.in[2];
  const int64_t OD = p.out[0], OH = p.out[1], OW = p.out[2];
  const int64_t T = p.filt[0], R = p.filt[1], S = p.filt[2];
  std::vector<double> dx(size_t(p.n * p.c * p.inSize()), 0.0);
  std::vector<int64_t> lo(S), hi(S), off(S);
  for (int64_t s = 0; s < S; ++s) {
    off[s] = s * p.dil[2] - p.pad[2];
    validRange(off[s], p.stride[2], IW, OW, &lo[s], &hi[s]);
  }
  const int64_t sw = p.stride[2];
  parallelFor(p.n * p.c, [&](int64_t task) {
    int64_t c = task % p.c, n = task / p.c;
    int64_t g = c / p.cg(), cg = c % p.cg();
    double *dxPlane = dx.data() + (n * p.c + c) * p.inSize();
    for (int64_t kk = 0; kk < p.kg(); ++kk) {
      int64_t k = g * p.kg() + kk;
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t t = 0; t < T; ++t) {
          int64_t id = od * p.stride[0] - p.pad[0] + t * p.dil[0];
          if (id < 0 || id >= ID)
            continue;
          const double *wTap = w.data() + ((k * p.cg() + cg) * T + t) * R * S;
          const double *dyPlane =
              dy.data() + ((n * p.k + k) * OD + od) * OH * OW;
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t r = 0; r < R; ++r) {
              int64_t ih = oh * p.stride[1] - p.pad[1] + r * p.dil[1];
              if (ih < 0 || ih >= IH)
                continue;
              double *dxRow = dxPlane + (id * IH + ih) * IW;
              const double *dyRow = dyPlane + oh * OW;
              for (int64_t s = 0; s < S; ++s) {
                double wv = wTap[r * S + s];
                const int64_t o = off[s];
                for (int64_t ow = lo[s]; ow < hi[s]; ++ow)
                  dxRow[ow * sw + o] += wv * dyRow[ow];
              }
            }
        }
    }
  });
  return dx;
}

/// dw[k][c][t] = sum over n and o of dy[n][k][o] * x[n][c][o*stride - pad +
/// t*dilation], one (k, c) filter slice per task.
std::vector<double> backwardFilter(const Problem &p,
                                   const std::vector<double> &x,
                                   const std::vector<double> &dy) {
  const int64_t ID = p.in[0], IH = p.in[1], IW = p.in[2];
  const int64_t OD = p.out[0], OH = p.out[1], OW = p.out[2];
  const int64_t T = p.filt[0], R = p.filt[1], S = p.filt[2];
  std::vector<double> dw(size_t(p.k * p.cg() * p.filtSize()), 0.0);
  std::vector<int64_t> lo(S), hi(S), off(S);
  for (int64_t s = 0; s < S; ++s) {
    off[s] = s * p.dil[2] - p.pad[2];
    validRange(off[s], p.stride[2], IW, OW, &lo[s], &hi[s]);
  }
  const int64_t sw = p.stride[2];
  parallelFor(p.k * p.cg(), [&](int64_t task) {
    int64_t cg = task % p.cg(), k = task / p.cg();
    int64_t c = (k / p.kg()) * p.cg() + cg;
    double *dwSlice = dw.data() + task * p.filtSize();
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t t = 0; t < T; ++t) {
          int64_t id = od * p.stride[0] - p.pad[0] + t * p.dil[0];
          if (id < 0 || id >= ID)
            continue;
          const double *xPlane = x.data() + ((n * p.c + c) * ID + id) * IH * IW;
          const double *dyPlane =
              dy.data() + ((n * p.k + k) * OD + od) * OH * OW;
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t r = 0; r < R; ++r) {
              int64_t ih = oh * p.stride[1] - p.pad[1] + r * p.dil[1];
              if (ih < 0 || ih >= IH)
                continue;
              const double *xRow = xPlane + ih * IW;
              const double *dyRow = dyPlane + oh * OW;
              double *tap = dwSlice + (t * R + r) * S;
              for (int64_t s = 0; s < S; ++s) {
                const int64_t o = off[s];
                double sum = 0;
                for (int64_t ow = lo[s]; ow < hi[s]; ++ow)
                  sum += dyRow[ow] * xRow[ow * sw + o];
                tap[s] += sum;
              }
            }
        }
  });
  return dw;
}

/// What one convolution call hands to its stream.
struct Operands {
  const void *x = nullptr; // x (forward, backward filter) or dy
  const void *w = nullptr; // w (forward, backward data) or dy
  void *out = nullptr;     // y, dx or dw
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  double alpha = 1, beta = 0;
};

/// The checks and the enqueue shared by the three convolutions.
cudnnStatus_t run(Kind kind, const char *call, cudnnHandle_t handle,
                  const void *alpha, const void *beta,
                  cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                  cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
                  int algo, void *workspace, size_t workspaceSize,
                  const void *in0, const void *in1, void *out) {
  if (!handle || !alpha || !beta)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "handle, alpha or beta is null");
  auto p = std::make_shared<Problem>();
  if (cudnnStatus_t s = describe(kind, call, x, w, conv, y, p.get()))
    return s;
  if (algo < 0 || algo >= algoCount(kind))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "algorithm " + std::to_string(algo) + " is not valid");
  std::string why = unsupportedBecause(kind, algo, *p);
  if (!why.empty())
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "algorithm " + std::to_string(algo) + ": " + why);
  size_t required = workspaceBytes(kind, algo, *p);
  if (workspaceSize < required)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "workspace of " + std::to_string(workspaceSize) +
                      " bytes, algorithm " + std::to_string(algo) + " needs " +
                      std::to_string(required));
  size_t es = elementSize(p->type);
  size_t xBytes = extentBytes(p->xDims, p->xStrides, es);
  size_t yBytes = extentBytes(p->yDims, p->yStrides, es);
  size_t wBytes = extentBytes(p->wDims, p->wStrides, es);
  struct Range {
    const void *pointer;
    size_t bytes;
    const char *name;
  };
  std::vector<Range> ranges;
  switch (kind) {
  case Kind::Forward:
    ranges = {{in0, xBytes, "x"}, {in1, wBytes, "w"}, {out, yBytes, "y"}};
    break;
  case Kind::BackwardData:
    ranges = {{in0, yBytes, "dy"}, {in1, wBytes, "w"}, {out, xBytes, "dx"}};
    break;
  case Kind::BackwardFilter:
    ranges = {{in0, xBytes, "x"}, {in1, yBytes, "dy"}, {out, wBytes, "dw"}};
    break;
  }
  if (required > 0)
    ranges.push_back({workspace, required, "workSpace"});
  for (const Range &r : ranges)
    if (cudnnStatus_t s = checkOperand(call, r.pointer, r.bytes, r.name))
      return s;
  double a = readScale(alpha, p->type), b = readScale(beta, p->type);
  std::string label = call;
  CUresult result =
      enqueue(handle->stream, label, [=](std::string *message) -> CUresult {
        // Stream order: an operand freed by earlier work on this stream
        // would fault on a GPU.
        for (const Range &r : ranges) {
          std::string fault;
          if (!checkDeviceRange(r.pointer, r.bytes, r.name, &fault)) {
            *message = label + ": " + fault;
            return CUDA_ERROR_ILLEGAL_ADDRESS;
          }
        }
        const Problem &q = *p;
        switch (kind) {
        case Kind::Forward: {
          auto xs = gather(in0, q.type, q.xDims, q.xStrides, false, q.tf32);
          auto ws = gather(in1, q.type, q.wDims, q.wStrides, q.flip, q.tf32);
          scatter(out, q.type, q.yDims, q.yStrides, false, forward(q, xs, ws),
                  a, b);
          break;
        }
        case Kind::BackwardData: {
          auto dys = gather(in0, q.type, q.yDims, q.yStrides, false, q.tf32);
          auto ws = gather(in1, q.type, q.wDims, q.wStrides, q.flip, q.tf32);
          scatter(out, q.type, q.xDims, q.xStrides, false,
                  backwardData(q, dys, ws), a, b);
          break;
        }
        case Kind::BackwardFilter: {
          auto xs = gather(in0, q.type, q.xDims, q.xStrides, false, q.tf32);
          auto dys = gather(in1, q.type, q.yDims, q.yStrides, false, q.tf32);
          // The gradient of a flipped filter is the flipped gradient.
          scatter(out, q.type, q.wDims, q.wStrides, q.flip,
                  backwardFilter(q, xs, dys), a, b);
          break;
        }
        }
        return CUDA_SUCCESS;
      });
  if (result != CUDA_SUCCESS)
    return reject(CUDNN_STATUS_EXECUTION_FAILED, call,
                  "the stream refused the work (CUresult " +
                      std::to_string(int(result)) + ")");
  return CUDNN_STATUS_SUCCESS;
}

template <typename Perf, typename Algo>
cudnnStatus_t
getAlgorithms(Kind kind, const char *call, cudnnHandle_t handle,
              cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
              cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
              int requested, int *returned, Perf *results) {
  if (!handle || !returned || !results)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "handle, returnedAlgoCount or perfResults is null");
  if (requested <= 0)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "requestedAlgoCount " + std::to_string(requested) +
                      " is not positive");
  Problem p;
  if (cudnnStatus_t s = describe(kind, call, x, w, conv, y, &p))
    return s;
  *returned =
      algorithmList<Perf, Algo>(kind, p, conv->mathType, requested, results);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t getWorkspace(Kind kind, const char *call, cudnnHandle_t handle,
                           cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                           cudnnConvolutionDescriptor_t conv,
                           cudnnTensorDescriptor_t y, int algo, size_t *bytes) {
  if (!handle || !bytes)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "handle or sizeInBytes is null");
  Problem p;
  if (cudnnStatus_t s = describe(kind, call, x, w, conv, y, &p))
    return s;
  if (algo < 0 || algo >= algoCount(kind))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "algorithm " + std::to_string(algo) + " is not valid");
  std::string why = unsupportedBecause(kind, algo, p);
  if (!why.empty())
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "algorithm " + std::to_string(algo) + ": " + why);
  *bytes = workspaceBytes(kind, algo, p);
  return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle,
                                                          int *count) {
  if (!handle || !count)
    return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle,
                                                 int *count) {
  if (!handle || !count)
    return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                   int *count) {
  if (!handle || !count)
    return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, const int requested, int *returned,
    cudnnConvolutionFwdAlgoPerf_t *results) {
  return getAlgorithms<cudnnConvolutionFwdAlgoPerf_t,
                       cudnnConvolutionFwdAlgo_t>(
      Kind::Forward, "cudnnGetConvolutionForwardAlgorithm_v7", handle, x, w,
      conv, y, requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *results) {
  return getAlgorithms<cudnnConvolutionBwdDataAlgoPerf_t,
                       cudnnConvolutionBwdDataAlgo_t>(
      Kind::BackwardData, "cudnnGetConvolutionBackwardDataAlgorithm_v7", handle,
      dx, w, conv, dy, requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *results) {
  return getAlgorithms<cudnnConvolutionBwdFilterAlgoPerf_t,
                       cudnnConvolutionBwdFilterAlgo_t>(
      Kind::BackwardFilter, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
      handle, x, dw, conv, dy, requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
    size_t *bytes) {
  return getWorkspace(Kind::Forward, "cudnnGetConvolutionForwardWorkspaceSize",
                      handle, x, w, conv, y, int(algo), bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, cudnnConvolutionBwdDataAlgo_t algo,
    size_t *bytes) {
  return getWorkspace(Kind::BackwardData,
                      "cudnnGetConvolutionBackwardDataWorkspaceSize", handle,
                      dx, w, conv, dy, int(algo), bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, cudnnConvolutionBwdFilterAlgo_t algo,
    size_t *bytes) {
  return getWorkspace(Kind::BackwardFilter,
                      "cudnnGetConvolutionBackwardFilterWorkspaceSize", handle,
                      x, dw, conv, dy, int(algo), bytes);
}

cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                        const cudnnTensorDescriptor_t xDesc, const void *x,
                        const cudnnFilterDescriptor_t wDesc, const void *w,
                        const cudnnConvolutionDescriptor_t convDesc,
                        cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                        size_t workSpaceSizeInBytes, const void *beta,
                        const cudnnTensorDescriptor_t yDesc, void *y) {
  return run(Kind::Forward, "cudnnConvolutionForward", handle, alpha, beta,
             xDesc, wDesc, convDesc, yDesc, int(algo), workSpace,
             workSpaceSizeInBytes, x, w, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha,
    const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
    size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx) {
  return run(Kind::BackwardData, "cudnnConvolutionBackwardData", handle, alpha,
             beta, dxDesc, wDesc, convDesc, dyDesc, int(algo), workSpace,
             workSpaceSizeInBytes, dy, w, dx);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha,
    const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
    size_t workSpaceSizeInBytes, const void *beta,
    const cudnnFilterDescriptor_t dwDesc, void *dw) {
  return run(Kind::BackwardFilter, "cudnnConvolutionBackwardFilter", handle,
             alpha, beta, xDesc, dwDesc, convDesc, dyDesc, int(algo), workSpace,
             workSpaceSizeInBytes, x, dy, dw);
}

} // extern "C"
