//===- Sampling.cpp - ONNX resampling ops -> dlgraph -----------------------===//
//
// Resampling and window placement decomposed into existing dlgraph ops, so
// that gradients and lowering are those of the ops they decompose into: the
// separable form of Resize (cubic, antialiasing, half_pixel_symmetric,
// tf_crop_and_resize), one constant interpolation matrix per resized axis
// applied with dlgraph.matmul; GridSample as gathers; AffineGrid as a
// matmul; CenterCropPad as a slice and a pad; Col2Im as strided pads;
// DeformConv as bilinear gathers and a grouped matmul; RoiAlign as
// bilinear gathers from each roi's image, averaged or maximized.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/WindowShapes.h"

#include <array>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

/// A dlgraph.constant of f32 |type| holding |values| (double, rounded).
static Value f32Constant(OpBuilder &b, Location loc, RankedTensorType type,
                         ArrayRef<double> values) {
  SmallVector<float> v(values.begin(), values.end());
  return gr::ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef(v))));
}

FailureOr<Value>
Importer::resizeSeparable(Value x, ArrayRef<int64_t> shape,
                          ArrayRef<double> scales,
                          const semantics::ResizeAxisRule &rule,
                          ArrayRef<double> roi, double extrapolation) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (!xt.getElementType().isF32())
    return nodeError() << "input 0 ('" << node->input(0)
                       << "') has element type "
                       << elementTypeName(xt.getElementType())
                       << ", which is not supported with mode '" << rule.mode
                       << "', coordinate_transformation_mode '" << rule.coord
                       << "' or antialias yet; supported: float (f32)";
  int64_t rank = xt.getRank();
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = xt.getDimSize(d), out = shape[d];
    semantics::ResizeAxisRule axisRule = rule;
    if (!roi.empty()) {
      axisRule.roiStart = roi[d];
      axisRule.roiEnd = roi[rank + d];
    }
    if (boundedNumElements({in, out}, kMaxFoldElements) < 0)
      return nodeError() << "resizing axis " << d << " from " << in << " to "
                         << out << " needs a " << out << " x " << in
                         << " interpolation matrix, beyond the importer's "
                            "constant limit of "
                         << kMaxFoldElements << " elements";
    std::vector<double> w;
    std::vector<bool> extrapolated;
    semantics::resizeAxisWeights(axisRule, in, out, scales[d], w,
                                 extrapolated);
    bool extrapolates = llvm::is_contained(extrapolated, true);
    bool identity = in == out && !extrapolates;
    for (int64_t o = 0; identity && o < out; ++o)
      for (int64_t i = 0; identity && i < in; ++i)
        identity = w[o * in + i] == (o == i ? 1.0 : 0.0);
    if (identity)
      continue;
    // y viewed as [pre, in, post]; the [out, in] matrix broadcasts over pre.
    auto yt = cast<RankedTensorType>(y.getType());
    int64_t pre = product(yt.getShape().take_front(d));
    int64_t post = product(yt.getShape().drop_front(d + 1));
    Value v = reshapeIfNeeded(y, {pre, in, post});
    Value m = f32Constant(builder, nodeLoc,
                          RankedTensorType::get({out, in}, builder.getF32Type()),
                          w);
    Value r = gr::MatMulOp::create(builder, nodeLoc, m, v);
    if (extrapolates) {
      SmallVector<double> bias(out, 0.0);
      for (int64_t o = 0; o < out; ++o)
        if (extrapolated[o])
          bias[o] = extrapolation;
      r = gr::AddOp::create(
          builder, nodeLoc, r,
          f32Constant(builder, nodeLoc,
                      RankedTensorType::get({out, 1}, builder.getF32Type()),
                      bias));
    }
    SmallVector<int64_t> next(yt.getShape());
    next[d] = out;
    y = reshapeIfNeeded(r, next);
  }
  return y;
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

namespace {
/// A polynomial c0 + c1 f + c2 f^2 + c3 f^3 in the fraction f.
using Cubic = std::array<double, 4>;

Cubic polyMul(const Cubic &a, const Cubic &b) {
  Cubic r{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; i + j < 4; ++j)
      r[i + j] += a[i] * b[j];
  return r;
}

/// Keys' cubic convolution weight (a = -0.75, as GridSample's reference and
/// PyTorch use) of a tap at distance u = u0 + u1 f, |u| in [0, 2], as a
/// polynomial in f.
Cubic cubicWeight(double u0, double u1, bool near) {
  const double a = -0.75;
  Cubic u{u0, u1, 0, 0}, u2 = polyMul(u, u), u3 = polyMul(u2, u);
  Cubic r{};
  for (int i = 0; i < 4; ++i)
    r[i] = near ? (a + 2) * u3[i] - (a + 3) * u2[i]
                : a * u3[i] - 5 * a * u2[i] + 8 * a * u[i];
  r[0] += near ? 1 : -4 * a;
  return r;
}
} // namespace

