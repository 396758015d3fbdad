//===- Indexing.cpp - ONNX indexing ops -> dlgraph ------------------------===//
//
// Ops that select index ranges or elements: Gather, GatherElements, Slice,
// Split, Pad (which crops with slices), ScatterND and ScatterElements
// (constant indices; folded on constant data and updates; in
// IndexingScatter.cpp) and OneHot, which selects by index too. Constant
// operands are folded.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::gather() {
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  Slot *data = input(0);
  if (!data)
    return failure();
  Slot *idxSlot = input(1);
  if (!idxSlot)
    return failure();
  if (!data->isFoldable() || !idxSlot->isFoldable()) {
    // Data (an embedding table, activations): dlgraph.gather.
    RankedTensorType dt = data->type(), it = idxSlot->type();
    int64_t rank = dt.getRank();
    if (!it.getElementType().isInteger(64) &&
        !it.getElementType().isInteger(32))
      return nodeError() << "indices (input '" << node->input(1)
                         << "') have element type " << it.getElementType()
                         << "; supported: int32, int64";
    if (rank == 0 || axis < -rank || axis >= rank)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    if (axis < 0)
      axis += rank;
    Value x = materialize(*data), idx = materialize(*idxSlot);
    return define(0, gr::GatherOp::create(builder, nodeLoc, x, idx,
                                          builder.getI64IntegerAttr(axis)));
  }
  auto indices = constInts(1, "indices");
  if (failed(indices))
    return failure();
  RankedTensorType dt = data->type();
  int64_t rank = dt.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> ds = dt.getShape();
  int64_t outer = product(ds.take_front(axis)), dim = ds[axis],
          inner = product(ds.drop_front(axis + 1));
  SmallVector<Attribute> in(data->constant.getValues<Attribute>());
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t idx : *indices) {
      int64_t i = idx < 0 ? idx + dim : idx;
      if (i < 0 || i >= dim)
        return nodeError() << "index " << idx << " is out of range for axis "
                           << axis << " of size " << dim;
      for (int64_t k = 0; k < inner; ++k)
        out.push_back(in[(o * dim + i) * inner + k]);
    }
  }
  SmallVector<int64_t> shape(ds.take_front(axis));
  llvm::append_range(shape, input(1)->type().getShape());
  llvm::append_range(shape, ds.drop_front(axis + 1));
  auto type = RankedTensorType::get(shape, dt.getElementType());
  return defineConstant(0, DenseElementsAttr::get(type, out));
}

LogicalResult Importer::gatherElements() {
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  Slot *data = input(0), *idx = data ? input(1) : nullptr;
  if (!data || !idx)
    return failure();
  RankedTensorType dt = data->type(), it = idx->type();
  int64_t rank = dt.getRank();
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    return nodeError() << "indices have element type " << it.getElementType()
                       << "; supported: int32, int64";
  if (rank == 0 || axis < -rank || axis >= rank || it.getRank() != rank)
    return nodeError() << "axis " << axis << " and indices "
                       << shapeStr(it.getShape()) << " do not fit data "
                       << shapeStr(dt.getShape());
  if (axis < 0)
    axis += rank;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && it.getDimSize(d) > dt.getDimSize(d))
      return nodeError() << "indices " << shapeStr(it.getShape())
                         << " exceed data " << shapeStr(dt.getShape())
                         << " outside axis " << axis;
  return define(0, gr::GatherElementsOp::create(
                       builder, nodeLoc, materialize(*data),
                       materialize(*idx), builder.getI64IntegerAttr(axis)));
}

