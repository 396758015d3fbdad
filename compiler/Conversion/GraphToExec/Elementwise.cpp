//===- Elementwise.cpp - elementwise dlgraph ops to dlexec kernels -------===//
// Unary math, binary arithmetic, comparisons, select and casts: each one
// all-parallel dlexec.kernel over the result, operands read with broadcasting.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;

namespace {

/// The scalar body of a binary dlgraph op, or null when |t| is unsupported.
Value binaryScalar(OpBuilder &b, Location loc, StringRef op, Value l, Value r) {
  ElemKind k = kindOf(l.getType());
  if (k == ElemKind::Float) {
    if (op == "add")
      return arith::AddFOp::create(b, loc, l, r);
    if (op == "sub")
      return arith::SubFOp::create(b, loc, l, r);
    if (op == "mul")
      return arith::MulFOp::create(b, loc, l, r);
    if (op == "div")
      return arith::DivFOp::create(b, loc, l, r);
    if (op == "max")
      return arith::MaximumFOp::create(b, loc, l, r);
    if (op == "min")
      return arith::MinimumFOp::create(b, loc, l, r);
    if (op == "pow")
      return math::PowFOp::create(b, loc, l, r);
    if (op == "fmod")
      return arith::RemFOp::create(b, loc, l, r);
    if (op == "mod") {
      // NumPy's floored remainder (np.mod, ONNX Mod fmod = 0): C fmod, plus
      // the divisor when the remainder is nonzero (NaN included) and its
      // sign differs from the divisor's; a zero remainder takes the
      // divisor's sign.
      Type t = l.getType();
      Value rem = arith::RemFOp::create(b, loc, l, r);
      Value zero = constF(b, loc, t, 0.0);
      auto lt0 = [&](Value v) {
        return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v,
                                     zero);
      };
      Value divisorNeg = lt0(r);
      Value nonzero =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, rem, zero);
      Value differ = arith::XOrIOp::create(b, loc, lt0(rem), divisorNeg);
      Value fix = arith::AndIOp::create(b, loc, nonzero, differ);
      Value fixed = arith::SelectOp::create(
          b, loc, fix, arith::AddFOp::create(b, loc, rem, r), rem);
      Value signedZero = arith::SelectOp::create(
          b, loc, divisorNeg, constF(b, loc, t, -0.0), zero);
      return arith::SelectOp::create(b, loc, nonzero, fixed, signedZero);
    }
  }
  if (k == ElemKind::Int) {
    if (op == "add")
      return arith::AddIOp::create(b, loc, l, r);
    if (op == "sub")
      return arith::SubIOp::create(b, loc, l, r);
    if (op == "mul")
      return arith::MulIOp::create(b, loc, l, r);
    if (op == "div")
      return arith::DivSIOp::create(b, loc, l, r);
    if (op == "max")
      return arith::MaxSIOp::create(b, loc, l, r);
    if (op == "min")
      return arith::MinSIOp::create(b, loc, l, r);
    if (op == "pow") {
      // Integer pow (ONNX Pow on int32/int64): computed in double, then
      // truncated toward zero, as ONNX Runtime does.
      Type f64 = b.getF64Type();
      Value p =
          math::PowFOp::create(b, loc, arith::SIToFPOp::create(b, loc, f64, l),
                               arith::SIToFPOp::create(b, loc, f64, r));
      return arith::FPToSIOp::create(b, loc, l.getType(), p);
    }
    if (op == "fmod")
      return arith::RemSIOp::create(b, loc, l, r);
    if (op == "mod") {
      // Floored remainder (sign of the divisor): the truncated one, plus the
      // divisor when it is nonzero and the signs differ.
      Value rem = arith::RemSIOp::create(b, loc, l, r);
      Value zero =
          arith::ConstantOp::create(b, loc, b.getIntegerAttr(l.getType(), 0));
      auto lt = [&](Value v) {
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v,
                                     zero);
      };
      Value nonzero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, zero);
      Value differ = arith::XOrIOp::create(b, loc, lt(rem), lt(r));
      Value fix = arith::AndIOp::create(b, loc, nonzero, differ);
      Value fixed = arith::AddIOp::create(b, loc, rem, r);
      return arith::SelectOp::create(b, loc, fix, fixed, rem);
    }
  }
  return Value();
}