LogicalResult Importer::gridSample() {
  std::string mode = attrString("mode", opset >= 20 ? "linear" : "bilinear");
  std::string padding = attrString("padding_mode", "zeros");
  int64_t alignCorners = attrInt("align_corners", 0);
  if (attrFailed)
    return failure();
  // GridSample-16 spells the modes bilinear and bicubic, 20 linear and cubic.
  if (mode == "bilinear")
    mode = "linear";
  else if (mode == "bicubic")
    mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return nodeError() << "mode '" << mode
                       << "' is not supported; supported: nearest, linear "
                          "(bilinear), cubic (bicubic)";
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return nodeError() << "padding_mode '" << padding
                       << "' is not supported; supported: zeros, border, "
                          "reflection";
  Value x = floatOperand(0), grid = x ? floatOperand(1) : Value();
  if (!grid)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  auto gt = cast<RankedTensorType>(grid.getType());
  if (!xt.getElementType().isF32() || !gt.getElementType().isF32())
    return nodeError() << "X and grid have element types "
                       << elementTypeName(xt.getElementType()) << " and "
                       << elementTypeName(gt.getElementType())
                       << "; supported: float (f32)";
  int64_t k = xt.getRank() - 2;
  if (k < 1 || gt.getRank() != k + 2 || gt.getDimSize(0) != xt.getDimSize(0) ||
      gt.getShape().back() != k)
    return nodeError() << "X " << shapeStr(xt.getShape()) << " and grid "
                       << shapeStr(gt.getShape())
                       << " do not fit: X is [N, C, D1, ..., Dk] and grid "
                          "[N, O1, ..., Ok, k] (k >= 1)";
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1);
  ArrayRef<int64_t> dims = xt.getShape().drop_front(2);
  ArrayRef<int64_t> outDims = gt.getShape().drop_front().drop_back();
  int64_t p = product(outDims), s = product(dims);
  int64_t taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  int64_t allTaps = 1;
  for (int64_t i = 0; i < k; ++i)
    allTaps *= taps;
  if (boundedNumElements({n, c, allTaps, p}) < 0 || s >= (int64_t(1) << 24))
    return nodeError() << "X " << shapeStr(xt.getShape()) << " and grid "
                       << shapeStr(gt.getShape())
                       << " are too large (input spatial size up to 2^24)";

  Type f32 = builder.getF32Type();
  auto scalar = [&](double v) {
    return splatOf(RankedTensorType::get({}, f32), v);
  };
  auto add = [&](Value a, Value b) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, b);
  };
  auto mul = [&](Value a, Value b) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, b);
  };
  auto cmp = [&](StringRef pred, Value a, Value b) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, pred, a, b);
  };
  auto select = [&](Value cond, Value a, Value b) -> Value {
    return gr::SelectOp::create(builder, nodeLoc, cond, a, b);
  };
  auto clamp = [&](Value v, double lo, double hi) -> Value {
    Value r = gr::MinOp::create(builder, nodeLoc, v, scalar(hi));
    return gr::MaxOp::create(builder, nodeLoc, r, scalar(lo));
  };
  // The taps of one axis live on axis 1 + i of [N, t0, ..., t(k-1), P].
  auto tapShape = [&](int64_t i, int64_t t) {
    SmallVector<int64_t> sh(k + 2, 1);
    sh[1 + i] = t;
    return sh;
  };
  auto tapConstant = [&](int64_t i, ArrayRef<double> v) {
    return f32Constant(builder, nodeLoc,
                       RankedTensorType::get(tapShape(i, v.size()), f32), v);
  };

  Value flatGrid = reshapeIfNeeded(grid, {n, p, k});
  Value index, weight;
  for (int64_t i = 0; i < k; ++i) {
    double len = (double)dims[i];
    // Grid component k - 1 - i addresses axis i (x, the last axis, first).
    SmallVector<int64_t> starts{0, 0, k - 1 - i}, steps{1, 1, 1};
    Value g = gr::SliceOp::create(builder, nodeLoc,
                                  RankedTensorType::get({n, p, 1}, f32),
                                  flatGrid, builder.getDenseI64ArrayAttr(starts),
                                  builder.getDenseI64ArrayAttr(steps));
    SmallVector<int64_t> coordShape(k + 2, 1);
    coordShape[0] = n;
    coordShape.back() = p;
    g = reshapeIfNeeded(g, coordShape);
    // Normalized [-1, 1] to input coordinates: the corner pixels' centres
    // (align_corners) or their outer edges.
    double lo = alignCorners ? 0.0 : -0.5;
    double hi = alignCorners ? len - 1 : len - 0.5;
    Value xi = add(mul(g, scalar((hi - lo) / 2)), scalar((hi + lo) / 2));
    if (mode == "nearest") // half to even, as PyTorch rounds
      xi = gr::RoundOp::create(builder, nodeLoc, xi);
    // Reflection about lo and hi until inside: with r = hi - lo and
    // m = (x - lo) mod 2r, hi - |m - r|.
    auto reflect = [&](Value v) -> Value {
      double range = hi - lo;
      if (range == 0)
        return add(mul(v, scalar(0)), scalar(lo));
      Value t = add(v, scalar(-lo));
      Value q = gr::FloorOp::create(
          builder, nodeLoc, mul(t, scalar(1 / (2 * range))));
      Value m = add(t, mul(q, scalar(-2 * range)));
      Value d = gr::AbsOp::create(builder, nodeLoc, add(m, scalar(-range)));
      return add(scalar(hi), mul(d, scalar(-1)));
    };
    auto outside = [&](Value v, Value moved) {
      return select(cmp("lt", v, scalar(lo)), moved,
                    select(cmp("gt", v, scalar(hi)), moved, v));
    };
    if (padding == "border")
      xi = outside(xi, clamp(xi, 0, len - 1));
    else if (padding == "reflection")
      xi = outside(xi, reflect(xi));
    Value base = mode == "nearest" ? xi : gr::FloorOp::create(builder,
                                                              nodeLoc, xi);
    Value w;
    if (mode == "linear") {
      Value f = add(xi, mul(base, scalar(-1)));
      w = add(tapConstant(i, {1, 0}), mul(tapConstant(i, {-1, 1}), f));
    } else if (mode == "cubic") {
      Value f = add(xi, mul(base, scalar(-1)));
      Cubic tw[4] = {cubicWeight(1, 1, false), cubicWeight(0, 1, true),
                     cubicWeight(1, -1, true), cubicWeight(2, -1, false)};
      Value fp = f;
      w = tapConstant(i, {tw[0][0], tw[1][0], tw[2][0], tw[3][0]});
      for (int e = 1; e < 4; ++e) {
        if (e > 1)
          fp = mul(fp, f);
        w = add(w, mul(tapConstant(i, {tw[0][e], tw[1][e], tw[2][e],
                                      tw[3][e]}),
                       fp));
      }
    }
    SmallVector<double> offsets =
        mode == "nearest" ? SmallVector<double>{0}
        : mode == "linear" ? SmallVector<double>{0, 1}
                           : SmallVector<double>{-1, 0, 1, 2};
    Value tap = add(base, tapConstant(i, offsets));
    // Taps outside the input: 0 (zeros), the edge (border), or reflected.
    if (padding == "zeros") {
      Value zero = scalar(0);
      Value keep = w ? w : scalar(1);
      w = select(cmp("lt", tap, scalar(0)), zero,
                 select(cmp("gt", tap, scalar(len - 1)), zero, keep));
    } else if (padding == "reflection") {
      tap = outside(tap, reflect(tap));
    }
    tap = clamp(tap, 0, len - 1);
    double stride = (double)product(dims.drop_front(i + 1));
    Value part = stride == 1 ? tap : mul(tap, scalar(stride));
    index = index ? add(index, part) : part;
    if (w)
      weight = weight ? mul(weight, w) : w;
  }
  // One gather of every tap: [N, C, S] at [N, C, T * P].
  index = gr::CastOp::create(
      builder, nodeLoc,
      RankedTensorType::get(cast<RankedTensorType>(index.getType()).getShape(),
                            builder.getI64Type()),
      index);
  index = reshapeIfNeeded(index, {n, 1, allTaps * p});
  index = gr::BroadcastToOp::create(
      builder, nodeLoc,
      RankedTensorType::get({n, c, allTaps * p}, builder.getI64Type()), index);
  Value data = reshapeIfNeeded(x, {n, c, s});
  Value y = gr::GatherElementsOp::create(builder, nodeLoc, data, index,
                                         builder.getI64IntegerAttr(2));
  y = reshapeIfNeeded(y, {n, c, allTaps, p});
  if (weight) {
    // Broadcast the weights to [N, t0, ..., P] (a nearest axis has none).
    SmallVector<int64_t> full(k + 2, 1);
    full[0] = n;
    full.back() = p;
    for (int64_t i = 0; i < k; ++i)
      full[1 + i] = taps;
    auto wt = cast<RankedTensorType>(weight.getType());
    if (wt.getShape() != ArrayRef<int64_t>(full))
      weight = gr::BroadcastToOp::create(builder, nodeLoc, wt.clone(full),
                                         weight);
    y = mul(y, reshapeIfNeeded(weight, {n, 1, allTaps, p}));
  }
  y = reduceOver<gr::ReduceSumOp>(y, {2}, false);
  SmallVector<int64_t> outShape{n, c};
  outShape.append(outDims.begin(), outDims.end());
  return define(0, reshapeIfNeeded(y, outShape));
}

