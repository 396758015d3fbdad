//===- Elementwise.cpp - ONNX elementwise ops -> dlgraph ------------------===//
//
// Unary math, binary arithmetic (folded on int64 shape arithmetic; the
// legacy broadcast attribute before opset 7), Max/Min/Sum/Mean, comparisons,
// logical ops, Where, activations without a dlgraph op of their own
// (decomposed into elementwise ops), PRelu, Clip, IsNaN/IsInf, Mod, and
// Cast/CastLike.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>
#include "llvm/ADT/StringSwitch.h"

#include <cfloat>
#include <limits>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

template <typename OpTy> LogicalResult Importer::unary() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  return define(0, OpTy::create(builder, nodeLoc, x));
}

template <typename OpTy> LogicalResult Importer::numericUnary() {
  Value x = numericOperand(0);
  if (!x)
    return failure();
  return define(0, OpTy::create(builder, nodeLoc, x));
}

/// Folds Add/Sub/Mul/Div of two int64 constants (shape arithmetic); one side
/// may be a single element.
LogicalResult Importer::foldIntBinary(Slot &l, Slot &r) {
  auto lt = l.type(), rt = r.type();
  auto shape = semantics::broadcastShapes(lt.getShape(), rt.getShape());
  if (!shape || (lt.getNumElements() != 1 && rt.getNumElements() != 1 &&
                        lt.getShape() != rt.getShape()))
    return nodeError() << "cannot fold int64 operands of shapes "
                       << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape())
                       << "; equal shapes or a single-element operand are "
                          "supported";
  SmallVector<int64_t> a = intValues(l.constant);
  SmallVector<int64_t> b = intValues(r.constant);
  int64_t n = product(*shape);
  SmallVector<int64_t> out(n);
  StringRef op = node->op_type();
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
    // Two's complement wrap-around, as int64 arithmetic runs on every
    // target (and without undefined behavior here).
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    if (op == "Add")
      out[i] = static_cast<int64_t>(ux + uy);
    else if (op == "Sub")
      out[i] = static_cast<int64_t>(ux - uy);
    else if (op == "Mul")
      out[i] = static_cast<int64_t>(ux * uy);
    else
      // x / 0 == 0, as the kernels (and dlgraph.div's folder) define it.
      out[i] = y == 0 ? 0 : y == -1 ? static_cast<int64_t>(0 - ux) : x / y;
  }
  auto type = RankedTensorType::get(*shape, lt.getElementType());
  return defineConstant(0, intConstant(type, out));
}

template <typename OpTy> LogicalResult Importer::binary() {
  Slot *l = input(0), *r = l ? input(1) : nullptr;
  if (!l || !r)
    return failure();
  Slot legacyR;
  if (opset < 7) {
    // Before opset 7, B broadcasts only with broadcast=1, matching A's dims
    // from `axis` (default: A's trailing dims); B gets trailing 1s so that
    // NumPy broadcasting gives the same result.
    int64_t bcast = attrInt("broadcast", 0);
    const onnx::AttributeProto *axisAttr = findAttr("axis");
    int64_t axis = attrInt("axis", 0);
    if (attrFailed)
      return failure();
    ArrayRef<int64_t> ls = l->type().getShape(), rs = r->type().getShape();
    int64_t lr = ls.size(), rr = rs.size();
    if (!bcast && ls != rs)
      return nodeError() << "shapes " << shapeStr(ls) << " and "
                         << shapeStr(rs)
                         << " differ without broadcast=1 (opset " << opset
                         << ")";
    if (bcast && axisAttr) {
      if (axis < 0)
        axis += lr;
      if (axis < 0 || axis + rr > lr)
        return nodeError() << "axis " << attrInt("axis", 0)
                           << " does not place B of shape " << shapeStr(rs)
                           << " inside A of shape " << shapeStr(ls);
      if (axis + rr < lr) {
        SmallVector<int64_t> shape(rs);
        shape.append(lr - axis - rr, 1);
        auto type = RankedTensorType::get(shape, r->type().getElementType());
        legacyR.loc = nodeLoc;
        if (r->isFoldable())
          legacyR.constant = r->constant.reshape(type);
        else
          legacyR.value = gr::ReshapeOp::create(builder, nodeLoc, type,
                                                materialize(*r));
        r = &legacyR;
      }
    }
  }
  Type le = l->type().getElementType(), re = r->type().getElementType();
  bool isPow = std::is_same<OpTy, gr::PowOp>::value;
  StringRef opType = node->op_type();
  bool arith =
      opType == "Add" || opType == "Sub" || opType == "Mul" || opType == "Div";
  // Other broadcasts of constants fold through the op's folder (foldNode).
  bool foldShapes = l->type().getShape() == r->type().getShape() ||
                    l->type().getNumElements() == 1 ||
                    r->type().getNumElements() == 1;
  if (arith && le == re && le.isInteger() && !le.isInteger(1) &&
      l->isFoldable() && r->isFoldable() && foldShapes)
    return foldIntBinary(*l, *r);
  // Pow's exponent may have another numeric type (ONNX T1/T2); it is cast to
  // the base's type.
  if (!isNumeric(le) || !isNumeric(re) || (le != re && !isPow))
    return nodeError() << "operands have element types " << le << " and " << re
                       << "; supported: two operands of one type among "
                          "float (f32), double (f64), float16, bfloat16, "
                          "int32, int64";
  // Reported at the node; the op infers the broadcast shape itself.
  if (!semantics::broadcastShapes(l->type().getShape(), r->type().getShape()))
    return nodeError() << "shapes " << shapeStr(l->type().getShape()) << " and "
                       << shapeStr(r->type().getShape()) << " do not broadcast";
  Value lv = materialize(*l), rv = materialize(*r);
  if (le != re)
    rv = gr::CastOp::create(builder, nodeLoc,
                            cast<RankedTensorType>(rv.getType()).clone(le), rv);
  return define(0, OpTy::create(builder, nodeLoc, lv, rv));
}