bool binarySupported(StringRef op, Type t) {
  ElemKind k = kindOf(t);
  if (k == ElemKind::Float)
    return true;
  return k == ElemKind::Int;
}

bool castSupported(Type from, Type to) {
  return kindOf(from) != ElemKind::Other && kindOf(to) != ElemKind::Other;
}

/// An elementwise kernel computing fn(kb, loc, x) from float operand |in|.
template <typename Fn>
LogicalResult unary(FuncLowering &fl, Operation *op, Value in, Fn fn) {
  if (failed(fl.checkFloat(op, in)))
    return failure();
  fl.elementwise(
      op, {in},
      [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
          ArrayRef<Value>) -> SmallVector<Value> { return {fn(kb, l, v[0])}; });
  return success();
}

/// An elementwise kernel applying the binary op named like |op| (add, sub,
/// ...; see binaryScalar) to |lhs| and |rhs|, float or integer.
LogicalResult binary(FuncLowering &fl, Operation *op, Value lhs, Value rhs) {
  StringRef name = op->getName().stripDialect();
  if (!binarySupported(name, tensorType(lhs).getElementType()))
    return op->emitError() << "dlgraph-lower-to-dlexec: cannot lower '"
                           << op->getName() << "': element type "
                           << tensorType(lhs).getElementType()
                           << " is not supported (float or integer)";
  fl.elementwise(op, {lhs, rhs},
                 [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                     ArrayRef<Value>) -> SmallVector<Value> {
                   return {binaryScalar(kb, l, name, v[0], v[1])};
                 });
  return success();
}

/// Registers GraphOp (one float input) as the single scalar op ScalarOp.
template <typename GraphOp, typename ScalarOp>
void addOneToOne(LoweringTable &table) {
  table.add<GraphOp>([](FuncLowering &fl, GraphOp o) -> LogicalResult {
    return unary(fl, o, o.getInput(), [](OpBuilder &kb, Location l, Value v) {
      return (Value)ScalarOp::create(kb, l, v);
    });
  });
}

} // namespace

Value dlc::lowering::castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  ElemKind fk = kindOf(from), tk = kindOf(to);
  if (fk == ElemKind::Float && tk == ElemKind::Float &&
      from.getIntOrFloatBitWidth() == to.getIntOrFloatBitWidth()) {
    // f16 <-> bf16: exactly through f32, then rounded once.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (fk == ElemKind::Float && tk == ElemKind::Float)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? (Value)arith::ExtFOp::create(b, loc, to, v)
               : (Value)arith::TruncFOp::create(b, loc, to, v);
  if (fk == ElemKind::Int && tk == ElemKind::Float)
    return arith::SIToFPOp::create(b, loc, to, v);
  if (fk == ElemKind::Bool && tk == ElemKind::Float)
    return arith::UIToFPOp::create(b, loc, to, v);
  if (fk == ElemKind::Float && tk == ElemKind::Int)
    return arith::FPToSIOp::create(b, loc, to, v);
  if (fk == ElemKind::Float && tk == ElemKind::Bool)
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                 constF(b, loc, from, 0.0));
  if (fk == ElemKind::Int && tk == ElemKind::Int)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? (Value)arith::ExtSIOp::create(b, loc, to, v)
               : (Value)arith::TruncIOp::create(b, loc, to, v);
  if (fk == ElemKind::Bool && tk == ElemKind::Int)
    return arith::ExtUIOp::create(b, loc, to, v);
  if (fk == ElemKind::Int && tk == ElemKind::Bool) {
    Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  return Value();
}