//===----------------------------------------------------------------------===//
// AffineGrid
//===----------------------------------------------------------------------===//

LogicalResult Importer::affineGrid() {
  int64_t alignCorners = attrInt("align_corners", 0);
  if (attrFailed)
    return failure();
  Value theta = floatOperand(0);
  if (!theta)
    return failure();
  auto tt = cast<RankedTensorType>(theta.getType());
  auto size = constInts(1, "size");
  if (failed(size))
    return failure();
  int64_t k = (int64_t)size->size() - 2;
  if (!tt.getElementType().isF32())
    return nodeError() << "theta has element type "
                       << elementTypeName(tt.getElementType())
                       << "; supported: float (f32)";
  if ((k != 2 && k != 3) || tt.getRank() != 3 ||
      tt.getDimSize(0) != (*size)[0] || tt.getDimSize(1) != k ||
      tt.getDimSize(2) != k + 1)
    return nodeError() << "theta " << shapeStr(tt.getShape()) << " and size "
                       << shapeStr(*size)
                       << " do not fit: theta is [N, 2, 3] with size [N, C, "
                          "H, W], or [N, 3, 4] with size [N, C, D, H, W]";
  ArrayRef<int64_t> dims = ArrayRef<int64_t>(*size).drop_front(2);
  for (int64_t d : dims)
    if (d <= 0)
      return nodeError() << "size " << shapeStr(*size)
                         << " has a spatial size below 1";
  int64_t points = boundedNumElements(dims, kMaxFoldElements / (k + 1));
  if (points < 0)
    return nodeError() << "size " << shapeStr(*size)
                       << " gives a base grid beyond the importer's constant "
                          "limit of "
                       << kMaxFoldElements << " elements";
  // The base grid [points, k + 1]: (x, y[, z], 1) per output point, x along
  // the last axis; coordinates are pixel centres in [-1, 1] (the corner
  // pixels' centres at +-1 with align_corners).
  auto coord = [&](int64_t i, int64_t len) {
    if (alignCorners)
      return len == 1 ? -1.0 : -1.0 + 2.0 * (double)i / (double)(len - 1);
    return -1.0 + (2.0 * (double)i + 1.0) / (double)len;
  };
  std::vector<double> base;
  base.reserve(points * (k + 1));
  SmallVector<int64_t> at(k, 0);
  for (int64_t q = 0; q < points; ++q) {
    for (int64_t a = k - 1; a >= 0; --a)
      base.push_back(coord(at[a], dims[a]));
    base.push_back(1.0);
    for (int64_t a = k - 1; a >= 0 && ++at[a] == dims[a]; --a)
      at[a] = 0;
  }
  Type f32 = builder.getF32Type();
  Value b = f32Constant(builder, nodeLoc,
                        RankedTensorType::get({points, k + 1}, f32), base);
  // grid[n] = base theta[n]^T: [points, k + 1] x [N, k + 1, k].
  Value thetaT = gr::TransposeOp::create(
      builder, nodeLoc, theta, builder.getDenseI64ArrayAttr({0, 2, 1}));
  Value g = gr::MatMulOp::create(builder, nodeLoc, b, thetaT);
  SmallVector<int64_t> shape{(*size)[0]};
  shape.append(dims.begin(), dims.end());
  shape.push_back(k);
  return define(0, reshapeIfNeeded(g, shape));
}