template <typename OpTy> LogicalResult Importer::variadic() {
  if (node->input_size() < 1)
    return nodeError() << "needs at least one input";
  SmallVector<Value> vals;
  Type et;
  for (int i = 0; i < node->input_size(); ++i) {
    Value v = operand(i, /*requireF32=*/false);
    if (!v)
      return failure();
    Type t = cast<RankedTensorType>(v.getType()).getElementType();
    if (!isNumeric(t) || (et && t != et))
      return nodeError() << "input " << i << " has element type " << t
                         << "; supported: inputs of one type among float "
                            "(f32), double (f64), float16, bfloat16, int32, "
                            "int64";
    et = t;
    vals.push_back(v);
  }
  Value acc = vals[0];
  if (vals.size() == 1)
    return define(0, gr::IdentityOp::create(builder, nodeLoc, acc));
  bool isMean = node->op_type() == "Mean";
  if (isMean && !isa<FloatType>(et))
    return nodeError() << "inputs have element type " << et
                       << "; supported: float (f32), double (f64), float16, "
                          "bfloat16";
  for (size_t i = 1; i < vals.size(); ++i) {
    auto at = cast<RankedTensorType>(acc.getType()),
         vt = cast<RankedTensorType>(vals[i].getType());
    if (!semantics::broadcastShapes(at.getShape(), vt.getShape()))
      return nodeError() << "shapes " << shapeStr(at.getShape()) << " and "
                         << shapeStr(vt.getShape()) << " do not broadcast";
    acc = OpTy::create(builder, nodeLoc, acc, vals[i]);
  }
  if (isMean)
    acc = gr::DivOp::create(builder, nodeLoc, acc,
                            splatLike(acc, (double)vals.size()));
  return define(0, acc);
}

/// Folds an elementwise op over integer/bool constants (shape computations
/// such as the Equal/Where pairs PyTorch emits for expand): |fn| maps the
/// inputs' int64 values at one output position to the result. Returns a null
/// attribute when some input is not a foldable integer constant.
static DenseElementsAttr
foldIntElementwise(ArrayRef<Slot *> in, Type resultElem,
                   function_ref<int64_t(ArrayRef<int64_t>)> fn) {
  SmallVector<int64_t> shape;
  for (Slot *s : in) {
    if (!s || !s->isFoldable() || !s->type().getElementType().isInteger())
      return {};
    auto b = semantics::broadcastShapes(shape, s->type().getShape());
    if (!b)
      return {};
    shape.assign(b->begin(), b->end());
  }
  int64_t n = product(shape), rank = shape.size();
  if (n > 4096)
    return {};
  SmallVector<SmallVector<int64_t>> vals;
  for (Slot *s : in)
    vals.push_back(intValues(s->constant));
  SmallVector<int64_t> out(n), idx(rank), args(in.size());
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = vals[k][semantics::broadcastSourceOffset(
          idx, in[k]->type().getShape())];
    out[f] = fn(args);
  }
  return intConstant(RankedTensorType::get(shape, resultElem), out);
}

