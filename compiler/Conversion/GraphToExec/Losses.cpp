//===- Losses.cpp - loss functions to dlexec builtin kernels -------------===//
// Softmax cross-entropy and its gradient as builtin kernels.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;

void dlc::lowering::populateLowerToExecLosses(LoweringTable &table) {
  table.add<g::SoftmaxCrossEntropyOp>([](FuncLowering &fl,
                                         g::SoftmaxCrossEntropyOp s)
                                          -> LogicalResult {
    fl.builtin(s, "softmax_cross_entropy", {s.getLogits(), s.getLabels()},
               {"label_smoothing"});
    return success();
  });
  table.add<g::SoftmaxCrossEntropyGradOp>(
      [](FuncLowering &fl, g::SoftmaxCrossEntropyGradOp s) -> LogicalResult {
        fl.builtin(s, "softmax_cross_entropy_grad",
                   {s.getLogits(), s.getLabels(), s.getLossGrad()},
                   {"label_smoothing"});
        return success();
      });
}