//===----------------------------------------------------------------------===//
// CenterCropPad, Col2Im
//===----------------------------------------------------------------------===//

LogicalResult Importer::centerCropPad() {
  SmallVector<int64_t> axes = attrInts("axes", {});
  if (attrFailed)
    return failure();
  // Any element type: a slice and a pad only move elements.
  Value x = operand(0, /*requireF32=*/false);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  auto shape = constInts(1, "shape");
  if (failed(shape))
    return failure();
  if (failed(normalizeAxes(axes, rank)))
    return failure();
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (shape->size() != axes.size())
    return nodeError() << "shape " << shapeStr(*shape) << " has "
                       << shape->size() << " values for " << axes.size()
                       << " axes";
  // Per axis: crop (in - out) / 2 elements before (the odd one after), or
  // pad (out - in) / 2 zeros before.
  SmallVector<int64_t> cropStart(rank, 0), cropShape(xt.getShape());
  SmallVector<int64_t> padStart(rank, 0), outShape(xt.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t d = axes[i], in = xt.getDimSize(d), out = (*shape)[i];
    if (out < 1 || out > kMaxElements)
      return nodeError() << "shape " << shapeStr(*shape)
                         << " must be positive";
    outShape[d] = out;
    if (out < in) {
      cropStart[d] = (in - out) / 2;
      cropShape[d] = out;
    } else {
      padStart[d] = (out - in) / 2;
    }
  }
  if (boundedNumElements(outShape) < 0)
    return nodeError() << "shape " << shapeStr(*shape) << " is too large";
  SmallVector<int64_t> ones(rank, 1);
  Value y = x;
  if (ArrayRef<int64_t>(cropShape) != xt.getShape())
    y = gr::SliceOp::create(builder, nodeLoc, xt.clone(cropShape), y,
                            builder.getDenseI64ArrayAttr(cropStart),
                            builder.getDenseI64ArrayAttr(ones));
  if (outShape != cropShape)
    y = gr::PadOp::create(builder, nodeLoc, xt.clone(outShape), y,
                          builder.getDenseI64ArrayAttr(padStart),
                          builder.getDenseI64ArrayAttr(ones),
                          builder.getF64FloatAttr(0.0));
  return define(0, y);
}

