//===- DataMovement.cpp - ONNX layout ops -> dlgraph ----------------------===//
//
// Ops that move elements without computing on them: Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, Concat, Expand, Tile, DepthToSpace,
// SpaceToDepth, and Resize/Upsample. Constant operands are folded.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

#include <limits>

#include <cmath>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

LogicalResult Importer::flatten() {
  int64_t axis = attrInt("axis", 1);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  if (axis < -rank || axis > rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  return reshapeTo(
      {product(in.take_front(axis)), product(in.drop_front(axis))});
}

LogicalResult Importer::reshape() {
  int64_t allowZero = attrInt("allowzero", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  auto target = constInts(1, "the shape");
  if (failed(target))
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  // A model exported with a static batch B0 bakes B0 into view-style
  // reshapes (`x.view(B0, -1)` constant-folds to [B0, -1]). When --batch-size
  // changed the batch and the input is still batch-major, dim 0 of the target
  // is that batch.
  if (exportedBatch > 0 && !target->empty() && (*target)[0] == exportedBatch &&
      !in.empty() && in[0] == options.batchSize) {
    emitWarning(nodeLoc) << node->op_type() << " node '" << nodeName
                         << "': the target shape " << shapeStr(*target)
                         << " starts with the exported batch size "
                         << exportedBatch << "; using the batch size "
                         << options.batchSize << " instead";
    (*target)[0] = options.batchSize;
  }
  SmallVector<int64_t> shape;
  int inferAt = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == 0 && allowZero) {
      return nodeError() << "attribute allowzero = 1 with a 0 in the shape is "
                            "not supported; supported: allowzero = 0";
    } else if (d == 0) {
      if (i >= in.size())
        return nodeError() << "shape " << shapeStr(*target) << " copies dim "
                           << i << " (a 0) of a rank-" << in.size() << " input";
      shape.push_back(in[i]);
    } else if (d == -1) {
      if (inferAt >= 0)
        return nodeError() << "shape " << shapeStr(*target)
                           << " has more than one -1";
      inferAt = i;
      shape.push_back(1);
    } else if (d < -1) {
      return nodeError() << "shape " << shapeStr(*target)
                         << " has an invalid dimension " << d;
    } else {
      shape.push_back(d);
    }
  }
  int64_t total = product(in), known = product(shape);
  if (inferAt >= 0) {
    if (known == 0 || total % known)
      return nodeError() << "cannot infer the -1 in " << shapeStr(*target)
                         << " for an input of shape " << shapeStr(in);
    shape[inferAt] = total / known;
  }
  return reshapeTo(shape);
}

