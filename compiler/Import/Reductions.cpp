//===- Reductions.cpp - ONNX reductions and softmaxes -> dlgraph ----------===//
//
// ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp, ArgMax and
// ArgMin, Softmax, LogSoftmax and Hardmax; CumSum (a running sum along an
// axis).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::reduce() {
  StringRef op = node->op_type();
  int64_t keepdims = attrInt("keepdims", 1);
  int64_t noop = 0;
  SmallVector<int64_t> axes;
  // ReduceSum since opset 13 and the others since 18 take the axes as an
  // optional input (with noop_with_empty_axes); before, as an attribute.
  if (opset >= (op == "ReduceSum" ? 13 : 18)) {
    noop = attrInt("noop_with_empty_axes", 0);
    if (findAttr("axes"))
      return nodeError() << "attribute 'axes' is not part of " << op
                         << " since opset " << (op == "ReduceSum" ? 13 : 18)
                         << "; pass the axes as input 1";
    if (hasInput(1)) {
      auto a = constInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    if (hasInput(1))
      return nodeError() << "takes its axes as an attribute before opset 18, "
                            "not as input 1";
    axes = attrInts("axes", {});
  }
  if (attrFailed)
    return failure();
  if (keepdims != 0 && keepdims != 1)
    return nodeError() << "attribute keepdims = " << keepdims
                       << " is not supported; supported: 0, 1";
  // An integer ReduceSum or ReduceProd of a compile-time constant (index
  // arithmetic, e.g. BEiT's relative position index) is folded, so that it
  // can feed inputs that must be constants.
  Slot *xs = input(0);
  if (!xs)
    return failure();
  bool foldInt = (op == "ReduceSum" || op == "ReduceProd") &&
                 xs->isFoldable() &&
                 isa<IntegerType>(xs->type().getElementType()) &&
                 !xs->type().getElementType().isInteger(1);
  // Bool ReduceMax / ReduceMin (any / all): the count of true (of false)
  // elements, compared with 0; over an empty set false / true, as the
  // identities of max and min on bools.
  std::string boolOp;
  if (!foldInt && xs->type().getElementType().isInteger(1) &&
      (op == "ReduceMax" || op == "ReduceMin")) {
    boolOp = op;
    op = "ReduceSum";
  }
  Value x;
  if (!boolOp.empty()) {
    x = gr::CastOp::create(builder, nodeLoc,
                           xs->type().clone(builder.getI32Type()),
                           materialize(*xs));
    if (boolOp == "ReduceMin")
      x = gr::SubOp::create(builder, nodeLoc, splatLike(x, 1), x);
  } else if (!foldInt && !(x = numericOperand(0))) {
    return failure();
  }
  RankedTensorType t =
      foldInt ? xs->type() : cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  // i32/i64 data: the reductions that are exact integer arithmetic (sums
  // and products wrap, as the elementwise ops do).
  bool isInt = isa<IntegerType>(t.getElementType());
  if (isInt && !llvm::is_contained({"ReduceSum", "ReduceMax", "ReduceMin",
                                    "ReduceProd", "ReduceL1",
                                    "ReduceSumSquare"},
                                   op))
    return nodeError() << "input 0 has element type " << t.getElementType()
                       << ", which " << op
                       << " does not take here; supported: float types "
                          "(integer data: ReduceSum, ReduceMax, ReduceMin, "
                          "ReduceProd, ReduceL1, ReduceSumSquare)";
  if (axes.empty()) {
    if (noop)
      return foldInt ? defineConstant(0, xs->constant)
                     : define(0, gr::IdentityOp::create(
                                     builder, nodeLoc,
                                     boolOp.empty() ? x : materialize(*xs)));
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  SmallVector<bool> seen;
  if (failed(normalizeAxes(axes, rank, &seen)))
    return failure();
  llvm::sort(axes);
  bool keep = keepdims != 0;
  if (foldInt) {
    // Wrapping sums and products, as integer arithmetic at run time.
    ArrayRef<int64_t> shape = t.getShape();
    SmallVector<int64_t> outShape, keptShape;
    for (int64_t d = 0; d < rank; ++d) {
      keptShape.push_back(seen[d] ? 1 : shape[d]);
      if (!seen[d] || keep)
        outShape.push_back(seen[d] ? 1 : shape[d]);
    }
    auto et = cast<IntegerType>(t.getElementType());
    APInt init(et.getWidth(), op == "ReduceSum" ? 0 : 1);
    SmallVector<APInt> acc(product(keptShape), init);
    SmallVector<int64_t> pos(rank, 0);
    for (const APInt &v : xs->constant.getValues<APInt>()) {
      int64_t o = 0;
      for (int64_t d = 0; d < rank; ++d)
        o = o * keptShape[d] + (seen[d] ? 0 : pos[d]);
      acc[o] = op == "ReduceSum" ? acc[o] + v : acc[o] * v;
      for (int64_t d = rank - 1; d >= 0 && ++pos[d] == shape[d]; --d)
        pos[d] = 0;
    }
    return defineConstant(
        0, DenseElementsAttr::get(RankedTensorType::get(outShape, et), acc));
  }
  auto elementwise = [&](auto tag, Value a) -> Value {
    using Op = decltype(tag);
    return Op::create(builder, nodeLoc, a);
  };
  auto square = [&](Value a) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, a);
  };
  Value y;
  if (op == "ReduceSum") {
    y = reduceOver<gr::ReduceSumOp>(x, axes, keep);
  } else if (op == "ReduceMean") {
    y = reduceOver<gr::ReduceMeanOp>(x, axes, keep);
  } else if (op == "ReduceMax") {
    y = reduceOver<gr::ReduceMaxOp>(x, axes, keep);
  } else if (op == "ReduceProd") {
    y = reduceOver<gr::ReduceProdOp>(x, axes, keep);
  } else if (op == "ReduceMin" && isInt) {
    // min(x) = ~max(~x) with ~x = -1 - x: order-reversing and, unlike
    // negation, without overflow at INT_MIN.
    Value ones = splatLike(x, -1);
    Value m = reduceOver<gr::ReduceMaxOp>(
        gr::SubOp::create(builder, nodeLoc, ones, x), axes, keep);
    y = gr::SubOp::create(builder, nodeLoc, splatLike(m, -1), m);
  } else if (op == "ReduceMin") {
    // min(x) = -max(-x), exact in floating point.
    Value m = reduceOver<gr::ReduceMaxOp>(elementwise(gr::NegOp(), x), axes,
                                          keep);
    y = elementwise(gr::NegOp(), m);
  } else if (op == "ReduceL1") {
    y = reduceOver<gr::ReduceSumOp>(elementwise(gr::AbsOp(), x), axes, keep);
  } else if (op == "ReduceL2") {
    y = elementwise(gr::SqrtOp(),
                    reduceOver<gr::ReduceSumOp>(square(x), axes, keep));
  } else if (op == "ReduceSumSquare") {
    y = reduceOver<gr::ReduceSumOp>(square(x), axes, keep);
  } else if (op == "ReduceLogSum") {
    y = elementwise(gr::LogOp(), reduceOver<gr::ReduceSumOp>(x, axes, keep));
  } else if (op == "ReduceLogSumExp") {
    // Stable: m + log(sum(exp(x - m))) with m = max(x) over the axes.
    Value m = reduceOver<gr::ReduceMaxOp>(x, axes, /*keepdims=*/true);
    Value d = gr::SubOp::create(builder, nodeLoc, x, m);
    Value s = reduceOver<gr::ReduceSumOp>(elementwise(gr::ExpOp(), d), axes,
                                          /*keepdims=*/true);
    y = gr::AddOp::create(builder, nodeLoc, elementwise(gr::LogOp(), s), m);
    if (!keep) {
      SmallVector<int64_t> shape;
      for (int64_t i = 0; i < rank; ++i)
        if (!seen[i])
          shape.push_back(t.getDimSize(i));
      y = gr::ReshapeOp::create(
          builder, nodeLoc, RankedTensorType::get(shape, t.getElementType()),
          y);
    }
  } else {
    return nodeError() << "internal error: no decomposition";
  }
  if (!boolOp.empty())
    y = gr::CompareOp::create(builder, nodeLoc,
                              boolOp == "ReduceMax" ? "gt" : "eq", y,
                              splatOf(RankedTensorType::get(
                                          {}, builder.getI32Type()),
                                      0));
  return define(0, y);
}

