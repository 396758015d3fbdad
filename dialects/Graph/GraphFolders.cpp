//===- GraphFolders.cpp - dlgraph constant folders ------------------------===//
//
// Folders of the dlgraph ops that compute on, or move, constant tensors:
// integer/bool/float elementwise arithmetic, comparisons, select and cast,
// and the data movement ops (transpose, broadcast_to, slice, pad, concat,
// gather). The ONNX importer folds every node whose inputs are all
// compile-time constants through these folders, and canonicalization uses
// them on the graph.
//
// Numerics: a folded result equals what the run-time kernels compute, bit for
// bit. Integer arithmetic wraps (two's complement) as on every target;
// float add/sub/mul/div fold with one IEEE rounding to nearest even in the
// element type, which is what every kernel computes: the host kernels are
// compiled with -ffp-contract=off and the CUDA ones with --fmad=false and
// -ftz=false (no contraction, IEEE division), and f16/bf16 kernels compute
// in f32 and round once, which for a single add/sub/mul/div equals the
// direct rounding (f32 has more than 2p + 2 significand bits for p = 11
// and 8). Results that overflow, underflow to subnormals or zero, divide by
// zero or are invalid (NaN) are not folded; so -FLT_MAX + 1 (a constant
// attention mask) folds to -FLT_MAX, and 1 / 0 stays at run time.
// Transcendental functions are never folded.
// Integer division and remainder by zero give 0, as the kernels define them
// (codegen/KernelEmitter.cpp). Operations whose run-time result is undefined
// or target-specific (float -> int casts out of range or of NaN, min/max
// with a NaN operand) are not folded.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APSInt.h"

#include <optional>

using namespace mlir;
using namespace dlc::graph;

namespace {

/// Folders build constants element by element; larger results stay ops.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 22;

RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The dense contents of a folded operand, or null.
DenseElementsAttr dense(Attribute a) {
  return dyn_cast_or_null<DenseElementsAttr>(a);
}

bool foldable(RankedTensorType t) {
  return t.hasStaticShape() && t.getNumElements() <= kMaxFoldedElements;
}

/// Row-major strides of |shape|, in elements.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// Calls |fn|(flat index, multi-index) for every element of |shape| in
/// row-major order.
void forEachIndex(ArrayRef<int64_t> shape,
                  function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t f = 0; f < n; ++f) {
    fn(f, idx);
    for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

template <typename T>
DenseElementsAttr remapAs(DenseElementsAttr src, RankedTensorType type,
                          ArrayRef<int64_t> map, std::optional<T> fill) {
  SmallVector<T> in(src.getValues<T>());
  SmallVector<T> out;
  out.reserve(map.size());
  for (int64_t m : map)
    out.push_back(m < 0 ? *fill : in[m]);
  return DenseElementsAttr::get(type, out);
}

/// The constant of |type| whose element i is |src|'s element map[i] (flat
/// row-major indices); map[i] < 0 takes |fill| (which must then be given).
DenseElementsAttr remap(DenseElementsAttr src, RankedTensorType type,
                        ArrayRef<int64_t> map, Attribute fill = {}) {
  bool usesFill = llvm::any_of(map, [](int64_t m) { return m < 0; });
  if (usesFill && !fill)
    return {};
  if (src.isSplat() && (!usesFill || fill == src.getSplatValue<Attribute>()))
    return DenseElementsAttr::get(type, src.getSplatValue<Attribute>());
  if (isa<FloatType>(type.getElementType()))
    return remapAs<APFloat>(
        src, type, map,
        fill ? std::optional<APFloat>(cast<FloatAttr>(fill).getValue())
             : std::nullopt);
  return remapAs<APInt>(
      src, type, map,
      fill ? std::optional<APInt>(cast<IntegerAttr>(fill).getValue())
           : std::nullopt);
}

/// For each element of |out|, the flat index of the element of |in| that
/// NumPy broadcasting reads.
SmallVector<int64_t> broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<int64_t> inStrides = stridesOf(in), map;
  int64_t offset = out.size() - in.size();
  forEachIndex(out, [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < in.size(); ++d)
      flat += (in[d] == 1 ? 0 : idx[offset + d]) * inStrides[d];
    map.push_back(flat);
  });
  return map;
}

