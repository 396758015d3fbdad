//===- Constants.cpp - ONNX constants, shape queries and Dropout ----------===//
//
// Constant, ConstantOfShape, Shape, Size, Range and EyeLike (folded at
// import time), Trilu (a select with a constant mask), Identity, and
// Dropout (the identity at inference; dlgraph.dropout in training mode).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::constant() {
  for (const auto &a : node->attribute()) {
    const std::string &name = a.name();
    Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
    DenseElementsAttr c;
    if (name == "value" &&
        a.type() == onnx::AttributeProto_AttributeType_TENSOR) {
      FailureOr<DenseElementsAttr> t =
          convertTensor(a.t(), nodeLoc, "Constant value");
      if (failed(t))
        return failure();
      c = *t;
    } else if (name == "value_float" &&
               a.type() == onnx::AttributeProto_AttributeType_FLOAT) {
      c = DenseElementsAttr::get(RankedTensorType::get({}, f32), a.f());
    } else if (name == "value_floats" &&
               a.type() == onnx::AttributeProto_AttributeType_FLOATS) {
      SmallVector<float> v(a.floats().begin(), a.floats().end());
      c = DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, f32), ArrayRef<float>(v));
    } else if (name == "value_int" &&
               a.type() == onnx::AttributeProto_AttributeType_INT) {
      c = DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                 static_cast<int64_t>(a.i()));
    } else if (name == "value_ints" &&
               a.type() == onnx::AttributeProto_AttributeType_INTS) {
      SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
      c = DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, i64),
          ArrayRef<int64_t>(v));
    } else {
      return nodeError() << "attribute '" << name
                         << "' is not supported; supported: value (tensor), "
                            "value_float, value_floats, value_int, value_ints";
    }
    return defineConstant(0, c);
  }
  return nodeError() << "has no value attribute";
}

LogicalResult Importer::constantOfShape() {
  auto shape = constInts(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return nodeError() << "shape " << shapeStr(*shape)
                         << " has a negative dimension";
  Attribute value = builder.getF32FloatAttr(0.0f);
  Type et = builder.getF32Type();
  if (const onnx::AttributeProto *a = findAttr("value")) {
    if (!a->has_t())
      return nodeError() << "attribute 'value' must be a tensor";
    auto c = convertTensor(a->t(), nodeLoc, "value");
    if (failed(c))
      return failure();
    if (c->getNumElements() != 1)
      return nodeError() << "attribute 'value' must hold one element";
    et = c->getElementType();
    value = *c->getValues<Attribute>().begin();
  }
  auto type = RankedTensorType::get(*shape, et);
  return defineConstant(0, DenseElementsAttr::get(type, value));
}

LogicalResult Importer::shape() {
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  int64_t start = attrInt("start", 0), end = attrInt("end", rank);
  if (attrFailed)
    return failure();
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(in[i]);
  auto type =
      RankedTensorType::get({(int64_t)dims.size()}, builder.getI64Type());
  return defineConstant(0,
                        DenseElementsAttr::get(type, ArrayRef<int64_t>(dims)));
}

LogicalResult Importer::sizeOp() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto type = RankedTensorType::get({}, builder.getI64Type());
  return defineConstant(
      0, DenseElementsAttr::get(type, ArrayRef<int64_t>(
                                          {s->type().getNumElements()})));
}

LogicalResult Importer::range() {
  Slot *in[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = input(i);
    if (!in[i])
      return failure();
    if (!in[i]->isFoldable() || in[i]->type().getNumElements() != 1)
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') must be a constant scalar (an initializer, "
                            "a Constant or a foldable shape computation); "
                            "Range with runtime bounds has no static shape"
                         << constantInputHint(i);
  }
  Type et = in[0]->type().getElementType();
  if (in[1]->type().getElementType() != et ||
      in[2]->type().getElementType() != et)
    return nodeError() << "start, limit and delta must have one element type";
  bool isFloat = isa<FloatType>(et);
  if (!isFloat && (!et.isInteger() || et.isInteger(1)))
    return nodeError() << "element type " << et
                       << " is not supported; supported: f32, f64, i32, i64";
  auto scalar = [&](int i) -> double {
    DenseElementsAttr c = in[i]->constant;
    if (isFloat)
      return (*c.getValues<APFloat>().begin()).convertToDouble();
    return (double)(*c.getValues<APInt>().begin()).getSExtValue();
  };
  double start = scalar(0), limit = scalar(1), delta = scalar(2);
  if (delta == 0)
    return nodeError() << "delta is 0";
  // ONNX: number_of_elements = max(ceil((limit - start) / delta), 0).
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= (double)(1 << 26)))
    return nodeError() << "Range of " << count << " elements is too large "
                       << "to fold (at most 2^26)";
  int64_t n = (int64_t)count;
  auto type = RankedTensorType::get({n}, et);
  if (isFloat) {
    SmallVector<APFloat> vals;
    auto ft = cast<FloatType>(et);
    for (int64_t i = 0; i < n; ++i) {
      // start + i * delta in double, rounded once to the element type.
      bool lost;
      APFloat v(start + (double)i * delta);
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(v);
    }
    return defineConstant(0, DenseElementsAttr::get(type, vals));
  }
  SmallVector<int64_t> vals;
  // The exact int64 operands (a double may not round-trip them).
  auto intScalar = [&](int i) {
    return (*in[i]->constant.getValues<APInt>().begin()).getSExtValue();
  };
  int64_t s0 = intScalar(0), d = intScalar(2);
  for (int64_t i = 0; i < n; ++i) // wraps like int64 arithmetic on targets
    vals.push_back(static_cast<int64_t>(static_cast<uint64_t>(s0) +
                                        static_cast<uint64_t>(i) *
                                            static_cast<uint64_t>(d)));
  return defineConstant(0, intConstant(type, vals));
}

/// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input (whose
/// values are not read), zeros elsewhere; a compile-time constant.
LogicalResult Importer::eyeLike() {
  int64_t k = attrInt("k", 0);
  int64_t dtype = attrInt("dtype", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  if (in.getRank() != 2)
    return nodeError() << "input must have rank 2, got "
                       << shapeStr(in.getShape());
  Type et = in.getElementType();
  if (findAttr("dtype")) {
    et = elementTypeFor(builder, dtype);
    if (!et)
      return nodeError() << "dtype " << onnxTypeName(dtype)
                         << " is not supported; supported: " << kSupportedTypes;
  }
  if (boundedNumElements(in.getShape(), kMaxFoldElements) < 0)
    return nodeError() << "an EyeLike constant of shape "
                       << shapeStr(in.getShape())
                       << " is too large (at most 2^26 elements)";
  auto type = RankedTensorType::get(in.getShape(), et);
  int64_t rows = in.getDimSize(0), cols = in.getDimSize(1);
  SmallVector<Attribute> values;
  values.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = j - i == k ? 1.0 : 0.0;
      if (isa<FloatType>(et))
        values.push_back(builder.getFloatAttr(et, v));
      else
        values.push_back(builder.getIntegerAttr(et, et.isInteger(1)
                                                        ? APInt(1, v != 0)
                                                        : APInt(et.getIntOrFloatBitWidth(), (int64_t)v, true)));
    }
  return defineConstant(0, DenseElementsAttr::get(type, values));
}

LogicalResult Importer::trilu() {
  int64_t upper = attrInt("upper", 1);
  if (attrFailed)
    return failure();
  int64_t k = 0;
  if (hasInput(1)) {
    auto kv = constInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return nodeError() << "k must hold one value";
    k = (*kv)[0];
  }
  Value x = operand(0, /*requireF32=*/false);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  if (t.getRank() < 2)
    return nodeError() << "input of rank " << t.getRank()
                       << " is not supported; expected rank >= 2";
  int64_t n = t.getDimSize(t.getRank() - 2), m = t.getDimSize(t.getRank() - 1);
  if (boundedNumElements({n, m}, kMaxFoldElements) < 0)
    return nodeError() << "a Trilu mask of " << n << "x" << m
                       << " is too large (at most 2^26 elements)";
  // Keep (i, j) where j - i >= k (upper) or j - i <= k (lower).
  SmallVector<bool> keep;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  auto maskType = RankedTensorType::get({n, m}, builder.getI1Type());
  Value mask = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(DenseElementsAttr::get(maskType, ArrayRef(keep))));
  Value zero = splatOf(RankedTensorType::get({}, t.getElementType()), 0.0);
  return define(0, gr::SelectOp::create(builder, nodeLoc, mask, x, zero));
}

LogicalResult Importer::identity() {
  Slot *s = input(0);
  if (!s)
    return failure();
  if (!s->value) {
    // Alias constants and variables; they materialize where used.
    Slot alias = *s;
    return defineSlot(0, alias);
  }
  return define(0, gr::IdentityOp::create(builder, nodeLoc, s->value));
}