LogicalResult Importer::col2Im() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto image = constInts(1, "image_shape");
  if (failed(image))
    return failure();
  auto block = constInts(2, "block_shape");
  if (failed(block))
    return failure();
  size_t k = image->size();
  SmallVector<int64_t> dilations = attrInts("dilations", SmallVector<int64_t>(k, 1));
  SmallVector<int64_t> strides = attrInts("strides", SmallVector<int64_t>(k, 1));
  SmallVector<int64_t> pads = attrInts("pads", SmallVector<int64_t>(2 * k, 0));
  if (attrFailed)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (k < 1 || block->size() != k || dilations.size() != k ||
      strides.size() != k || pads.size() != 2 * k || xt.getRank() != 3)
    return nodeError() << "expects input [N, C * prod(block_shape), L], and "
                       << "image_shape, block_shape, dilations, strides of "
                       << "one length k and pads of 2k; got input "
                       << shapeStr(xt.getShape()) << ", image_shape "
                       << shapeStr(*image) << ", block_shape "
                       << shapeStr(*block);
  int64_t kernelSize = 1, blocks = 1;
  SmallVector<int64_t> counts, padded;
  for (size_t i = 0; i < k; ++i) {
    std::optional<int64_t> nb = semantics::windowOutputSize(
        (*image)[i], (*block)[i], strides[i], pads[i], pads[i + k],
        dilations[i]);
    if ((*image)[i] < 1 || (*block)[i] < 1 || dilations[i] < 1 || !nb ||
        *nb < 1)
      return nodeError() << "image_shape " << shapeStr(*image)
                         << ", block_shape " << shapeStr(*block)
                         << ", dilations, strides and pads give no block";
    counts.push_back(*nb);
    padded.push_back((*image)[i] + pads[i] + pads[i + k]);
    kernelSize *= (*block)[i];
    blocks *= *nb;
  }
  int64_t n = xt.getDimSize(0), ck = xt.getDimSize(1);
  if (ck % kernelSize != 0 || xt.getDimSize(2) != blocks ||
      boundedNumElements(padded) < 0 ||
      boundedNumElements({n, ck / kernelSize, product(padded)}) < 0 ||
      kernelSize > 4096)
    return nodeError() << "input " << shapeStr(xt.getShape())
                       << " does not fit: expected [N, C * " << kernelSize
                       << ", " << blocks
                       << "] (block sizes up to 4096 elements)";
  int64_t c = ck / kernelSize;
  // [N, C, K, blocks...]: each kernel offset's blocks, placed with a strided
  // dlgraph.pad in the padded image and summed; the pads then cropped.
  SmallVector<int64_t> split{n, c, kernelSize};
  split.append(counts.begin(), counts.end());
  Value cols = reshapeIfNeeded(x, split);
  Type et = xt.getElementType();
  SmallVector<int64_t> blockShape{n, c};
  blockShape.append(counts.begin(), counts.end());
  SmallVector<int64_t> imageShape{n, c};
  imageShape.append(padded.begin(), padded.end());
  SmallVector<int64_t> offset(k, 0);
  Value sum;
  for (int64_t e = 0; e < kernelSize; ++e) {
    SmallVector<int64_t> starts(3 + k, 0), steps(3 + k, 1);
    starts[2] = e;
    SmallVector<int64_t> one(split);
    one[2] = 1;
    Value part = gr::SliceOp::create(builder, nodeLoc,
                                     RankedTensorType::get(one, et), cols,
                                     builder.getDenseI64ArrayAttr(starts),
                                     builder.getDenseI64ArrayAttr(steps));
    part = reshapeIfNeeded(part, blockShape);
    SmallVector<int64_t> at(2 + k, 0), st(2 + k, 1);
    for (size_t i = 0; i < k; ++i) {
      at[2 + i] = offset[i] * dilations[i];
      st[2 + i] = strides[i];
    }
    Value placed = gr::PadOp::create(
        builder, nodeLoc, RankedTensorType::get(imageShape, et), part,
        builder.getDenseI64ArrayAttr(at), builder.getDenseI64ArrayAttr(st),
        builder.getF64FloatAttr(0.0));
    sum = sum ? Value(gr::AddOp::create(builder, nodeLoc, sum, placed))
              : placed;
    // The next kernel offset, the last axis fastest.
    for (int64_t i = (int64_t)k - 1; i >= 0 && ++offset[i] == (*block)[i];
         --i)
      offset[i] = 0;
  }
  SmallVector<int64_t> outShape{n, c}, cropAt(2 + k, 0), ones(2 + k, 1);
  for (size_t i = 0; i < k; ++i) {
    outShape.push_back((*image)[i]);
    cropAt[2 + i] = pads[i];
  }
  Value y = sum;
  if (ArrayRef<int64_t>(outShape) != ArrayRef<int64_t>(imageShape))
    y = gr::SliceOp::create(builder, nodeLoc,
                            RankedTensorType::get(outShape, et), y,
                            builder.getDenseI64ArrayAttr(cropAt),
                            builder.getDenseI64ArrayAttr(ones));
  return define(0, y);
}

//===----------------------------------------------------------------------===//
// DeformConv
//===----------------------------------------------------------------------===//

Value Importer::bilinearZeros(Value data, int64_t h, int64_t w, Value y,
                              Value x) {
  auto dt = cast<RankedTensorType>(data.getType());
  auto yt = cast<RankedTensorType>(y.getType());
  int64_t b = dt.getDimSize(0), c = dt.getDimSize(1), q = yt.getDimSize(1);
  Type f32 = builder.getF32Type();
  auto scalar = [&](double v) {
    return splatOf(RankedTensorType::get({}, f32), v);
  };
  auto add = [&](Value a, Value v) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, v);
  };
  auto mul = [&](Value a, Value v) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, v);
  };
  auto sub = [&](Value a, Value v) -> Value {
    return gr::SubOp::create(builder, nodeLoc, a, v);
  };
  // A tap at (ty, tx) with weight wt: 0 outside the input.
  auto inside = [&](Value t, int64_t len) -> Value {
    Value zero = scalar(0), one = scalar(1);
    return gr::SelectOp::create(
        builder, nodeLoc, gr::CompareOp::create(builder, nodeLoc, "lt", t, zero),
        zero,
        gr::SelectOp::create(builder, nodeLoc,
                             gr::CompareOp::create(builder, nodeLoc, "gt", t,
                                                   scalar(len - 1)),
                             zero, one));
  };
  auto clampTo = [&](Value t, int64_t len) -> Value {
    Value r = gr::MinOp::create(builder, nodeLoc, t, scalar(len - 1));
    return gr::MaxOp::create(builder, nodeLoc, r, scalar(0));
  };
  Value y0 = gr::FloorOp::create(builder, nodeLoc, y);
  Value x0 = gr::FloorOp::create(builder, nodeLoc, x);
  Value fy = sub(y, y0), fx = sub(x, x0);
  Value y1 = add(y0, scalar(1)), x1 = add(x0, scalar(1));
  Value gy[2] = {sub(scalar(1), fy), fy}, gx[2] = {sub(scalar(1), fx), fx};
  Value ty[2] = {y0, y1}, tx[2] = {x0, x1};
  Value sum;
  for (int a = 0; a < 2; ++a)
    for (int e = 0; e < 2; ++e) {
      Value wt = mul(mul(gy[a], gx[e]),
                     mul(inside(ty[a], h), inside(tx[e], w)));
      Value idx = add(mul(clampTo(ty[a], h), scalar((double)w)),
                      clampTo(tx[e], w));
      idx = gr::CastOp::create(builder, nodeLoc,
                               RankedTensorType::get({b, q},
                                                     builder.getI64Type()),
                               idx);
      idx = gr::BroadcastToOp::create(
          builder, nodeLoc,
          RankedTensorType::get({b, c, q}, builder.getI64Type()),
          reshapeIfNeeded(idx, {b, 1, q}));
      Value v = gr::GatherElementsOp::create(builder, nodeLoc, data, idx,
                                             builder.getI64IntegerAttr(2));
      v = mul(v, reshapeIfNeeded(wt, {b, 1, q}));
      sum = sum ? add(sum, v) : v;
    }
  return sum;
}