/// |a| broadcast to |shape| (keeping its element type), or null.
DenseElementsAttr broadcastTo(Attribute a, ArrayRef<int64_t> shape) {
  DenseElementsAttr d = dense(a);
  if (!d)
    return {};
  auto type = RankedTensorType::get(shape, d.getElementType());
  if (d.getType() == type)
    return d;
  if (d.isSplat())
    return DenseElementsAttr::get(type, d.getSplatValue<Attribute>());
  return remap(d, type, broadcastMap(d.getType().getShape(), shape));
}

/// Folds a broadcasting binary op: both operands broadcast to the result
/// shape, then |intFn| (integers, bool) or |floatFn| (floats) per element;
/// either returns nullopt to refuse the whole fold.
Attribute foldBinary(
    ArrayRef<Attribute> operands, Value result,
    function_ref<std::optional<APInt>(const APInt &, const APInt &)> intFn,
    function_ref<std::optional<APFloat>(const APFloat &, const APFloat &)>
        floatFn) {
  RankedTensorType type = rankedType(result);
  if (!foldable(type) || operands.size() != 2)
    return {};
  DenseElementsAttr l = broadcastTo(operands[0], type.getShape());
  DenseElementsAttr r = broadcastTo(operands[1], type.getShape());
  if (!l || !r || l.getType() != r.getType())
    return {};
  Attribute both[] = {l, r};
  Type et = l.getElementType();
  if (isa<FloatType>(et)) {
    if (!floatFn)
      return {};
    return constFoldBinaryOpConditional<FloatAttr, APFloat, void>(
        both, type,
        [&](const APFloat &a, const APFloat &b) { return floatFn(a, b); });
  }
  if (!et.isSignlessInteger() || !intFn)
    return {};
  return constFoldBinaryOpConditional<IntegerAttr, APInt, void>(
      both, type, [&](const APInt &a, const APInt &b) { return intFn(a, b); });
}

/// |fn|'s float result rounded once to nearest even, unless it overflows,
/// underflows, divides by zero or is invalid: then it equals the kernels'
/// evaluation (see the file comment).
std::optional<APFloat> roundedFloat(
    const APFloat &a, const APFloat &b,
    APFloat::opStatus (APFloat::*fn)(const APFloat &, APFloat::roundingMode)) {
  APFloat r = a;
  APFloat::opStatus status = (r.*fn)(b, APFloat::rmNearestTiesToEven);
  if ((status & ~APFloat::opInexact) != APFloat::opOK)
    return std::nullopt;
  return r;
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a + b;
      },
      [](const APFloat &a, const APFloat &b) {
        return roundedFloat(a, b, &APFloat::add);
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a - b;
      },
      [](const APFloat &a, const APFloat &b) {
        return roundedFloat(a, b, &APFloat::subtract);
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a * b;
      },
      [](const APFloat &a, const APFloat &b) {
        return roundedFloat(a, b, &APFloat::multiply);
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      // Truncating division; INT_MIN / -1 wraps; x / 0 == 0.
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return APInt::getZero(a.getBitWidth());
        return b.isAllOnes() ? -a : a.sdiv(b);
      },
      [](const APFloat &a, const APFloat &b) {
        return roundedFloat(a, b, &APFloat::divide);
      });
}

/// The remainder with the sign of the dividend (C fmod, ONNX Mod fmod = 1);
/// x % 0 == 0.
static std::optional<APInt> truncRem(const APInt &a, const APInt &b) {
  if (b.isZero() || b.isAllOnes())
    return APInt::getZero(a.getBitWidth());
  return a.srem(b);
}

OpFoldResult FmodOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(), truncRem,
      // IEEE fmod is exact.
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a;
        if (r.mod(b) != APFloat::opOK)
          return std::nullopt;
        return r;
      });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  // The remainder with the sign of the divisor (Python %, ONNX Mod fmod = 0),
  // on integers.
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        std::optional<APInt> r = truncRem(a, b);
        if (r && !r->isZero() && r->isNegative() != b.isNegative())
          *r += b;
        return r;
      },
      // On floats, NumPy's np.mod: fmod (exact), then the divisor added
      // (one rounding) where the signs differ; a zero takes b's sign.
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        APFloat r = a;
        if (r.mod(b) != APFloat::opOK)
          return std::nullopt;
        if (r.isZero())
          return APFloat::getZero(r.getSemantics(), b.isNegative());
        if (r.isNegative() == b.isNegative())
          return r;
        return roundedFloat(r, b, &APFloat::add);
      });
}

