//===- Spectral.cpp - ONNX DFT, STFT, windows, MelWeightMatrix -> dlgraph -===//
//
// The signal-processing ops with static sizes. A DFT of length n along an
// axis is a matmul of the signal's (real, imaginary) pairs against a
// constant [L * C, N * C'] matrix of cos/sin terms built at import (O(L N)
// work per transform instead of an FFT's O(n log n), which keeps it one
// differentiable op); STFT frames the signal with slices, weights it with
// the window and takes that DFT per frame. The windows and the mel filter
// bank depend only on their (constant) sizes and are folded to constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

/// The most elements a DFT matrix (or a folded window or filter bank) may
/// have.
constexpr int64_t kMaxSpectralMatrix = int64_t(1) << 24;

FailureOr<double> Importer::constScalar(int i, StringRef what) {
  Slot *s = input(i);
  if (!s)
    return failure();
  // Sizes and edges are read at import, as Clip bounds and Resize scales
  // are: an f32 initializer gives its initial value.
  if (!s->constant || s->constant.getNumElements() != 1)
    return nodeError() << what << " (input '" << node->input(i)
                       << "') must be a constant scalar (an initializer, a "
                          "Constant or a foldable shape computation)"
                       << constantInputHint(i);
  Type et = s->constant.getElementType();
  if (isa<FloatType>(et))
    return (*s->constant.getValues<APFloat>().begin()).convertToDouble();
  if (et.isInteger(1))
    return nodeError() << what << " (input '" << node->input(i)
                       << "') must be a number, not a bool";
  return (double)intValues(s->constant).front();
}

/// The output element type of attribute output_datatype (a float type).
FailureOr<Type> Importer::floatOutputType() {
  int64_t dt = attrInt("output_datatype", onnx::TensorProto_DataType_FLOAT);
  if (attrFailed)
    return failure();
  Type et = elementTypeFor(builder, (int32_t)dt);
  if (!et || !isa<FloatType>(et))
    return nodeError() << "output_datatype " << onnxTypeName((int32_t)dt)
                       << " is not supported; supported: float (f32), "
                          "double (f64), float16, bfloat16";
  return et;
}

/// A float constant of |shape| and element type |et| from doubles.
static DenseElementsAttr floatConstant(Type et, ArrayRef<int64_t> shape,
                                       ArrayRef<double> v) {
  auto ft = cast<FloatType>(et);
  SmallVector<APFloat> vals;
  for (double x : v) {
    APFloat f(x);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    vals.push_back(f);
  }
  return DenseElementsAttr::get(RankedTensorType::get(shape, et), vals);
}

//===----------------------------------------------------------------------===//
// DFT
//===----------------------------------------------------------------------===//

