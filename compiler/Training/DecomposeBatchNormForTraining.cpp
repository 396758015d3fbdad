//===- DecomposeBatchNormForTraining.cpp - batch stats in @train_step -----===//
#include "compiler/Training/Passes.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "llvm/ADT/StringSet.h"

namespace dlc {
#define GEN_PASS_DEF_DECOMPOSEBATCHNORMFORTRAININGPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;
using namespace dlc::training;

namespace {

/// Replaces |bn| (inference batch norm) with training-mode batch
/// normalization built from primitive ops, and writes the PyTorch train-mode
/// running statistics: running' = m * running + (1 - m) * batch (the
/// variance unbiased by n / (n - 1), n = elements per channel). When
/// neither statistic is a variable the batch norm is functional
/// (`F.batch_norm(x, None, None, training=True)`, as weight standardization
/// uses it; PyTorch's exporter then feeds the batch's own statistics): batch
/// statistics, nothing to update.
LogicalResult decomposeBatchNorm(OpBuilder &b, BatchNormOp bn) {
  auto meanRead = bn.getMean().getDefiningOp<ReadVariableOp>();
  auto varRead = bn.getVariance().getDefiningOp<ReadVariableOp>();
  bool functional = !meanRead && !varRead;
  if (!functional && (!meanRead || !varRead))
    return bn.emitOpError()
           << "running " << (meanRead ? "variance" : "mean")
           << " is computed while the running "
           << (meanRead ? "mean" : "variance")
           << " is a variable; training updates both or, for a functional "
              "batch norm, neither";
  Location loc = bn.getLoc();
  auto xt = cast<RankedTensorType>(bn.getInput().getType());
  if (!isa<Float32Type>(xt.getElementType()))
    return bn.emitOpError() << "training supports f32 batch normalization "
                               "only, got "
                            << xt.getElementType();
  int64_t rank = xt.getRank(), channels = xt.getDimSize(1);
  int64_t n = xt.getNumElements() / channels;
  if (n < 2)
    return bn.emitOpError() << "training needs more than 1 value per channel "
                               "to compute batch statistics, got "
                            << n;
  SmallVector<int64_t> axes, kdShape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != 1)
      axes.push_back(i);
    kdShape.push_back(i == 1 ? channels : 1);
  }
  auto kt = RankedTensorType::get(kdShape, xt.getElementType());
  auto ct = RankedTensorType::get({channels}, xt.getElementType());

  b.setInsertionPoint(bn);
  StageTagger tag(b, bn->getAttr(kStageAttr), /*backward=*/false);
  Value x = bn.getInput();
  Value mean = ReduceMeanOp::create(b, loc, kt, x, axes, /*keepdims=*/true);
  Value xc = SubOp::create(b, loc, xt, x, mean);
  Value sq = MulOp::create(b, loc, xt, xc, xc);
  Value var = ReduceMeanOp::create(b, loc, kt, sq, axes, /*keepdims=*/true);
  Value eps = splat(b, loc, kt, APFloat(bn.getEpsilon()).convertToDouble());
  Value inv = RsqrtOp::create(b, loc, kt, AddOp::create(b, loc, kt, var, eps));
  // y = xc * (inv * scale) + bias: the per-channel factor first, as
  // PyTorch's CPU kernel does (alpha = invstd * weight). The backward then
  // holds one full-size tensor per BatchNorm (xc, which the variance's
  // gradient needs anyway) instead of two (xc and xhat = xc * inv).
  Value scale = ReshapeOp::create(b, loc, kt, bn.getScale());
  Value bias = ReshapeOp::create(b, loc, kt, bn.getBias());
  Value alpha = MulOp::create(b, loc, kt, inv, scale);
  Value y =
      AddOp::create(b, loc, xt, MulOp::create(b, loc, xt, xc, alpha), bias);

  if (functional) {
    bn.replaceAllUsesWith(y);
    bn.erase();
    return success();
  }
  double m = APFloat(bn.getMomentum()).convertToDouble();
  Value batchMean = ReshapeOp::create(b, loc, ct, mean);
  Value batchVar = ReshapeOp::create(b, loc, ct, var);
  auto update = [&](Value running, Value batch, double batchFactor) {
    Value keep = MulOp::create(b, loc, ct, running, splat(b, loc, ct, m));
    Value add =
        MulOp::create(b, loc, ct, batch, splat(b, loc, ct, batchFactor));
    return AddOp::create(b, loc, ct, keep, add).getResult();
  };
  Value newMean = update(bn.getMean(), batchMean, 1.0 - m);
  Value newVar =
      update(bn.getVariance(), batchVar, (1.0 - m) * n / double(n - 1));
  WriteVariableOp::create(b, loc, meanRead.getVariableAttr(), newMean);
  WriteVariableOp::create(b, loc, varRead.getVariableAttr(), newVar);
  bn.replaceAllUsesWith(y);
  bn.erase();
  return success();
}

struct DecomposeBatchNormForTrainingPass
    : public dlc::impl::DecomposeBatchNormForTrainingPassBase<
          DecomposeBatchNormForTrainingPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp train = lookupTrainStep(
        getOperation(), "--dlgraph-decompose-batch-norm-for-training");
    if (!train)
      return signalPassFailure();
    SmallVector<BatchNormOp> bns(train.getBody().front().getOps<BatchNormOp>());
    llvm::StringSet<> runningStats;
    OpBuilder b(&getContext());
    for (BatchNormOp bn : bns) {
      // Each running statistic is written once per step; two batch_norm ops
      // sharing one would need sequential updates.
      for (Value stat : {bn.getMean(), bn.getVariance()}) {
        auto read = stat.getDefiningOp<ReadVariableOp>();
        if (read && !runningStats.insert(read.getVariable()).second) {
          bn.emitOpError() << "running statistic @\"" << read.getVariable()
                           << "\" is shared with another batch_norm; "
                              "training needs one variable per batch_norm";
          return signalPassFailure();
        }
      }
      if (failed(decomposeBatchNorm(b, bn)))
        return signalPassFailure();
    }
  }
};

} // namespace
