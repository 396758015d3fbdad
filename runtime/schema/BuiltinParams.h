//===- BuiltinParams.h - typed parameters of builtin kernels ----*- C++ -*-===//
//
// The parameters of a dlexec.builtin_kernel, one struct per template family
// (BuiltinTemplates.def), as BuiltinKernelOp::getParams reads them from the
// op's attributes. The verifier and the codegen builders both take them
// from there, so an attribute is parsed, defaulted and range-checked in one
// place. MLIR-free, like LibraryCalls.h's LibraryCallParams.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_BUILTINPARAMS_H
#define DLC_RUNTIME_SCHEMA_BUILTINPARAMS_H

#include "runtime/schema/BuiltinTemplates.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dlc::exec {

/// BuiltinFamily::Pool (all six pooling templates): the window over the
/// [H, W] plane. Each value is positive and each pad non-negative.
/// `ceil_mode` is not read: it only decides the output shape, which the
/// operands carry.
struct PoolParams {
  std::array<int64_t, 2> kernelShape = {0, 0};
  std::array<int64_t, 2> strides = {1, 1};
  /// [top, left, bottom, right].
  std::array<int64_t, 4> pads = {0, 0, 0, 0};
  std::array<int64_t, 2> dilations = {1, 1};
  /// Average pooling divides by the window clipped to the padded input
  /// rather than to the input.
  bool countIncludePad = false;
};

/// BuiltinFamily::Softmax: the axis as written (negative counts from the
/// end); the verifier checks it against x's rank.
struct SoftmaxParams {
  int64_t axis = -1;
};

/// BuiltinFamily::LayerNorm: the f32 `epsilon` (finite, >= 0), widened.
struct LayerNormParams {
  double epsilon = 0.0;
};

/// BuiltinFamily::CrossEntropy: `label_smoothing` in [0, 1].
struct CrossEntropyParams {
  float labelSmoothing = 0.0f;
};

/// BuiltinFamily::Dropout: the drop probability in [0, 1) and the Philox
/// key.
struct DropoutParams {
  float ratio = 0.0f;
  int64_t seed = 0;
};

/// BuiltinFamily::Gather and GatherElements: the axis as written; the
/// verifier checks it against the data's rank.
struct GatherParams {
  int64_t axis = 0;
};

/// BuiltinFamily::Resize: the attributes of dlgraph.resize, as
/// semantics::resizeTap (Semantics/ResizeCoordinates.h) takes them. The
/// verifier checks one scale per axis.
struct ResizeParams {
  std::string mode, coordinateTransformationMode, nearestMode;
  std::vector<double> scales;
};

/// BuiltinFamily::Attention (dlgraph.attention's attributes): the f64 score
/// scale, the causal mask, the [B, S, H, D] layout flags of Q, K, V and O
/// (runtime/schema/Semantics/Attention.h), the dropout ratio in [0, 1) with
/// its Philox key. `hasMask` is read from the input count: the mask is
/// present when the inputs hold one more than the base operands and the
/// step (present exactly when dropoutRatio > 0).
struct AttentionParams {
  double scale = 1.0;
  bool causal = false;
  std::array<bool, 4> seqFirst = {false, false, false, false};
  float dropoutRatio = 0.0f;
  int64_t seed = 0;
  bool hasMask = false;
};

/// A builtin kernel's parameters: the member of |family| is set, the others
/// keep their defaults (as in LibraryCallParams, one plain struct rather
/// than a variant, so that a reader of either finds the same shape).
struct BuiltinKernelParams {
  BuiltinFamily family = BuiltinFamily::Pool;
  PoolParams pool;                 // family Pool
  SoftmaxParams softmax;           // family Softmax
  LayerNormParams layerNorm;       // family LayerNorm
  CrossEntropyParams crossEntropy; // family CrossEntropy
  DropoutParams dropout;           // family Dropout
  GatherParams gather;             // families Gather and GatherElements
  ResizeParams resize;             // family Resize
  AttentionParams attention;       // family Attention
};

} // namespace dlc::exec

#endif