FailureOr<Value> Importer::dftAlong(Value x, int64_t axis, int64_t n,
                                    bool inverse, bool onesided) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  int64_t len = xt.getDimSize(axis), c = xt.getShape().back();
  bool irfft = inverse && onesided;
  // Output length along the axis and complex components per element.
  int64_t outLen = onesided && !inverse ? n / 2 + 1 : n;
  int64_t outC = irfft ? 1 : 2;
  int64_t rows = len * c, cols = outLen * outC;
  if (n < 1 || boundedNumElements({rows, cols}, kMaxSpectralMatrix) < 0)
    return nodeError() << "a DFT of length " << n << " over " << len
                       << " input elements is not supported; supported: a "
                          "[input, output] matrix of at most 2^24 elements "
                          "(the DFT is a matmul against it)";
  // K[(j, ci), (k, co)]: the weight of input element j's component ci in
  // output element k's component co; inputs past n are dropped (the
  // signal is truncated), missing ones are zeros (padded).
  std::vector<double> k(rows * cols, 0.0);
  const double twoPi = 2 * M_PI;
  for (int64_t j = 0; j < len; ++j) {
    for (int64_t o = 0; o < outLen; ++o) {
      // Input index and output index of the transform.
      int64_t in = j, out = o;
      if (irfft ? in > n / 2 : in >= n)
        continue;
      double theta = twoPi * (double)((in * out) % n) / (double)n;
      double cs = std::cos(theta), sn = std::sin(theta);
      auto at = [&](int64_t ci, int64_t co) -> double & {
        return k[(j * c + ci) * cols + o * outC + co];
      };
      if (irfft) {
        // Hermitian extension: bins 1 .. ceil(n/2) - 1 count twice.
        double w = (in == 0 || 2 * in == n) ? 1.0 : 2.0;
        at(0, 0) = w * cs / n;
        if (c == 2)
          at(1, 0) = -w * sn / n;
        continue;
      }
      if (inverse) {
        // x[o] = 1/n sum_j X[j] e^{+i theta}
        at(0, 0) = cs / n;
        at(0, 1) = sn / n;
        if (c == 2) {
          at(1, 0) = -sn / n;
          at(1, 1) = cs / n;
        }
        continue;
      }
      // X[o] = sum_j x[j] e^{-i theta}
      at(0, 0) = cs;
      at(0, 1) = -sn;
      if (c == 2) {
        at(1, 0) = sn;
        at(1, 1) = cs;
      }
    }
  }
  auto f32 = builder.getF32Type();
  Value kc = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(floatConstant(f32, {rows, cols}, k)));
  // [rest..., L, C] -> [P, L * C] @ K -> [rest..., N, C'] -> axis back.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  Value moved = x;
  if (axis != rank - 2)
    moved = gr::TransposeOp::create(builder, nodeLoc, x,
                                    builder.getDenseI64ArrayAttr(perm));
  SmallVector<int64_t> movedShape;
  for (int64_t d : perm)
    movedShape.push_back(xt.getDimSize(d));
  int64_t p = product(ArrayRef<int64_t>(movedShape).drop_back(2));
  Value flat = gr::ReshapeOp::create(
      builder, nodeLoc, RankedTensorType::get({p, rows}, f32), moved);
  Value y = gr::MatMulOp::create(builder, nodeLoc, flat, kc);
  movedShape[rank - 2] = outLen;
  movedShape[rank - 1] = outC;
  y = gr::ReshapeOp::create(builder, nodeLoc,
                            RankedTensorType::get(movedShape, f32), y);
  if (axis == rank - 2)
    return y;
  SmallVector<int64_t> inv(rank);
  for (int64_t d = 0; d < rank; ++d)
    inv[perm[d]] = d;
  return (Value)gr::TransposeOp::create(builder, nodeLoc, y,
                                        builder.getDenseI64ArrayAttr(inv));
}

LogicalResult Importer::dft() {
  bool v20 = opVersionAt("DFT", opset) >= 20;
  int64_t inverse = attrInt("inverse", 0);
  int64_t onesided = attrInt("onesided", 0);
  int64_t axis = v20 ? -2 : attrInt("axis", 1);
  if (attrFailed)
    return failure();
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  if (rank < 2 || (xt.getShape().back() != 1 && xt.getShape().back() != 2))
    return nodeError() << "input of shape " << shapeStr(xt.getShape())
                       << " is not supported; supported: [..., signal, 1] "
                          "(real) or [..., signal, 2] (complex)";
  if (v20 && hasInput(2)) {
    FailureOr<double> a = constScalar(2, "axis");
    if (failed(a))
      return failure();
    axis = (int64_t)*a;
  }
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank - 1)
    return nodeError() << "axis " << axis << " is out of range for an input "
                       << "of rank " << rank << "; supported: [" << -rank
                       << ", -2] or [0, " << rank - 2 << "]";
  int64_t len = xt.getDimSize(normalized);
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (hasInput(1)) {
    FailureOr<double> l = constScalar(1, "dft_length");
    if (failed(l))
      return failure();
    n = (int64_t)*l;
  }
  if (onesided && inverse && xt.getShape().back() != 2)
    return nodeError() << "an inverse one-sided DFT needs a complex input "
                          "([..., 2])";
  FailureOr<Value> y = dftAlong(x, normalized, n, inverse, onesided);
  if (failed(y))
    return failure();
  return define(0, *y);
}

