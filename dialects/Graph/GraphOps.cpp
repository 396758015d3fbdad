//===- GraphOps.cpp - dlgraph op verifiers and folders ----------------------===//
// Verifiers check what the result-type inference (GraphTypeInference.cpp)
// needs and what ODS cannot say; the declared result types of ops with
// inferred types are checked against the inferred ones by
// InferTypeOpInterface after verify().
#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Attention.h"
#include "runtime/schema/Semantics/Broadcast.h"
#include "runtime/schema/Semantics/WindowShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace dlc::graph;
namespace semantics = dlc::semantics;

static RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Renders a shape as "[2, 3, 4]" for diagnostics.
static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Variables
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "avg")
    return emitOpError() << "reduction '" << getReduction()
                         << "' is not supported; supported: sum, avg";
  return success();
}

LogicalResult VariableOp::verify() {
  if (auto init = getInitialValueAttr()) {
    if (init.getType() != getType())
      return emitOpError() << "initial value type " << init.getType()
                           << " does not match variable type " << getType();
  }
  return success();
}

static LogicalResult verifyVariableUse(Operation *op, FlatSymbolRefAttr sym,
                                       Type type,
                                       SymbolTableCollection &symbolTable) {
  auto var = symbolTable.lookupNearestSymbolFrom<VariableOp>(op, sym);
  if (!var)
    return op->emitOpError() << "'" << sym.getValue()
                             << "' does not name a dlgraph.variable";
  if (var.getType() != type)
    return op->emitOpError() << "type " << type << " does not match variable '"
                             << sym.getValue() << "' of type "
                             << var.getType();
  return success();
}

LogicalResult
ReadVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyVariableUse(*this, getVariableAttr(), getType(), symbolTable);
}

LogicalResult
WriteVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyVariableUse(*this, getVariableAttr(), getValue().getType(),
                           symbolTable);
}

//===----------------------------------------------------------------------===//
// Constants and shape ops
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult ReshapeOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << shapeStr(in.getShape())
                         << " (" << in.getNumElements() << " elements) to "
                         << shapeStr(out.getShape()) << " ("
                         << out.getNumElements() << " elements)";
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element type changes from "
                         << in.getElementType() << " to "
                         << out.getElementType();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

LogicalResult TransposeOp::verify() {
  auto in = rankedType(getInput());
  ArrayRef<int64_t> perm = getPerm();
  if ((int64_t)perm.size() != in.getRank())
    return emitOpError() << "perm has " << perm.size()
                         << " entries for an input of rank " << in.getRank();
  llvm::SmallVector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= in.getRank() || seen[perm[i]])
      return emitOpError() << "perm is not a permutation of 0.."
                           << in.getRank() - 1;
    seen[perm[i]] = true;
  }
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (!semantics::broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError() << "cannot broadcast " << shapeStr(in.getShape())
                         << " to " << shapeStr(out.getShape());
  return success();
}

LogicalResult ClipOp::verify() {
  if (getMin().convertToFloat() > getMax().convertToFloat())
    return emitOpError() << "min " << getMin().convertToFloat()
                         << " is greater than max " << getMax().convertToFloat();
  return success();
}

LogicalResult CompareOp::verify() {
  StringRef p = getPredicate();
  if (p != "eq" && p != "ne" && p != "lt" && p != "le" && p != "gt" &&
      p != "ge")
    return emitOpError() << "unknown predicate '" << p
                         << "'; expected eq, ne, lt, le, gt or ge";
  return success();
}