LogicalResult Importer::argReduce() {
  int64_t axis = attrInt("axis", 0);
  int64_t keepdims = attrInt("keepdims", 1);
  int64_t last = attrInt("select_last_index", 0);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (axis < -rank || axis >= rank || rank == 0)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  if ((keepdims != 0 && keepdims != 1) || (last != 0 && last != 1))
    return nodeError() << "keepdims and select_last_index must be 0 or 1";
  UnitAttr keep = keepdims ? builder.getUnitAttr() : UnitAttr();
  UnitAttr sel = last ? builder.getUnitAttr() : UnitAttr();
  Value y;
  if (node->op_type() == "ArgMax")
    y = gr::ArgMaxOp::create(builder, nodeLoc, x,
                             builder.getI64IntegerAttr(axis), keep, sel);
  else
    y = gr::ArgMinOp::create(builder, nodeLoc, x,
                             builder.getI64IntegerAttr(axis), keep, sel);
  return define(0, y);
}

template <typename OpTy> LogicalResult Importer::softmax() {
  bool coerce2D = opset < 13;
  int64_t axis = attrInt("axis", coerce2D ? 1 : -1);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  if (coerce2D && axis != rank - 1) {
    // Before opset 13 the input is coerced to 2-D [prod(dims[:axis]),
    // prod(dims[axis:])] and normalized over its second dim.
    ArrayRef<int64_t> shape = xt.getShape();
    auto flat = RankedTensorType::get(
        {product(shape.take_front(axis)), product(shape.drop_front(axis))},
        xt.getElementType());
    Value f = gr::ReshapeOp::create(builder, nodeLoc, flat, x);
    Value y = OpTy::create(builder, nodeLoc, f, builder.getI64IntegerAttr(1));
    return define(0, gr::ReshapeOp::create(builder, nodeLoc, xt, y));
  }
  return define(0,
                OpTy::create(builder, nodeLoc, x, builder.getI64IntegerAttr(axis)));
}