//===----------------------------------------------------------------------===//
// STFT
//===----------------------------------------------------------------------===//

LogicalResult Importer::stft() {
  int64_t onesided = attrInt("onesided", 1);
  if (attrFailed)
    return failure();
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 3 ||
      (xt.getShape().back() != 1 && xt.getShape().back() != 2))
    return nodeError() << "signal of shape " << shapeStr(xt.getShape())
                       << " is not supported; supported: [batch, length, 1] "
                          "or [batch, length, 2]";
  FailureOr<double> stepD = constScalar(1, "frame_step");
  if (failed(stepD))
    return failure();
  int64_t step = (int64_t)*stepD;
  Value window;
  int64_t frameLen = -1;
  if (hasInput(2)) {
    if (!(window = operand(2)))
      return failure();
    auto wt = cast<RankedTensorType>(window.getType());
    if (wt.getRank() != 1)
      return nodeError() << "window of shape " << shapeStr(wt.getShape())
                         << " is not supported; supported: rank 1";
    frameLen = wt.getDimSize(0);
  }
  if (hasInput(3)) {
    FailureOr<double> l = constScalar(3, "frame_length");
    if (failed(l))
      return failure();
    if (frameLen >= 0 && frameLen != (int64_t)*l)
      return nodeError() << "frame_length " << (int64_t)*l
                         << " differs from the window's length " << frameLen;
    frameLen = (int64_t)*l;
  }
  int64_t batch = xt.getDimSize(0), len = xt.getDimSize(1),
          c = xt.getDimSize(2);
  if (frameLen < 0)
    frameLen = len;
  if (step < 1 || frameLen < 1 || frameLen > len)
    return nodeError() << "frame_step " << step << " and frame_length "
                       << frameLen << " are not supported for a signal of "
                       << len << " samples; supported: frame_step >= 1, 1 <= "
                          "frame_length <= the signal's length";
  int64_t frames = 1 + (len - frameLen) / step;
  if (frames > kMaxUnrollSteps)
    return nodeError() << frames << " frames are not supported; supported: "
                       << "at most " << kMaxUnrollSteps
                       << " (one slice per frame at import)";
  auto et = xt.getElementType();
  SmallVector<Value> parts;
  for (int64_t f = 0; f < frames; ++f) {
    Value s = gr::SliceOp::create(
        builder, nodeLoc, RankedTensorType::get({batch, frameLen, c}, et), x,
        builder.getDenseI64ArrayAttr({0, f * step, 0}),
        builder.getDenseI64ArrayAttr({1, 1, 1}));
    parts.push_back(gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get({batch, 1, frameLen, c}, et),
        s));
  }
  Value framed =
      parts.size() == 1
          ? parts.front()
          : (Value)gr::ConcatOp::create(builder, nodeLoc, parts,
                                        builder.getI64IntegerAttr(1));
  if (window) {
    Value w = gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get({frameLen, 1}, et), window);
    framed = gr::MulOp::create(builder, nodeLoc, framed, w);
  }
  if (onesided && c == 2)
    return nodeError() << "onesided = 1 needs a real signal ([batch, length, "
                          "1]); a complex signal needs onesided = 0";
  FailureOr<Value> y = dftAlong(framed, 2, frameLen, false, onesided);
  if (failed(y))
    return failure();
  return define(0, *y);
}

//===----------------------------------------------------------------------===//
// Windows and the mel filter bank (folded to constants)
//===----------------------------------------------------------------------===//