LogicalResult BitcastOp::verify() {
  Type from = rankedType(getInput()).getElementType();
  Type to = getType().getElementType();
  if (!from.isIntOrFloat() || !to.isIntOrFloat() ||
      from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
    return emitOpError() << "reinterprets " << from << " as " << to
                         << "; the element types must have one bit width";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  auto a = rankedType(getA()), b = rankedType(getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError() << "expects 2-D A and B, got ranks " << a.getRank()
                         << " and " << b.getRank();
  int64_t m = getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t ka = getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (ka != kb)
    return emitOpError() << "inner dimensions differ: op(A) is [" << m << ", "
                         << ka << "], op(B) is [" << kb << ", " << n << "]";
  if (getC() && !semantics::broadcastsTo(rankedType(getC()).getShape(),
                                         ArrayRef<int64_t>{m, n}))
    return emitOpError() << "C of shape "
                         << shapeStr(rankedType(getC()).getShape())
                         << " does not broadcast to [" << m << ", " << n
                         << "]";
  return success();
}

LogicalResult MatMulOp::verify() {
  auto a = rankedType(getLhs()), b = rankedType(getRhs());
  if (a.getRank() < 1 || b.getRank() < 1)
    return emitOpError() << "operands must have rank >= 1";
  // numpy.matmul: a 1-D lhs is a row [1, K], a 1-D rhs a column [K, 1];
  // the added dim is removed from the result; batch dims broadcast.
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  int64_t ka = as.back();
  int64_t kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return emitOpError() << "contracting dimensions differ: " << ka << " vs "
                         << kb;
  ArrayRef<int64_t> aBatch = as.drop_back(std::min<size_t>(as.size(), 2));
  ArrayRef<int64_t> bBatch = bs.drop_back(std::min<size_t>(bs.size(), 2));
  if (!semantics::broadcastShapes(aBatch, bBatch))
    return emitOpError() << "batch dimensions " << shapeStr(aBatch) << " and "
                         << shapeStr(bBatch) << " do not broadcast";
  return success();
}

/// Checks the spatial attributes shared by conv and pooling ops over
/// |spatial| spatial axes.
static LogicalResult verifyWindowAttrs(Operation *op, ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations,
                                       int64_t spatial = 2) {
  if ((int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return op->emitOpError()
           << "expects " << spatial << " strides, " << spatial
           << " dilations and " << 2 * spatial << " pads, got "
           << strides.size() << ", " << dilations.size() << " and "
           << pads.size();
  for (int64_t s : strides)
    if (s < 1)
      return op->emitOpError() << "strides must be >= 1";
  for (int64_t d : dilations)
    if (d < 1)
      return op->emitOpError() << "dilations must be >= 1";
  for (int64_t p : pads)
    if (p < 0)
      return op->emitOpError() << "pads must be >= 0";
  return success();
}

LogicalResult ConvOp::verify() {
  auto x = rankedType(getInput()), w = rankedType(getFilter());
  int64_t rank = x.getRank(), sp = rank - 2;
  if ((rank != 4 && rank != 5) || w.getRank() != rank)
    return emitOpError() << "supports 2-D and 3-D convolution only (rank-4/5 "
                            "NC[D]HW input, OI[D]HW filter), got input rank "
                         << x.getRank();
  if (failed(verifyWindowAttrs(*this, getStrides(), getPads(), getDilations(),
                               sp)))
    return failure();
  int64_t g = getGroup();
  if (g < 1 || x.getDimSize(1) % g || w.getDimSize(0) % g)
    return emitOpError() << "group " << g << " does not divide input channels "
                         << x.getDimSize(1) << " and output channels "
                         << w.getDimSize(0);
  if (w.getDimSize(1) * g != x.getDimSize(1))
    return emitOpError() << "filter has " << w.getDimSize(1)
                         << " input channels per group, expected "
                         << x.getDimSize(1) / g;
  auto strides = getStrides(), pads = getPads(), dil = getDilations();
  for (int64_t i = 0; i < sp; ++i)
    if (!semantics::windowOutputSize(x.getDimSize(2 + i), w.getDimSize(2 + i),
                                     strides[i], pads[i], pads[i + sp], dil[i]))
      return emitOpError() << "the kernel (" << w.getDimSize(2 + i)
                           << " with dilation " << dil[i]
                           << ") does not fit the padded input "
                           << x.getDimSize(2 + i) << " + " << pads[i] << " + "
                           << pads[i + sp] << " along spatial axis " << i;
  if (getBias() && (rankedType(getBias()).getRank() != 1 ||
                    rankedType(getBias()).getDimSize(0) != w.getDimSize(0)))
    return emitOpError() << "bias must be [" << w.getDimSize(0) << "]";
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax, reductions
//===----------------------------------------------------------------------===//

static LogicalResult verifyChannelParams(Operation *op, Value input,
                                         ValueRange params) {
  auto x = rankedType(input);
  if (x.getRank() < 2)
    return op->emitOpError() << "input must have rank >= 2 (N, C, ...)";
  int64_t c = x.getDimSize(1);
  for (Value p : params) {
    auto t = rankedType(p);
    if (t.getRank() != 1 || t.getDimSize(0) != c)
      return op->emitOpError() << "per-channel operand has shape "
                               << shapeStr(t.getShape()) << ", expected ["
                               << c << "]";
  }
  return success();
}

LogicalResult BatchNormOp::verify() {
  return verifyChannelParams(*this, getInput(),
                             {getScale(), getBias(), getMean(), getVariance()});
}

template <typename PoolOp> static LogicalResult verifyPool(PoolOp op) {
  auto x = rankedType(op.getInput());
  if (x.getRank() != 4)
    return op.emitOpError() << "supports 2-D pooling over NCHW only";
  if (op.getKernelShape().size() != 2)
    return op.emitOpError() << "expects 2 kernel dims";
  if (failed(verifyWindowAttrs(op, op.getStrides(), op.getPads(),
                               op.getDilations())))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (!semantics::windowOutputSize(x.getDimSize(2 + i),
                                     op.getKernelShape()[i],
                                     op.getStrides()[i], op.getPads()[i],
                                     op.getPads()[i + 2], op.getDilations()[i],
                                     op.getCeilMode()))
      return op.emitOpError()
             << "the kernel (" << op.getKernelShape()[i] << " with dilation "
             << op.getDilations()[i] << ") does not fit the padded input "
             << x.getDimSize(2 + i) << " + " << op.getPads()[i] << " + "
             << op.getPads()[i + 2] << " along spatial axis " << i;
  return success();
}

LogicalResult MaxPoolOp::verify() { return verifyPool(*this); }
LogicalResult AveragePoolOp::verify() { return verifyPool(*this); }

LogicalResult MaxPoolIndicesOp::verify() {
  if (failed(verifyPool(*this)))
    return failure();
  Type elem = rankedType(getIndices()).getElementType();
  if (!elem.isInteger(32))
    return emitOpError() << "indices must be i32, got " << elem;
  return success();
}

LogicalResult MaxPoolIndicesGradOp::verify() {
  auto dx = rankedType(getInputGrad()), dy = rankedType(getResultGrad()),
       idx = rankedType(getIndices());
  if (!idx.getElementType().isInteger(32) || idx.getShape() != dy.getShape())
    return emitOpError() << "indices must be i32 with the shape of "
                            "result_grad "
                         << shapeStr(dy.getShape()) << ", got " << idx;
  if (dx.getElementType() != dy.getElementType())
    return emitOpError()
           << "input_grad and result_grad must share the element type";
  if (dx.getRank() != 4 || dy.getRank() != 4 ||
      dx.getDimSize(0) != dy.getDimSize(0) ||
      dx.getDimSize(1) != dy.getDimSize(1))
    return emitOpError() << "expects [N, C, H, W] input_grad and [N, C, OH, "
                            "OW] result_grad, got "
                         << shapeStr(dx.getShape()) << " and "
                         << shapeStr(dy.getShape());
  if (getKernelShape().size() != 2)
    return emitOpError() << "expects 2 kernel dims";
  if (failed(
          verifyWindowAttrs(*this, getStrides(), getPads(), getDilations())))
    return failure();
  for (int i = 0; i < 2; ++i) {
    auto out = semantics::windowOutputSize(
        dx.getDimSize(2 + i), getKernelShape()[i], getStrides()[i],
        getPads()[i], getPads()[i + 2], getDilations()[i], getCeilMode());
    if (!out || *out != dy.getDimSize(2 + i))
      return emitOpError() << "result_grad " << shapeStr(dy.getShape())
                           << " is not the pooled shape of input_grad "
                           << shapeStr(dx.getShape());
  }
  return success();
}

LogicalResult GlobalAveragePoolOp::verify() {
  auto x = rankedType(getInput());
  if (x.getRank() < 3)
    return emitOpError() << "input must have rank >= 3 (N, C, spatial...), got "
                         << shapeStr(x.getShape());
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range for rank "
                             << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), rankedType(getInput()).getRank());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), rankedType(getInput()).getRank());
}

template <typename ReduceOp> static LogicalResult verifyReduce(ReduceOp op) {
  auto x = rankedType(op.getInput());
  llvm::SmallVector<bool> reduced(x.getRank(), false);
  for (int64_t a : op.getAxes()) {
    if (a < 0 || a >= x.getRank() || reduced[a])
      return op.emitOpError() << "axes must be distinct and in [0, "
                              << x.getRank() << "), got " << a;
    reduced[a] = true;
  }
  return success();
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceProdOp::verify() { return verifyReduce(*this); }

template <typename ArgOp> static LogicalResult verifyArgReduce(ArgOp op) {
  auto x = rankedType(op.getInput());
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= x.getRank())
    return op.emitOpError() << "axis must be in [0, " << x.getRank()
                            << "), got " << axis;
  return success();
}

LogicalResult ArgMaxOp::verify() { return verifyArgReduce(*this); }
LogicalResult ArgMinOp::verify() { return verifyArgReduce(*this); }

static LogicalResult verifyResize(Operation *op, RankedTensorType in,
                                  RankedTensorType out, StringRef mode,
                                  StringRef coord, StringRef nearest,
                                  ArrayRef<double> scales) {
  if (in.getRank() != out.getRank() ||
      in.getElementType() != out.getElementType())
    return op->emitOpError() << "input " << in << " and output " << out
                             << " must have one rank and element type";
  if ((int64_t)scales.size() != in.getRank())
    return op->emitOpError() << "has " << scales.size()
                             << " scales, expected " << in.getRank();
  for (double s : scales)
    if (!(s > 0))
      return op->emitOpError() << "scales must be > 0, got " << s;
  if (mode != "nearest" && mode != "linear")
    return op->emitOpError() << "mode must be nearest or linear, got '"
                             << mode << "'";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          coord))
    return op->emitOpError() << "unknown coordinate_transformation_mode '"
                             << coord << "'";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return op->emitOpError() << "unknown nearest_mode '" << nearest << "'";
  return success();
}

