//===- IndexingScatter.cpp - ONNX ScatterND / ScatterElements -> dlgraph --===//
//
// The scatters of the indexing family (registered in Indexing.cpp): folded
// on constant data, indices and updates; otherwise rows written at
// constant or run-time indices.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::scatterInputs(Slot *(&in)[3], StringRef reduction,
                                      bool &folds, bool &runtimeIndices) {
  for (int i = 0; i < 3; ++i)
    if (!(in[i] = input(i)))
      return failure();
  folds = in[0]->isFoldable() && in[1]->isFoldable() && in[2]->isFoldable();
  runtimeIndices = !in[1]->isFoldable();
  if (runtimeIndices && ((reduction != "none" && reduction != "add") ||
                         !in[0]->type().getElementType().isF32()))
    return nodeError() << "indices (input '" << node->input(1)
                       << "') are computed at run time; " << node->op_type()
                       << " with run-time indices supports reduction none "
                          "or add on f32 data (got reduction '"
                       << reduction << "' on "
                       << elementTypeName(in[0]->type().getElementType())
                       << "); with compile-time constant indices, every "
                          "reduction"
                       << constantInputHint(1);
  // Constant indices adding into run-time data take the run-time-index path
  // (a scatter-add of the rows).
  if (!folds && !runtimeIndices && reduction == "add" &&
      in[0]->type().getElementType().isF32())
    runtimeIndices = true;
  if (!folds && !runtimeIndices && reduction != "none")
    return nodeError() << "reduction '" << reduction
                       << "' on run-time data or updates is not supported; "
                          "supported: none, add on f32 data (or constant "
                          "inputs, folded)";
  Type dt = in[0]->type().getElementType(), it = in[1]->type().getElementType(),
       ut = in[2]->type().getElementType();
  if (!it.isInteger(64) && !it.isInteger(32))
    return nodeError() << "indices have element type " << it
                       << "; supported: int32, int64";
  if (ut != dt)
    return nodeError() << "updates have element type " << ut << ", data " << dt
                       << "; they must be equal";
  return success();
}

LogicalResult Importer::scatterND() {
  std::string reduction = attrString("reduction", "none");
  if (attrFailed)
    return failure();
  // max and min since opset 18.
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      (opset < 18 || (reduction != "max" && reduction != "min")))
    return nodeError() << "reduction '" << reduction
                       << "' is not supported; supported: none, add, mul"
                       << (opset >= 18 ? ", max, min" : "");
  Slot *in[3];
  bool folds, runtimeIndices;
  if (failed(scatterInputs(in, reduction, folds, runtimeIndices)))
    return failure();
  RankedTensorType dt = in[0]->type(), it = in[1]->type(), ut = in[2]->type();
  ArrayRef<int64_t> ds = dt.getShape(), is = it.getShape();
  int64_t r = ds.size(), q = is.size(), k = q ? is.back() : 0;
  if (q < 1 || k < 1 || k > r)
    return nodeError() << "indices of shape " << shapeStr(is)
                       << " must have rank >= 1 and a last dimension in 1.."
                       << r << " (the rank of data)";
  SmallVector<int64_t> expect(is.drop_back());
  llvm::append_range(expect, ds.drop_front(k));
  if (ut.getShape() != ArrayRef<int64_t>(expect))
    return nodeError() << "updates have shape " << shapeStr(ut.getShape())
                       << ", expected " << shapeStr(expect)
                       << " (indices.shape[:-1] + data.shape[k:])";
  int64_t updatesCount = product(is) / k;
  if (runtimeIndices) {
    // row = sum_d normalized(index[..., d]) * stride_d over data's first k
    // axes.
    auto i64 = builder.getI64Type();
    SmallVector<int64_t> sizes(ds.take_front(k)), strides(k, 1);
    for (int64_t d = k - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * ds[d + 1];
    auto kType = RankedTensorType::get({k}, i64);
    Value size = gr::ConstantOp::create(
        builder, nodeLoc, DenseElementsAttr::get(kType, ArrayRef(sizes)));
    Value stride = gr::ConstantOp::create(
        builder, nodeLoc, DenseElementsAttr::get(kType, ArrayRef(strides)));
    Value idx = normalizedIndex(materialize(*in[1]), size);
    auto idxType = RankedTensorType::get(is, i64);
    Value scaled = gr::MulOp::create(builder, nodeLoc, idxType, idx, stride);
    Value rows = gr::ReduceSumOp::create(
        builder, nodeLoc, RankedTensorType::get(is.drop_back(), i64), scaled,
        SmallVector<int64_t>{q - 1}, /*keepdims=*/false);
    return scatterRowsAtRunTime(
        *in[0], *in[2], reshapeIfNeeded(rows, {updatesCount}), k, reduction);
  }
  SmallVector<int64_t> idx = intValues(in[1]->constant);
  // The row of data (flattened over its first k axes) each update writes.
  SmallVector<int64_t> rows(updatesCount);
  for (int64_t u = 0; u < updatesCount; ++u) {
    int64_t base = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t v = idx[u * k + d];
      if (v < -ds[d] || v >= ds[d])
        return nodeError() << "index " << v << " (update " << u << ", axis "
                           << d << ") is out of range for a dimension of size "
                           << ds[d];
      base = base * ds[d] + (v < 0 ? v + ds[d] : v);
    }
    rows[u] = base;
  }
  return scatterRows(*in[0], *in[2], rows, k, reduction, folds);
}