LogicalResult Importer::compare() {
  StringRef opType = node->op_type();
  StringRef pred = llvm::StringSwitch<StringRef>(opType)
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("LessOrEqual", "le")
                       .Case("Greater", "gt")
                       .Default("ge");
  if (hasInput(0) && hasInput(1)) {
    SmallVector<Slot *> in = {input(0), input(1)};
    if (in[0] && in[1] &&
        in[0]->type().getElementType() == in[1]->type().getElementType() &&
        (pred == "eq" || !in[0]->type().getElementType().isInteger(1))) {
      DenseElementsAttr c = foldIntElementwise(
          in, builder.getI1Type(), [&](ArrayRef<int64_t> a) -> int64_t {
            if (pred == "eq")
              return a[0] == a[1];
            if (pred == "lt")
              return a[0] < a[1];
            if (pred == "le")
              return a[0] <= a[1];
            if (pred == "gt")
              return a[0] > a[1];
            return a[0] >= a[1];
          });
      if (c)
        return defineConstant(0, c);
    }
  }
  Value l = operand(0, false), r = l ? operand(1, false) : Value();
  if (!r)
    return failure();
  auto lt = cast<RankedTensorType>(l.getType()),
       rt = cast<RankedTensorType>(r.getType());
  Type et = lt.getElementType();
  bool ok = et == rt.getElementType() &&
            (isNumeric(et) || (et.isInteger(1) && pred == "eq"));
  if (!ok)
    return nodeError() << "operands have element types " << et << " and "
                       << rt.getElementType()
                       << "; supported: two operands of one type among float "
                          "(f32), double (f64), float16, bfloat16, int32, "
                          "int64 (and bool for Equal)";
  if (!semantics::broadcastShapes(lt.getShape(), rt.getShape()))
    return nodeError() << "shapes " << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape()) << " do not broadcast";
  return define(0, gr::CompareOp::create(builder, nodeLoc, pred, l, r));
}

LogicalResult Importer::logical() {
  StringRef opType = node->op_type();
  int n = opType == "Not" ? 1 : 2;
  SmallVector<Value> v;
  for (int i = 0; i < n; ++i) {
    Value x = operand(i, false);
    if (!x)
      return failure();
    if (!cast<RankedTensorType>(x.getType()).getElementType().isInteger(1))
      return nodeError() << "input " << i << " has element type "
                         << cast<RankedTensorType>(x.getType()).getElementType()
                         << "; supported: bool";
    v.push_back(x);
  }
  if (n == 1) {
    // not x == (x == false)
    Value f = splatLike(v[0], 0);
    return define(0, gr::CompareOp::create(builder, nodeLoc, "eq", v[0], f));
  }
  auto lt = cast<RankedTensorType>(v[0].getType()),
       rt = cast<RankedTensorType>(v[1].getType());
  auto shape = semantics::broadcastShapes(lt.getShape(), rt.getShape());
  if (!shape)
    return nodeError() << "shapes " << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape()) << " do not broadcast";
  if (opType == "Xor")
    return define(0, gr::CompareOp::create(builder, nodeLoc, "ne", v[0], v[1]));
  // and: a ? b : false; or: a ? true : b (select broadcasts its operands).
  // The constant has the broadcast shape.
  Value c = splatOf(RankedTensorType::get(*shape, builder.getI1Type()),
                    opType == "Or" ? 1 : 0);
  if (opType == "And")
    return define(0, gr::SelectOp::create(builder, nodeLoc, v[0], v[1], c));
  return define(0, gr::SelectOp::create(builder, nodeLoc, v[0], c, v[1]));
}

LogicalResult Importer::where() {
  if (hasInput(0) && hasInput(1) && hasInput(2)) {
    SmallVector<Slot *> in = {input(0), input(1), input(2)};
    if (in[0] && in[1] && in[2] &&
        in[0]->type().getElementType().isInteger(1) &&
        in[1]->type().getElementType() == in[2]->type().getElementType()) {
      DenseElementsAttr c = foldIntElementwise(
          in, in[1]->type().getElementType(),
          [](ArrayRef<int64_t> a) { return a[0] ? a[1] : a[2]; });
      if (c)
        return defineConstant(0, c);
    }
  }
  Value c = operand(0, false), a = c ? operand(1, false) : Value(),
        bv = a ? operand(2, false) : Value();
  if (!bv)
    return failure();
  auto ct = cast<RankedTensorType>(c.getType()),
       at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(bv.getType());
  if (!ct.getElementType().isInteger(1))
    return nodeError() << "condition has element type " << ct.getElementType()
                       << "; supported: bool";
  if (at.getElementType() != bt.getElementType())
    return nodeError() << "X and Y have element types " << at.getElementType()
                       << " and " << bt.getElementType()
                       << "; they must be equal";
  auto s1 = semantics::broadcastShapes(ct.getShape(), at.getShape());
  if (!s1 || !semantics::broadcastShapes(*s1, bt.getShape()))
    return nodeError() << "shapes " << shapeStr(ct.getShape()) << ", "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape()) << " do not broadcast";
  return define(0, gr::SelectOp::create(builder, nodeLoc, c, a, bv));
}

LogicalResult Importer::reciprocal() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  return define(0, gr::DivOp::create(builder, nodeLoc, splatLike(x, 1.0), x));
}