LogicalResult Importer::transpose() {
  // Constants (PyTorch's F.pad exports its pads through a Transpose of an
  // int64 constant) are folded; data of every element type is copied.
  Slot *src = input(0);
  if (!src)
    return failure();
  Value x = src->isFoldable() ? Value() : materialize(*src);
  RankedTensorType xt = src->type();
  int64_t rank = xt.getRank();
  SmallVector<int64_t> def;
  for (int64_t i = rank - 1; i >= 0; --i)
    def.push_back(i);
  SmallVector<int64_t> perm = attrInts("perm", def);
  if (attrFailed)
    return failure();
  SmallVector<bool> seen(rank, false);
  if ((int64_t)perm.size() != rank)
    return nodeError() << "perm " << shapeStr(perm) << " has " << perm.size()
                       << " entries for an input of rank " << rank;
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return nodeError() << "perm " << shapeStr(perm)
                         << " is not a permutation of 0.." << rank - 1;
    seen[p] = true;
    shape.push_back(xt.getDimSize(p));
  }
  auto type = RankedTensorType::get(shape, xt.getElementType());
  if (src->isFoldable()) {
    SmallVector<Attribute> vals(src->constant.getValues<Attribute>()), out;
    SmallVector<int64_t> idx(rank, 0), strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * xt.getDimSize(d + 1);
    for (int64_t i = 0, n = type.getNumElements(); i < n; ++i) {
      int64_t lin = 0;
      for (int64_t d = 0; d < rank; ++d)
        lin += idx[d] * strides[perm[d]];
      out.push_back(vals[lin]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    return defineConstant(0, DenseElementsAttr::get(type, out));
  }
  return define(0, gr::TransposeOp::create(builder, nodeLoc, x,
                                           builder.getDenseI64ArrayAttr(perm)));
}

LogicalResult Importer::unsqueeze() {
  Slot *s = input(0);
  if (!s)
    return failure();
  // Before opset 13 the axes are an attribute.
  FailureOr<SmallVector<int64_t>> axes =
      opset < 13 ? FailureOr<SmallVector<int64_t>>(attrInts("axes", {}))
                 : constInts(1, "axes");
  if (failed(axes) || attrFailed)
    return failure();
  if (opset < 13 && !findAttr("axes"))
    return nodeError() << "attribute 'axes' is required (opset " << opset
                       << ")";
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size() + axes->size();
  SmallVector<bool> isNew(rank, false);
  for (int64_t a : *axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || isNew[n])
      return nodeError() << "axes " << shapeStr(*axes)
                         << " are out of range or repeated for output rank "
                         << rank;
    isNew[n] = true;
  }
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(isNew[i] ? 1 : in[next++]);
  return reshapeTo(shape);
}

LogicalResult Importer::squeeze() {
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  SmallVector<bool> drop(rank, false);
  bool attrAxes = opset < 13 && findAttr("axes");
  if (hasInput(1) || attrAxes) {
    // Before opset 13 the axes are an attribute.
    FailureOr<SmallVector<int64_t>> axes =
        attrAxes ? FailureOr<SmallVector<int64_t>>(attrInts("axes", {}))
                 : constInts(1, "axes");
    if (failed(axes) || attrFailed)
      return failure();
    for (int64_t a : *axes) {
      int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank || in[n] != 1)
        return nodeError() << "axis " << a << " is out of range or not of "
                           << "size 1 in " << shapeStr(in);
      drop[n] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = in[i] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      shape.push_back(in[i]);
  return reshapeTo(shape);
}

LogicalResult Importer::concat() {
  if (!findAttr("axis"))
    return nodeError() << "attribute 'axis' is required";
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  SmallVector<Slot *> ins;
  bool allFoldable = true;
  for (int i = 0; i < node->input_size(); ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    allFoldable &= s->isFoldable();
    ins.push_back(s);
  }
  if (ins.empty())
    return nodeError() << "has no inputs";
  RankedTensorType t0 = ins[0]->type();
  int64_t rank = t0.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(t0.getShape());
  shape[axis] = 0;
  for (Slot *s : ins) {
    RankedTensorType t = s->type();
    bool ok = t.getRank() == rank && t.getElementType() == t0.getElementType();
    for (int64_t i = 0; ok && i < rank; ++i)
      ok = i == axis || t.getDimSize(i) == t0.getDimSize(i);
    if (!ok)
      return nodeError() << "inputs of types " << t0 << " and " << t
                         << " cannot be concatenated along axis " << axis;
    shape[axis] += t.getDimSize(axis);
  }
  if (!allFoldable) {
    // Data: dlgraph.concat of the inputs that are not empty along the axis.
    SmallVector<Value> vals;
    for (Slot *s : ins)
      if (s->type().getDimSize(axis) != 0 || ins.size() == 1)
        vals.push_back(materialize(*s));
    if (vals.empty())
      vals.push_back(materialize(*ins[0]));
    if (vals.size() == 1 && vals[0].getType() == RankedTensorType::get(
                                                     shape, t0.getElementType()))
      return define(0, vals[0]);
    return define(0, gr::ConcatOp::create(builder, nodeLoc, vals,
                                          builder.getI64IntegerAttr(axis)));
  }
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  SmallVector<Attribute> out;
  SmallVector<SmallVector<Attribute>> vals;
  for (Slot *s : ins)
    vals.emplace_back(s->constant.getValues<Attribute>());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < ins.size(); ++k) {
      int64_t chunk =
          ins[k]->type().getNumElements() / std::max<int64_t>(outer, 1);
      for (int64_t j = 0; j < chunk; ++j)
        out.push_back(vals[k][o * chunk + j]);
    }
  }
  auto type = RankedTensorType::get(shape, t0.getElementType());
  return defineConstant(0, DenseElementsAttr::get(type, out));
}

