//===- DataMovement.cpp - data movement in the reference interpreter ------===//
// Ops that move or pick elements: identity, reshape, transpose, slice and
// pad, concat, gathers and their scatter-add gradients, resize and its
// gradient, and one_hot.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/ResizeCoordinates.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;
using dlc::semantics::ResizeTap;
using dlc::semantics::resizeTap;

namespace {

Tensor evalTranspose(Frame &frame, TransposeOp o) {
  const Tensor &x = frame.get(o.getInput());
  Tensor y(shapeOf(o.getResult()));
  auto xsr = stridesOf(x.shape);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < y.numElements(); ++i) {
    unravel(i, y.shape, idx);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      off += idx[d] * xsr[o.getPerm()[d]];
    y.data[i] = x.data[off];
  }
  return y;
}

/// small[i] = big[starts + steps * i]; slice reads big, pad writes it.
template <typename OpT> Tensor evalSliceOrPad(Frame &frame, OpT o) {
  bool isPad = std::is_same_v<OpT, PadOp>;
  const Tensor &x = frame.get(o.getInput());
  Tensor y(shapeOf(o.getResult()));
  if constexpr (std::is_same_v<OpT, PadOp>)
    y = Tensor(y.shape, o.getValue().convertToDouble());
  const Tensor &small = isPad ? x : y;
  const std::vector<int64_t> &bigShape = isPad ? y.shape : x.shape;
  auto bs = stridesOf(bigShape);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < small.numElements(); ++i) {
    unravel(i, small.shape, idx);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      off += (o.getStarts()[d] + o.getSteps()[d] * idx[d]) * bs[d];
    if (isPad)
      y.data[off] = x.data[i];
    else
      y.data[i] = x.data[off];
  }
  return y;
}

Tensor evalConcat(Frame &frame, ConcatOp o) {
  Tensor y(shapeOf(o.getResult()));
  int64_t axis = o.getAxis(), offset = 0;
  std::vector<int64_t> idx;
  auto ys = stridesOf(y.shape);
  for (Value v : o.getInputs()) {
    const Tensor &x = frame.get(v);
    for (int64_t i = 0; i < x.numElements(); ++i) {
      unravel(i, x.shape, idx);
      idx[axis] += offset;
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        off += idx[d] * ys[d];
      y.data[off] = x.data[i];
    }
    offset += x.shape[axis];
  }
  return y;
}

/// dlgraph.gather, or (GatherGradOp) its scatter-add gradient: data
/// [outer, n, inner], indices [m] flattened: result [outer, m, inner].
/// Out-of-range indices read 0 / add nothing.
template <typename OpT> Tensor evalGather(Frame &frame, OpT o) {
  Operation *op = o;
  bool isGrad = std::is_same_v<OpT, GatherGradOp>;
  const Tensor &idx = frame.get(op->getOperand(isGrad ? 0 : 1));
  const Tensor &src = frame.get(op->getOperand(isGrad ? 1 : 0));
  std::vector<int64_t> dataShape =
      isGrad ? shapeOf(op->getResult(0)) : src.shape;
  int64_t axis = o.getAxis(), outer = 1, inner = 1, n = dataShape[axis],
          m = idx.numElements();
  for (int64_t d = 0; d < axis; ++d)
    outer *= dataShape[d];
  for (size_t d = axis + 1; d < dataShape.size(); ++d)
    inner *= dataShape[d];
  Tensor y(shapeOf(op->getResult(0)));
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = (int64_t)idx.data[j];
      if (k < 0)
        k += n;
      if (k < 0 || k >= n)
        continue;
      for (int64_t c = 0; c < inner; ++c) {
        int64_t g = (a * m + j) * inner + c, dpos = (a * n + k) * inner + c;
        if (isGrad)
          y.data[dpos] += src.data[g];
        else
          y.data[g] = src.data[dpos];
      }
    }
  return y;
}

/// dlgraph.gather_elements, or (GatherElementsGradOp) its scatter-add
/// gradient. Out-of-range indices read 0 / add nothing.
template <typename OpT> Tensor evalGatherElements(Frame &frame, OpT o) {
  Operation *op = o;
  bool isGrad = std::is_same_v<OpT, GatherElementsGradOp>;
  const Tensor &idx = frame.get(op->getOperand(isGrad ? 0 : 1));
  const Tensor &src = frame.get(op->getOperand(isGrad ? 1 : 0));
  Tensor y(shapeOf(op->getResult(0)));
  const std::vector<int64_t> &dataShape = isGrad ? y.shape : src.shape;
  int64_t axis = o.getAxis();
  auto ds = stridesOf(dataShape);
  std::vector<int64_t> p;
  for (int64_t i = 0; i < idx.numElements(); ++i) {
    unravel(i, idx.shape, p);
    int64_t k = (int64_t)idx.data[i];
    if (k < 0)
      k += dataShape[axis];
    if (k < 0 || k >= dataShape[axis])
      continue;
    p[axis] = k;
    int64_t off = 0;
    for (size_t d = 0; d < p.size(); ++d)
      off += p[d] * ds[d];
    if (isGrad)
      y.data[off] += src.data[i];
    else
      y.data[i] = src.data[off];
  }
  return y;
}