LogicalResult Importer::activation() {
  StringRef opType = node->op_type();
  float alpha = 0, beta = 0, gamma = 0;
  if (opType == "Elu") {
    alpha = attrFloat("alpha", 1.0f);
  } else if (opType == "LeakyRelu") {
    alpha = attrFloat("alpha", 0.01f);
  } else if (opType == "HardSigmoid") {
    alpha = attrFloat("alpha", 0.2f);
    beta = attrFloat("beta", 0.5f);
  } else if (opType == "ThresholdedRelu") {
    alpha = attrFloat("alpha", 1.0f);
  } else if (opType == "Shrink") {
    alpha = attrFloat("lambd", 0.5f);
    beta = attrFloat("bias", 0.0f);
  } else if (opType == "Selu") {
    alpha = attrFloat("alpha", 1.67326319217681884765625f);
    gamma = attrFloat("gamma", 1.05070102214813232421875f);
  } else if (opType == "Celu" || opType == "Swish") {
    alpha = attrFloat("alpha", 1.0f);
  }
  std::string approximate =
      opType == "Gelu" ? attrString("approximate", "none") : "";
  if (attrFailed)
    return failure();
  if (opType == "Gelu" && approximate != "none" && approximate != "tanh")
    return nodeError() << "approximate = '" << approximate
                       << "' is not supported; supported: none, tanh";
  if (opType == "Celu" && alpha == 0.0f)
    return nodeError() << "alpha = 0 is not supported (Celu divides by it)";
  // Sign also takes int32/int64 (its decomposition is exact on integers).
  Value x = opType == "Sign" ? numericOperand(0) : floatOperand(0);
  if (!x)
    return failure();
  // On f16/bf16 the decomposition runs in f32 and the result is rounded
  // once: the ONNX op is one op, as the f32 op on its widened input
  // (docs/dlexec.md), not a chain of rounded steps. Fusion puts the casts
  // into the same kernel.
  auto xt = cast<RankedTensorType>(x.getType());
  Type narrow = xt.getElementType().getIntOrFloatBitWidth() == 16
                    ? xt.getElementType()
                    : Type();
  if (narrow)
    x = gr::CastOp::create(builder, nodeLoc, xt.clone(builder.getF32Type()), x);
  auto c = [&](double v) { return splatLike(x, v); };
  auto mul = [&](Value a, Value b) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, b);
  };
  auto add = [&](Value a, Value b) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, b);
  };
  auto sub = [&](Value a, Value b) -> Value {
    return gr::SubOp::create(builder, nodeLoc, a, b);
  };
  auto cmp = [&](StringRef p, Value a, Value b) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, p, a, b);
  };
  auto sel = [&](Value m, Value a, Value b) -> Value {
    return gr::SelectOp::create(builder, nodeLoc, m, a, b);
  };
  // alpha * (exp(min(x, 0)) - 1): the min keeps exp finite (and its
  // gradient zero) where the other branch is taken.
  auto expm1Neg = [&](double a) {
    Value m = gr::MinOp::create(builder, nodeLoc, x, c(0.0));
    Value e = gr::ExpOp::create(builder, nodeLoc, m);
    return mul(sub(e, c(1.0)), c(a));
  };
  auto hardSigmoid = [&](double a, double b) -> Value {
    Value lin = add(mul(x, c(a)), c(b));
    return gr::ClipOp::create(builder, nodeLoc, lin,
                              builder.getF32FloatAttr(0.0f),
                              builder.getF32FloatAttr(1.0f));
  };
  Value y;
  if (opType == "Elu") {
    // x > 0 ? x : alpha * (exp(x) - 1)   (torch.nn.functional.elu)
    y = sel(cmp("gt", x, c(0.0)), x, expm1Neg(alpha));
  } else if (opType == "Selu") {
    y = mul(sel(cmp("gt", x, c(0.0)), x, expm1Neg(alpha)), c(gamma));
  } else if (opType == "LeakyRelu") {
    y = sel(cmp("gt", x, c(0.0)), x, mul(x, c(alpha)));
  } else if (opType == "Softplus") {
    // log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), with both pieces
    // written as selects so that the gradient at 0 is the exact 1/2.
    Value pos = cmp("gt", x, c(0.0));
    Value negAbs = sel(pos, gr::NegOp::create(builder, nodeLoc, x), x);
    Value e = gr::ExpOp::create(builder, nodeLoc, negAbs);
    Value l = gr::LogOp::create(builder, nodeLoc, add(e, c(1.0)));
    y = add(sel(pos, x, c(0.0)), l);
  } else if (opType == "Mish") {
    // x * tanh(softplus(x)), with the stable softplus above.
    Value pos = cmp("gt", x, c(0.0));
    Value negAbs = sel(pos, gr::NegOp::create(builder, nodeLoc, x), x);
    Value e = gr::ExpOp::create(builder, nodeLoc, negAbs);
    Value l = gr::LogOp::create(builder, nodeLoc, add(e, c(1.0)));
    Value sp = add(sel(pos, x, c(0.0)), l);
    y = mul(x, gr::TanhOp::create(builder, nodeLoc, sp));
  } else if (opType == "Celu") {
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    Value m = gr::MinOp::create(builder, nodeLoc, mul(x, c(1.0 / alpha)),
                                c(0.0));
    Value e = mul(sub(gr::ExpOp::create(builder, nodeLoc, m), c(1.0)),
                  c(alpha));
    y = sel(cmp("gt", x, c(0.0)), x, e);
  } else if (opType == "Swish") {
    // x * sigmoid(alpha * x)
    y = mul(x, gr::SigmoidOp::create(builder, nodeLoc, mul(x, c(alpha))));
  } else if (opType == "Gelu" && approximate == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    Value inner = mul(add(x, mul(mul(mul(x, x), x), c(0.044715))),
                      c(std::sqrt(2.0 / M_PI)));
    y = mul(mul(x, c(0.5)),
            add(gr::TanhOp::create(builder, nodeLoc, inner), c(1.0)));
  } else if (opType == "Gelu") {
    // 0.5 x (1 + erf(x / sqrt(2)))
    Value e = gr::ErfOp::create(builder, nodeLoc, mul(x, c(M_SQRT1_2)));
    y = mul(mul(x, c(0.5)), add(e, c(1.0)));
  } else if (opType == "Softsign") {
    // x / (1 + |x|)
    Value a = gr::AbsOp::create(builder, nodeLoc, x);
    y = gr::DivOp::create(builder, nodeLoc, x, add(a, c(1.0)));
  } else if (opType == "ThresholdedRelu") {
    y = sel(cmp("gt", x, c(alpha)), x, c(0.0));
  } else if (opType == "Sign") {
    y = sel(cmp("gt", x, c(0.0)), c(1.0),
            sel(cmp("lt", x, c(0.0)), c(-1.0), c(0.0)));
  } else if (opType == "HardSigmoid") {
    y = hardSigmoid(alpha, beta);
  } else if (opType == "HardSwish") {
    y = mul(x, hardSigmoid(1.0 / 6.0, 0.5));
  } else if (opType == "Shrink") {
    // x < -lambd ? x + bias : x > lambd ? x - bias : 0
    y = sel(cmp("lt", x, c(-alpha)), add(x, c(beta)),
            sel(cmp("gt", x, c(alpha)), sub(x, c(beta)), c(0.0)));
  } else {
    return nodeError() << "internal error: no decomposition";
  }
  if (narrow)
    y = gr::CastOp::create(
        builder, nodeLoc,
        cast<RankedTensorType>(y.getType()).clone(narrow), y);
  return define(0, y);
}

