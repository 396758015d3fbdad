//===- GradientUtils.cpp - helpers shared by the gradient rules -----------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace dlc::graph;

namespace dlc::gradients {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

RankedTensorType maskType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(),
                               IntegerType::get(type.getContext(), 1));
}

Value splat(OpBuilder &b, Location loc, RankedTensorType type, double v) {
  auto attr =
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v));
  return ConstantOp::create(b, loc, type, cast<ElementsAttr>(attr));
}

Value reduceTo(OpBuilder &b, Location loc, Value g, RankedTensorType target) {
  auto gt = tensorType(g);
  if (gt == target)
    return g;
  int64_t rank = gt.getRank(), off = rank - target.getRank();
  SmallVector<int64_t> axes, kept;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduce =
        i < off || (target.getDimSize(i - off) == 1 && gt.getDimSize(i) != 1);
    if (reduce)
      axes.push_back(i);
    else
      kept.push_back(gt.getDimSize(i));
  }
  Value v = g;
  if (!axes.empty())
    v = ReduceSumOp::create(
        b, loc, RankedTensorType::get(kept, gt.getElementType()), g, axes,
        /*keepdims=*/false);
  if (tensorType(v) != target)
    v = ReshapeOp::create(b, loc, target, v);
  return v;
}

Value broadcastTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (tensorType(v) == type)
    return v;
  return BroadcastToOp::create(b, loc, type, v);
}

RankedTensorType keepDimsType(RankedTensorType type, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  return RankedTensorType::get(shape, type.getElementType());
}

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

} // namespace dlc::gradients