LogicalResult Importer::dropout() {
  // Output 1, the mask, is bool from opset 10 and has the input's type
  // before (Dropout-7).
  bool training = false;
  float ratio = 0.5f;
  if (opset < 7) {
    // Dropout-6 drops unless is_test = 1 (or ratio = 0).
    int64_t isTest = attrInt("is_test", 0);
    ratio = attrFloat("ratio", 0.5f);
    if (attrFailed)
      return failure();
    if (!isTest && ratio != 0.0f)
      return nodeError() << "attribute is_test = 0 with ratio " << ratio
                         << " (training-mode dropout, opset " << opset
                         << ") is not supported; export with opset >= 12, "
                            "where training_mode is an input";
  } else if (opset < 12) {
    ratio = attrFloat("ratio", 0.5f);
    if (attrFailed)
      return failure();
  } else {
    if (hasInput(2)) {
      Slot *t = input(2);
      if (!t)
        return failure();
      if (!t->isFoldable() || t->type().getNumElements() != 1)
        return nodeError() << "training_mode (input '" << node->input(2)
                           << "') must be a constant (an initializer or a "
                              "Constant); a runtime flag is not supported"
                           << constantInputHint(2);
      training = !t->constant.getSplatValue<APInt>().isZero();
    }
    if (hasInput(1)) {
      Slot *r = input(1);
      if (!r)
        return failure();
      if (!r->isFoldable() || r->type().getNumElements() != 1 ||
          !isa<FloatType>(r->type().getElementType())) {
        if (training)
          return nodeError() << "ratio (input '" << node->input(1)
                             << "') must be a constant float scalar"
                             << constantInputHint(1);
      } else {
        ratio = (float)(*r->constant.getValues<APFloat>().begin())
                    .convertToDouble();
      }
    }
  }
  if (training && !(ratio >= 0.0f && ratio < 1.0f))
    return nodeError() << "ratio " << ratio
                       << " is out of range; supported: [0, 1)";
  int64_t seedAttr = attrInt("seed", -1);
  if (attrFailed)
    return failure();
  Slot *xs = input(0);
  if (!xs)
    return failure();
  RankedTensorType xt = xs->type();
  bool wantMask = node->output_size() > 1 && !node->output(1).empty();
  auto maskType = RankedTensorType::get(
      xt.getShape(), opset < 10 ? xt.getElementType() : builder.getI1Type());
  if (!training || ratio == 0.0f) {
    // Inference, or nothing dropped: the identity, and a mask of ones.
    if (wantMask) {
      Attribute one =
          opset < 10 ? (Attribute)builder.getFloatAttr(xt.getElementType(), 1.0)
                     : (Attribute)builder.getBoolAttr(true);
      if (opset < 10 && !isa<FloatType>(xt.getElementType()))
        return nodeError() << "a Dropout-7 mask of element type "
                           << xt.getElementType() << " is not supported";
      if (failed(defineConstant(1, DenseElementsAttr::get(maskType, one))))
        return failure();
    }
    return identity();
  }
  // f32, f16 and bf16: the dropout kernel scales 16-bit elements in float
  // and rounds once.
  Value x =
      operand(0, /*requireF32=*/!isLowPrecisionFloat(xt.getElementType()));
  if (!x)
    return failure();
  // Without a seed attribute, a hash of the node's first output name, so
  // that every Dropout of a model has its own stream and compiles repeat.
  uint64_t seed = seedAttr >= 0 ? (uint64_t)seedAttr
                                : (uint64_t)llvm::xxh3_64bits(node->output(0));
  auto dropout = gr::DropoutOp::create(
      builder, nodeLoc, x, dropoutStep(), builder.getF32FloatAttr(ratio),
      builder.getI64IntegerAttr((int64_t)seed));
  if (wantMask && failed(define(1, dropout.getMask())))
    return failure();
  return define(0, dropout.getResult());
}

Value Importer::dropoutStep() {
  if (dropoutStepValue)
    return dropoutStepValue;
  StringRef name = "__dropout_step";
  auto type = RankedTensorType::get({}, builder.getF32Type());
  OpBuilder::InsertPoint ip = builder.saveInsertionPoint();
  builder.setInsertionPoint(func);
  gr::VariableOp::create(builder, fileLoc, name, type, ElementsAttr(),
                         /*trainable=*/false);
  builder.restoreInsertionPoint(ip);
  // Reads see the value from before the call; the write takes effect when
  // the function returns, so every call (every training step) draws anew.
  Value read = gr::ReadVariableOp::create(builder, fileLoc, type, name);
  Value next = gr::AddOp::create(
      builder, fileLoc, read,
      gr::ConstantOp::create(builder, fileLoc,
                             cast<ElementsAttr>(DenseElementsAttr::get(
                                 type, builder.getF32FloatAttr(1.0f)))));
  gr::WriteVariableOp::create(builder, fileLoc, name, next);
  dropoutStepValue = read;
  return read;
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::constantOps() {
  static const OpMapping ops[] = {
      {"Constant", 1, &Importer::constant},
      {"ConstantOfShape", 9, &Importer::constantOfShape},
      {"Dropout", 6, &Importer::dropout},
      {"EyeLike", 9, &Importer::eyeLike},
      {"Identity", 1, &Importer::identity},
      // Range-27's stash_type only matters for f16/bf16 bounds, which the
      // fold computes in double and rounds once.
      {"Range", 11, &Importer::range, 27},
      {"Shape", 1, &Importer::shape},
      {"Size", 1, &Importer::sizeOp},
      {"Trilu", kMinOpset, &Importer::trilu},
  };
  return ops;
}
