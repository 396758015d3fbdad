//===- GraphTypeInference.cpp - dlgraph result-type inference
//---------------===//
// InferTypeOpInterface for the dlgraph ops whose result types follow from
// their operands and attributes, with the formulas of runtime/schema/Semantics.
// In verification these run after the op's verify(), which has checked what
// they rely on; from a builder they fail with a diagnostic on bad input.
#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Attention.h"
#include "runtime/schema/Semantics/Broadcast.h"
#include "runtime/schema/Semantics/WindowShapes.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace dlc::graph;
namespace semantics = dlc::semantics;

namespace {

/// Reports an inference failure of op |OpT| worded as emitOpError words it.
template <typename OpT, typename... Args>
LogicalResult inferError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, "'", OpT::getOperationName(), "' op ",
                           std::forward<Args>(args)...);
}

/// |v|'s type as a ranked tensor, or null.
RankedTensorType ranked(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Result type of the elementwise ops: the broadcast of |operands|' shapes
/// with |elementType|.
template <typename OpT>
LogicalResult inferBroadcast(std::optional<Location> loc, ValueRange operands,
                             Type elementType,
                             SmallVectorImpl<Type> &inferred) {
  std::vector<int64_t> shape;
  for (Value v : operands) {
    auto t = ranked(v);
    if (!t)
      return inferError<OpT>(loc, "expects ranked tensor operands");
    auto b = semantics::broadcastShapes(shape, t.getShape());
    if (!b)
      return inferError<OpT>(loc, "operands don't have broadcast-compatible "
                                  "shapes");
    shape = std::move(*b);
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Result shape of a reduction over |reduced| axes of |in|.
SmallVector<int64_t> reducedShape(ArrayRef<int64_t> in, ArrayRef<bool> reduced,
                                  bool keepdims) {
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i])
      shape.push_back(in[i]);
    else if (keepdims)
      shape.push_back(1);
  }
  return shape;
}

template <typename OpT>
LogicalResult inferReduce(std::optional<Location> loc,
                          typename OpT::Adaptor adaptor,
                          SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput());
  if (!x)
    return inferError<OpT>(loc, "expects a ranked tensor input");
  SmallVector<bool> reduced(x.getRank(), false);
  for (int64_t a : adaptor.getAxes()) {
    if (a < 0 || a >= x.getRank() || reduced[a])
      return inferError<OpT>(loc, "axes must be distinct and in [0, ",
                             x.getRank(), "), got ", a);
    reduced[a] = true;
  }
  inferred.push_back(
      x.clone(reducedShape(x.getShape(), reduced, adaptor.getKeepdims())));
  return success();
}

template <typename OpT>
LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> loc,
                             typename OpT::Adaptor adaptor,
                             SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (!x || axis < 0 || axis >= x.getRank())
    return inferError<OpT>(loc, "axis must be in [0, ", x ? x.getRank() : 0,
                           "), got ", axis);
  SmallVector<bool> reduced(x.getRank(), false);
  reduced[axis] = true;
  inferred.push_back(RankedTensorType::get(
      reducedShape(x.getShape(), reduced, adaptor.getKeepdims()),
      IntegerType::get(ctx, 64)));
  return success();
}

template <typename OpT>
LogicalResult inferPool(std::optional<Location> loc,
                        typename OpT::Adaptor adaptor,
                        SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput());
  ArrayRef<int64_t> k = adaptor.getKernelShape(), s = adaptor.getStrides(),
                    p = adaptor.getPads(), d = adaptor.getDilations();
  if (!x || x.getRank() != 4 || k.size() != 2 || s.size() != 2 ||
      p.size() != 4 || d.size() != 2)
    return inferError<OpT>(loc, "expects an NCHW input, 2 kernel dims, 2 "
                                "strides, 2 dilations and 4 pads");
  SmallVector<int64_t> shape = {x.getDimSize(0), x.getDimSize(1)};
  for (int i = 0; i < 2; ++i) {
    auto out =
        semantics::windowOutputSize(x.getDimSize(2 + i), k[i], s[i], p[i],
                                    p[i + 2], d[i], adaptor.getCeilMode());
    if (!out)
      return inferError<OpT>(loc,
                             "the window does not fit the padded input "
                             "along spatial axis ",
                             i);
    shape.push_back(*out);
  }
  inferred.push_back(x.clone(shape));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Constants and shape ops
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return inferError<ConstantOp>(loc, "expects an elements attribute value");
  inferred.push_back(value.getType());
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = ranked(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (!in || (int64_t)perm.size() != in.getRank())
    return inferError<TransposeOp>(loc, "perm has ", perm.size(),
                                   " entries for an input of rank ",
                                   in ? in.getRank() : 0);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank())
      return inferError<TransposeOp>(loc, "perm is not a permutation of 0..",
                                     in.getRank() - 1);
    shape.push_back(in.getDimSize(p));
  }
  inferred.push_back(in.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

#define DLC_INFER_BINARY(OP)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    auto lhs = ranked(adaptor.getLhs());                                       \
    if (!lhs)                                                                  \
      return inferError<OP>(loc, "expects ranked tensor operands");            \
    return inferBroadcast<OP>(loc, adaptor.getOperands(),                      \
                              lhs.getElementType(), inferred);                 \
  }