LogicalResult Importer::prelu() {
  Value x = floatOperand(0), slope = x ? floatOperand(1) : Value();
  if (!slope)
    return failure();
  auto t = cast<RankedTensorType>(x.getType()),
       st = cast<RankedTensorType>(slope.getType());
  if (opset < 7 && st.getRank() == 1 && t.getRank() >= 2 &&
      st.getDimSize(0) == t.getDimSize(1) && st.getDimSize(0) != 1) {
    // PRelu-6: a [C] slope is per channel (axis 1).
    SmallVector<int64_t> shape(t.getRank() - 1, 1);
    shape[0] = st.getDimSize(0);
    st = RankedTensorType::get(shape, st.getElementType());
    slope = gr::ReshapeOp::create(builder, nodeLoc, st, slope);
  }
  if (st.getElementType() != t.getElementType() ||
      !semantics::broadcastsTo(st.getShape(), t.getShape()))
    return nodeError() << "slope of type " << st
                       << " does not broadcast to X of type " << t;
  // x > 0 ? x : slope * x   (torch.nn.functional.prelu)
  Value zero = splatLike(x, 0.0);
  Value m = gr::CompareOp::create(builder, nodeLoc, "gt", x, zero);
  Value sx = gr::MulOp::create(builder, nodeLoc, x, slope);
  return define(0, gr::SelectOp::create(builder, nodeLoc, m, x, sx));
}

