//===- Normalization.cpp - batch norm and softmax, reference interpreter -===//
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// Inference batch normalization with the given statistics (channel axis 1).
Tensor evalBatchNorm(Frame &frame, BatchNormOp o) {
  const Tensor &x = frame.get(o.getInput()), &s = frame.get(o.getScale()),
               &b = frame.get(o.getBias()), &m = frame.get(o.getMean()),
               &v = frame.get(o.getVariance());
  double eps = o.getEpsilon().convertToDouble();
  Tensor y(x.shape);
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = (i / inner) % x.shape[1];
    y.data[i] =
        s.data[c] * (x.data[i] - m.data[c]) / std::sqrt(v.data[c] + eps) +
        b.data[c];
  }
  return y;
}

/// Softmax or log-softmax along the op's axis, max-subtracted.
template <typename OpT> Tensor evalSoftmax(Frame &frame, OpT o) {
  const Tensor &x = frame.get(o.getInput());
  int64_t rank = x.shape.size();
  int64_t axis = o.getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  int64_t len = x.shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= x.shape[d];
  Tensor y(x.shape);
  bool isLog = std::is_same_v<OpT, LogSoftmaxOp>;
  for (int64_t outer = 0; outer < x.numElements() / (len * inner); ++outer)
    for (int64_t in = 0; in < inner; ++in) {
      auto idx = [&](int64_t k) { return (outer * len + k) * inner + in; };
      double mx = -std::numeric_limits<double>::infinity(), s = 0;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, x.data[idx(k)]);
      for (int64_t k = 0; k < len; ++k)
        s += std::exp(x.data[idx(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        y.data[idx(k)] = isLog ? x.data[idx(k)] - mx - std::log(s)
                               : std::exp(x.data[idx(k)] - mx) / s;
    }
  return y;
}

} // namespace

void dlc::reference::populateReferenceNormalization(EvalTable &table) {
  table.add<BatchNormOp>(evalBatchNorm);
  table.add<SoftmaxOp>(evalSoftmax<SoftmaxOp>);
  table.add<LogSoftmaxOp>(evalSoftmax<LogSoftmaxOp>);
}