/// Unary float ops, Neg/Abs, Relu, Sigmoid and Clip.
static void addUnaryLowerings(LoweringTable &table) {
  // Unary float ops that are one math/arith op.
  addOneToOne<g::ExpOp, math::ExpOp>(table);
  addOneToOne<g::LogOp, math::LogOp>(table);
  addOneToOne<g::SqrtOp, math::SqrtOp>(table);
  addOneToOne<g::RsqrtOp, math::RsqrtOp>(table);
  addOneToOne<g::TanhOp, math::TanhOp>(table);
  addOneToOne<g::ErfOp, math::ErfOp>(table);
  addOneToOne<g::SinOp, math::SinOp>(table);
  addOneToOne<g::CosOp, math::CosOp>(table);
  addOneToOne<g::TanOp, math::TanOp>(table);
  addOneToOne<g::AsinOp, math::AsinOp>(table);
  addOneToOne<g::AcosOp, math::AcosOp>(table);
  addOneToOne<g::AtanOp, math::AtanOp>(table);
  addOneToOne<g::SinhOp, math::SinhOp>(table);
  addOneToOne<g::CoshOp, math::CoshOp>(table);
  addOneToOne<g::AsinhOp, math::AsinhOp>(table);
  addOneToOne<g::AcoshOp, math::AcoshOp>(table);
  addOneToOne<g::AtanhOp, math::AtanhOp>(table);
  addOneToOne<g::CeilOp, math::CeilOp>(table);
  addOneToOne<g::FloorOp, math::FloorOp>(table);
  addOneToOne<g::RoundOp, math::RoundEvenOp>(table);

  // Neg and Abs: float, or integer with two's complement wrap-around
  // (-INT_MIN == |INT_MIN| == INT_MIN, as NumPy and ONNX Runtime give).
  table.add<g::NegOp, g::AbsOp>([](FuncLowering &fl, auto o) -> LogicalResult {
    bool isAbs = isa<g::AbsOp>(o.getOperation());
    if (kindOf(tensorType(o.getInput()).getElementType()) != ElemKind::Int)
      return unary(fl, o, o.getInput(),
                   [&](OpBuilder &kb, Location l, Value v) -> Value {
                     if (isAbs)
                       return math::AbsFOp::create(kb, l, v);
                     return arith::NegFOp::create(kb, l, v);
                   });
    fl.elementwise(o, {o.getInput()},
                   [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     Value zero = arith::ConstantOp::create(
                         kb, l, kb.getIntegerAttr(v[0].getType(), 0));
                     Value neg = arith::SubIOp::create(kb, l, zero, v[0]);
                     if (!isAbs)
                       return {neg};
                     Value isNeg = arith::CmpIOp::create(
                         kb, l, arith::CmpIPredicate::slt, v[0], zero);
                     return {arith::SelectOp::create(kb, l, isNeg, neg, v[0])};
                   });
    return success();
  });

  table.add<g::ReluOp>([](FuncLowering &fl, g::ReluOp o) -> LogicalResult {
    return unary(fl, o, o.getInput(), [](OpBuilder &kb, Location l, Value v) {
      return (Value)arith::MaximumFOp::create(kb, l, v,
                                              constF(kb, l, v.getType(), 0.0));
    });
  });
  table.add<g::SigmoidOp>([](FuncLowering &fl,
                             g::SigmoidOp o) -> LogicalResult {
    return unary(fl, o, o.getInput(), [](OpBuilder &kb, Location l, Value v) {
      // 1 / (1 + exp(-x)), in f32 for f16/bf16 and rounded once: a 16-bit
      // op is the f32 op on its widened input (docs/dlexec.md), not three
      // rounded steps (1 f16 ulp off on 3 of 8 sample inputs).
      Type t = v.getType();
      bool narrow = t.getIntOrFloatBitWidth() == 16;
      Value x = narrow ? (Value)arith::ExtFOp::create(kb, l, kb.getF32Type(), v)
                       : v;
      Value one = constF(kb, l, x.getType(), 1.0);
      Value e = math::ExpOp::create(kb, l, arith::NegFOp::create(kb, l, x));
      Value y = arith::DivFOp::create(kb, l, one,
                                      arith::AddFOp::create(kb, l, one, e));
      return narrow ? (Value)arith::TruncFOp::create(kb, l, t, y) : y;
    });
  });
  table.add<g::ClipOp>([](FuncLowering &fl, g::ClipOp o) -> LogicalResult {
    double lo = decimalValue(o.getMinAttr()), hi = decimalValue(o.getMaxAttr());
    return unary(fl, o, o.getInput(), [&](OpBuilder &kb, Location l, Value v) {
      // torch.clamp: min(max(x, lo), hi)
      Value m =
          arith::MaximumFOp::create(kb, l, v, constF(kb, l, v.getType(), lo));
      return (Value)arith::MinimumFOp::create(kb, l, m,
                                              constF(kb, l, v.getType(), hi));
    });
  });
}

