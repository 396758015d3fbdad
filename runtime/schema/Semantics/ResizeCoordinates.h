//===- ResizeCoordinates.h - ONNX Resize source coordinates -*- C++ -*-===//
//
// The per-axis sampling rule of dlgraph.resize (see GraphOps.td; ONNX
// Resize-13, "coordinate_transformation_mode" and "nearest_mode"), shared by
// the reference interpreter and the codegen of the resize templates (which
// prints the same arithmetic as C; codegen/BuiltinKernels.cpp). MLIR-free,
// plain C++17: mode strings are std::string_view (llvm::StringRef converts).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_SEMANTICS_RESIZECOORDINATES_H
#define DLC_RUNTIME_SCHEMA_SEMANTICS_RESIZECOORDINATES_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace dlc::semantics {

/// The input elements an output index reads along one axis, with weights:
/// nearest reads i0 with weight w0 = 1 (w1 = 0); linear reads i0 and i1 with
/// w0 + w1 = 1. Indices are in [0, inLen).
struct ResizeTap {
  int64_t i0, i1;
  double w0, w1;
};

/// The input coordinate of output index |o| (ONNX Resize-13
/// coordinate_transformation_mode; |scale| is the axis's scale). As in
/// ONNX's reference implementation, the resized length in align_corners and
/// pytorch_half_pixel is the real-valued scale * inLen (equal to the output
/// length when sizes are given).
inline double resizeSourceCoordinate(std::string_view coord, int64_t o,
                                     int64_t inLen, double scale) {
  double resized = scale * (double)inLen;
  if (coord == "pytorch_half_pixel")
    return resized > 1.0 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (coord == "align_corners")
    return resized == 1.0 ? 0.0
                          : (double)o * (double)(inLen - 1) / (resized - 1.0);
  if (coord == "asymmetric")
    return o / scale;
  if (coord == "tf_half_pixel_for_nn")
    return (o + 0.5) / scale;
  return (o + 0.5) / scale - 0.5; // half_pixel
}

/// The tap of output index |o| along one axis.
inline ResizeTap resizeTap(std::string_view mode, std::string_view coord,
                           std::string_view nearest, int64_t o, int64_t inLen,
                           int64_t outLen, double scale) {
  (void)outLen;
  double x = resizeSourceCoordinate(coord, o, inLen, scale);
  auto clamp = [&](int64_t i) {
    return std::min(std::max(i, (int64_t)0), inLen - 1);
  };
  double f = std::floor(x);
  if (mode == "nearest") {
    double r;
    if (nearest == "floor")
      r = f;
    else if (nearest == "ceil")
      r = std::ceil(x);
    else if (x - f == 0.5)
      r = nearest == "round_prefer_ceil" ? f + 1 : f;
    else
      r = std::round(x);
    int64_t i = clamp((int64_t)r);
    return {i, i, 1.0, 0.0};
  }
  int64_t i0 = (int64_t)f;
  double w1 = x - f;
  return {clamp(i0), clamp(i0 + 1), 1.0 - w1, w1};
}

/// How ONNX Resize (opset 19) samples one axis, for resizeAxisWeights:
/// `mode` nearest, linear or cubic; every coordinate_transformation_mode
/// (`roiStart`/`roiEnd` are the axis's roi for tf_crop_and_resize);
/// cubic_coeff_a, exclude_outside and antialias as the attributes say.
struct ResizeAxisRule {
  std::string_view mode, coord, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double roiStart = 0.0, roiEnd = 1.0;
};