LogicalResult Importer::deformConv() {
  SmallVector<int64_t> kernel = attrInts("kernel_shape", {});
  SmallVector<int64_t> strides = attrInts("strides", {1, 1});
  SmallVector<int64_t> dilations = attrInts("dilations", {1, 1});
  SmallVector<int64_t> pads = attrInts("pads", {0, 0, 0, 0});
  int64_t group = attrInt("group", 1);
  int64_t offsetGroup = attrInt("offset_group", 1);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0), w = x ? floatOperand(1) : Value();
  Value offset = w ? floatOperand(2) : Value();
  if (!offset)
    return failure();
  Value bias, mask;
  if (hasInput(3) && !(bias = floatOperand(3)))
    return failure();
  if (hasInput(4) && !(mask = floatOperand(4)))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  auto wt = cast<RankedTensorType>(w.getType());
  auto ot = cast<RankedTensorType>(offset.getType());
  for (Value v : {x, w, offset, bias, mask})
    if (v && !cast<RankedTensorType>(v.getType()).getElementType().isF32())
      return nodeError() << "inputs must be float (f32); got "
                         << elementTypeName(cast<RankedTensorType>(v.getType())
                                                .getElementType());
  if (xt.getRank() != 4 || wt.getRank() != 4 || ot.getRank() != 4)
    return nodeError() << "only 2-D DeformConv is supported: X [N, C, H, W], "
                          "W [OC, C / group, kH, kW], offset [N, "
                          "offset_group * 2 * kH * kW, OH, OW]; got X "
                       << shapeStr(xt.getShape()) << ", W "
                       << shapeStr(wt.getShape()) << ", offset "
                       << shapeStr(ot.getShape());
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2),
          wd = xt.getDimSize(3), oc = wt.getDimSize(0);
  if (kernel.empty())
    kernel = {wt.getDimSize(2), wt.getDimSize(3)};
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      pads.size() != 4 || kernel[0] != wt.getDimSize(2) ||
      kernel[1] != wt.getDimSize(3))
    return nodeError() << "kernel_shape, strides, dilations (2 values) and "
                          "pads (4) must fit W "
                       << shapeStr(wt.getShape());
  if (group < 1 || offsetGroup < 1 || c % group || oc % group ||
      c % offsetGroup || wt.getDimSize(1) * group != c)
    return nodeError() << "group = " << group << " and offset_group = "
                       << offsetGroup << " must divide the " << c
                       << " input channels (and group the " << oc
                       << " output channels, W having C / group)";
  int64_t k = kernel[0] * kernel[1];
  SmallVector<int64_t> outDims;
  for (int i = 0; i < 2; ++i) {
    std::optional<int64_t> o = semantics::windowOutputSize(
        xt.getDimSize(2 + i), kernel[i], strides[i], pads[i], pads[i + 2],
        dilations[i]);
    if (!o || *o < 1)
      return nodeError() << "kernel_shape, strides, dilations and pads give "
                            "no output for X "
                         << shapeStr(xt.getShape());
    outDims.push_back(*o);
  }
  int64_t p = outDims[0] * outDims[1];
  if (ot.getShape() != ArrayRef<int64_t>({n, offsetGroup * 2 * k, outDims[0],
                                          outDims[1]}))
    return nodeError() << "offset " << shapeStr(ot.getShape())
                       << " must be [" << n << ", " << offsetGroup * 2 * k
                       << ", " << outDims[0] << ", " << outDims[1] << "]";
  if (mask && cast<RankedTensorType>(mask.getType()).getShape() !=
                  ArrayRef<int64_t>({n, offsetGroup * k, outDims[0],
                                     outDims[1]}))
    return nodeError() << "mask must be [" << n << ", " << offsetGroup * k
                       << ", " << outDims[0] << ", " << outDims[1] << "]";
  if (bias && cast<RankedTensorType>(bias.getType()).getShape() !=
                  ArrayRef<int64_t>({oc}))
    return nodeError() << "B must be [" << oc << "]";
  if (boundedNumElements({n, c, k, p}, kMaxElements) < 0 ||
      h * wd >= (int64_t(1) << 24))
    return nodeError() << "X " << shapeStr(xt.getShape())
                       << " is too large (spatial size up to 2^24)";
  Type f32 = builder.getF32Type();
  // Sampling points: the kernel tap's position plus its offset, in pixels.
  int64_t b = n * offsetGroup;
  Value off = reshapeIfNeeded(offset, {b, k, 2, p});
  std::vector<double> baseY(k * p), baseX(k * p);
  for (int64_t i = 0; i < kernel[0]; ++i)
    for (int64_t j = 0; j < kernel[1]; ++j)
      for (int64_t oy = 0; oy < outDims[0]; ++oy)
        for (int64_t ox = 0; ox < outDims[1]; ++ox) {
          int64_t at = (i * kernel[1] + j) * p + oy * outDims[1] + ox;
          baseY[at] = (double)(oy * strides[0] - pads[0] + i * dilations[0]);
          baseX[at] = (double)(ox * strides[1] - pads[1] + j * dilations[1]);
        }
  auto component = [&](int64_t e, const std::vector<double> &base) -> Value {
    Value v = gr::SliceOp::create(
        builder, nodeLoc, RankedTensorType::get({b, k, 1, p}, f32), off,
        builder.getDenseI64ArrayAttr({0, 0, e, 0}),
        builder.getDenseI64ArrayAttr({1, 1, 1, 1}));
    v = reshapeIfNeeded(v, {b, k * p});
    return gr::AddOp::create(
        builder, nodeLoc, v,
        f32Constant(builder, nodeLoc, RankedTensorType::get({1, k * p}, f32),
                    base));
  };
  Value data = reshapeIfNeeded(x, {b, c / offsetGroup, h * wd});
  Value cols = bilinearZeros(data, h, wd, component(0, baseY),
                             component(1, baseX));
  if (mask)
    cols = gr::MulOp::create(builder, nodeLoc, cols,
                             reshapeIfNeeded(mask, {b, 1, k * p}));
  // The convolution: per group, W [OC / g, C / g * K] x cols [C / g * K, P].
  int64_t cg = c / group;
  cols = reshapeIfNeeded(cols, {n, group, cg * k, p});
  Value wm = reshapeIfNeeded(w, {group, oc / group, cg * k});
  Value y = gr::MatMulOp::create(builder, nodeLoc, wm, cols);
  y = reshapeIfNeeded(y, {n, oc, outDims[0], outDims[1]});
  if (bias)
    y = gr::AddOp::create(builder, nodeLoc, y,
                          reshapeIfNeeded(bias, {oc, 1, 1}));
  return define(0, y);
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