/// Forward: y[o] = sum over corners of prod_d w_d * x[i]; the gradient
/// (ResizeGradOp) scatters dy[o] * prod_d w_d into dx[i].
template <typename OpT> Tensor evalResize(Frame &frame, OpT o) {
  Operation *op = o;
  bool isGrad = std::is_same_v<OpT, ResizeGradOp>;
  const Tensor &src = frame.get(op->getOperand(0));
  std::vector<int64_t> in =
      shapeOf(isGrad ? op->getResult(0) : op->getOperand(0));
  std::vector<int64_t> out =
      shapeOf(isGrad ? op->getOperand(0) : op->getResult(0));
  ArrayRef<double> scales = o.getScales();
  int64_t rank = in.size();
  Tensor r(shapeOf(op->getResult(0)));
  auto inStrides = stridesOf(in);
  std::vector<int64_t> idx;
  std::vector<ResizeTap> taps(rank);
  int64_t corners = o.getMode() == "linear" ? (int64_t)1 << rank : 1;
  int64_t outCount = 1;
  for (int64_t d : out)
    outCount *= d;
  for (int64_t e = 0; e < outCount; ++e) {
    unravel(e, out, idx);
    for (int64_t d = 0; d < rank; ++d)
      taps[d] = resizeTap(o.getMode(), o.getCoordinateTransformationMode(),
                          o.getNearestMode(), idx[d], in[d], out[d], scales[d]);
    double acc = 0;
    for (int64_t c = 0; c < corners; ++c) {
      double w = 1;
      int64_t off = 0;
      for (int64_t d = 0; d < rank; ++d) {
        bool hi = (c >> d) & 1;
        w *= hi ? taps[d].w1 : taps[d].w0;
        off += (hi ? taps[d].i1 : taps[d].i0) * inStrides[d];
      }
      if (w == 0)
        continue;
      if (isGrad)
        r.data[off] += w * src.data[e];
      else
        acc += w * src.data[off];
    }
    if (!isGrad)
      r.data[e] = acc;
  }
  return r;
}

/// The value of an on_value/off_value attribute (an i1 true is 1).
double scalarValue(TypedAttr a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  APInt v = cast<IntegerAttr>(a).getValue();
  return v.getBitWidth() == 1 ? (double)v.getZExtValue()
                              : (double)v.getSExtValue();
}

/// dlgraph.one_hot of |indices| (float indices truncate toward zero).
Tensor evalOneHot(OneHotOp op, const Tensor &indices) {
  std::vector<int64_t> shape = shapeOf(op.getResult());
  int64_t axis = op.getAxis(), depth = op.getDepth(), inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  Tensor y(shape, scalarValue(op.getOffValueAttr()));
  double on = scalarValue(op.getOnValueAttr());
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    double t = std::trunc(indices.data[i]);
    if (t < 0)
      t += depth;
    if (!(t >= 0 && t < depth))
      continue;
    int64_t o = i / inner, c = i % inner;
    y.data[(o * depth + (int64_t)t) * inner + c] = on;
  }
  return y;
}

} // namespace

void dlc::reference::populateReferenceDataMovement(EvalTable &table) {
  table.add<IdentityOp>(
      [](Frame &frame, IdentityOp o) { return frame.get(o->getOperand(0)); });
  table.add<ReshapeOp>([](Frame &frame, ReshapeOp o) {
    Tensor t = frame.get(o->getOperand(0));
    t.shape = shapeOf(o->getResult(0));
    return t;
  });
  table.add<TransposeOp>(evalTranspose);
  table.add<SliceOp>(evalSliceOrPad<SliceOp>);
  table.add<PadOp>(evalSliceOrPad<PadOp>);
  table.add<ConcatOp>(evalConcat);
  table.add<GatherOp>(evalGather<GatherOp>);
  table.add<GatherGradOp>(evalGather<GatherGradOp>);
  table.add<GatherElementsOp>(evalGatherElements<GatherElementsOp>);
  table.add<GatherElementsGradOp>(evalGatherElements<GatherElementsGradOp>);
  table.add<ResizeOp>(evalResize<ResizeOp>);
  table.add<ResizeGradOp>(evalResize<ResizeGradOp>);
  table.add<OneHotOp>([](Frame &frame, OneHotOp o) {
    return evalOneHot(o, frame.get(o.getIndices()));
  });
}
