//===- CudaDnn.cpp - convolutions of the CUDA device through cuDNN --------===//
// cuDNN tensor, filter and convolution descriptors (2-D and N-D), the
// algorithm choice (deterministic first, within the workspace, cached per
// problem) and the three convolutions, with asymmetric pads run on an
// explicitly zero-padded copy of the input.
#include "runtime/cuda/CudaDeviceImpl.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace dlrt::cuda {
namespace {

/// The cuDNN type of a library call's element type (f32, f16, bf16).
cudnnDataType_t cudnnType(ElementType type) {
  return type == ElementType::F16    ? CUDNN_DATA_HALF
         : type == ElementType::BF16 ? CUDNN_DATA_BFLOAT16
                                     : CUDNN_DATA_FLOAT;
}

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

} // namespace

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

namespace {

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

} // namespace

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

} // namespace dlrt::cuda