Slot Importer::stridedSlice(Slot &s, ArrayRef<int64_t> starts,
                            ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  RankedTensorType in = s.type();
  auto type = RankedTensorType::get(shape, in.getElementType());
  bool whole = in.getShape() == shape;
  for (size_t d = 0; whole && d < starts.size(); ++d)
    whole = shape[d] <= 1 || (starts[d] == 0 && steps[d] == 1);
  if (whole)
    return s;
  Slot out;
  out.loc = nodeLoc;
  if (s.isFoldable()) {
    SmallVector<Attribute> vals(s.constant.getValues<Attribute>());
    SmallVector<Attribute> res;
    int64_t n = product(shape), rank = shape.size();
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t lin = 0;
      for (int64_t d = 0; d < rank; ++d)
        lin = lin * in.getDimSize(d) + starts[d] + steps[d] * idx[d];
      res.push_back(vals[lin]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    out.constant = DenseElementsAttr::get(type, res);
    return out;
  }
  SmallVector<int64_t> st(starts);
  for (size_t d = 0; d < st.size(); ++d)
    if (shape[d] == 0)
      st[d] = 0;
  out.value = gr::SliceOp::create(builder, nodeLoc, type, materialize(s), st,
                                  steps);
  return out;
}

LogicalResult Importer::slice() {
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    if (!findAttr("starts") || !findAttr("ends"))
      return nodeError() << "attributes 'starts' and 'ends' are required "
                            "(opset "
                         << opset << ")";
    starts = attrInts("starts", {});
    ends = attrInts("ends", {});
    axes = attrInts("axes", {});
    if (attrFailed)
      return failure();
  } else {
    auto st = constInts(1, "starts");
    if (failed(st))
      return failure();
    auto en = constInts(2, "ends");
    if (failed(en))
      return failure();
    starts = *st;
    ends = *en;
    if (hasInput(3)) {
      auto ax = constInts(3, "axes");
      if (failed(ax))
        return failure();
      axes = *ax;
    }
    if (hasInput(4)) {
      auto sp = constInts(4, "steps");
      if (failed(sp))
        return failure();
      steps = *sp;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return nodeError() << "starts, ends, axes and steps have "
                       << starts.size() << ", " << ends.size() << ", "
                       << axes.size() << " and " << steps.size()
                       << " values; they must have the same count";
  SmallVector<int64_t> outStart(rank, 0), outStep(rank, 1),
      shape(in.getShape());
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = axes[k];
    if (a < -rank || a >= rank || seen[a < 0 ? a + rank : a])
      return nodeError() << "axes " << shapeStr(axes)
                         << " are out of range or repeated for rank " << rank;
    if (a < 0)
      a += rank;
    seen[a] = true;
    int64_t dim = in.getDimSize(a), step = steps[k];
    if (step == 0)
      return nodeError() << "step of axis " << a << " is 0";
    // ONNX Slice: negative starts/ends count from the end, then clamp to
    // [0, dim] ([0, dim - 1] and [-1, dim - 1] for negative steps).
    int64_t b = starts[k], e = ends[k];
    if (b < 0)
      b = b < -dim ? 0 : b + dim;
    if (e < 0)
      e = e < -dim ? -1 : e + dim;
    int64_t n;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > b ? (e - b + step - 1) / step : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = b > e ? (b - e + (-step) - 1) / (-step) : 0;
    }
    outStart[a] = n ? b : 0;
    outStep[a] = step;
    shape[a] = n;
  }
  return defineSlot(0, stridedSlice(*s, outStart, outStep, shape));
}

LogicalResult Importer::split() {
  int64_t axis = attrInt("axis", 0);
  SmallVector<int64_t> sizes;
  bool haveSizes = false;
  if (opset < 13 && findAttr("split")) {
    sizes = attrInts("split", {});
    haveSizes = true;
  }
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  if (opset >= 13 && hasInput(1)) {
    auto sp = constInts(1, "split");
    if (failed(sp))
      return failure();
    sizes = *sp;
    haveSizes = true;
  }
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  int64_t dim = in.getDimSize(axis), outs = node->output_size();
  if (!haveSizes && opset >= 18) {
    int64_t n = attrInt("num_outputs", -1);
    if (attrFailed)
      return failure();
    if (n < 0)
      return nodeError() << "needs the 'split' input or the 'num_outputs' "
                            "attribute (opset 18+)";
    if (n != outs)
      return nodeError() << "num_outputs = " << n << " but the node has "
                         << outs << " outputs";
    auto parts = ceilParts(dim, n);
    if (failed(parts))
      return failure();
    sizes = *parts;
    haveSizes = true;
  }
  if (!haveSizes) {
    if (outs == 0 || dim % outs)
      return nodeError() << "cannot split axis " << axis << " of size " << dim
                         << " into " << outs << " equal parts";
    sizes.assign(outs, dim / outs);
  }
  int64_t total = 0;
  for (int64_t v : sizes) {
    if (v < 0)
      return nodeError() << "split sizes " << shapeStr(sizes)
                         << " must not be negative";
    if (__builtin_add_overflow(total, v, &total))
      return nodeError() << "split sizes " << shapeStr(sizes)
                         << " overflow int64";
  }
  if ((int64_t)sizes.size() != outs || total != dim)
    return nodeError() << "split sizes " << shapeStr(sizes) << " must have "
                       << outs << " entries (one per output) adding up to "
                       << dim;
  int64_t offset = 0;
  for (int64_t o = 0; o < outs; ++o) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1),
        shape(in.getShape());
    starts[axis] = sizes[o] ? offset : 0;
    shape[axis] = sizes[o];
    if (failed(defineSlot(o, stridedSlice(*s, starts, steps, shape))))
      return failure();
    offset += sizes[o];
  }
  return success();
}

