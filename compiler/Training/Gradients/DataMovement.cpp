//===- DataMovement.cpp - gradients of the data-movement ops --------------===//
//
// reshape, transpose, broadcast_to, slice, pad, concat, gather,
// gather_elements, resize and the gathers' own gradients (gather_grad,
// gather_elements_grad, as run-time-index scatters use them): each gradient moves dy back to where the
// forward op read it from (summing where it read an element several times).
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

// Shape ops.

static LogicalResult reshapeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                 Grads dx) {
  dx[0] =
      ReshapeOp::create(b, op->getLoc(), op->getOperand(0).getType(), dy[0]);
  return success();
}

static LogicalResult transposeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                   Grads dx) {
  ArrayRef<int64_t> perm = cast<TransposeOp>(op).getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  dx[0] = TransposeOp::create(b, op->getLoc(), op->getOperand(0).getType(),
                              dy[0], inverse);
  return success();
}

static LogicalResult broadcastToGrad(OpBuilder &b, Operation *op, RGrads dy,
                                     Grads dx) {
  dx[0] = reduceTo(b, op->getLoc(), dy[0], tensorType(op->getOperand(0)));
  return success();
}

// Data movement: slice <-> pad are each other's gradients, concat splits
// the gradient into slices, gather scatter-adds it.

static LogicalResult sliceGrad(OpBuilder &b, Operation *op, RGrads dy,
                               Grads dx) {
  auto s = cast<SliceOp>(op);
  dx[0] = PadOp::create(b, op->getLoc(), s.getInput().getType(), dy[0],
                        s.getStartsAttr(), s.getStepsAttr(),
                        b.getF64FloatAttr(0.0));
  return success();
}

static LogicalResult padGrad(OpBuilder &b, Operation *op, RGrads dy, Grads dx) {
  auto p = cast<PadOp>(op);
  dx[0] = SliceOp::create(b, op->getLoc(), p.getInput().getType(), dy[0],
                          p.getStartsAttr(), p.getStepsAttr());
  return success();
}

static LogicalResult concatGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  auto c = cast<ConcatOp>(op);
  int64_t axis = c.getAxis(), offset = 0;
  int64_t rank = tensorType(dy[0]).getRank();
  for (auto [i, v] : llvm::enumerate(c.getInputs())) {
    auto t = tensorType(v);
    int64_t n = t.getDimSize(axis);
    if (isa<FloatType>(t.getElementType())) {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = n ? offset : 0;
      dx[i] = SliceOp::create(b, op->getLoc(), t, dy[0],
                              b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(steps));
    }
    offset += n;
  }
  return success();
}

template <typename GradOp>
static LogicalResult gatherGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  dx[0] = GradOp::create(b, op->getLoc(), op->getOperand(0).getType(),
                         op->getOperand(1), dy[0],
                         op->getAttrOfType<IntegerAttr>("axis"));
  return success();
}

// gather_grad is linear in result_grad: its adjoint gathers dy back from
// the rows (elements) each update was added to (an out-of-range index,
// which added nothing, reads 0).
template <typename FwdOp>
static LogicalResult gatherGradGrad(OpBuilder &b, Operation *op, RGrads dy,
                                    Grads dx) {
  dx[1] = FwdOp::create(b, op->getLoc(), dy[0], op->getOperand(0),
                        op->getAttrOfType<IntegerAttr>("axis"));
  return success();
}

static LogicalResult resizeGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  // The adjoint (upsample_nearest/bilinear backward): a weighted
  // scatter-add of dy into the elements each output read.
  auto r = cast<ResizeOp>(op);
  dx[0] = ResizeGradOp::create(b, op->getLoc(), tensorType(r.getInput()), dy[0],
                               r.getModeAttr(),
                               r.getCoordinateTransformationModeAttr(),
                               r.getNearestModeAttr(), r.getScalesAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerDataMovementGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<ReshapeOp, reshapeGrad>(ctx);
    attachGradient<TransposeOp, transposeGrad>(ctx);
    attachGradient<BroadcastToOp, broadcastToGrad>(ctx);
    attachGradient<SliceOp, sliceGrad>(ctx);
    attachGradient<PadOp, padGrad>(ctx);
    attachGradient<ConcatOp, concatGrad>(ctx);
    attachGradient<GatherOp, gatherGrad<GatherGradOp>>(ctx);
    attachGradient<GatherElementsOp, gatherGrad<GatherElementsGradOp>>(ctx);
    attachGradient<GatherGradOp, gatherGradGrad<GatherOp>>(ctx);
    attachGradient<GatherElementsGradOp, gatherGradGrad<GatherElementsOp>>(
        ctx);
    attachGradient<ResizeOp, resizeGrad>(ctx);
  });
}