Value Importer::normalizedIndex(Value index, Value size) {
  auto it = cast<RankedTensorType>(index.getType());
  auto i64 = builder.getI64Type();
  auto t = it.clone(i64);
  if (!it.getElementType().isInteger(64))
    index = gr::CastOp::create(builder, nodeLoc, t, index);
  Value zero = splatOf(RankedTensorType::get({}, i64), 0);
  Value negative = gr::CompareOp::create(builder, nodeLoc, "lt", index, zero);
  Value wrapped = gr::AddOp::create(builder, nodeLoc, t, index, size);
  return gr::SelectOp::create(builder, nodeLoc, negative, wrapped, index);
}

LogicalResult Importer::scatterRowsAtRunTime(Slot &dataSlot, Slot &updSlot,
                                             Value rows, int64_t k,
                                             StringRef reduction) {
  RankedTensorType dt = dataSlot.type();
  ArrayRef<int64_t> ds = dt.getShape();
  int64_t r = ds.size();
  int64_t numRows = product(ds.take_front(k));
  int64_t updatesCount = cast<RankedTensorType>(rows.getType()).getDimSize(0);
  SmallVector<int64_t> rowShape{numRows}, updShape{updatesCount};
  llvm::append_range(rowShape, ds.drop_front(k));
  llvm::append_range(updShape, ds.drop_front(k));
  Type et = dt.getElementType();
  Value data = reshapeIfNeeded(materialize(dataSlot), rowShape);
  Value upd = reshapeIfNeeded(materialize(updSlot), updShape);
  auto rowType = RankedTensorType::get(rowShape, et);
  auto axis0 = builder.getI64IntegerAttr(0);
  Value summed =
      gr::GatherGradOp::create(builder, nodeLoc, rowType, rows, upd, axis0);
  Value y;
  if (reduction == "add") {
    y = gr::AddOp::create(builder, nodeLoc, rowType, data, summed);
  } else {
    auto countType = RankedTensorType::get({numRows}, et);
    Value ones = splatOf(RankedTensorType::get({updatesCount}, et), 1);
    Value count = gr::GatherGradOp::create(builder, nodeLoc, countType, rows,
                                           ones, axis0);
    Value written =
        gr::CompareOp::create(builder, nodeLoc, "gt", count,
                              splatOf(RankedTensorType::get({}, et), 0));
    SmallVector<int64_t> maskShape{numRows};
    maskShape.append(r - k, 1);
    written = reshapeIfNeeded(written, maskShape);
    y = gr::SelectOp::create(builder, nodeLoc, written, summed, data);
  }
  return define(0, reshapeIfNeeded(y, ds));
}