LogicalResult Importer::expand() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto target = constInts(1, "shape");
  if (failed(target))
    return failure();
  RankedTensorType in = s->type();
  std::optional<std::vector<int64_t>> shape =
      semantics::broadcastShapes(in.getShape(), *target);
  if (!shape)
    return nodeError() << "cannot expand " << shapeStr(in.getShape())
                       << " to " << shapeStr(*target);
  Value x = materialize(*s);
  if (ArrayRef<int64_t>(*shape) == in.getShape())
    return define(0, gr::IdentityOp::create(builder, nodeLoc, x));
  auto out = RankedTensorType::get(*shape, in.getElementType());
  return define(0, gr::BroadcastToOp::create(builder, nodeLoc, out, x));
}

LogicalResult Importer::tile() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto repeats = constInts(1, "repeats");
  if (failed(repeats))
    return failure();
  RankedTensorType in = s->type();
  ArrayRef<int64_t> dims = in.getShape();
  if ((int64_t)repeats->size() != in.getRank())
    return nodeError() << "repeats " << shapeStr(*repeats)
                       << " must have one value per input dimension (rank "
                       << in.getRank() << ")";
  SmallVector<int64_t> split, wide, out;
  bool prevUntiled = false;
  for (auto [d, r] : llvm::zip(dims, *repeats)) {
    if (r < 0)
      return nodeError() << "repeats " << shapeStr(*repeats)
                         << " must not be negative";
    if (r > 0 && d > kMaxElements / r)
      return nodeError() << "repeats " << shapeStr(*repeats)
                         << " make a dimension over 2^40";
    // A repeat axis only where the dimension really repeats: a run of
    // untiled dimensions (r = 1) becomes one dimension and a size-1 one
    // broadcasts in place, so the view's rank is the number of such runs
    // plus one per size-1 and two per other tiled dimension, not twice the
    // input's (GPT-J's rank-5 Tile made a rank-10 buffer, beyond a
    // package's kMaxBufferRank).
    bool untiled = r == 1;
    if (untiled && prevUntiled) {
      split.back() *= d;
      wide.back() *= d;
    } else if (untiled || (d == 1 && r > 0)) {
      split.push_back(d);
      wide.push_back(r * d);
    } else {
      split.append({1, d});
      wide.append({r, d});
    }
    prevUntiled = untiled;
    out.push_back(r * d);
  }
  Type et = in.getElementType();
  Value x = materialize(*s);
  if (ArrayRef<int64_t>(out) == dims)
    return define(0, gr::IdentityOp::create(builder, nodeLoc, x));
  // [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1] -> [r0*d0, r1*d1].
  Value a = gr::ReshapeOp::create(builder, nodeLoc,
                                  RankedTensorType::get(split, et), x);
  Value b = gr::BroadcastToOp::create(builder, nodeLoc,
                                      RankedTensorType::get(wide, et), a);
  return define(0, gr::ReshapeOp::create(builder, nodeLoc,
                                         RankedTensorType::get(out, et), b));
}