/// Binary arithmetic, bitwise ops and Bitcast.
static void addBinaryLowerings(LoweringTable &table) {
  // Binary ops, float or integer: the scalar op follows the op's name.
  table.add<g::AddOp, g::SubOp, g::MulOp, g::DivOp, g::MaxOp, g::MinOp,
            g::PowOp, g::FmodOp>([](FuncLowering &fl, auto o) -> LogicalResult {
    return binary(fl, o, o.getLhs(), o.getRhs());
  });
  table.add<g::ModOp>([](FuncLowering &fl, g::ModOp o) -> LogicalResult {
    return binary(fl, o, o.getLhs(), o.getRhs());
  });

  // Bitwise ops on integers (ODS admits only signless integer operands).
  table.add<g::BitwiseAndOp, g::BitwiseOrOp, g::BitwiseXorOp, g::ShiftLeftOp,
            g::ShiftRightOp>([](FuncLowering &fl, auto o) -> LogicalResult {
    Operation *op = o.getOperation();
    fl.elementwise(
        op, {o.getLhs(), o.getRhs()},
        [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
            ArrayRef<Value>) -> SmallVector<Value> {
          if (isa<g::BitwiseAndOp>(op))
            return {arith::AndIOp::create(kb, l, v[0], v[1])};
          if (isa<g::BitwiseOrOp>(op))
            return {arith::OrIOp::create(kb, l, v[0], v[1])};
          if (isa<g::BitwiseXorOp>(op))
            return {arith::XOrIOp::create(kb, l, v[0], v[1])};
          // ONNX BitShift: an amount outside [0, bits) leaves only the sign
          // fill (0, or -1 for a right shift of a negative value), which is
          // also x >> (bits - 1) for the right shift.
          Type t = v[0].getType();
          unsigned bits = t.getIntOrFloatBitWidth();
          auto cst = [&](int64_t c) -> Value {
            return arith::ConstantOp::create(kb, l, kb.getIntegerAttr(t, c));
          };
          Value inRange = arith::CmpIOp::create(
              kb, l, arith::CmpIPredicate::ult, v[1], cst(bits));
          Value shifted, fill;
          if (isa<g::ShiftLeftOp>(op)) {
            shifted = arith::ShLIOp::create(kb, l, v[0], v[1]);
            fill = cst(0);
          } else {
            shifted = arith::ShRSIOp::create(kb, l, v[0], v[1]);
            fill = arith::ShRSIOp::create(kb, l, v[0], cst(bits - 1));
          }
          return {arith::SelectOp::create(kb, l, inRange, shifted, fill)};
        });
    return success();
  });
  table.add<g::BitwiseNotOp>([](FuncLowering &fl,
                                g::BitwiseNotOp o) -> LogicalResult {
    fl.elementwise(o, {o.getInput()},
                   [](OpBuilder &kb, Location l, ArrayRef<Value> v,
                      ArrayRef<Value>) -> SmallVector<Value> {
                     Value ones = arith::ConstantOp::create(
                         kb, l, kb.getIntegerAttr(v[0].getType(), -1));
                     return {arith::XOrIOp::create(kb, l, v[0], ones)};
                   });
    return success();
  });
  table.add<g::BitcastOp>([](FuncLowering &fl, g::BitcastOp o) -> LogicalResult {
    Type from = tensorType(o.getInput()).getElementType();
    Type to = o.getType().getElementType();
    unsigned bits = from.getIntOrFloatBitWidth();
    if ((bits != 32 && bits != 64) || kindOf(from) == ElemKind::Other ||
        kindOf(to) == ElemKind::Other)
      return fl.unsupported(o, "bitcast supports 32- and 64-bit int and "
                               "float element types");
    fl.elementwise(o, {o.getInput()},
                   [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     return {arith::BitcastOp::create(kb, l, to, v[0])};
                   });
    return success();
  });
}