LogicalResult ResizeOp::verify() {
  return verifyResize(*this, rankedType(getInput()), rankedType(getResult()),
                      getMode(), getCoordinateTransformationMode(),
                      getNearestMode(), getScales());
}

LogicalResult ResizeGradOp::verify() {
  return verifyResize(*this, rankedType(getInputGrad()),
                      rankedType(getResultGrad()), getMode(),
                      getCoordinateTransformationMode(), getNearestMode(),
                      getScales());
}

LogicalResult DropoutOp::verify() {
  auto step = rankedType(getStep());
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  if (step.getRank() != 0 || !step.getElementType().isF32())
    return emitOpError() << "step must be a rank-0 f32 tensor, got " << step;
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  auto x = rankedType(getLogits()), t = rankedType(getLabels());
  if (x.getRank() < 1)
    return emitOpError() << "logits must have rank >= 1";
  if (!t.getElementType().isInteger(64))
    return emitOpError() << "labels must be i64 class ids, got "
                         << t.getElementType();
  if (t.getShape() != x.getShape().drop_back())
    return emitOpError() << "labels have shape " << shapeStr(t.getShape())
                         << ", expected " << shapeStr(x.getShape().drop_back())
                         << " (the logits' shape without the class axis)";
  float e = getLabelSmoothing().convertToFloat();
  if (!(e >= 0.0f && e <= 1.0f))
    return emitOpError() << "label_smoothing must be in [0, 1], got " << e;
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Checks that |small|[i] = |big|[starts + steps * i] stays in range of |big|
/// in every dimension (slice reads, pad writes).
static LogicalResult verifyStrided(Operation *op, RankedTensorType big,
                                   RankedTensorType small,
                                   ArrayRef<int64_t> starts,
                                   ArrayRef<int64_t> steps) {
  int64_t rank = big.getRank();
  if (small.getRank() != rank || (int64_t)starts.size() != rank ||
      (int64_t)steps.size() != rank)
    return op->emitOpError() << "expects starts and steps with one entry per "
                                "dimension of rank "
                             << rank << ", got " << starts.size() << " and "
                             << steps.size() << " for ranks " << big.getRank()
                             << " and " << small.getRank();
  if (big.getElementType() != small.getElementType())
    return op->emitOpError() << "element types differ: " << big << " and "
                             << small;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = small.getDimSize(d), size = big.getDimSize(d);
    if (steps[d] == 0)
      return op->emitOpError() << "step of dimension " << d << " is 0";
    if (n == 0)
      continue;
    int64_t last = starts[d] + steps[d] * (n - 1);
    if (starts[d] < 0 || starts[d] >= size || last < 0 || last >= size)
      return op->emitOpError()
             << "dimension " << d << ": indices " << starts[d] << " + "
             << steps[d] << " * i for i < " << n << " leave [0, " << size
             << ")";
  }
  return success();
}

