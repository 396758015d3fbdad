//===- WindowShapes.h - conv / pool / conv-transpose sizes ----*- C++ -*-===//
//
// Output sizes of sliding-window ops along one spatial axis, shared by the
// dlgraph type inference (dialects/Graph), the ONNX importer, the reference
// interpreter and the runtime's package checks. MLIR-free, plain C++17.
//
// Every function works on one spatial axis and returns std::nullopt instead
// of a size when the parameters are out of range (kernel, stride or dilation
// below 1, a negative pad), when the window does not fit the padded input,
// or when an intermediate value overflows int64, so callers can report the
// axis without asserting.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_SEMANTICS_WINDOWSHAPES_H
#define DLC_RUNTIME_SCHEMA_SEMANTICS_WINDOWSHAPES_H

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace dlc::semantics {

/// a + b, or std::nullopt when the sum overflows int64.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  if ((b > 0 && a > std::numeric_limits<int64_t>::max() - b) ||
      (b < 0 && a < std::numeric_limits<int64_t>::min() - b))
    return std::nullopt;
  return a + b;
}

/// a * b, or std::nullopt when the product overflows int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if ((a == -1 && b == std::numeric_limits<int64_t>::min()) ||
      (b == -1 && a == std::numeric_limits<int64_t>::min()))
    return std::nullopt;
  // Multiply in unsigned (wraps, no UB); with a, b != 0 and no
  // INT64_MIN * -1 the product fits exactly when dividing it back gives a.
  int64_t p = (int64_t)((uint64_t)a * (uint64_t)b);
  if (p / b != a)
    return std::nullopt;
  return p;
}

/// The extent of a dilated kernel: (kernel - 1) * dilation + 1 input
/// elements (ONNX Conv, MaxPool, AveragePool "dilations"). std::nullopt when
/// kernel or dilation is below 1 or the extent overflows.
inline std::optional<int64_t> dilatedKernelExtent(int64_t kernel,
                                                  int64_t dilation) {
  if (kernel < 1 || dilation < 1)
    return std::nullopt;
  std::optional<int64_t> scaled = checkedMul(kernel - 1, dilation);
  if (!scaled)
    return std::nullopt;
  return checkedAdd(*scaled, 1);
}

/// Output length of a convolution or pooling window along one spatial axis
/// with explicit pads (ONNX Conv-11 and MaxPool-12 / AveragePool-11
/// "output_spatial_shape" with auto_pad NOTSET):
///
///   span = in + padBegin + padEnd - ((kernel - 1) * dilation + 1)
///   out  = floor(span / stride) + 1                       (ceilMode false)
///   out  = ceil(span / stride) + 1, minus 1 when that last window would
///          start at or past in + padBegin                  (ceilMode true)
///
/// The ceil-mode correction drops a last window that starts in the right
/// padding, as PyTorch (`pooling_output_shape`) and ONNX Runtime do.
/// std::nullopt when kernel, stride or dilation is below 1, a pad is
/// negative, the dilated kernel is larger than the padded input (span < 0),
/// or an intermediate value overflows int64.
inline std::optional<int64_t> windowOutputSize(int64_t in, int64_t kernel,
                                               int64_t stride, int64_t padBegin,
                                               int64_t padEnd, int64_t dilation,
                                               bool ceilMode = false) {
  if (stride < 1 || padBegin < 0 || padEnd < 0 || in < 0)
    return std::nullopt;
  std::optional<int64_t> extent = dilatedKernelExtent(kernel, dilation);
  if (!extent)
    return std::nullopt;
  std::optional<int64_t> padded = checkedAdd(in, padBegin);
  if (padded)
    padded = checkedAdd(*padded, padEnd);
  if (!padded)
    return std::nullopt;
  int64_t span = *padded - *extent;
  if (span < 0)
    return std::nullopt;
  if (!ceilMode)
    return span / stride + 1;
  std::optional<int64_t> rounded = checkedAdd(span, stride - 1);
  if (!rounded)
    return std::nullopt;
  int64_t out = *rounded / stride + 1;
  // (out - 1) * stride <= span + stride - 1 fits, as does in + padBegin.
  if ((out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

/// Output length of a transposed convolution along one spatial axis with
/// explicit pads (ONNX ConvTranspose-11 "output_shape" formula):
///
///   out = stride * (in - 1) + outputPadding + (kernel - 1) * dilation + 1
///         - padBegin - padEnd
///
/// std::nullopt when in, kernel, stride or dilation is below 1, a pad or
/// outputPadding is negative, an intermediate overflows int64, or out < 1.
inline std::optional<int64_t>
convTransposeOutputSize(int64_t in, int64_t kernel, int64_t stride,
                        int64_t padBegin, int64_t padEnd, int64_t dilation,
                        int64_t outputPadding = 0) {
  if (in < 1 || stride < 1 || padBegin < 0 || padEnd < 0 || outputPadding < 0)
    return std::nullopt;
  std::optional<int64_t> extent = dilatedKernelExtent(kernel, dilation);
  std::optional<int64_t> full = checkedMul(stride, in - 1);
  if (!extent || !full)
    return std::nullopt;
  full = checkedAdd(*full, outputPadding);
  if (full)
    full = checkedAdd(*full, *extent);
  if (!full)
    return std::nullopt;
  int64_t out = *full - padBegin - padEnd; // all terms >= 0: no overflow
  if (out < 1)
    return std::nullopt;
  return out;
}

/// Pads {begin, end} along one spatial axis for ONNX auto_pad SAME_UPPER /
/// SAME_LOWER (ONNX Conv-11, MaxPool-12): the output length is
/// ceil(in / stride), the total padding
/// max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in), and an odd
/// total puts the extra element at the end (SAME_UPPER, |lower| false) or at
/// the beginning (SAME_LOWER). std::nullopt when kernel, stride or dilation
/// is below 1 or an intermediate overflows int64.
inline std::optional<std::pair<int64_t, int64_t>>
sameAutoPads(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
             bool lower) {
  if (stride < 1 || in < 0)
    return std::nullopt;
  std::optional<int64_t> extent = dilatedKernelExtent(kernel, dilation);
  if (!extent)
    return std::nullopt;
  int64_t out = in / stride + (in % stride != 0);
  std::optional<int64_t> covered = checkedMul(out - 1, stride);
  if (covered)
    covered = checkedAdd(*covered, *extent);
  if (!covered)
    return std::nullopt;
  int64_t total = *covered - in > 0 ? *covered - in : 0;
  int64_t begin = lower ? total - total / 2 : total / 2;
  return std::make_pair(begin, total - begin);
}

} // namespace dlc::semantics

#endif // DLC_RUNTIME_SCHEMA_SEMANTICS_WINDOWSHAPES_H
