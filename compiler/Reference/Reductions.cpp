//===- Reductions.cpp - reductions and scans in the reference interpreter -===//
// dlgraph.reduce_*, arg_max / arg_min, and the running scans cumsum and
// cumprod.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// dlgraph.cumsum (or cumprod) of |x|: a running sum (product) along the
/// axis, in scan order.
template <typename ScanOp> Tensor evalScan(ScanOp op, const Tensor &x) {
  constexpr bool isProd = std::is_same_v<ScanOp, CumProdOp>;
  Tensor y(x.shape);
  int64_t axis = op.getAxis(), n = x.shape[axis], inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  int64_t outer = x.numElements() / std::max<int64_t>(n * inner, 1);
  bool reverse = op.getReverse(), exclusive = op.getExclusive();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      double acc = isProd ? 1 : 0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = reverse ? n - 1 - s : s;
        int64_t at = (o * n + k) * inner + c;
        if (exclusive)
          y.data[at] = acc;
        acc = isProd ? acc * x.data[at] : acc + x.data[at];
        if (!exclusive)
          y.data[at] = acc;
      }
    }
  return y;
}

/// dlgraph.reduce_sum, reduce_mean or reduce_max.
template <typename OpT> Tensor evalReduce(Frame &frame, OpT o) {
  bool isMax = std::is_same_v<OpT, ReduceMaxOp>,
       isMean = std::is_same_v<OpT, ReduceMeanOp>;
  return reduce(
      frame.get(o.getInput()), o.getAxes(), shapeOf(o.getResult()),
      [&] { return isMax ? -std::numeric_limits<double>::infinity() : 0.0; },
      [&](double a, double v) { return isMax ? std::max(a, v) : a + v; },
      [&](double a, int64_t n) { return isMean ? a / n : a; });
}

/// The index of the first (or, with select_last_index, last) maximum or
/// minimum along the axis.
template <typename OpT> Tensor evalArgExtremum(Frame &frame, OpT o) {
  const Tensor &x = frame.get(o.getInput());
  int64_t axis = o.getAxis(), rank = x.shape.size();
  int64_t len = x.shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= x.shape[d];
  bool isMax = std::is_same_v<OpT, ArgMaxOp>, last = o.getSelectLastIndex();
  Tensor y(shapeOf(o.getResult()));
  for (int64_t outer = 0; outer < x.numElements() / (len * inner); ++outer)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      for (int64_t k = 1; k < len; ++k) {
        double v = x.data[(outer * len + k) * inner + in];
        double b = x.data[(outer * len + best) * inner + in];
        bool better = isMax ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        if (better)
          best = k;
      }
      y.data[outer * inner + in] = (double)best;
    }
  return y;
}

} // namespace

void dlc::reference::populateReferenceReductions(EvalTable &table) {
  table.add<ReduceSumOp>(evalReduce<ReduceSumOp>);
  table.add<ReduceMeanOp>(evalReduce<ReduceMeanOp>);
  table.add<ReduceMaxOp>(evalReduce<ReduceMaxOp>);
  table.add<ReduceProdOp>([](Frame &frame, ReduceProdOp o) {
    return reduce(
        frame.get(o.getInput()), o.getAxes(), shapeOf(o.getResult()),
        [] { return 1.0; }, [](double a, double v) { return a * v; },
        [](double a, int64_t) { return a; });
  });
  table.add<ArgMaxOp>(evalArgExtremum<ArgMaxOp>);
  table.add<ArgMinOp>(evalArgExtremum<ArgMinOp>);
  table.add<CumSumOp>([](Frame &frame, CumSumOp o) {
    return evalScan(o, frame.get(o.getInput()));
  });
  table.add<CumProdOp>([](Frame &frame, CumProdOp o) {
    return evalScan(o, frame.get(o.getInput()));
  });
}