/// DepthToSpace (modes DCR, CRD) and SpaceToDepth on [N, C, H, W], as
/// reshape -> transpose -> reshape (the ONNX operator definitions).
LogicalResult Importer::depthSpace() {
  bool toSpace = node->op_type() == "DepthToSpace";
  int64_t b = attrInt("blocksize", 0);
  // SpaceToDepth has a mode since version 28 (DCR before).
  std::string mode =
      toSpace || opset >= 28 ? attrString("mode", "DCR") : std::string("DCR");
  if (attrFailed)
    return failure();
  // Any element type: the reshapes and the transpose only move elements.
  Value x = operand(0, /*requireF32=*/false);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return nodeError() << "input must have rank 4 (N, C, H, W), got "
                       << shapeStr(xt.getShape());
  if (b < 1 || b > (int64_t(1) << 20))
    return nodeError() << "attribute blocksize = " << b
                       << " is not supported; it must be in 1..2^20";
  if (mode != "DCR" && mode != "CRD")
    return nodeError() << "attribute mode = '" << mode
                       << "' is not supported; supported: DCR, CRD";
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2),
          w = xt.getDimSize(3);
  SmallVector<int64_t> split, perm, out;
  if (toSpace) {
    if (c % (b * b))
      return nodeError() << "channels " << c
                         << " are not divisible by blocksize^2 = " << b * b;
    if (mode == "DCR") {
      split = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      split = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b)
      return nodeError() << "spatial size [" << h << ", " << w
                         << "] is not divisible by blocksize " << b;
    split = {n, c, h / b, b, w / b, b};
    if (mode == "DCR")
      perm = {0, 3, 5, 1, 2, 4};
    else
      perm = {0, 1, 3, 5, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  Type et = xt.getElementType();
  Value r = gr::ReshapeOp::create(builder, nodeLoc,
                                  RankedTensorType::get(split, et), x);
  Value t = gr::TransposeOp::create(builder, nodeLoc, r,
                                    builder.getDenseI64ArrayAttr(perm));
  return define(0, gr::ReshapeOp::create(builder, nodeLoc,
                                         RankedTensorType::get(out, et), t));
}

LogicalResult Importer::cropAndResizeRoi(bool roiGiven, int64_t rank,
                                         ArrayRef<int64_t> axes,
                                         SmallVector<double> &roi) {
  int64_t naxes = axes.size();
  Slot *sl = roiGiven ? input(1) : nullptr;
  if (!sl || !sl->constant || !isa<FloatType>(sl->type().getElementType()))
    return nodeError() << "roi (input 1) must be a constant float tensor "
                          "(an initializer or a Constant) with "
                          "coordinate_transformation_mode "
                          "tf_crop_and_resize"
                       << constantInputHint(1);
  SmallVector<double> values;
  for (const APFloat &v : sl->constant.getValues<APFloat>())
    values.push_back(v.convertToDouble());
  if ((int64_t)values.size() != 2 * naxes)
    return nodeError() << "roi has " << values.size() << " values; "
                       << "expected " << 2 * naxes << " (a start and an "
                       << "end for each of " << naxes << " axes)";
  roi.assign(rank, 0.0);
  roi.append(rank, 1.0);
  for (int64_t i = 0; i < naxes; ++i) {
    roi[axes[i]] = values[i];
    roi[rank + axes[i]] = values[naxes + i];
  }
  return success();
}

LogicalResult Importer::resize() {
  bool upsample = node->op_type() == "Upsample";
  std::string mode = attrString("mode", "nearest");
  std::string coord = upsample ? "asymmetric"
                               : attrString("coordinate_transformation_mode",
                                            "half_pixel");
  std::string nearest =
      upsample ? "floor" : attrString("nearest_mode", "round_prefer_floor");
  if (attrFailed)
    return failure();
  if (mode == "bilinear" && upsample)
    mode = "linear"; // Upsample-7's spelling
  if (mode != "nearest" && mode != "linear" && (upsample || mode != "cubic"))
    return nodeError() << "mode '" << mode << "' is not supported; supported: "
                       << (upsample ? "nearest, linear"
                                    : "nearest, linear, cubic");
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn",
                           "half_pixel_symmetric", "tf_crop_and_resize"},
                          coord))
    return nodeError() << "coordinate_transformation_mode '" << coord
                       << "' is not supported; supported: half_pixel, "
                          "pytorch_half_pixel, align_corners, asymmetric, "
                          "tf_half_pixel_for_nn, half_pixel_symmetric, "
                          "tf_crop_and_resize";
  // Resize-11's cubic and crop attributes.
  double cubicA = upsample ? -0.75 : attrFloat("cubic_coeff_a", -0.75f);
  int64_t excludeOutside = upsample ? 0 : attrInt("exclude_outside", 0);
  double extrapolation =
      upsample ? 0.0 : attrFloat("extrapolation_value", 0.0f);
  if (attrFailed)
    return failure();
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return nodeError() << "nearest_mode '" << nearest << "' is not supported";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  // dlgraph.resize lowers to a built-in kernel that interpolates in the
  // element type; it has no f16/bf16 form yet.
  if (isLowPrecisionFloat(xt.getElementType()))
    return unsupportedLowPrecision(0, "float (f32), double (f64)");
  int64_t rank = xt.getRank();
  // Scales: input 1 (Upsample) or 2 (Resize); sizes: Resize input 3. An
  // absent input or an empty tensor means "not given".
  auto given = [&](int i) {
    if (!hasInput(i))
      return false;
    Slot *sl = input(i);
    return sl && sl->type().getNumElements() > 0;
  };
  int scalesIdx = upsample ? 1 : 2;
  // Opset 18: scales and sizes may name a subset of the axes (the others
  // keep their size), and sizes may keep the aspect ratio.
  SmallVector<int64_t> axes;
  std::string policy = "stretch";
  int64_t antialias = 0;
  if (!upsample && opset >= 18) {
    axes = attrInts("axes", {});
    policy = attrString("keep_aspect_ratio_policy", "stretch");
    antialias = attrInt("antialias", 0);
    if (attrFailed)
      return failure();
    if (policy != "stretch" && policy != "not_larger" &&
        policy != "not_smaller")
      return nodeError() << "keep_aspect_ratio_policy '" << policy
                         << "' is not supported; supported: stretch, "
                            "not_larger, not_smaller";
  }
  if (failed(normalizeAxes(axes, rank)))
    return failure();
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  int64_t naxes = axes.size();
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> shape(xt.getShape());
  if (!upsample && given(3)) {
    auto sz = constInts(3, "sizes");
    if (failed(sz))
      return failure();
    if ((int64_t)sz->size() != naxes)
      return nodeError() << "sizes has " << sz->size() << " values for "
                         << naxes << " axes";
    for (int64_t v : *sz)
      if (v <= 0)
        return nodeError() << "sizes must be positive, got "
                           << shapeStr(*sz);
    if (policy == "stretch") {
      for (int64_t i = 0; i < naxes; ++i) {
        int64_t d = axes[i];
        shape[d] = (*sz)[i];
        scales[d] = (double)(*sz)[i] / (double)xt.getDimSize(d);
      }
    } else {
      // One scale for the given axes: the smallest (not_larger) or the
      // largest (not_smaller) of sizes / input sizes; each output size is
      // that scale times the input size, rounded half up.
      double scale = policy == "not_larger"
                       ? std::numeric_limits<double>::infinity()
                       : 0.0;
      for (int64_t i = 0; i < naxes; ++i) {
        double r = (double)(*sz)[i] / (double)xt.getDimSize(axes[i]);
        scale = policy == "not_larger" ? std::min(scale, r)
                                       : std::max(scale, r);
      }
      for (int64_t d : axes) {
        double n = std::floor(scale * (double)xt.getDimSize(d) + 0.5);
        if (n < 1 || !(n <= (double)kMaxElements))
          return nodeError() << "sizes " << shapeStr(*sz) << " with policy "
                             << policy << " give an empty or too large "
                             << "dimension on axis " << d;
        shape[d] = (int64_t)n;
        scales[d] = scale;
      }
    }
  } else if (given(scalesIdx)) {
    Slot *sl = input(scalesIdx);
    // An f32 initializer counts: scales are no operand of the resize, so
    // training never updates them.
    if (!sl->constant || !isa<FloatType>(sl->type().getElementType()))
      return nodeError() << "scales (input '" << node->input(scalesIdx)
                         << "') must be a constant float tensor (an "
                            "initializer or a Constant); runtime scales "
                            "give no static output shape"
                         << constantInputHint(scalesIdx);
    SmallVector<double> values;
    for (const APFloat &v : sl->constant.getValues<APFloat>())
      values.push_back(v.convertToDouble());
    if ((int64_t)values.size() != naxes)
      return nodeError() << "scales has " << values.size() << " values for "
                         << naxes << " axes";
    for (int64_t i = 0; i < naxes; ++i) {
      int64_t d = axes[i];
      scales[d] = values[i];
      // ONNX: floor(input_dimension * scale); the scale as given (f32).
      double n = std::floor((double)xt.getDimSize(d) * (double)(float)scales[d]);
      if (!(scales[d] > 0) || n < 1)
        return nodeError() << "scale " << scales[d] << " on axis " << d
                           << " is not supported (the output would be empty "
                              "or the scale is not positive)";
      if (!(n <= (double)kMaxElements))
        return nodeError() << "scale " << scales[d] << " on axis " << d
                           << " gives a dimension over 2^40";
      shape[d] = (int64_t)n;
    }
  } else {
    return nodeError() << "needs constant scales or sizes";
  }
  // dlgraph.resize samples as ONNX's nearest and linear modes do; the rest
  // are constant interpolation matrices, one per resized axis.
  bool downscaleAntialias =
      antialias && mode != "nearest" &&
      llvm::any_of(scales, [](double v) { return v < 1; });
  if (mode == "cubic" || coord == "half_pixel_symmetric" ||
      coord == "tf_crop_and_resize" || downscaleAntialias || excludeOutside) {
    SmallVector<double> roi;
    if (coord == "tf_crop_and_resize" &&
        failed(cropAndResizeRoi(given(1), rank, axes, roi)))
      return failure();
    semantics::ResizeAxisRule rule;
    rule.mode = mode;
    rule.coord = coord;
    rule.nearest = nearest;
    rule.cubicA = cubicA;
    rule.excludeOutside = excludeOutside != 0;
    rule.antialias = antialias != 0;
    FailureOr<Value> y =
        resizeSeparable(x, shape, scales, rule, roi, extrapolation);
    if (failed(y))
      return failure();
    return define(0, *y);
  }
  auto rt = RankedTensorType::get(shape, xt.getElementType());
  return define(0, gr::ResizeOp::create(
                       builder, nodeLoc, rt, x, builder.getStringAttr(mode),
                       builder.getStringAttr(coord),
                       builder.getStringAttr(nearest),
                       builder.getDenseF64ArrayAttr(scales)));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::dataMovementOps() {
  static const OpMapping ops[] = {
      {"Concat", 4, &Importer::concat},
      {"DepthToSpace", 11, &Importer::depthSpace},
      {"Expand", 8, &Importer::expand},
      {"Flatten", 1, &Importer::flatten},
      {"Reshape", 5, &Importer::reshape},
      {"Resize", 11, &Importer::resize, 19},
      {"SpaceToDepth", 1, &Importer::depthSpace, 28},
      {"Squeeze", 1, &Importer::squeeze},
      {"Tile", 6, &Importer::tile},
      {"Transpose", 1, &Importer::transpose},
      {"Unsqueeze", 1, &Importer::unsqueeze},
      {"Upsample", 9, &Importer::resize},
  };
  return ops;
}