LogicalResult Importer::pad() {
  std::string mode = attrString("mode", "constant");
  SmallVector<int64_t> pads;
  double value = 0;
  if (opset < 11) {
    if (!findAttr("pads"))
      return nodeError() << "attribute 'pads' is required (opset " << opset
                         << ")";
    pads = attrInts("pads", {});
    value = attrFloat("value", 0.0f);
  }
  if (attrFailed)
    return failure();
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap")
    return nodeError() << "mode '" << mode
                       << "' is not supported; supported: constant, edge, "
                          "reflect, wrap";
  Slot *s = input(0);
  if (!s)
    return failure();
  if (opset >= 11) {
    auto p = constInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (hasInput(2)) {
      Slot *c = input(2);
      if (!c)
        return failure();
      if (!c->isFoldable() || c->type().getNumElements() != 1)
        return nodeError() << "constant_value (input '" << node->input(2)
                           << "') must be a constant scalar"
                           << constantInputHint(2);
      Type ct = c->type().getElementType();
      if (isa<FloatType>(ct))
        value = (*c->constant.getValues<APFloat>().begin()).convertToDouble();
      else if (ct.isInteger(1)) // true is 1, not -1
        value = (*c->constant.getValues<APInt>().begin()).getZExtValue();
      else {
        int64_t v = (*c->constant.getValues<APInt>().begin()).getSExtValue();
        // dlgraph.pad holds the value as an f64.
        if (v < -(int64_t(1) << 53) || v > (int64_t(1) << 53))
          return nodeError() << "constant_value " << v
                             << " is not supported; integer pad values must "
                                "be in [-2^53, 2^53]";
        value = (double)v;
      }
    }
  }
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  if (opset >= 18 && hasInput(3)) {
    // Opset 18: `pads` holds begin and end values for the given axes only.
    auto a = constInts(3, "axes");
    if (failed(a))
      return failure();
    int64_t n = a->size();
    if ((int64_t)pads.size() != 2 * n)
      return nodeError() << "pads " << shapeStr(pads) << " must have " << 2 * n
                         << " values (begin and end per axis) for axes "
                         << shapeStr(*a);
    SmallVector<int64_t> full(2 * rank, 0);
    if (failed(normalizeAxes(*a, rank)))
      return failure();
    for (int64_t i = 0; i < n; ++i) {
      int64_t ax = (*a)[i];
      full[ax] = pads[i];
      full[ax + rank] = pads[i + n];
    }
    pads = std::move(full);
  }
  if ((int64_t)pads.size() != 2 * rank)
    return nodeError() << "pads " << shapeStr(pads) << " must have " << 2 * rank
                       << " values (begin and end per axis) for rank " << rank;
  if (llvm::any_of(pads, [](int64_t p) {
        return p < -kMaxElements || p > kMaxElements;
      }))
    return nodeError() << "pads " << shapeStr(pads)
                       << " are too large (at most 2^40 in magnitude)";
  // Negative pads crop: a slice first.
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1), shape(in.getShape());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = std::min<int64_t>(pads[d], 0),
            e = std::min<int64_t>(pads[d + rank], 0);
    shape[d] = in.getDimSize(d) + b + e;
    if (shape[d] < 0)
      return nodeError() << "pads " << shapeStr(pads)
                         << " remove more than the " << in.getDimSize(d)
                         << " elements of axis " << d;
    starts[d] = shape[d] ? -b : 0;
  }
  Slot cropped = stridedSlice(*s, starts, steps, shape);
  bool anyPad = llvm::any_of(pads, [](int64_t p) { return p > 0; });
  if (!anyPad)
    return defineSlot(0, cropped);
  Value x = materialize(cropped);
  Type et = in.getElementType();
  if (mode == "constant") {
    SmallVector<int64_t> at(rank), outShape(rank);
    for (int64_t d = 0; d < rank; ++d) {
      at[d] = std::max<int64_t>(pads[d], 0);
      outShape[d] = shape[d] + at[d] + std::max<int64_t>(pads[d + rank], 0);
    }
    auto type = RankedTensorType::get(outShape, et);
    if (llvm::any_of(shape, [](int64_t n) { return n == 0; }))
      return define(0, splatOf(type, value));
    return define(0, gr::PadOp::create(
                         builder, nodeLoc, type, x,
                         builder.getDenseI64ArrayAttr(at),
                         builder.getDenseI64ArrayAttr(steps),
                         builder.getF64FloatAttr(value)));
  }
  // edge / reflect / wrap: per axis, concat [head, x, tail] of slices of x.
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = std::max<int64_t>(pads[d], 0),
            e = std::max<int64_t>(pads[d + rank], 0);
    if (!b && !e)
      continue;
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t n = xt.getDimSize(d);
    if (mode == "reflect" ? (n < 2 || b > n - 1 || e > n - 1) : n < 1)
      return nodeError() << "axis " << d << " of size " << n
                         << " cannot be padded by " << b << " and " << e
                         << " in " << mode << " mode"
                         << (mode == "reflect" ? " (pads must be < size)" : "");
    auto part = [&](int64_t start, int64_t step, int64_t count) -> Value {
      SmallVector<int64_t> st(rank, 0), sp(rank, 1), sh(xt.getShape());
      if (mode == "edge") {
        st[d] = start;
        sh[d] = 1;
      } else {
        st[d] = start;
        sp[d] = step;
        sh[d] = count;
      }
      Value v = gr::SliceOp::create(builder, nodeLoc,
                                    RankedTensorType::get(sh, et), x, st, sp);
      if (mode == "edge" && count != 1) {
        sh[d] = count;
        v = gr::BroadcastToOp::create(builder, nodeLoc,
                                      RankedTensorType::get(sh, et), v);
      }
      return v;
    };
    SmallVector<Value> parts;
    // wrap (np.pad's mode): the positions -b .. n + e - 1 read x at their
    // index modulo n, as runs of contiguous slices.
    auto wrapped = [&](int64_t start, int64_t count) {
      while (count > 0) {
        int64_t at = ((start % n) + n) % n, len = std::min(count, n - at);
        parts.push_back(part(at, 1, len));
        start += len;
        count -= len;
      }
    };
    if (b && mode == "wrap")
      wrapped(-b, b);
    else if (b)
      parts.push_back(mode == "edge" ? part(0, 1, b) : part(b, -1, b));
    parts.push_back(x);
    if (e && mode == "wrap")
      wrapped(n, e);
    else if (e)
      parts.push_back(mode == "edge" ? part(n - 1, 1, e) : part(n - 2, -1, e));
    x = gr::ConcatOp::create(builder, nodeLoc, parts,
                             builder.getI64IntegerAttr(d));
  }
  return define(0, x);
}