LogicalResult Importer::clip() {
  Slot *xs = input(0);
  if (!xs)
    return failure();
  if (opset < 11) {
    // Clip-6: the bounds are float attributes.
    float lo = attrFloat("min", -FLT_MAX), hi = attrFloat("max", FLT_MAX);
    if (attrFailed)
      return failure();
    if (lo > hi)
      return nodeError() << "min " << lo << " is greater than max " << hi;
    Value x = floatOperand(0);
    if (!x)
      return failure();
    if (cast<RankedTensorType>(x.getType()).getElementType().isF32())
      return define(0, gr::ClipOp::create(builder, nodeLoc, x,
                                          builder.getF32FloatAttr(lo),
                                          builder.getF32FloatAttr(hi)));
    Value y = x;
    if (findAttr("min"))
      y = gr::MaxOp::create(builder, nodeLoc, y,
                            splatOf(RankedTensorType::get(
                                        {}, cast<RankedTensorType>(x.getType())
                                                .getElementType()),
                                    lo));
    if (findAttr("max"))
      y = gr::MinOp::create(builder, nodeLoc, y,
                            splatOf(RankedTensorType::get(
                                        {}, cast<RankedTensorType>(x.getType())
                                                .getElementType()),
                                    hi));
    return define(0, y);
  }
  Type et = xs->type().getElementType();
  bool constBounds = et.isF32();
  for (int i = 1; i <= 2; ++i) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    constBounds = constBounds && s->constant &&
                  s->type().getNumElements() == 1 &&
                  s->type().getElementType().isF32();
  }
  if (!constBounds) {
    // Bounds computed at run time (or another element type):
    // min(max(x, lo), hi), as torch.clamp.
    if (!isNumeric(et))
      return nodeError() << "input has element type " << et
                         << "; supported: float (f32), double (f64), "
                            "float16, bfloat16, int32, int64";
    Value y = materialize(*xs);
    for (int i = 1; i <= 2; ++i) {
      if (!hasInput(i))
        continue;
      Slot *s = input(i);
      if (s->type().getNumElements() != 1 || s->type().getElementType() != et)
        return nodeError() << (i == 1 ? "min" : "max") << " (input '"
                           << node->input(i) << "') must be a scalar of the "
                           << "input's element type " << et;
      Value bound = materialize(*s);
      if (s->type().getRank() != 0)
        bound = gr::ReshapeOp::create(builder, nodeLoc,
                                      RankedTensorType::get({}, et), bound);
      if (i == 1)
        y = gr::MaxOp::create(builder, nodeLoc, y, bound);
      else
        y = gr::MinOp::create(builder, nodeLoc, y, bound);
    }
    return define(0, y);
  }
  Value x = operand(0);
  if (!x)
    return failure();
  float bounds[2] = {-FLT_MAX, FLT_MAX};
  for (int i = 1; i <= 2; ++i) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    // f32 initializers are variables, but a Clip bound is read once here.
    if (!s->constant || s->type().getNumElements() != 1 ||
        !s->type().getElementType().isF32())
      return nodeError() << (i == 1 ? "min" : "max") << " (input '"
                         << node->input(i)
                         << "') must be a constant f32 scalar"
                         << constantInputHint(i);
    bounds[i - 1] = *s->constant.getValues<float>().begin();
  }
  if (bounds[0] > bounds[1])
    return nodeError() << "min " << bounds[0] << " is greater than max "
                       << bounds[1];
  return define(0, gr::ClipOp::create(builder, nodeLoc, x,
                                      builder.getF32FloatAttr(bounds[0]),
                                      builder.getF32FloatAttr(bounds[1])));
}

LogicalResult Importer::isNanOrInf() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto cmp = [&](StringRef pred, Value l, Value r) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, pred, l, r);
  };
  if (node->op_type() == "IsNaN")
    return define(0, cmp("ne", x, x)); // unordered: true only for NaN
  int64_t pos = attrInt("detect_positive", 1);
  int64_t neg = attrInt("detect_negative", 1);
  double inf = std::numeric_limits<double>::infinity();
  Value isPos = cmp("eq", x, splatLike(x, inf));
  Value isNeg = cmp("eq", x, splatLike(x, -inf));
  if (pos && neg)
    return define(0,
                  gr::SelectOp::create(builder, nodeLoc, isPos, isPos, isNeg));
  if (pos)
    return define(0, isPos);
  if (neg)
    return define(0, isNeg);
  // Neither sign detected: isPos && isNeg, false everywhere.
  return define(0,
                gr::SelectOp::create(builder, nodeLoc, isPos, isNeg, isPos));
}

LogicalResult Importer::modOp() {
  int64_t fmod = attrInt("fmod", 0);
  Slot *l = input(0);
  if (attrFailed || !l)
    return failure();
  if (fmod != 0 && fmod != 1)
    return nodeError() << "attribute fmod = " << fmod << "; supported: 0, 1";
  return fmod ? binary<gr::FmodOp>() : binary<gr::ModOp>();
}

