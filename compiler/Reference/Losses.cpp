//===- Losses.cpp - loss functions in the reference interpreter -----------===//
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// The mean softmax cross-entropy of logits [rows, C] against integer labels
/// [rows] with label smoothing, or (SoftmaxCrossEntropyGradOp) its gradient
/// with respect to the logits, scaled by the loss gradient.
template <typename OpT> Tensor evalSoftmaxCrossEntropy(Frame &frame, OpT o) {
  Operation *op = o;
  const Tensor &x = frame.get(o.getLogits()), &t = frame.get(o.getLabels());
  int64_t c = x.shape.back(), rows = t.numElements();
  bool isGrad = std::is_same_v<OpT, SoftmaxCrossEntropyGradOp>;
  Tensor loss(std::vector<int64_t>{}), dx(x.shape);
  double scale = 1.0 / rows;
  if (isGrad)
    scale *= frame.get(op->getOperand(2)).data[0];
  // Label smoothing e: the target (1 - e) one_hot + e / C.
  double e = o.getLabelSmoothing().convertToDouble();
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = &x.data[r * c];
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t k = 0; k < c; ++k)
      mx = std::max(mx, row[k]);
    for (int64_t k = 0; k < c; ++k)
      s += std::exp(row[k] - mx);
    int64_t label = (int64_t)t.data[r];
    if (label < 0 || label >= c)
      continue; // no loss, no gradient; counts in the mean
    double lse = mx + std::log(s), smooth = 0;
    for (int64_t k = 0; k < c; ++k)
      smooth += lse - row[k];
    loss.data[0] += ((1 - e) * (lse - row[label]) + e / c * smooth) / rows;
    for (int64_t k = 0; k < c; ++k)
      dx.data[r * c + k] =
          (std::exp(row[k] - mx) / s - ((k == label ? 1 - e : 0.0) + e / c)) *
          scale;
  }
  return isGrad ? dx : loss;
}

} // namespace

void dlc::reference::populateReferenceLosses(EvalTable &table) {
  table.add<SoftmaxCrossEntropyOp>(
      evalSoftmaxCrossEntropy<SoftmaxCrossEntropyOp>);
  table.add<SoftmaxCrossEntropyGradOp>(
      evalSoftmaxCrossEntropy<SoftmaxCrossEntropyGradOp>);
}