LogicalResult Importer::window() {
  StringRef op = node->op_type();
  int64_t periodic = attrInt("periodic", 1);
  FailureOr<Type> et = floatOutputType();
  if (failed(et))
    return failure();
  FailureOr<double> sizeD = constScalar(0, "size");
  if (failed(sizeD))
    return failure();
  int64_t size = (int64_t)*sizeD;
  if (size < 1 || size > kMaxSpectralMatrix)
    return nodeError() << "size " << size
                       << " is not supported; supported: 1 to 2^24";
  double denom = periodic ? (double)size : (double)(size - 1);
  std::vector<double> v(size);
  for (int64_t i = 0; i < size; ++i) {
    // A symmetric window of one sample divides 0 by 0 (as the reference).
    double a = 2 * M_PI * (double)i / denom;
    if (op == "HannWindow")
      v[i] = std::pow(std::sin(M_PI * (double)i / denom), 2);
    else if (op == "HammingWindow")
      v[i] = 25.0 / 46.0 - (1 - 25.0 / 46.0) * std::cos(a);
    else
      v[i] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
  }
  return defineConstant(0, floatConstant(*et, {size}, v));
}

LogicalResult Importer::melWeightMatrix() {
  FailureOr<Type> et = floatOutputType();
  if (failed(et))
    return failure();
  FailureOr<double> bins = constScalar(0, "num_mel_bins"),
                    dftLen = constScalar(1, "dft_length"),
                    rate = constScalar(2, "sample_rate"),
                    lower = constScalar(3, "lower_edge_hertz"),
                    upper = constScalar(4, "upper_edge_hertz");
  if (failed(bins) || failed(dftLen) || failed(rate) || failed(lower) ||
      failed(upper))
    return failure();
  int64_t numMel = (int64_t)*bins, n = (int64_t)*dftLen,
          sampleRate = (int64_t)*rate;
  int64_t numSpec = n / 2 + 1;
  if (numMel < 1 || n < 1 || sampleRate < 1 ||
      boundedNumElements({numSpec, numMel}, kMaxSpectralMatrix) < 0)
    return nodeError() << "num_mel_bins " << numMel << ", dft_length " << n
                       << " and sample_rate " << sampleRate
                       << " are not supported; supported: positive, with a "
                          "[dft_length / 2 + 1, num_mel_bins] matrix of at "
                          "most 2^24 elements";
  auto toMel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double lowMel = toMel(*lower), highMel = toMel(*upper);
  double melStep = (highMel - lowMel) / (double)(numMel + 2);
  // The filters' edges as spectrogram bins (floored, as the reference).
  SmallVector<int64_t> edges;
  for (int64_t i = 0; i < numMel + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (i * melStep + lowMel) / 2595) - 1);
    edges.push_back(
        (int64_t)std::floor((double)(n + 1) * hz / (double)sampleRate));
  }
  for (auto [i, e] : llvm::enumerate(edges))
    if (e < 0 || e > numSpec || (e == numSpec && (int64_t)i <= numMel))
      return nodeError() << "the mel filters reach spectrogram bin " << e
                         << ", outside 0 to " << numSpec - 1
                         << "; supported: edges within 0 and sample_rate / 2";
  std::vector<double> w(numSpec * numMel, 0.0);
  for (int64_t i = 0; i < numMel; ++i) {
    int64_t lo = edges[i], mid = edges[i + 1], hi = edges[i + 2];
    if (mid == lo)
      w[mid * numMel + i] = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        w[j * numMel + i] = (double)(j - lo) / (double)(mid - lo);
    for (int64_t j = mid; j < hi; ++j)
      w[j * numMel + i] = (double)(hi - j) / (double)(hi - mid);
  }
  return defineConstant(0, floatConstant(*et, {numSpec, numMel}, w));
}

ArrayRef<OpMapping> Importer::spectralOps() {
  static const OpMapping table[] = {
      {"BlackmanWindow", 17, &Importer::window},
      // Version 20 moved `axis` from an attribute to input 2.
      {"DFT", 17, &Importer::dft, 20},
      {"HammingWindow", 17, &Importer::window},
      {"HannWindow", 17, &Importer::window},
      {"MelWeightMatrix", 17, &Importer::melWeightMatrix},
      {"STFT", 17, &Importer::stft},
  };
  return table;
}