LogicalResult SliceOp::verify() {
  return verifyStrided(*this, rankedType(getInput()), rankedType(getResult()),
                       getStarts(), getSteps());
}

LogicalResult PadOp::verify() {
  return verifyStrided(*this, rankedType(getResult()), rankedType(getInput()),
                       getStarts(), getSteps());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto first = rankedType(getInputs()[0]);
  int64_t axis = getAxis(), rank = first.getRank();
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  for (Value v : getInputs().drop_front()) {
    auto t = rankedType(v);
    bool ok =
        t.getRank() == rank && t.getElementType() == first.getElementType();
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || t.getDimSize(d) == first.getDimSize(d);
    if (!ok)
      return emitOpError() << "input of type " << t
                           << " does not match the first input " << first
                           << " outside axis " << axis;
  }
  return success();
}

static LogicalResult verifyIndices(Operation *op, RankedTensorType idx) {
  if (!idx.getElementType().isInteger(64) &&
      !idx.getElementType().isInteger(32))
    return op->emitOpError() << "indices must be i32 or i64, got "
                             << idx.getElementType();
  return success();
}

LogicalResult GatherOp::verify() {
  auto x = rankedType(getData()), i = rankedType(getIndices());
  int64_t axis = getAxis();
  if (failed(verifyIndices(*this, i)))
    return failure();
  if (axis < 0 || axis >= x.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << x.getRank();
  return success();
}

LogicalResult GatherElementsOp::verify() {
  auto x = rankedType(getData()), i = rankedType(getIndices());
  int64_t axis = getAxis();
  if (failed(verifyIndices(*this, i)))
    return failure();
  if (axis < 0 || axis >= x.getRank() || i.getRank() != x.getRank())
    return emitOpError() << "axis " << axis << " and indices rank "
                         << i.getRank() << " must fit data rank "
                         << x.getRank();
  for (int64_t d = 0; d < x.getRank(); ++d)
    if (d != axis && i.getDimSize(d) > x.getDimSize(d))
      return emitOpError() << "indices shape " << shapeStr(i.getShape())
                           << " exceeds data shape " << shapeStr(x.getShape())
                           << " outside axis " << axis;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.cpp.inc"
#define GET_OP_CLASSES
#include "dialects/Graph/GraphTrainingOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Multiply-adds of the RecomputeExpensive ops (RecomputeCostOpInterface).
//===----------------------------------------------------------------------===//

/// Elements of |v|'s static shape (0 when it is not static).
static int64_t elementCount(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : 0;
}

/// Elements of |v| per index of its dim 0 (a filter's C/group * kH * kW).
static int64_t perLeadingIndex(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || t.getRank() == 0 || t.getDimSize(0) == 0)
    return 0;
  return t.getNumElements() / t.getDimSize(0);
}

int64_t GemmOp::getMultiplyAdds() {
  // Y [M, N]; K is A's other dim.
  auto a = cast<RankedTensorType>(getA().getType());
  int64_t k = getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  return elementCount(getResult()) * k;
}

int64_t MatMulOp::getMultiplyAdds() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  return elementCount(getResult()) * lhs.getDimSize(lhs.getRank() - 1);
}