/// Select, Compare and Cast.
static void addSelectCompareCastLowerings(LoweringTable &table) {
  table.add<g::SelectOp>([](FuncLowering &fl, g::SelectOp s) -> LogicalResult {
    fl.elementwise(s, {s.getCondition(), s.getOnTrue(), s.getOnFalse()},
                   [](OpBuilder &kb, Location l, ArrayRef<Value> v,
                      ArrayRef<Value>) -> SmallVector<Value> {
                     return {arith::SelectOp::create(kb, l, v[0], v[1], v[2])};
                   });
    return success();
  });
  table.add<g::CompareOp>([](FuncLowering &fl,
                             g::CompareOp c) -> LogicalResult {
    Type et = tensorType(c.getLhs()).getElementType();
    ElemKind k = kindOf(et);
    if (k == ElemKind::Other)
      return fl.unsupported(c, "unsupported element type");
    StringRef p = c.getPredicate();
    auto fp = llvm::StringSwitch<arith::CmpFPredicate>(p)
                  .Case("eq", arith::CmpFPredicate::OEQ)
                  .Case("ne", arith::CmpFPredicate::UNE)
                  .Case("lt", arith::CmpFPredicate::OLT)
                  .Case("le", arith::CmpFPredicate::OLE)
                  .Case("gt", arith::CmpFPredicate::OGT)
                  .Default(arith::CmpFPredicate::OGE);
    auto ip = llvm::StringSwitch<arith::CmpIPredicate>(p)
                  .Case("eq", arith::CmpIPredicate::eq)
                  .Case("ne", arith::CmpIPredicate::ne)
                  .Case("lt", arith::CmpIPredicate::slt)
                  .Case("le", arith::CmpIPredicate::sle)
                  .Case("gt", arith::CmpIPredicate::sgt)
                  .Default(arith::CmpIPredicate::sge);
    fl.elementwise(c, {c.getLhs(), c.getRhs()},
                   [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     if (k == ElemKind::Float)
                       return {arith::CmpFOp::create(kb, l, fp, v[0], v[1])};
                     return {arith::CmpIOp::create(kb, l, ip, v[0], v[1])};
                   });
    return success();
  });
  table.add<g::CastOp>([](FuncLowering &fl, g::CastOp c) -> LogicalResult {
    Type from = tensorType(c.getInput()).getElementType();
    Type to = c.getType().getElementType();
    if (!castSupported(from, to))
      return fl.unsupported(c, "cannot cast between these element types");
    fl.elementwise(c, {c.getInput()},
                   [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                       ArrayRef<Value>) -> SmallVector<Value> {
                     return {castScalar(kb, l, v[0], to)};
                   });
    return success();
  });
}

void dlc::lowering::populateLowerToExecElementwise(LoweringTable &table) {
  addUnaryLowerings(table);
  addBinaryLowerings(table);
  addSelectCompareCastLowerings(table);
}