//===----------------------------------------------------------------------===//
// Bitwise operations on integers (two's complement)
//===----------------------------------------------------------------------===//

OpFoldResult BitwiseAndOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a & b;
      },
      nullptr);
}

OpFoldResult BitwiseOrOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a | b;
      },
      nullptr);
}

OpFoldResult BitwiseXorOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a ^ b;
      },
      nullptr);
}

/// Whether shift amount |b| is outside [0, bit width) (ONNX BitShift then
/// gives the sign fill alone).
static bool shiftOutOfRange(const APInt &b) {
  return b.isNegative() || b.uge(b.getBitWidth());
}

OpFoldResult ShiftLeftOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (shiftOutOfRange(b))
          return APInt::getZero(a.getBitWidth());
        return a.shl(b);
      },
      nullptr);
}

OpFoldResult ShiftRightOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (shiftOutOfRange(b))
          return a.isNegative() ? APInt::getAllOnes(a.getBitWidth())
                                : APInt::getZero(a.getBitWidth());
        return a.ashr(b);
      },
      nullptr);
}

OpFoldResult BitwiseNotOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  if (!x || !foldable(getType()))
    return {};
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      ArrayRef<Attribute>{x}, [](const APInt &a) { return ~a; });
}

OpFoldResult BitcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr x = dense(adaptor.getInput());
  if (!x || !foldable(getType()))
    return {};
  return x.bitcast(getType().getElementType());
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.sge(b) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        if (a.isNaN() || b.isNaN() || (a.isZero() && b.isZero()))
          return std::nullopt;
        return a.compare(b) == APFloat::cmpLessThan ? b : a;
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getResult(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a.sle(b) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        if (a.isNaN() || b.isNaN() || (a.isZero() && b.isZero()))
          return std::nullopt;
        return a.compare(b) == APFloat::cmpGreaterThan ? b : a;
      });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  if (!x || !foldable(getType()))
    return {};
  Type et = x.getElementType();
  if (isa<FloatType>(et))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        ArrayRef<Attribute>{x}, [](const APFloat &a) { return -a; });
  if (!et.isSignlessInteger() || et.isInteger(1))
    return {};
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      ArrayRef<Attribute>{x}, [](const APInt &a) { return -a; });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  if (!x || !foldable(getType()))
    return {};
  Type et = x.getElementType();
  if (isa<FloatType>(et))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        ArrayRef<Attribute>{x}, [](const APFloat &a) { return abs(a); });
  if (!et.isSignlessInteger() || et.isInteger(1))
    return {};
  // |INT_MIN| wraps to INT_MIN, as in the kernels.
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      ArrayRef<Attribute>{x}, [](const APInt &a) { return a.abs(); });
}