LogicalResult Importer::hardmax() {
  int64_t axis = attrInt("axis", -1);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (rank == 0 || axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> iotaShape(rank, 1);
  iotaShape[axis] = t.getDimSize(axis);
  auto i64 = builder.getI64Type();
  Value idx = gr::ArgMaxOp::create(builder, nodeLoc, x,
                                   builder.getI64IntegerAttr(axis),
                                   builder.getUnitAttr(), UnitAttr());
  if (t.getDimSize(axis) > kMaxFoldElements)
    return nodeError() << "axis " << axis << " of size " << t.getDimSize(axis)
                       << " is too large (at most 2^26)";
  SmallVector<APInt> iota;
  for (int64_t i = 0; i < t.getDimSize(axis); ++i)
    iota.push_back(APInt(64, i));
  auto iotaType = RankedTensorType::get(iotaShape, i64);
  Value positions = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(DenseElementsAttr::get(iotaType, iota)));
  Value hit = gr::CompareOp::create(builder, nodeLoc, "eq", idx, positions);
  return define(0, gr::CastOp::create(builder, nodeLoc, t, hit));
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

LogicalResult Importer::cumSum() {
  int64_t exclusive = attrInt("exclusive", 0);
  int64_t reverse = attrInt("reverse", 0);
  if (attrFailed)
    return failure();
  if ((exclusive != 0 && exclusive != 1) || (reverse != 0 && reverse != 1))
    return nodeError() << "exclusive = " << exclusive
                       << " and reverse = " << reverse
                       << " must each be 0 or 1";
  Slot *xs = input(0);
  if (!xs)
    return failure();
  RankedTensorType xt = xs->type();
  Type et = xt.getElementType();
  if (isLowPrecisionFloat(et))
    return unsupportedLowPrecision(0, "float (f32), double (f64), int32, "
                                      "int64");
  if (!et.isF32() && !et.isF64() && !et.isInteger(32) && !et.isInteger(64))
    return nodeError() << "input 0 ('" << node->input(0)
                       << "') has element type " << et
                       << ", which is not supported here; supported: float "
                          "(f32), double (f64), int32, int64";
  Slot *as = input(1);
  if (!as)
    return failure();
  RankedTensorType at = as->type();
  Type it = at.getElementType();
  if ((!it.isInteger(32) && !it.isInteger(64)) || at.getRank() > 1 ||
      at.getNumElements() != 1)
    return nodeError() << "axis (input '" << node->input(1)
                       << "') must be an int32 or int64 scalar; it has shape "
                       << shapeStr(at.getShape()) << " and element type " << it;
  int64_t rank = xt.getRank();
  if (rank == 0)
    return nodeError() << "input 0 ('" << node->input(0)
                       << "') is a scalar; " << node->op_type()
                       << " needs rank >= 1";
  UnitAttr excl = exclusive ? builder.getUnitAttr() : UnitAttr();
  UnitAttr rev = reverse ? builder.getUnitAttr() : UnitAttr();
  Value x = materialize(*xs);
  auto scan = [&](int64_t axis) -> Value {
    if (node->op_type() == "CumProd")
      return gr::CumProdOp::create(builder, nodeLoc, x,
                                   builder.getI64IntegerAttr(axis), excl, rev);
    return gr::CumSumOp::create(builder, nodeLoc, x,
                                builder.getI64IntegerAttr(axis), excl, rev);
  };
  if (as->isFoldable()) {
    int64_t axis = intValues(as->constant)[0];
    if (axis < -rank || axis >= rank)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    return define(0, scan(axis < 0 ? axis + rank : axis));
  }
  // An axis known only at run time (shapes stay static: the result has x's
  // shape whatever the axis): the scan along every axis, the one whose
  // index (or index - rank) equals the axis selected; an axis out of range
  // gives zeros. rank times the work of one scan.
  auto scalarType = RankedTensorType::get({}, it);
  Value axisValue = materialize(*as);
  if (at.getRank() == 1)
    axisValue = gr::ReshapeOp::create(builder, nodeLoc, scalarType, axisValue);
  Value y = splatOf(xt, 0.0);
  for (int64_t d = 0; d < rank; ++d) {
    Value s = scan(d);
    for (int64_t a : {d, d - rank}) {
      Value hit = gr::CompareOp::create(builder, nodeLoc, "eq", axisValue,
                                        splatOf(scalarType, a));
      y = gr::SelectOp::create(builder, nodeLoc, hit, s, y);
    }
  }
  return define(0, y);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::reductionOps() {
  static const OpMapping ops[] = {
      {"ArgMax", 11, &Importer::argReduce},
      {"ArgMin", 11, &Importer::argReduce},
      {"CumProd", 26, &Importer::cumSum},
      {"CumSum", 11, &Importer::cumSum},
      {"Hardmax", 13, &Importer::hardmax},
      {"LogSoftmax", 1, &Importer::softmax<gr::LogSoftmaxOp>},
      {"ReduceL1", 1, &Importer::reduce, 18},
      {"ReduceL2", 1, &Importer::reduce, 18},
      {"ReduceLogSum", 1, &Importer::reduce, 18},
      {"ReduceLogSumExp", 1, &Importer::reduce, 18},
      {"ReduceMax", 1, &Importer::reduce, 18},
      {"ReduceMean", 1, &Importer::reduce, 18},
      {"ReduceMin", 1, &Importer::reduce, 18},
      {"ReduceProd", 1, &Importer::reduce, 18},
      {"ReduceSum", 1, &Importer::reduce},
      {"ReduceSumSquare", 1, &Importer::reduce, 18},
      {"Softmax", 1, &Importer::softmax<gr::SoftmaxOp>},
  };
  return ops;
}
