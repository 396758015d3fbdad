//===- Conv.cpp - gradients of the convolutions ---------------------------===//
//
// conv and conv_backward_data (ONNX ConvTranspose), each differentiated into
// the other and conv_backward_filter (cuDNN's backward data / filter).
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

static LogicalResult convGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  auto conv = cast<ConvOp>(op);
  Location loc = op->getLoc();
  dx[0] = ConvBackwardDataOp::create(
      b, loc, conv.getInput().getType(), dy[0], conv.getFilter(),
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  dx[1] = ConvBackwardFilterOp::create(
      b, loc, conv.getFilter().getType(), conv.getInput(), dy[0],
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  if (Value bias = conv.getBias()) {
    // Sum over the batch and every spatial axis (2-D or 3-D).
    SmallVector<int64_t> axes = {0};
    for (int64_t i = 2; i < cast<RankedTensorType>(dy[0].getType()).getRank();
         ++i)
      axes.push_back(i);
    dx[2] = ReduceSumOp::create(b, loc, bias.getType(), dy[0], axes,
                                /*keepdims=*/false);
  }
  return success();
}

// conv_backward_data (ONNX ConvTranspose) is linear in both operands:
// z = conv^T(a, W), so dA = conv(dZ, W) and dW = conv_backward_filter with dZ
// in the role of the convolution's input and a in the role of its output
// gradient.
static LogicalResult convBackwardDataGrad(OpBuilder &b, Operation *op,
                                          RGrads dy, Grads dx) {
  auto cbd = cast<ConvBackwardDataOp>(op);
  Location loc = op->getLoc();
  dx[0] = ConvOp::create(b, loc, cbd.getResultGrad().getType(), dy[0],
                         cbd.getFilter(), Value(), cbd.getStridesAttr(),
                         cbd.getPadsAttr(), cbd.getDilationsAttr(),
                         cbd.getGroupAttr());
  dx[1] = ConvBackwardFilterOp::create(
      b, loc, cbd.getFilter().getType(), dy[0], cbd.getResultGrad(),
      cbd.getStridesAttr(), cbd.getPadsAttr(), cbd.getDilationsAttr(),
      cbd.getGroupAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerConvGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<ConvOp, convGrad>(ctx);
    attachGradient<ConvBackwardDataOp, convBackwardDataGrad>(ctx);
  });
}