DLC_INFER_BINARY(AddOp)
DLC_INFER_BINARY(SubOp)
DLC_INFER_BINARY(MulOp)
DLC_INFER_BINARY(DivOp)
DLC_INFER_BINARY(MaxOp)
DLC_INFER_BINARY(MinOp)
DLC_INFER_BINARY(PowOp)
DLC_INFER_BINARY(FmodOp)
DLC_INFER_BINARY(ModOp)
DLC_INFER_BINARY(BitwiseAndOp)
DLC_INFER_BINARY(BitwiseOrOp)
DLC_INFER_BINARY(BitwiseXorOp)
DLC_INFER_BINARY(ShiftLeftOp)
DLC_INFER_BINARY(ShiftRightOp)
#undef DLC_INFER_BINARY

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto t = ranked(adaptor.getOnTrue());
  if (!t)
    return inferError<SelectOp>(loc, "expects ranked tensor operands");
  return inferBroadcast<SelectOp>(loc, adaptor.getOperands(),
                                  t.getElementType(), inferred);
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferBroadcast<CompareOp>(loc, adaptor.getOperands(),
                                   IntegerType::get(ctx, 1), inferred);
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = ranked(adaptor.getA()), b = ranked(adaptor.getB());
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2)
    return inferError<GemmOp>(loc, "expects 2-D A and B");
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  inferred.push_back(a.clone(ArrayRef<int64_t>{m, n}));
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  // numpy.matmul: a 1-D lhs is a row [1, K], a 1-D rhs a column [K, 1];
  // the added dim is removed from the result; batch dims broadcast.
  auto a = ranked(adaptor.getLhs()), b = ranked(adaptor.getRhs());
  if (!a || !b || a.getRank() < 1 || b.getRank() < 1)
    return inferError<MatMulOp>(loc, "operands must have rank >= 1");
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  auto batch =
      semantics::broadcastShapes(as.drop_back(std::min<size_t>(as.size(), 2)),
                                 bs.drop_back(std::min<size_t>(bs.size(), 2)));
  if (!batch)
    return inferError<MatMulOp>(loc, "batch dimensions do not broadcast");
  SmallVector<int64_t> shape(batch->begin(), batch->end());
  if (as.size() >= 2)
    shape.push_back(as[as.size() - 2]);
  if (bs.size() >= 2)
    shape.push_back(bs.back());
  inferred.push_back(a.clone(shape));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput()), w = ranked(adaptor.getFilter());
  if (!x || !w || (x.getRank() != 4 && x.getRank() != 5) ||
      w.getRank() != x.getRank())
    return inferError<ConvOp>(loc, "expects rank-4/5 NC[D]HW input and "
                                   "OI[D]HW filter");
  size_t sp = x.getRank() - 2;
  ArrayRef<int64_t> s = adaptor.getStrides(), p = adaptor.getPads(),
                    d = adaptor.getDilations();
  if (s.size() != sp || d.size() != sp || p.size() != 2 * sp)
    return inferError<ConvOp>(loc, "expects ", sp, " strides, ", sp,
                              " dilations and ", 2 * sp, " pads");
  SmallVector<int64_t> shape = {x.getDimSize(0), w.getDimSize(0)};
  for (size_t i = 0; i < sp; ++i) {
    auto out = semantics::windowOutputSize(
        x.getDimSize(2 + i), w.getDimSize(2 + i), s[i], p[i], p[i + sp], d[i]);
    if (!out)
      return inferError<ConvOp>(loc,
                                "the kernel does not fit the padded "
                                "input along spatial axis ",
                                i);
    shape.push_back(*out);
  }
  inferred.push_back(x.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling, reductions
//===----------------------------------------------------------------------===//

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool<MaxPoolOp>(loc, adaptor, inferred);
}

LogicalResult
MaxPoolIndicesOp::inferReturnTypes(MLIRContext *ctx,
                                   std::optional<Location> loc, Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  if (failed(inferPool<MaxPoolIndicesOp>(loc, adaptor, inferred)))
    return failure();
  inferred[0] =
      cast<RankedTensorType>(inferred[0]).clone(IntegerType::get(ctx, 32));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferPool<AveragePoolOp>(loc, adaptor, inferred);
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput());
  if (!x || x.getRank() < 3)
    return inferError<GlobalAveragePoolOp>(
        loc, "input must have rank >= 3 (N, C, spatial...)");
  SmallVector<int64_t> shape(x.getShape());
  for (int64_t i = 2; i < x.getRank(); ++i)
    shape[i] = 1;
  inferred.push_back(x.clone(shape));
  return success();
}