LogicalResult Importer::bitwise() {
  StringRef opType = node->op_type();
  bool isShift = opType == "BitShift";
  std::string direction = isShift ? attrString("direction", "") : "";
  if (attrFailed)
    return failure();
  if (isShift && direction != "LEFT" && direction != "RIGHT")
    return nodeError() << "attribute direction = '" << direction
                       << "'; supported: LEFT, RIGHT";
  int arity = opType == "BitwiseNot" ? 1 : 2;
  SmallVector<Slot *, 2> in;
  for (int i = 0; i < arity; ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    Type t = s->type().getElementType();
    if (!t.isInteger(32) && !t.isInteger(64))
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type " << elementTypeName(t)
                         << ", which is not supported by " << opType
                         << "; supported: int32, int64";
    in.push_back(s);
  }
  if (arity == 1)
    return define(0, gr::BitwiseNotOp::create(builder, nodeLoc,
                                              materialize(*in[0])));
  if (in[0]->type().getElementType() != in[1]->type().getElementType())
    return nodeError() << "operands have element types "
                       << elementTypeName(in[0]->type().getElementType())
                       << " and "
                       << elementTypeName(in[1]->type().getElementType())
                       << "; supported: two operands of one type";
  if (!semantics::broadcastShapes(in[0]->type().getShape(),
                                  in[1]->type().getShape()))
    return nodeError() << "shapes " << shapeStr(in[0]->type().getShape())
                       << " and " << shapeStr(in[1]->type().getShape())
                       << " do not broadcast";
  Value l = materialize(*in[0]), r = materialize(*in[1]);
  if (isShift && direction == "LEFT")
    return define(0, gr::ShiftLeftOp::create(builder, nodeLoc, l, r));
  if (isShift)
    return define(0, gr::ShiftRightOp::create(builder, nodeLoc, l, r));
  if (opType == "BitwiseAnd")
    return define(0, gr::BitwiseAndOp::create(builder, nodeLoc, l, r));
  if (opType == "BitwiseOr")
    return define(0, gr::BitwiseOrOp::create(builder, nodeLoc, l, r));
  return define(0, gr::BitwiseXorOp::create(builder, nodeLoc, l, r));
}

LogicalResult Importer::bitcastOp() {
  int64_t to = attrInt("to", 0);
  Slot *s = attrFailed ? nullptr : input(0);
  if (!s)
    return failure();
  Type from = s->type().getElementType();
  Type toType = elementTypeFor(builder, to);
  // 16-bit floats are computed in f32 inside kernels, so their bits are not
  // at hand; bool has no integer of its width among the supported types.
  auto bitcastable = [](Type t) {
    return t.isF32() || t.isF64() || t.isInteger(32) || t.isInteger(64);
  };
  if (!toType || !bitcastable(from) || !bitcastable(toType) ||
      from.getIntOrFloatBitWidth() != toType.getIntOrFloatBitWidth())
    return nodeError() << "BitCast from " << elementTypeName(from) << " to "
                       << (toType ? elementTypeName(toType)
                                  : std::string(onnxTypeName(to)))
                       << " is not supported; supported: float (f32) <-> "
                          "int32, double (f64) <-> int64 (or to the same "
                          "type)";
  if (from == toType)
    return identity();
  return define(0, gr::BitcastOp::create(builder, nodeLoc,
                                         s->type().clone(toType),
                                         materialize(*s)));
}

