//===- GraphOps.cpp - dlgraph op verifiers and folders ----------------------===//
#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace dlc::graph;

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
  auto in = rankedType(getInput()), out = rankedType(getResult());
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
    if (out.getDimSize(i) != in.getDimSize(perm[i]))
      return emitOpError() << "result dim " << i << " is " << out.getDimSize(i)
                           << ", expected " << in.getDimSize(perm[i]);
  }
  return success();
}

/// True when |from| broadcasts to |to| under NumPy rules.
static bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i])
      return false;
  return true;
}

LogicalResult BroadcastToOp::verify() {
  auto in = rankedType(getInput()), out = rankedType(getResult());
  if (!broadcastsTo(in.getShape(), out.getShape()))
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

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  auto a = rankedType(getA()), b = rankedType(getB()),
       y = rankedType(getResult());
  if (a.getRank() != 2 || b.getRank() != 2 || y.getRank() != 2)
    return emitOpError() << "expects 2-D A, B and result, got ranks "
                         << a.getRank() << ", " << b.getRank() << ", "
                         << y.getRank();
  int64_t m = getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t ka = getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (ka != kb)
    return emitOpError() << "inner dimensions differ: op(A) is [" << m << ", "
                         << ka << "], op(B) is [" << kb << ", " << n << "]";
  if (y.getDimSize(0) != m || y.getDimSize(1) != n)
    return emitOpError() << "result is " << shapeStr(y.getShape())
                         << ", expected [" << m << ", " << n << "]";
  if (getC() && !broadcastsTo(rankedType(getC()).getShape(), y.getShape()))
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
  int64_t ka = a.getDimSize(a.getRank() - 1);
  int64_t kb = b.getRank() == 1 ? b.getDimSize(0) : b.getDimSize(b.getRank() - 2);
  if (ka != kb)
    return emitOpError() << "contracting dimensions differ: " << ka << " vs "
                         << kb;
  auto y = rankedType(getResult());
  if (a.getRank() == 2 && b.getRank() == 2 &&
      y.getShape() != ArrayRef<int64_t>{a.getDimSize(0), b.getDimSize(1)})
    return emitOpError() << "result is " << shapeStr(y.getShape())
                         << ", expected [" << a.getDimSize(0) << ", "
                         << b.getDimSize(1) << "]";
  return success();
}

/// Checks the spatial attributes shared by conv and pooling ops.
static LogicalResult verifyWindowAttrs(Operation *op, ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return op->emitOpError()
           << "expects 2 strides, 2 dilations and 4 pads, got "
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
  auto x = rankedType(getInput()), w = rankedType(getFilter()),
       y = rankedType(getResult());
  if (x.getRank() != 4 || w.getRank() != 4 || y.getRank() != 4)
    return emitOpError() << "supports 2-D convolution only (rank-4 NCHW "
                            "input, OIHW filter), got input rank "
                         << x.getRank();
  if (failed(verifyWindowAttrs(*this, getStrides(), getPads(), getDilations())))
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
  for (int i = 0; i < 2; ++i) {
    int64_t eff = dil[i] * (w.getDimSize(2 + i) - 1) + 1;
    int64_t out =
        (x.getDimSize(2 + i) + pads[i] + pads[i + 2] - eff) / strides[i] + 1;
    if (y.getDimSize(2 + i) != out)
      return emitOpError() << "result spatial dim " << i << " is "
                           << y.getDimSize(2 + i) << ", expected " << out;
  }
  if (y.getDimSize(0) != x.getDimSize(0) || y.getDimSize(1) != w.getDimSize(0))
    return emitOpError() << "result is " << shapeStr(y.getShape())
                         << ", expected batch " << x.getDimSize(0) << " and "
                         << w.getDimSize(0) << " channels";
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

LogicalResult BatchNormTrainingOp::verify() {
  return verifyChannelParams(*this, getInput(),
                             {getScale(), getBias(), getBatchMean(),
                              getBatchVar()});
}

template <typename PoolOp> static LogicalResult verifyPool(PoolOp op) {
  auto x = rankedType(op.getInput()), y = rankedType(op.getResult());
  if (x.getRank() != 4 || y.getRank() != 4)
    return op.emitOpError() << "supports 2-D pooling over NCHW only";
  if (op.getKernelShape().size() != 2)
    return op.emitOpError() << "expects 2 kernel dims";
  if (failed(verifyWindowAttrs(op, op.getStrides(), op.getPads(),
                               op.getDilations())))
    return failure();
  for (int i = 0; i < 2; ++i) {
    int64_t eff = op.getDilations()[i] * (op.getKernelShape()[i] - 1) + 1;
    int64_t span = x.getDimSize(2 + i) + op.getPads()[i] +
                   op.getPads()[i + 2] - eff;
    int64_t s = op.getStrides()[i];
    int64_t out = (op.getCeilMode() ? (span + s - 1) / s : span / s) + 1;
    if (op.getCeilMode() && (out - 1) * s >= x.getDimSize(2 + i) + op.getPads()[i])
      --out;
    if (y.getDimSize(2 + i) != out)
      return op.emitOpError() << "result spatial dim " << i << " is "
                              << y.getDimSize(2 + i) << ", expected " << out;
  }
  return success();
}

LogicalResult MaxPoolOp::verify() { return verifyPool(*this); }
LogicalResult AveragePoolOp::verify() { return verifyPool(*this); }

LogicalResult GlobalAveragePoolOp::verify() {
  auto x = rankedType(getInput()), y = rankedType(getResult());
  if (x.getRank() < 3)
    return emitOpError() << "input must have rank >= 3 (N, C, spatial...), got "
                         << shapeStr(x.getShape());
  llvm::SmallVector<int64_t> expected(x.getShape());
  for (int64_t i = 2; i < x.getRank(); ++i)
    expected[i] = 1;
  if (y.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape is " << shapeStr(y.getShape())
                         << ", expected " << shapeStr(expected);
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
  auto x = rankedType(op.getInput()), y = rankedType(op.getResult());
  llvm::SmallVector<bool> reduced(x.getRank(), false);
  for (int64_t a : op.getAxes()) {
    if (a < 0 || a >= x.getRank() || reduced[a])
      return op.emitOpError() << "axes must be distinct and in [0, "
                              << x.getRank() << "), got " << a;
    reduced[a] = true;
  }
  llvm::SmallVector<int64_t> expected;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (!reduced[i])
      expected.push_back(x.getDimSize(i));
    else if (op.getKeepdims())
      expected.push_back(1);
  }
  if (y.getShape() != ArrayRef<int64_t>(expected))
    return op.emitOpError() << "result shape is " << shapeStr(y.getShape())
                            << ", expected " << shapeStr(expected);
  return success();
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }

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
  if (rankedType(getLoss()).getRank() != 0)
    return emitOpError() << "loss must be a rank-0 tensor";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.cpp.inc"
#define GET_OP_CLASSES
#include "dialects/Graph/GraphTrainingOps.cpp.inc"
