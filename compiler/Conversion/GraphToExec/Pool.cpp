//===- Pool.cpp - pooling to dlexec builtin kernels and reductions -------===//
// Max and average pooling (and their gradients) as builtin kernels carrying
// the pooling attributes; global average pooling as a mean reduction.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;

static const StringRef poolAttrs[] = {"kernel_shape", "strides",
                                      "pads",         "dilations",
                                      "ceil_mode",    "count_include_pad"};

void dlc::lowering::populateLowerToExecPool(LoweringTable &table) {
  table.add<g::MaxPoolOp>(
      [](FuncLowering &fl, g::MaxPoolOp p) -> LogicalResult {
        fl.builtin(p, "max_pool2d", {p.getInput()}, poolAttrs);
        return success();
      });
  table.add<g::AveragePoolOp>(
      [](FuncLowering &fl, g::AveragePoolOp p) -> LogicalResult {
        fl.builtin(p, "average_pool2d", {p.getInput()}, poolAttrs);
        return success();
      });
  table.add<g::MaxPoolGradOp>(
      [](FuncLowering &fl, g::MaxPoolGradOp p) -> LogicalResult {
        fl.builtin(p, "max_pool2d_grad", {p.getInput(), p.getResultGrad()},
                   poolAttrs);
        return success();
      });
  table.add<g::MaxPoolIndicesOp>(
      [](FuncLowering &fl, g::MaxPoolIndicesOp p) -> LogicalResult {
        fl.builtin(p, "max_pool2d_indices", {p.getInput()}, poolAttrs);
        return success();
      });
  table.add<g::MaxPoolIndicesGradOp>(
      [](FuncLowering &fl, g::MaxPoolIndicesGradOp p) -> LogicalResult {
        fl.builtin(p, "max_pool2d_indices_grad",
                   {p.getIndices(), p.getResultGrad()}, poolAttrs);
        return success();
      });
  table.add<g::AveragePoolGradOp>(
      [](FuncLowering &fl, g::AveragePoolGradOp p) -> LogicalResult {
        fl.builtin(p, "average_pool2d_grad", {p.getInput(), p.getResultGrad()},
                   poolAttrs);
        return success();
      });
  table.add<g::GlobalAveragePoolOp>(
      [](FuncLowering &fl, g::GlobalAveragePoolOp p) -> LogicalResult {
        int64_t rank = tensorType(p.getInput()).getRank();
        SmallVector<int64_t> axes;
        for (int64_t i = 2; i < rank; ++i)
          axes.push_back(i);
        return lowerReduction(fl, p, p.getInput(), axes, /*keepdims=*/true,
                              "mean");
      });
}