//===----------------------------------------------------------------------===//
// Compare, select, cast
//===----------------------------------------------------------------------===//

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (!foldable(type))
    return {};
  DenseElementsAttr l = broadcastTo(adaptor.getLhs(), type.getShape());
  DenseElementsAttr r = broadcastTo(adaptor.getRhs(), type.getShape());
  if (!l || !r || l.getType() != r.getType())
    return {};
  StringRef pred = getPredicate();
  auto holds = [&](bool lt, bool eq, bool gt) {
    if (pred == "eq")
      return eq;
    if (pred == "ne")
      return !eq;
    if (pred == "lt")
      return lt;
    if (pred == "le")
      return lt || eq;
    if (pred == "gt")
      return gt;
    return gt || eq;
  };
  Attribute both[] = {l, r};
  auto bit = [](bool b) { return APInt(1, b ? 1 : 0); };
  if (isa<FloatType>(l.getElementType()))
    // Unordered (NaN) operands: only `ne` holds, as in C.
    return constFoldBinaryOpConditional<FloatAttr, APFloat, void, IntegerAttr>(
        both, type,
        [&](const APFloat &a, const APFloat &b) -> std::optional<APInt> {
          APFloat::cmpResult c = a.compare(b);
          if (c == APFloat::cmpUnordered)
            return bit(pred == "ne");
          return bit(holds(c == APFloat::cmpLessThan, c == APFloat::cmpEqual,
                           c == APFloat::cmpGreaterThan));
        });
  if (!l.getElementType().isSignlessInteger())
    return {};
  return constFoldBinaryOpConditional<IntegerAttr, APInt, void, IntegerAttr>(
      both, type, [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        // Bools compare as 0/1; wider integers are signed.
        bool isBool = a.getBitWidth() == 1;
        bool lt = isBool ? a.ult(b) : a.slt(b), eq = a == b;
        return bit(holds(lt, eq, !lt && !eq));
      });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (!foldable(type))
    return {};
  ArrayRef<int64_t> shape = type.getShape();
  DenseElementsAttr c = broadcastTo(adaptor.getCondition(), shape);
  DenseElementsAttr t = broadcastTo(adaptor.getOnTrue(), shape);
  DenseElementsAttr f = broadcastTo(adaptor.getOnFalse(), shape);
  if (!c || !t || !f || !c.getElementType().isInteger(1) ||
      t.getType() != type || f.getType() != type)
    return {};
  if (c.isSplat())
    return c.getSplatValue<bool>() ? t : f;
  // Element i of the concatenation [t, f]: i for true, n + i for false.
  int64_t n = type.getNumElements();
  SmallVector<int64_t> map;
  map.reserve(n);
  int64_t i = 0;
  for (bool b : c.getValues<bool>()) {
    map.push_back(b ? i : n + i);
    ++i;
  }
  auto pairType = RankedTensorType::get({2 * n}, type.getElementType());
  SmallVector<Attribute> both;
  both.reserve(2 * n);
  llvm::append_range(both, t.getValues<Attribute>());
  llvm::append_range(both, f.getValues<Attribute>());
  return remap(DenseElementsAttr::get(pairType, both), type, map);
}

/// Whether every value of float type |narrow| is exact in |wide| (f16 and
/// bf16 in f32 or f64, f32 in f64), so that narrow -> wide -> narrow is the
/// identity.
static bool widensExactly(Type narrow, Type wide) {
  auto n = dyn_cast<FloatType>(narrow), w = dyn_cast<FloatType>(wide);
  if (!n || !w)
    return false;
  if (n.isF16() || n.isBF16())
    return w.isF32() || w.isF64();
  return n.isF32() && w.isF64();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInput().getType() == type)
    return getInput();
  // x -> wider -> x's type again is x (mixed precision leaves such pairs
  // where an f32 op's result is cast back for a low-precision consumer).
  if (auto inner = getInput().getDefiningOp<CastOp>())
    if (inner.getInput().getType() == type &&
        widensExactly(type.getElementType(),
                      inner.getType().getElementType()))
      return inner.getInput();
  DenseElementsAttr x = dense(adaptor.getInput());
  if (!x || !foldable(type))
    return {};
  Type from = x.getElementType(), to = type.getElementType();
  if (from == to)
    return x.reshape(type);
  // ONNX Cast: float -> int truncates toward zero, anything -> bool is
  // "!= 0", bool -> number is 0/1, int -> float rounds to nearest.
  auto fromBits = [&](const APInt &v) {
    return from.isInteger(1) ? v.zext(64) : v.sext(64);
  };
  if (isa<FloatType>(to)) {
    const llvm::fltSemantics &sem = cast<FloatType>(to).getFloatSemantics();
    SmallVector<APFloat> out;
    if (isa<FloatType>(from)) {
      for (APFloat v : x.getValues<APFloat>()) {
        bool lost;
        v.convert(sem, APFloat::rmNearestTiesToEven, &lost);
        out.push_back(v);
      }
    } else {
      for (const APInt &v : x.getValues<APInt>()) {
        APFloat f(sem);
        f.convertFromAPInt(fromBits(v), /*IsSigned=*/true,
                           APFloat::rmNearestTiesToEven);
        out.push_back(f);
      }
    }
    return DenseElementsAttr::get(type, out);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  if (isa<FloatType>(from)) {
    for (const APFloat &v : x.getValues<APFloat>()) {
      if (to.isInteger(1)) {
        out.push_back(APInt(1, v.isZero() ? 0 : 1));
        continue;
      }
      APSInt r(width, /*isUnsigned=*/false);
      bool exact;
      if (v.convertToInteger(r, APFloat::rmTowardZero, &exact) &
          APFloat::opInvalidOp)
        return {}; // NaN or out of range: undefined at run time
      out.push_back(r);
    }
  } else {
    for (const APInt &v : x.getValues<APInt>()) {
      if (to.isInteger(1))
        out.push_back(APInt(1, v.isZero() ? 0 : 1));
      else
        out.push_back(fromBits(v).sextOrTrunc(width));
    }
  }
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!x || !foldable(type))
    return {};
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inStrides = stridesOf(x.getType().getShape()), map;
  forEachIndex(type.getShape(), [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += idx[d] * inStrides[perm[d]];
    map.push_back(flat);
  });
  return remap(x, type, map);
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (!foldable(getType()))
    return {};
  return broadcastTo(adaptor.getInput(), getType().getShape());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!x || !foldable(type))
    return {};
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  SmallVector<int64_t> inStrides = stridesOf(x.getType().getShape()), map;
  forEachIndex(type.getShape(), [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += (starts[d] + steps[d] * idx[d]) * inStrides[d];
    map.push_back(flat);
  });
  return remap(x, type, map);
}