LogicalResult Importer::castOp() {
  int64_t to = attrInt("to", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  Type toType;
  if (node->op_type() == "CastLike") {
    Slot *like = input(1);
    if (!like)
      return failure();
    toType = like->type().getElementType();
  } else {
    toType = elementTypeFor(builder, to);
    if (!toType)
      return nodeError() << "cast to " << onnxTypeName(to)
                         << " is not supported; supported: " << kSupportedTypes;
  }
  Type from = s->type().getElementType();
  if (from == toType)
    return identity();
  auto type = s->type().clone(toType);
  // Casts from or to f16/bf16 fold, on constants, through dlgraph.cast's
  // folder (foldNode): it rounds once, to nearest even, in the target type.
  if (!s->isFoldable() || isLowPrecisionFloat(from) ||
      isLowPrecisionFloat(toType)) {
    Value x = materialize(*s);
    return define(0, gr::CastOp::create(builder, nodeLoc, type, x));
  }
  // Fold constant casts (shape computations) with ONNX Cast semantics:
  // float -> int truncates toward zero, anything -> bool is "!= 0".
  DenseElementsAttr c = s->constant;
  bool fromFloat = isa<FloatType>(from);
  SmallVector<double> fv;
  SmallVector<int64_t> iv;
  if (fromFloat) {
    for (APFloat v : c.getValues<APFloat>())
      fv.push_back(v.convertToDouble());
  } else if (from.isInteger(1)) {
    for (const APInt &v : c.getValues<APInt>())
      iv.push_back(v.isZero() ? 0 : 1);
  } else {
    iv = intValues(c);
  }
  if (isa<FloatType>(toType)) {
    SmallVector<APFloat> out;
    for (size_t i = 0; i < std::max(fv.size(), iv.size()); ++i) {
      double d = fromFloat ? fv[i] : (double)iv[i];
      out.push_back(toType.isF32() ? APFloat((float)d) : APFloat(d));
    }
    return defineConstant(0, DenseElementsAttr::get(type, out));
  }
  SmallVector<int64_t> out;
  for (size_t i = 0; i < std::max(fv.size(), iv.size()); ++i) {
    if (toType.isInteger(1))
      out.push_back(fromFloat ? fv[i] != 0 : iv[i] != 0);
    else
      out.push_back(fromFloat ? (int64_t)std::trunc(fv[i]) : iv[i]);
  }
  if (toType.isInteger(1)) {
    SmallVector<bool> bv(out.begin(), out.end());
    return defineConstant(0, DenseElementsAttr::get(type, ArrayRef<bool>(bv)));
  }
  return defineConstant(0, intConstant(type, out));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::elementwiseOps() {
  static const OpMapping ops[] = {
      {"Abs", 6, &Importer::numericUnary<gr::AbsOp>},
      {"Acos", 7, &Importer::unary<gr::AcosOp>},
      {"Acosh", 9, &Importer::unary<gr::AcoshOp>},
      {"Add", 6, &Importer::binary<gr::AddOp>},
      {"And", 7, &Importer::logical},
      {"Asin", 7, &Importer::unary<gr::AsinOp>},
      {"Asinh", 9, &Importer::unary<gr::AsinhOp>},
      {"Atan", 7, &Importer::unary<gr::AtanOp>},
      {"Atanh", 9, &Importer::unary<gr::AtanhOp>},
      {"BitCast", 26, &Importer::bitcastOp},
      {"BitShift", 11, &Importer::bitwise, 28},
      {"BitwiseAnd", 18, &Importer::bitwise},
      {"BitwiseNot", 18, &Importer::bitwise},
      {"BitwiseOr", 18, &Importer::bitwise},
      {"BitwiseXor", 18, &Importer::bitwise},
      {"Cast", 6, &Importer::castOp, 24},
      {"CastLike", 15, &Importer::castOp, 24},
      {"Ceil", 6, &Importer::unary<gr::CeilOp>},
      {"Clip", 6, &Importer::clip},
      {"Cos", 7, &Importer::unary<gr::CosOp>},
      {"Cosh", 9, &Importer::unary<gr::CoshOp>},
      {"Div", 6, &Importer::binary<gr::DivOp>},
      {"Elu", 6, &Importer::activation},
      {"Equal", 7, &Importer::compare},
      {"Erf", 9, &Importer::unary<gr::ErfOp>},
      {"Exp", 6, &Importer::unary<gr::ExpOp>},
      {"Floor", 6, &Importer::unary<gr::FloorOp>},
      {"Gelu", 20, &Importer::activation},
      {"Greater", 7, &Importer::compare},
      {"GreaterOrEqual", 12, &Importer::compare},
      {"HardSigmoid", 6, &Importer::activation},
      {"HardSwish", 14, &Importer::activation},
      {"IsInf", 10, &Importer::isNanOrInf},
      {"IsNaN", 9, &Importer::isNanOrInf},
      {"LeakyRelu", 6, &Importer::activation},
      {"Less", 7, &Importer::compare},
      {"LessOrEqual", 12, &Importer::compare},
      {"Log", 6, &Importer::unary<gr::LogOp>},
      {"Max", 6, &Importer::variadic<gr::MaxOp>},
      {"Mean", 6, &Importer::variadic<gr::AddOp>},
      {"Min", 6, &Importer::variadic<gr::MinOp>},
      {"Mish", kMinOpset, &Importer::activation},
      {"Swish", 24, &Importer::activation},
      {"Celu", 12, &Importer::activation},
      {"Mod", 10, &Importer::modOp},
      {"Mul", 6, &Importer::binary<gr::MulOp>},
      {"Neg", 6, &Importer::numericUnary<gr::NegOp>},
      {"Not", 1, &Importer::logical},
      {"Or", 7, &Importer::logical},
      {"PRelu", 6, &Importer::prelu},
      {"Pow", 1, &Importer::binary<gr::PowOp>},
      {"Reciprocal", 6, &Importer::reciprocal},
      {"Relu", 6, &Importer::unary<gr::ReluOp>},
      {"Round", 11, &Importer::unary<gr::RoundOp>},
      {"Selu", 6, &Importer::activation},
      {"Shrink", 9, &Importer::activation},
      {"Sigmoid", 6, &Importer::unary<gr::SigmoidOp>},
      {"Sign", 9, &Importer::activation},
      {"Sin", 7, &Importer::unary<gr::SinOp>},
      {"Sinh", 9, &Importer::unary<gr::SinhOp>},
      {"Softplus", 1, &Importer::activation},
      {"Softsign", 1, &Importer::activation},
      {"Sqrt", 6, &Importer::unary<gr::SqrtOp>},
      {"Sub", 6, &Importer::binary<gr::SubOp>},
      {"Sum", 6, &Importer::variadic<gr::AddOp>},
      {"Tan", 7, &Importer::unary<gr::TanOp>},
      {"Tanh", 6, &Importer::unary<gr::TanhOp>},
      {"ThresholdedRelu", 10, &Importer::activation},
      {"Where", 9, &Importer::where},
      {"Xor", 7, &Importer::logical},
  };
  return ops;
}