int64_t ConvOp::getMultiplyAdds() {
  return elementCount(getResult()) * perLeadingIndex(getFilter());
}

int64_t ConvBackwardDataOp::getMultiplyAdds() {
  // The forward convolution's count: one product per (dY, filter tap).
  return elementCount(getResultGrad()) * perLeadingIndex(getFilter());
}

int64_t ConvBackwardFilterOp::getMultiplyAdds() {
  return elementCount(getResultGrad()) * perLeadingIndex(getFilterGrad());
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// |v| as "%g" prints it ("0.1").
static std::string formatG(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", v);
  return s;
}

/// The checks dlgraph.attention and dlgraph.attention_grad share: the
/// layouts, the Q/K/V shapes and element types (runtime/schema/Semantics/
/// Attention.h), the mask's shape and type, the dropout's ratio and step.
template <typename OpT>
static LogicalResult verifyAttention(OpT op,
                                     semantics::AttentionDims *dimsOut) {
  ArrayRef<bool> seqFirst = op.getSeqFirst();
  if (!seqFirst.empty() && seqFirst.size() != 4)
    return op.emitOpError() << "seq_first must be empty or hold 4 flags "
                               "(query, key, value, result), got "
                            << seqFirst.size();
  auto flag = [&](int i) { return !seqFirst.empty() && seqFirst[i]; };
  auto q = rankedType(op.getQuery()), k = rankedType(op.getKey()),
       v = rankedType(op.getValue());
  semantics::AttentionDims dims;
  std::string error;
  if (!semantics::attentionDims(q.getShape(), k.getShape(), v.getShape(),
                                flag(semantics::kAttnQuery),
                                flag(semantics::kAttnKey),
                                flag(semantics::kAttnValue), &dims, &error))
    return op.emitOpError() << error;
  Type et = q.getElementType();
  auto dataType = [](Type t) {
    return isa<Float32Type, Float16Type, BFloat16Type, Float64Type>(t);
  };
  bool anyF64 = false, allF64 = true;
  for (Type t : {et, k.getElementType(), v.getElementType()}) {
    anyF64 |= t.isF64();
    allF64 &= t.isF64();
  }
  if (!dataType(et) || !dataType(k.getElementType()) ||
      !dataType(v.getElementType()) || anyF64 != allF64)
    return op.emitOpError() << "query, key and value must each be f32, f16 "
                               "or bf16, or all f64, got "
                            << et << ", " << k.getElementType() << " and "
                            << v.getElementType();
  double scale = op.getScale().convertToDouble();
  if (!std::isfinite(scale))
    return op.emitOpError() << "scale must be finite, got " << scale;
  if (Value mask = op.getMask()) {
    auto m = rankedType(mask);
    int64_t full[] = {dims.batch, dims.queryHeads, dims.queryLen, dims.kvLen};
    if (!semantics::broadcastsTo(m.getShape(), ArrayRef<int64_t>(full)))
      return op.emitOpError()
             << "mask of shape " << shapeStr(m.getShape())
             << " does not broadcast to the scores' [batch, query heads, "
                "query length, key length] = "
             << shapeStr(full);
    Type mt = m.getElementType();
    if (!mt.isInteger(1) && !dataType(mt))
      return op.emitOpError() << "mask must be i1 (true keeps a score) or "
                                 "a float type (added to the scores), got "
                              << mt;
  }
  float ratio = op.getDropoutRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return op.emitOpError() << "dropout_ratio must be in [0, 1), got "
                            << formatG(ratio);
  if ((ratio > 0.0f) != bool(op.getStep()))
    return op.emitOpError() << "a step operand is needed exactly when "
                               "dropout_ratio > 0 (ratio "
                            << formatG(ratio) << ")";
  if (Value step = op.getStep()) {
    auto st = rankedType(step);
    if (st.getRank() != 0 || !st.getElementType().isF32())
      return op.emitOpError() << "step must be a rank-0 f32 tensor, got "
                              << st;
  }
  *dimsOut = dims;
  return success();
}

LogicalResult AttentionOp::verify() {
  semantics::AttentionDims dims;
  return verifyAttention(*this, &dims);
}

LogicalResult AttentionGradOp::verify() {
  semantics::AttentionDims dims;
  if (failed(verifyAttention(*this, &dims)))
    return failure();
  auto o = rankedType(getResult()), dO = rankedType(getResultGrad());
  ArrayRef<bool> seqFirst = getSeqFirst();
  bool oSeqFirst = !seqFirst.empty() && seqFirst[semantics::kAttnResult];
  SmallVector<int64_t> expected =
      oSeqFirst ? SmallVector<int64_t>{dims.batch, dims.queryLen,
                                       dims.queryHeads, dims.valueDim}
                : SmallVector<int64_t>{dims.batch, dims.queryHeads,
                                       dims.queryLen, dims.valueDim};
  Type et = rankedType(getQuery()).getElementType();
  if (o.getShape() != ArrayRef<int64_t>(expected) || o.getElementType() != et)
    return emitOpError() << "result has type " << o << ", expected shape "
                         << shapeStr(expected) << " of " << et;
  if (dO.getShape() != o.getShape() || !isa<FloatType>(dO.getElementType()))
    return emitOpError() << "result_grad has type " << dO
                         << ", expected a float tensor of the result's shape "
                         << shapeStr(o.getShape());
  auto lse = rankedType(getLse());
  int64_t lseShape[] = {dims.batch, dims.queryHeads, dims.queryLen};
  if (lse.getShape() != ArrayRef<int64_t>(lseShape) ||
      !lse.getElementType().isF32())
    return emitOpError() << "lse has type " << lse << ", expected f32 of shape "
                         << shapeStr(lseShape);
  return success();
}

/// B * Hq * Sq * Skv: the scores of one attention.
static int64_t attentionScores(Value q, Value k, ArrayRef<bool> seqFirst) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  if (!qt.hasStaticShape() || !kt.hasStaticShape() || qt.getRank() != 4 ||
      kt.getRank() != 4)
    return 0;
  bool qsf = !seqFirst.empty() && seqFirst[0];
  bool ksf = !seqFirst.empty() && seqFirst[1];
  auto qs = semantics::attentionHeadMajor(qt.getShape(), qsf);
  auto ks = semantics::attentionHeadMajor(kt.getShape(), ksf);
  return qs[0] * qs[1] * qs[2] * ks[2];
}

bool AttentionOp::isScoreMask(OpOperand &operand) {
  // Segment 3 of (query, key, value, mask, step).
  auto [start, length] = getODSOperandIndexAndLength(3);
  return operand.getOwner() == getOperation() && length == 1 &&
         operand.getOperandNumber() == start;
}

int64_t AttentionOp::getMultiplyAdds() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  return 2 * attentionScores(getQuery(), getKey(), getSeqFirst()) *
         (q.getRank() == 4 ? q.getDimSize(3) : 0);
}

int64_t AttentionGradOp::getMultiplyAdds() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  return 4 * attentionScores(getQuery(), getKey(), getSeqFirst()) *
         (q.getRank() == 4 ? q.getDimSize(3) : 0);
}
