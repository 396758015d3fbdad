//===- ResizeCoordinates.h - ONNX Resize source coordinates -*- C++ -*-===//
//
// The per-axis sampling rule of dlgraph.resize (see GraphOps.td; ONNX
// Resize-13, "coordinate_transformation_mode" and "nearest_mode"), shared by
// the reference interpreter and the codegen of the resize templates (which
// prints the same arithmetic as C; codegen/BuiltinKernels.cpp). MLIR-free,
// plain C++17: mode strings are std::string_view (llvm::StringRef converts).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_SEMANTICS_RESIZECOORDINATES_H
#define DLC_DIALECTS_SEMANTICS_RESIZECOORDINATES_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

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

} // namespace dlc::semantics

namespace dlc::reference {
// The names the reference interpreter and codegen used while this header
// lived in compiler/Reference; new code uses dlc::semantics.
using semantics::resizeSourceCoordinate;
using semantics::ResizeTap;
using semantics::resizeTap;
} // namespace dlc::reference

#endif // DLC_DIALECTS_SEMANTICS_RESIZECOORDINATES_H