LogicalResult Importer::scatterRows(Slot &dataSlot, Slot &updSlot,
                                    ArrayRef<int64_t> rows, int64_t k,
                                    StringRef reduction, bool folds) {
  RankedTensorType dt = dataSlot.type();
  ArrayRef<int64_t> ds = dt.getShape();
  int64_t r = ds.size(), updatesCount = rows.size();
  int64_t slice = product(ds.drop_front(k));
  if (!folds) {
    // Run-time data or updates, constant indices: each row of the result
    // is the last update written to it, or data's row. With data as
    // [R, slice...] and updates as [U, slice...]:
    //   result = select(written, gather(updates, source), data)
    // where source[r] is the last update of row r (U where none, which
    // gather reads as 0). Gradients: data's where nothing was written,
    // each update's where it is the last writer (select and gather's).
    int64_t numRows = product(ds.take_front(k));
    SmallVector<int64_t> source(numRows, updatesCount);
    SmallVector<bool> written(numRows, false);
    for (int64_t u = 0; u < updatesCount; ++u) {
      source[rows[u]] = u;
      written[rows[u]] = true;
    }
    SmallVector<int64_t> rowShape{numRows}, updShape{updatesCount},
        maskShape{numRows};
    llvm::append_range(rowShape, ds.drop_front(k));
    llvm::append_range(updShape, ds.drop_front(k));
    maskShape.append(r - k, 1);
    Value data = reshapeIfNeeded(materialize(dataSlot), rowShape);
    Value upd = reshapeIfNeeded(materialize(updSlot), updShape);
    auto i64 = builder.getI64Type();
    Value src = gr::ConstantOp::create(
        builder, nodeLoc,
        DenseElementsAttr::get(RankedTensorType::get({numRows}, i64),
                               ArrayRef<int64_t>(source)));
    Value mask = gr::ConstantOp::create(
        builder, nodeLoc,
        DenseElementsAttr::get(
            RankedTensorType::get(maskShape, builder.getI1Type()),
            ArrayRef<bool>(written)));
    Value picked = gr::GatherOp::create(builder, nodeLoc, upd, src,
                                        builder.getI64IntegerAttr(0));
    Value y = gr::SelectOp::create(builder, nodeLoc, mask, picked, data);
    return define(0, reshapeIfNeeded(y, ds));
  }
  SmallVector<Attribute> out(dataSlot.constant.getValues<Attribute>());
  SmallVector<Attribute> upd(updSlot.constant.getValues<Attribute>());
  Type et = dt.getElementType();
  for (int64_t u = 0; u < updatesCount; ++u) {
    int64_t base = rows[u];
    for (int64_t j = 0; j < slice; ++j) {
      Attribute &dst = out[base * slice + j];
      Attribute src = upd[u * slice + j];
      if (reduction == "none") {
        dst = src;
      } else if (isa<FloatType>(et)) {
        APFloat a = cast<FloatAttr>(dst).getValue();
        APFloat b = cast<FloatAttr>(src).getValue();
        if (reduction == "add")
          a.add(b, APFloat::rmNearestTiesToEven);
        else if (reduction == "mul")
          a.multiply(b, APFloat::rmNearestTiesToEven);
        else // NaN propagates, as np.maximum / np.minimum
          a = reduction == "max" ? llvm::maximum(a, b) : llvm::minimum(a, b);
        dst = FloatAttr::get(et, a);
      } else {
        APInt a = cast<IntegerAttr>(dst).getValue();
        APInt b = cast<IntegerAttr>(src).getValue();
        // Wraps, as integer arithmetic does at run time; bools: or / and.
        if (et.isInteger(1))
          a = reduction == "add" || reduction == "max" ? (a | b) : (a & b);
        else if (reduction == "add" || reduction == "mul")
          a = reduction == "add" ? a + b : a * b;
        else
          a = (reduction == "max") == a.slt(b) ? b : a;
        dst = IntegerAttr::get(et, a);
      }
    }
  }
  return defineConstant(0, DenseElementsAttr::get(dt, out));
}