//===----------------------------------------------------------------------===//
// OneHot
//===----------------------------------------------------------------------===//

LogicalResult Importer::oneHot() {
  int64_t axis = attrInt("axis", -1);
  if (attrFailed)
    return failure();
  Slot *idx = input(0);
  if (!idx)
    return failure();
  Type it = idx->type().getElementType();
  if (it.isInteger(1))
    return nodeError() << "indices (input '" << node->input(0)
                       << "') are bool; supported: int32, int64, float, "
                          "double";
  // depth: a scalar or one-element tensor of any numeric type (a float depth
  // is truncated to an integer, as ONNX casts it to int64).
  Slot *ds = input(1);
  if (!ds)
    return failure();
  if (!ds->constant || ds->type().getNumElements() != 1 ||
      ds->type().getRank() > 1 || ds->type().getElementType().isInteger(1))
    return nodeError() << "depth (input '" << node->input(1)
                       << "') must be a constant numeric scalar or "
                          "one-element 1-D tensor"
                       << constantInputHint(1);
  int64_t depth;
  if (isa<FloatType>(ds->type().getElementType())) {
    double d = (*ds->constant.getValues<APFloat>().begin()).convertToDouble();
    if (!(d >= 1 && d < (double)kMaxElements))
      return nodeError() << "depth " << d << " is not in [1, 2^40)";
    depth = (int64_t)d;
  } else {
    depth = intValues(ds->constant)[0];
  }
  if (depth < 1 || depth >= kMaxElements)
    return nodeError() << "depth " << depth << " is not in [1, 2^40)";
  // values: [off_value, on_value], whose element type is the result's.
  Slot *vs = input(2);
  if (!vs)
    return failure();
  if (!vs->constant)
    return nodeError() << "values (input '" << node->input(2)
                       << "') must be a constant (an initializer or a "
                          "Constant)"
                       << constantInputHint(2);
  if (vs->type().getRank() != 1 || vs->type().getNumElements() != 2)
    return nodeError() << "values (input '" << node->input(2)
                       << "') must be [off_value, on_value], 2 elements, "
                          "got shape "
                       << shapeStr(vs->type().getShape());
  auto values = llvm::to_vector(vs->constant.getValues<Attribute>());
  int64_t rank = idx->type().getRank();
  if (axis < -rank - 1 || axis > rank)
    return nodeError() << "axis " << axis << " is out of range [" << -rank - 1
                       << ", " << rank << "] for indices of rank " << rank;
  if (axis < 0)
    axis += rank + 1;
  Value indices = materialize(*idx);
  return define(0, gr::OneHotOp::create(builder, nodeLoc, indices,
                                        builder.getI64IntegerAttr(depth),
                                        builder.getI64IntegerAttr(axis),
                                        cast<TypedAttr>(values[0]),
                                        cast<TypedAttr>(values[1])));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

Value Importer::reshapeIfNeeded(Value v, ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return gr::ReshapeOp::create(builder, nodeLoc, t.clone(shape), v);
}

FailureOr<SmallVector<int64_t>> Importer::ceilParts(int64_t dim, int64_t n) {
  if (n <= 0 || n > std::max<int64_t>(dim, 1))
    return nodeError() << "cannot cut an axis of size " << dim << " into "
                       << n << " parts";
  int64_t chunk = (dim + n - 1) / n;
  if (chunk * (n - 1) >= dim && n > 1)
    return nodeError() << "cannot cut an axis of size " << dim << " into "
                       << n << " parts of " << chunk
                       << " (the last one would be empty)";
  SmallVector<int64_t> sizes(n, chunk);
  sizes.back() = dim - chunk * (n - 1);
  return sizes;
}

LogicalResult Importer::splitToSequence() {
  int64_t axis = attrInt("axis", 0), keepdims = attrInt("keepdims", 1);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  int64_t dim = in.getDimSize(axis);
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (hasInput(1)) {
    auto sp = constInts(1, "split");
    if (failed(sp))
      return failure();
    if (input(1)->type().getRank() == 0) {
      // One size: parts of that size, the last one smaller.
      int64_t size = (*sp)[0];
      if (size <= 0)
        return nodeError() << "split size " << size << " must be positive";
      for (int64_t at = 0; at < dim; at += size)
        sizes.push_back(std::min(size, dim - at));
    } else {
      sizes = *sp;
      int64_t total = 0;
      for (int64_t v : sizes) {
        if (v < 0 || __builtin_add_overflow(total, v, &total))
          return nodeError() << "split sizes " << shapeStr(sizes)
                             << " must be non-negative and add up to " << dim;
      }
      if (total != dim)
        return nodeError() << "split sizes " << shapeStr(sizes)
                           << " must add up to " << dim;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = keepdims == 0;
  }
  SmallVector<Slot> parts;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1),
        shape(in.getShape());
    starts[axis] = size ? offset : 0;
    shape[axis] = size;
    Slot part = stridedSlice(*s, starts, steps, shape);
    if (squeeze) {
      SmallVector<int64_t> squeezed(in.getShape());
      squeezed.erase(squeezed.begin() + axis);
      auto type = RankedTensorType::get(squeezed, in.getElementType());
      if (part.isFoldable())
        part.constant = part.constant.reshape(type);
      else
        part.value = gr::ReshapeOp::create(builder, nodeLoc, type,
                                           materialize(part));
    }
    parts.push_back(part);
    offset += size;
  }
  sequences[node->output(0)] = std::move(parts);
  return success();
}