LogicalResult Importer::roiAlign() {
  std::string coord = opset >= 16 ? attrString("coordinate_transformation_mode",
                                               "half_pixel")
                                  : std::string("output_half_pixel");
  std::string mode = attrString("mode", "avg");
  int64_t outH = attrInt("output_height", 1);
  int64_t outW = attrInt("output_width", 1);
  int64_t ratio = attrInt("sampling_ratio", 0);
  double scale = attrFloat("spatial_scale", 1.0f);
  if (attrFailed)
    return failure();
  if (coord != "half_pixel" && coord != "output_half_pixel")
    return nodeError() << "coordinate_transformation_mode '" << coord
                       << "' is not supported; supported: half_pixel, "
                          "output_half_pixel";
  if (mode != "avg" && mode != "max")
    return nodeError() << "mode '" << mode
                       << "' is not supported; supported: avg, max";
  if (ratio < 1)
    return nodeError() << "sampling_ratio = " << ratio
                       << " is not supported: 0 (adaptive) makes the "
                          "sample count depend on each roi at run time; "
                          "supported: a fixed sampling_ratio >= 1";
  if (outH < 1 || outW < 1 || ratio > 64)
    return nodeError() << "output_height and output_width must be >= 1 and "
                          "sampling_ratio at most 64";
  Value x = floatOperand(0), rois = x ? floatOperand(1) : Value();
  Value batch = rois ? operand(2, /*requireF32=*/false) : Value();
  if (!batch)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  auto rt = cast<RankedTensorType>(rois.getType());
  auto bt = cast<RankedTensorType>(batch.getType());
  if (!xt.getElementType().isF32() || !rt.getElementType().isF32())
    return nodeError() << "X and rois must be float (f32)";
  if (xt.getRank() != 4 || rt.getRank() != 2 || rt.getDimSize(1) != 4 ||
      bt.getRank() != 1 || bt.getDimSize(0) != rt.getDimSize(0) ||
      !isa<IntegerType>(bt.getElementType()) ||
      bt.getElementType().isInteger(1))
    return nodeError() << "expects X [N, C, H, W], rois [R, 4] and "
                          "integer batch_indices [R]; got "
                       << shapeStr(xt.getShape()) << ", "
                       << shapeStr(rt.getShape()) << ", "
                       << shapeStr(bt.getShape());
  int64_t r = rt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2),
          w = xt.getDimSize(3);
  int64_t q = outH * outW * ratio * ratio;
  if (boundedNumElements({r, c, q}) < 0 || h * w >= (int64_t(1) << 24))
    return nodeError() << "X " << shapeStr(xt.getShape())
                       << " is too large (spatial size up to 2^24)";
  Type f32 = builder.getF32Type();
  auto scalar = [&](double v) {
    return splatOf(RankedTensorType::get({}, f32), v);
  };
  auto add = [&](Value a, Value v) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, v);
  };
  auto sub = [&](Value a, Value v) -> Value {
    return gr::SubOp::create(builder, nodeLoc, a, v);
  };
  auto mul = [&](Value a, Value v) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, v);
  };
  auto cmp = [&](StringRef pred, Value a, Value v) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, pred, a, v);
  };
  auto select = [&](Value cond, Value a, Value v) -> Value {
    return gr::SelectOp::create(builder, nodeLoc, cond, a, v);
  };
  auto minOf = [&](Value a, double v) -> Value {
    return gr::MinOp::create(builder, nodeLoc, a, scalar(v));
  };
  auto maxOf = [&](Value a, double v) -> Value {
    return gr::MaxOp::create(builder, nodeLoc, a, scalar(v));
  };
  // Each roi's corners in pixels, [R, 1] each.
  auto corner = [&](int64_t i) -> Value {
    Value v = gr::SliceOp::create(builder, nodeLoc,
                                  RankedTensorType::get({r, 1}, f32), rois,
                                  builder.getDenseI64ArrayAttr({0, i}),
                                  builder.getDenseI64ArrayAttr({1, 1}));
    v = mul(v, scalar(scale));
    return coord == "half_pixel" ? add(v, scalar(-0.5)) : v;
  };
  Value startX = corner(0), startY = corner(1);
  Value lenX = sub(corner(2), startX), lenY = sub(corner(3), startY);
  if (coord != "half_pixel") {
    lenX = maxOf(lenX, 1.0);
    lenY = maxOf(lenY, 1.0);
  }
  // Sample q = ((ph * OW + pw) * ratio + iy) * ratio + ix sits at start + len
  // * (p + (i + 0.5) / ratio) / out on each axis.
  std::vector<double> fy(q), fx(q);
  for (int64_t ph = 0, e = 0; ph < outH; ++ph)
    for (int64_t pw = 0; pw < outW; ++pw)
      for (int64_t iy = 0; iy < ratio; ++iy)
        for (int64_t ix = 0; ix < ratio; ++ix, ++e) {
          fy[e] = ((double)ph + ((double)iy + 0.5) / (double)ratio) /
                  (double)outH;
          fx[e] = ((double)pw + ((double)ix + 0.5) / (double)ratio) /
                  (double)outW;
        }
  auto qConst = [&](const std::vector<double> &v) {
    return f32Constant(builder, nodeLoc, RankedTensorType::get({1, q}, f32),
                       v);
  };
  Value y = add(startY, mul(lenY, qConst(fy)));
  Value xs = add(startX, mul(lenX, qConst(fx)));
  // Outside [-1, H] x [-1, W] a sample is 0; inside, clamped to the image,
  // it interpolates between floor and floor + 1 (the edge repeated).
  Value zero = scalar(0), one = scalar(1);
  Value valid = select(
      cmp("lt", y, scalar(-1)), zero,
      select(cmp("gt", y, scalar((double)h)), zero,
             select(cmp("lt", xs, scalar(-1)), zero,
                    select(cmp("gt", xs, scalar((double)w)), zero, one))));
  Value yc = minOf(maxOf(y, 0.0), (double)(h - 1));
  Value xc = minOf(maxOf(xs, 0.0), (double)(w - 1));
  Value yLow = gr::FloorOp::create(builder, nodeLoc, yc);
  Value xLow = gr::FloorOp::create(builder, nodeLoc, xc);
  Value ly = sub(yc, yLow), lx = sub(xc, xLow);
  Value yHigh = minOf(add(yLow, one), (double)(h - 1));
  Value xHigh = minOf(add(xLow, one), (double)(w - 1));
  Value wy[2] = {mul(sub(one, ly), valid), mul(ly, valid)};
  Value wx[2] = {sub(one, lx), lx};
  Value ty[2] = {yLow, yHigh}, tx[2] = {xLow, xHigh};
  // Each roi's image: X gathered by batch_indices, [R, C, H * W].
  Value data = gr::GatherOp::create(builder, nodeLoc,
                                    reshapeIfNeeded(x, {xt.getDimSize(0), c,
                                                        h * w}),
                                    batch, builder.getI64IntegerAttr(0));
  Value acc;
  for (int a = 0; a < 2; ++a)
    for (int e = 0; e < 2; ++e) {
      Value idx = add(mul(ty[a], scalar((double)w)), tx[e]);
      idx = gr::CastOp::create(
          builder, nodeLoc,
          RankedTensorType::get({r, q}, builder.getI64Type()), idx);
      idx = gr::BroadcastToOp::create(
          builder, nodeLoc,
          RankedTensorType::get({r, c, q}, builder.getI64Type()),
          reshapeIfNeeded(idx, {r, 1, q}));
      Value v = gr::GatherElementsOp::create(builder, nodeLoc, data, idx,
                                             builder.getI64IntegerAttr(2));
      v = mul(v, reshapeIfNeeded(mul(wy[a], wx[e]), {r, 1, q}));
      // avg: the weighted taps' sum; max (as ONNX's reference and ONNX
      // Runtime define it): the largest weighted tap.
      if (!acc)
        acc = v;
      else if (mode == "avg")
        acc = add(acc, v);
      else
        acc = gr::MaxOp::create(builder, nodeLoc, acc, v);
    }
  acc = reshapeIfNeeded(acc, {r, c, outH * outW, ratio * ratio});
  Value out =
      mode == "avg"
          ? reduceOver<gr::ReduceMeanOp>(acc, {3}, false)
          : reduceOver<gr::ReduceMaxOp>(acc, {3}, false);
  return define(0, reshapeIfNeeded(out, {r, c, outH, outW}));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::samplingOps() {
  static const OpMapping ops[] = {
      {"AffineGrid", 20, &Importer::affineGrid},
      {"CenterCropPad", 18, &Importer::centerCropPad},
      {"Col2Im", 18, &Importer::col2Im},
      {"DeformConv", 19, &Importer::deformConv, 22},
      {"GridSample", 16, &Importer::gridSample, 22},
      {"RoiAlign", 10, &Importer::roiAlign, 22},
  };
  return ops;
}