LogicalResult Importer::scatterElements() {
  int64_t axis = attrInt("axis", 0);
  std::string reduction = attrString("reduction", "none");
  if (attrFailed)
    return failure();
  // add and mul since opset 16, max and min since 18.
  if (reduction != "none" &&
      (opset < 16 ||
       (reduction != "add" && reduction != "mul" &&
        (opset < 18 || (reduction != "max" && reduction != "min")))))
    return nodeError() << "reduction '" << reduction
                       << "' is not supported at opset " << opset
                       << "; supported: none"
                       << (opset >= 16 ? ", add, mul" : "")
                       << (opset >= 18 ? ", max, min" : "");
  Slot *in[3];
  bool folds, runtimeIndices;
  if (failed(scatterInputs(in, reduction, folds, runtimeIndices)))
    return failure();
  RankedTensorType dt = in[0]->type(), it = in[1]->type(), ut = in[2]->type();
  ArrayRef<int64_t> ds = dt.getShape(), is = it.getShape();
  int64_t r = ds.size();
  if (ut.getShape() != is)
    return nodeError() << "updates have shape " << shapeStr(ut.getShape())
                       << ", indices " << shapeStr(is)
                       << "; they must be equal";
  if (r < 1 || (int64_t)is.size() != r)
    return nodeError() << "indices have rank " << is.size() << ", data " << r
                       << "; they must be equal and at least 1";
  if (axis < -r || axis >= r)
    return nodeError() << "axis " << axis << " is out of range for rank " << r;
  if (axis < 0)
    axis += r;
  for (int64_t d = 0; d < r; ++d)
    if (is[d] > ds[d])
      return nodeError() << "indices of shape " << shapeStr(is)
                         << " exceed data of shape " << shapeStr(ds)
                         << " on axis " << d;
  // Each update writes one element of data: its own position in indices,
  // with the axis coordinate replaced by the index there. That is ScatterND
  // with k = rank (rows are elements).
  int64_t count = product(is);
  if (runtimeIndices) {
    // row = base + normalized(index) * stride(axis), base the element's
    // flat position with its axis coordinate 0.
    SmallVector<int64_t> base(count), pos(r, 0);
    int64_t axisStride = product(ds.drop_front(axis + 1));
    for (int64_t u = 0; u < count; ++u) {
      int64_t flat = 0;
      for (int64_t d = 0; d < r; ++d)
        flat = flat * ds[d] + (d == axis ? 0 : pos[d]);
      base[u] = flat;
      for (int64_t d = r - 1; d >= 0 && ++pos[d] == is[d]; --d)
        pos[d] = 0;
    }
    auto i64 = builder.getI64Type();
    auto idxType = RankedTensorType::get(is, i64);
    auto scalar = RankedTensorType::get({}, i64);
    Value idx = normalizedIndex(
        materialize(*in[1]),
        gr::ConstantOp::create(builder, nodeLoc,
                               DenseElementsAttr::get(scalar, ds[axis])));
    Value scaled = gr::MulOp::create(
        builder, nodeLoc, idxType, idx,
        gr::ConstantOp::create(builder, nodeLoc,
                               DenseElementsAttr::get(scalar, axisStride)));
    Value rows = gr::AddOp::create(
        builder, nodeLoc, idxType, scaled,
        gr::ConstantOp::create(
            builder, nodeLoc, DenseElementsAttr::get(idxType, ArrayRef(base))));
    return scatterRowsAtRunTime(*in[0], *in[2], reshapeIfNeeded(rows, {count}),
                                r, reduction);
  }
  SmallVector<int64_t> idx = intValues(in[1]->constant);
  SmallVector<int64_t> rows(count), pos(r, 0);
  for (int64_t u = 0; u < count; ++u) {
    int64_t v = idx[u];
    if (v < -ds[axis] || v >= ds[axis])
      return nodeError() << "index " << v << " (element " << u
                         << ") is out of range for axis " << axis << " of size "
                         << ds[axis];
    int64_t flat = 0;
    for (int64_t d = 0; d < r; ++d)
      flat = flat * ds[d] + (d == axis ? (v < 0 ? v + ds[d] : v) : pos[d]);
    rows[u] = flat;
    for (int64_t d = r - 1; d >= 0 && ++pos[d] == is[d]; --d)
      pos[d] = 0;
  }
  return scatterRows(*in[0], *in[2], rows, r, reduction, folds);
}