/// The interpolation weights of taps start, start + 1, ... around a source
/// coordinate whose distance past the tap left of it is |ratio| (in (0, 1]:
/// an integer coordinate counts as 1 past its left neighbour), as ONNX's
/// reference implementation defines them for |r|.mode. Antialiasing (linear
/// and cubic) stretches the kernel by 1 / min(scale, 1) and normalizes it.
/// The count n is even; the first tap is n / 2 - 1 left of the left one.
inline std::vector<double> resizeCoefficients(const ResizeAxisRule &r,
                                              double ratio, double scale) {
  if (r.mode == "nearest") {
    if (ratio == 1.0)
      return {0.0, 1.0};
    if (r.nearest == "floor")
      return {1.0, 0.0};
    if (r.nearest == "ceil")
      return {0.0, 1.0};
    bool up = r.nearest == "round_prefer_ceil" ? ratio >= 0.5 : ratio > 0.5;
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  double a = r.cubicA;
  auto cubic = [a](double x) {
    x = std::fabs(x);
    if (x <= 1)
      return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
      return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  bool isCubic = r.mode == "cubic";
  if (!r.antialias) {
    if (!isCubic)
      return {1.0 - ratio, ratio};
    return {cubic(ratio + 1), cubic(ratio), cubic(1 - ratio),
            cubic(2 - ratio)};
  }
  double s = std::min(scale, 1.0);
  double support = isCubic ? 2.0 : 1.0;
  int64_t start = (int64_t)std::floor(-support / s) + 1;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    double x = s * ((double)i - ratio);
    double v = isCubic ? cubic(x) : std::clamp(1.0 - std::fabs(x), 0.0, 1.0);
    c.push_back(v);
    sum += v;
  }
  for (double &v : c)
    v /= sum;
  return c;
}

/// ONNX Resize (opset 19) along one axis of |inLen| elements resized to
/// |outLen| with |scale|, as a row-major [outLen, inLen] matrix |w|: output
/// o is sum_i w[o * inLen + i] input[i], except where |extrapolated|[o]
/// (tf_crop_and_resize outside the input), where it is the
/// extrapolation_value and row o is 0. Taps outside the input read its edge
/// (exclude_outside drops them and renormalizes). Follows the separable
/// form of ONNX's reference implementation, coordinates in double.
inline void resizeAxisWeights(const ResizeAxisRule &r, int64_t inLen,
                              int64_t outLen, double scale,
                              std::vector<double> &w,
                              std::vector<bool> &extrapolated) {
  w.assign((size_t)(outLen * inLen), 0.0);
  extrapolated.assign((size_t)outLen, false);
  double resized = scale * (double)inLen;
  for (int64_t o = 0; o < outLen; ++o) {
    double x;
    if (r.coord == "tf_crop_and_resize") {
      double span = (r.roiEnd - r.roiStart) * (double)(inLen - 1);
      x = resized == 1.0 ? span / 2 : (double)o * span / (resized - 1.0);
      x += r.roiStart * (double)(inLen - 1);
      if (x < 0 || x > (double)(inLen - 1)) {
        extrapolated[o] = true;
        continue;
      }
    } else if (r.coord == "half_pixel_symmetric") {
      double offset = (double)inLen / 2 * (1 - (double)outLen / resized);
      x = offset + (o + 0.5) / scale - 0.5;
    } else {
      x = resizeSourceCoordinate(r.coord, o, inLen, scale);
    }
    double f = std::floor(x);
    std::vector<double> c =
        resizeCoefficients(r, x == f ? 1.0 : x - f, scale);
    int64_t n = (int64_t)c.size();
    // The n taps nearest x, the left one on a tie: for even n they start
    // n / 2 - 1 left of floor(x) (n / 2 when x is an integer, whose ratio
    // is 1).
    int64_t start = (int64_t)f - n / 2 + (x == f ? 0 : 1);
    if (r.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (start + k < 0 || start + k >= inLen)
          c[k] = 0;
        sum += c[k];
      }
      for (double &v : c)
        v /= sum == 0 ? 1.0 : sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = std::min(std::max(start + k, (int64_t)0), inLen - 1);
      w[(size_t)(o * inLen + i)] += c[k];
    }
  }
}

} // namespace dlc::semantics

#endif // DLC_RUNTIME_SCHEMA_SEMANTICS_RESIZECOORDINATES_H