LogicalResult Importer::sequenceAt() {
  auto seq = sequences.find(node->input(0));
  if (seq == sequences.end())
    return nodeError() << "input '" << node->input(0)
                       << "' is not a sequence made by SplitToSequence (the "
                          "only sequences dlc imports: their length is "
                          "static)";
  auto pos = constInts(1, "position");
  if (failed(pos))
    return failure();
  int64_t n = seq->second.size(), p = (*pos)[0];
  if (p < -n || p >= n)
    return nodeError() << "position " << p << " is out of range for a "
                       << "sequence of " << n << " tensors";
  return defineSlot(0, seq->second[p < 0 ? p + n : p]);
}

LogicalResult Importer::gatherND() {
  int64_t batchDims = attrInt("batch_dims", 0);
  if (attrFailed)
    return failure();
  Slot *data = input(0), *idxSlot = data ? input(1) : nullptr;
  if (!idxSlot)
    return failure();
  RankedTensorType dt = data->type(), it = idxSlot->type();
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    return nodeError() << "indices (input '" << node->input(1)
                       << "') have element type " << it.getElementType()
                       << "; supported: int32, int64";
  int64_t r = dt.getRank(), q = it.getRank();
  if (q < 1 || r < 1 || batchDims < 0 || batchDims >= std::min(r, q))
    return nodeError() << "batch_dims = " << batchDims
                       << " must be below the ranks of data (" << r
                       << ") and indices (" << q << ")";
  ArrayRef<int64_t> ds = dt.getShape(), is = it.getShape();
  int64_t k = is.back();
  if (k < 1 || batchDims + k > r)
    return nodeError() << "index tuples of " << k << " components do not fit "
                       << "data of rank " << r << " after " << batchDims
                       << " batch dimensions";
  if (ds.take_front(batchDims) != is.take_front(batchDims))
    return nodeError() << "the batch dimensions of data " << shapeStr(ds)
                       << " and indices " << shapeStr(is) << " differ";
  int64_t batch = product(ds.take_front(batchDims));
  int64_t indexed = product(ds.slice(batchDims, k));
  // Strides of the indexed dimensions within one batch entry.
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * ds[batchDims + j + 1];

  // The flat index, [indices.shape[:-1]], in i64.
  auto i64 = builder.getI64Type();
  SmallVector<int64_t> tupleShape(is.drop_back());
  auto tupleType = RankedTensorType::get(tupleShape, i64);
  auto scalar = [&](int64_t v) -> Value {
    return gr::ConstantOp::create(
        builder, nodeLoc,
        DenseElementsAttr::get(RankedTensorType::get({}, i64),
                               builder.getI64IntegerAttr(v)));
  };
  Value idx = materialize(*idxSlot);
  if (!it.getElementType().isInteger(64))
    idx = gr::CastOp::create(builder, nodeLoc, it.clone(i64), idx);
  int64_t total = batch * indexed;
  Value flat;
  for (int64_t j = 0; j < k; ++j) {
    SmallVector<int64_t> starts(q, 0), steps(q, 1), shape(is);
    starts.back() = j;
    shape.back() = 1;
    Value c = gr::SliceOp::create(
        builder, nodeLoc, RankedTensorType::get(shape, i64), idx,
        builder.getDenseI64ArrayAttr(starts),
        builder.getDenseI64ArrayAttr(steps));
    c = reshapeIfNeeded(c, tupleType.getShape());
    int64_t dim = ds[batchDims + j];
    // Negative components count from the end; a component out of range
    // makes the flat index >= total, which dlgraph.gather reads as 0.
    Value neg = gr::CompareOp::create(builder, nodeLoc, "lt", c, scalar(0));
    c = gr::SelectOp::create(builder, nodeLoc, neg,
                             gr::AddOp::create(builder, nodeLoc, c,
                                               scalar(dim)),
                             c);
    Value scaled = gr::SelectOp::create(
        builder, nodeLoc,
        gr::CompareOp::create(builder, nodeLoc, "ge", c, scalar(0)),
        gr::MulOp::create(builder, nodeLoc, c, scalar(strides[j])),
        scalar(total));
    c = gr::SelectOp::create(
        builder, nodeLoc,
        gr::CompareOp::create(builder, nodeLoc, "lt", c, scalar(dim)), scaled,
        scalar(total));
    flat = flat ? Value(gr::AddOp::create(builder, nodeLoc, flat, c)) : c;
  }
  if (batchDims > 0) {
    // Each batch entry's offset, broadcast over the index tuples.
    SmallVector<int64_t> offsetShape(is.take_front(batchDims));
    offsetShape.append(q - 1 - batchDims, 1);
    SmallVector<int64_t> offsets(batch);
    for (int64_t b = 0; b < batch; ++b)
      offsets[b] = b * indexed;
    Value off = gr::ConstantOp::create(
        builder, nodeLoc,
        DenseElementsAttr::get(RankedTensorType::get(offsetShape, i64),
                               ArrayRef<int64_t>(offsets)));
    flat = gr::AddOp::create(builder, nodeLoc, flat, off);
  }
  SmallVector<int64_t> flatShape{total};
  llvm::append_range(flatShape, ds.drop_front(batchDims + k));
  Value x = reshapeIfNeeded(materialize(*data), flatShape);
  return define(0, gr::GatherOp::create(builder, nodeLoc, x, flat,
                                        builder.getI64IntegerAttr(0)));
}