OpFoldResult PadOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr x = dense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!x || !foldable(type))
    return {};
  Type et = type.getElementType();
  double value = getValue().convertToDouble();
  Attribute fill;
  if (auto ft = dyn_cast<FloatType>(et)) {
    APFloat v(value);
    bool lost;
    v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    fill = FloatAttr::get(et, v);
  } else if (et.isInteger(1)) {
    fill = IntegerAttr::get(et, APInt(1, value != 0 ? 1 : 0));
  } else if (et.isSignlessInteger()) {
    // The run-time kernels convert the fill value as C does; only values
    // that are exact integers fold.
    if (value != (double)(int64_t)value)
      return {};
    fill = IntegerAttr::get(et, APInt(et.getIntOrFloatBitWidth(),
                                      (uint64_t)(int64_t)value,
                                      /*isSigned=*/true,
                                      /*implicitTrunc=*/true));
  } else {
    return {};
  }
  SmallVector<int64_t> map(type.getNumElements(), -1);
  SmallVector<int64_t> outStrides = stridesOf(type.getShape());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  forEachIndex(x.getType().getShape(), [&](int64_t f, ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += (starts[d] + steps[d] * idx[d]) * outStrides[d];
    map[flat] = f;
  });
  return remap(x, type, map, fill);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (!foldable(type))
    return {};
  int64_t axis = getAxis();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  SmallVector<DenseElementsAttr> ins;
  for (Attribute a : adaptor.getInputs()) {
    DenseElementsAttr d = dense(a);
    if (!d)
      return {};
    ins.push_back(d);
  }
  // All inputs laid end to end, then each output chunk picked from them.
  SmallVector<Attribute> all;
  SmallVector<int64_t> base;
  for (DenseElementsAttr d : ins) {
    base.push_back(all.size());
    llvm::append_range(all, d.getValues<Attribute>());
  }
  SmallVector<int64_t> map;
  map.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < ins.size(); ++k) {
      int64_t chunk = outer ? ins[k].getNumElements() / outer : 0;
      for (int64_t j = 0; j < chunk; ++j)
        map.push_back(base[k] + o * chunk + j);
    }
  }
  auto allType =
      RankedTensorType::get({(int64_t)all.size()}, type.getElementType());
  return remap(DenseElementsAttr::get(allType, all), type, map);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = dense(adaptor.getData());
  DenseElementsAttr indices = dense(adaptor.getIndices());
  RankedTensorType type = getType();
  if (!data || !indices || !foldable(type))
    return {};
  int64_t axis = getAxis();
  ArrayRef<int64_t> ds = data.getType().getShape();
  int64_t outer = 1, inner = 1, dim = ds[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= ds[d];
  for (size_t d = axis + 1; d < ds.size(); ++d)
    inner *= ds[d];
  SmallVector<int64_t> idx;
  for (const APInt &v : indices.getValues<APInt>())
    idx.push_back(v.getSExtValue());
  // An index outside [-dim, dim) reads 0, as the kernels do.
  Type et = type.getElementType();
  Attribute zero = isa<FloatType>(et) ? Attribute(FloatAttr::get(et, 0.0))
                                      : Attribute(IntegerAttr::get(et, 0));
  SmallVector<int64_t> map;
  map.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t k = i < 0 ? i + dim : i;
        map.push_back(k < 0 || k >= dim ? -1 : (o * dim + k) * inner + j);
      }
  return remap(data, type, map, zero);
}