#define DLC_INFER_REDUCE(OP)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduce<OP>(loc, adaptor, inferred);                            \
  }
DLC_INFER_REDUCE(ReduceSumOp)
DLC_INFER_REDUCE(ReduceMeanOp)
DLC_INFER_REDUCE(ReduceMaxOp)
DLC_INFER_REDUCE(ReduceProdOp)
#undef DLC_INFER_REDUCE

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce<ArgMaxOp>(ctx, loc, adaptor, inferred);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce<ArgMinOp>(ctx, loc, adaptor, inferred);
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getInput());
  if (!x)
    return inferError<DropoutOp>(loc, "expects a ranked tensor input");
  inferred.push_back(x);
  inferred.push_back(x.clone(IntegerType::get(ctx, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  auto first = inputs.empty() ? RankedTensorType() : ranked(inputs[0]);
  int64_t axis = adaptor.getAxis();
  if (!first || axis < 0 || axis >= first.getRank())
    return inferError<ConcatOp>(loc,
                                "needs ranked inputs and an axis in "
                                "range, got axis ",
                                axis);
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : inputs) {
    auto t = ranked(v);
    if (!t || t.getRank() != first.getRank())
      return inferError<ConcatOp>(loc, "inputs must have one rank");
    shape[axis] += t.getDimSize(axis);
  }
  inferred.push_back(first.clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  // result.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:]
  auto x = ranked(adaptor.getData()), i = ranked(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (!x || !i || axis < 0 || axis >= x.getRank())
    return inferError<GatherOp>(
        loc, "axis ", axis, " is out of range for rank ", x ? x.getRank() : 0);
  SmallVector<int64_t> shape(x.getShape().take_front(axis));
  llvm::append_range(shape, i.getShape());
  llvm::append_range(shape, x.getShape().drop_front(axis + 1));
  inferred.push_back(x.clone(shape));
  return success();
}

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getData()), i = ranked(adaptor.getIndices());
  if (!x || !i)
    return inferError<GatherElementsOp>(loc, "expects ranked operands");
  inferred.push_back(x.clone(i.getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto x = ranked(adaptor.getLogits());
  if (!x)
    return inferError<SoftmaxCrossEntropyOp>(loc, "expects ranked logits");
  // The loss of f16/bf16 logits is f32 (computed in f32).
  Type e = x.getElementType();
  if (e.isF16() || e.isBF16())
    e = Float32Type::get(e.getContext());
  inferred.push_back(RankedTensorType::get({}, e));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The dimensions of an attention's Q, K, V under |seqFirst|, or an error
/// of op |OpT| at |loc|.
template <typename OpT>
static LogicalResult inferAttentionDims(std::optional<Location> loc,
                                        Value query, Value key, Value value,
                                        ArrayRef<bool> seqFirst,
                                        semantics::AttentionDims *dims) {
  auto q = ranked(query), k = ranked(key), v = ranked(value);
  if (!q || !k || !v)
    return inferError<OpT>(loc, "expects ranked query, key and value");
  if (!seqFirst.empty() && seqFirst.size() != 4)
    return inferError<OpT>(loc, "seq_first must be empty or hold 4 flags");
  auto flag = [&](int i) { return !seqFirst.empty() && seqFirst[i]; };
  std::string error;
  if (!semantics::attentionDims(q.getShape(), k.getShape(), v.getShape(),
                                flag(0), flag(1), flag(2), dims, &error))
    return inferError<OpT>(loc, error);
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  semantics::AttentionDims d;
  ArrayRef<bool> seqFirst = adaptor.getSeqFirst();
  if (failed(inferAttentionDims<AttentionOp>(loc, adaptor.getQuery(),
                                             adaptor.getKey(),
                                             adaptor.getValue(), seqFirst, &d)))
    return failure();
  bool oSeqFirst = !seqFirst.empty() && seqFirst[semantics::kAttnResult];
  SmallVector<int64_t> shape =
      oSeqFirst ? SmallVector<int64_t>{d.batch, d.queryLen, d.queryHeads,
                                       d.valueDim}
                : SmallVector<int64_t>{d.batch, d.queryHeads, d.queryLen,
                                       d.valueDim};
  inferred.push_back(RankedTensorType::get(
      shape, ranked(adaptor.getQuery()).getElementType()));
  inferred.push_back(RankedTensorType::get(
      {d.batch, d.queryHeads, d.queryLen}, Float32Type::get(ctx)));
  return success();
}

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  semantics::AttentionDims d;
  if (failed(inferAttentionDims<AttentionGradOp>(
          loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
          adaptor.getSeqFirst(), &d)))
    return failure();
  inferred.push_back(adaptor.getQuery().getType());
  inferred.push_back(adaptor.getKey().getType());
  inferred.push_back(adaptor.getValue().getType());
  return success();
}