//===----------------------------------------------------------------------===//
// ReverseSequence and TensorScatter: gather_elements along the sequence axis
// with indices computed from the run-time lengths / write positions.
//===----------------------------------------------------------------------===//

/// 0, 1, ..., n - 1 along axis |axis| of an i64 tensor of rank |rank| whose
/// other dimensions are 1.
Value Importer::iotaAlong(int64_t rank, int64_t axis, int64_t n) {
  SmallVector<int64_t> shape(rank, 1), vals;
  shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    vals.push_back(i);
  auto type = RankedTensorType::get(shape, builder.getI64Type());
  return gr::ConstantOp::create(builder, nodeLoc,
                                cast<ElementsAttr>(intConstant(type, vals)));
}

/// A 1-D per-batch i64 input |s| of length dim(|batchAxis|) of a rank-|rank|
/// tensor, reshaped to broadcast along the other axes.
Value Importer::perBatch(Slot &s, int64_t rank, int64_t batchAxis) {
  SmallVector<int64_t> shape(rank, 1);
  shape[batchAxis] = s.type().getNumElements();
  Value v = materialize(s);
  return gr::ReshapeOp::create(builder, nodeLoc, s.type().clone(shape), v);
}

LogicalResult Importer::reverseSequence() {
  int64_t batchAxis = attrInt("batch_axis", 1);
  int64_t timeAxis = attrInt("time_axis", 0);
  if (attrFailed)
    return failure();
  Slot *x = input(0), *lens = x ? input(1) : nullptr;
  if (!x || !lens)
    return failure();
  RankedTensorType xt = x->type(), lt = lens->type();
  int64_t rank = xt.getRank();
  if (rank < 2 || batchAxis < 0 || batchAxis > 1 || timeAxis < 0 ||
      timeAxis > 1 || batchAxis == timeAxis)
    return nodeError() << "batch_axis " << batchAxis << " and time_axis "
                       << timeAxis << " must be 0 and 1 (in either order) "
                       << "of an input of rank >= 2, got shape "
                       << shapeStr(xt.getShape());
  int64_t batch = xt.getDimSize(batchAxis), time = xt.getDimSize(timeAxis);
  if (!lt.getElementType().isInteger(64) || lt.getRank() != 1 ||
      lt.getDimSize(0) != batch)
    return nodeError() << "sequence_lens (input '" << node->input(1)
                       << "') must be int64 of shape [" << batch
                       << "], got " << elementTypeName(lt.getElementType())
                       << " " << shapeStr(lt.getShape());
  // index[b, t] = t < len[b] ? len[b] - 1 - t : t along the time axis.
  Value len = perBatch(*lens, rank, batchAxis);
  Value t = iotaAlong(rank, timeAxis, time);
  Value one = splatOf(cast<RankedTensorType>(len.getType()), 1.0);
  Value rev = gr::SubOp::create(
      builder, nodeLoc, gr::SubOp::create(builder, nodeLoc, len, one), t);
  Value inSeq = gr::CompareOp::create(builder, nodeLoc, "lt", t, len);
  Value idx = gr::SelectOp::create(builder, nodeLoc, inSeq, rev, t);
  idx = gr::BroadcastToOp::create(builder, nodeLoc,
                                  xt.clone(builder.getI64Type()), idx);
  return define(0, gr::GatherElementsOp::create(
                       builder, nodeLoc, materialize(*x), idx,
                       builder.getI64IntegerAttr(timeAxis)));
}

LogicalResult Importer::tensorScatter() {
  std::string mode = attrString("mode", "linear");
  int64_t axis = attrInt("axis", -2);
  if (attrFailed)
    return failure();
  if (mode != "linear" && mode != "circular")
    return nodeError() << "mode '" << mode << "'; supported: linear, circular";
  Slot *past = input(0), *update = past ? input(1) : nullptr;
  if (!past || !update)
    return failure();
  RankedTensorType pt = past->type(), ut = update->type();
  int64_t rank = pt.getRank();
  if (axis < 0)
    axis += rank;
  if (axis < 1 || axis >= rank || ut.getRank() != rank ||
      pt.getElementType() != ut.getElementType())
    return nodeError() << "axis " << attrInt("axis", -2)
                       << " must name a sequence axis after the batch axis "
                          "of past_cache "
                       << shapeStr(pt.getShape()) << ", and update "
                       << shapeStr(ut.getShape())
                       << " must have its rank and element type";
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? ut.getDimSize(d) > pt.getDimSize(d)
                  : ut.getDimSize(d) != pt.getDimSize(d))
      return nodeError() << "update " << shapeStr(ut.getShape())
                         << " does not fit past_cache "
                         << shapeStr(pt.getShape()) << " along axis "
                         << axis;
  int64_t maxLen = pt.getDimSize(axis), len = ut.getDimSize(axis);
  // present[..., c, ...] = update[..., c - w[b], ...] where that index is in
  // [0, len) (c - w[b] modulo maxLen when circular), else past[..., c, ...].
  Value c = iotaAlong(rank, axis, maxLen);
  Value s = c;
  if (hasInput(2)) {
    Slot *w = input(2);
    if (!w)
      return failure();
    RankedTensorType wt = w->type();
    if (!wt.getElementType().isInteger(64) || wt.getRank() != 1 ||
        wt.getDimSize(0) != pt.getDimSize(0))
      return nodeError() << "write_indices (input '" << node->input(2)
                         << "') must be int64 of shape [" << pt.getDimSize(0)
                         << "], got " << elementTypeName(wt.getElementType())
                         << " " << shapeStr(wt.getShape());
    s = gr::SubOp::create(builder, nodeLoc, c, perBatch(*w, rank, 0));
  }
  auto st = cast<RankedTensorType>(s.getType());
  if (mode == "circular")
    s = gr::ModOp::create(builder, nodeLoc, s, splatOf(st, maxLen));
  auto cmp = [&](StringRef pred, Value l, Value r) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, pred, l, r);
  };
  Value geZero = cmp("ge", s, splatOf(st, 0));
  Value ltLen = cmp("lt", s, splatOf(st, len));
  Value valid = gr::SelectOp::create(builder, nodeLoc, geZero, ltLen, geZero);
  Value idx = gr::BroadcastToOp::create(builder, nodeLoc,
                                        pt.clone(builder.getI64Type()), s);
  Value gathered =
      gr::GatherElementsOp::create(builder, nodeLoc, materialize(*update), idx,
                                   builder.getI64IntegerAttr(axis));
  return define(0, gr::SelectOp::create(builder, nodeLoc, valid, gathered,
                                        materialize(*past)));
}

ArrayRef<OpMapping> Importer::indexingOps() {
  static const OpMapping ops[] = {
      {"Gather", 1, &Importer::gather},
      {"GatherElements", 11, &Importer::gatherElements},
      {"GatherND", 12, &Importer::gatherND},
      {"OneHot", 11, &Importer::oneHot},
      {"ReverseSequence", 10, &Importer::reverseSequence, 28},
      {"Scatter", 9, &Importer::scatterElements},
      {"Pad", 2, &Importer::pad, 18},
      {"ScatterElements", 11, &Importer::scatterElements, 18},
      {"ScatterND", 11, &Importer::scatterND, 18},
      {"Slice", 1, &Importer::slice},
      {"SequenceAt", 11, &Importer::sequenceAt},
      {"Split", 2, &Importer::split, 18},
      {"SplitToSequence", 11, &Importer::splitToSequence},
      {"TensorScatter", 24, &Importer::tensorScatter},
  };
  return ops;
}
