//===- Elementwise.cpp - elementwise ops in the reference interpreter -----===//
// Unary math, binary arithmetic with broadcasting, comparisons, select, clip
// and element type conversions (dlgraph.cast, and dlgraph.broadcast_to,
// which converts like a cast to its own element type).
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// |f| applied to each element of |op|'s first operand.
template <typename F> Tensor unary(Frame &frame, Operation *op, F f) {
  const Tensor &x = frame.get(op->getOperand(0));
  return mapN(x.shape, {&x}, [&](const Vals &v) { return f(v[0]); });
}

/// |f| applied to |op|'s two operands broadcast to its result's shape.
template <typename F> Tensor binary(Frame &frame, Operation *op, F f) {
  return mapN(shapeOf(op->getResult(0)),
              {&frame.get(op->getOperand(0)), &frame.get(op->getOperand(1))},
              [&](const Vals &v) { return f(v[0], v[1]); });
}

/// Registers OpT as the unary map of |f|.
template <typename OpT, typename F> void addUnary(EvalTable &table, F f) {
  table.add<OpT>([f](Frame &frame, OpT o) { return unary(frame, o, f); });
}

/// Registers OpT as the binary map of |f|.
template <typename OpT, typename F> void addBinary(EvalTable &table, F f) {
  table.add<OpT>([f](Frame &frame, OpT o) { return binary(frame, o, f); });
}

void addUnaryOps(EvalTable &table) {
  addUnary<ReluOp>(table, [](double x) { return x > 0 ? x : 0.0; });
  addUnary<ExpOp>(table, [](double x) { return std::exp(x); });
  addUnary<LogOp>(table, [](double x) { return std::log(x); });
  addUnary<NegOp>(table, [](double x) { return -x; });
  addUnary<SqrtOp>(table, [](double x) { return std::sqrt(x); });
  addUnary<RsqrtOp>(table, [](double x) { return 1.0 / std::sqrt(x); });
  addUnary<TanhOp>(table, [](double x) { return std::tanh(x); });
  addUnary<ErfOp>(table, [](double x) { return std::erf(x); });
  addUnary<SinOp>(table, [](double x) { return std::sin(x); });
  addUnary<CosOp>(table, [](double x) { return std::cos(x); });
  addUnary<TanOp>(table, [](double x) { return std::tan(x); });
  addUnary<AsinOp>(table, [](double x) { return std::asin(x); });
  addUnary<AcosOp>(table, [](double x) { return std::acos(x); });
  addUnary<AtanOp>(table, [](double x) { return std::atan(x); });
  addUnary<SinhOp>(table, [](double x) { return std::sinh(x); });
  addUnary<CoshOp>(table, [](double x) { return std::cosh(x); });
  addUnary<AsinhOp>(table, [](double x) { return std::asinh(x); });
  addUnary<AcoshOp>(table, [](double x) { return std::acosh(x); });
  addUnary<AtanhOp>(table, [](double x) { return std::atanh(x); });
  addUnary<AbsOp>(table, [](double x) { return std::fabs(x); });
  addUnary<CeilOp>(table, [](double x) { return std::ceil(x); });
  addUnary<FloorOp>(table, [](double x) { return std::floor(x); });
  addUnary<RoundOp>(table, [](double x) { return std::nearbyint(x); });
  addUnary<SigmoidOp>(table,
                      [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  table.add<ClipOp>([](Frame &frame, ClipOp o) {
    double lo = o.getMin().convertToDouble(), hi = o.getMax().convertToDouble();
    return unary(frame, o,
                 [&](double x) { return std::min(std::max(x, lo), hi); });
  });
}

void addBinaryOps(EvalTable &table) {
  addBinary<AddOp>(table, [](double a, double b) { return a + b; });
  addBinary<SubOp>(table, [](double a, double b) { return a - b; });
  addBinary<MulOp>(table, [](double a, double b) { return a * b; });
  addBinary<DivOp>(table, [](double a, double b) { return a / b; });
  addBinary<MaxOp>(table, [](double a, double b) { return std::max(a, b); });
  addBinary<MinOp>(table, [](double a, double b) { return std::min(a, b); });
  addBinary<PowOp>(table, [](double a, double b) { return std::pow(a, b); });
  addBinary<FmodOp>(table, [](double a, double b) { return std::fmod(a, b); });
  addBinary<ModOp>(table, [](double a, double b) {
    double r = std::fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  });
  table.add<CompareOp>([](Frame &frame, CompareOp o) {
    StringRef p = o.getPredicate();
    return binary(frame, o, [&](double a, double b) {
      bool r = p == "eq"   ? a == b
               : p == "ne" ? a != b
               : p == "lt" ? a < b
               : p == "le" ? a <= b
               : p == "gt" ? a > b
                           : a >= b;
      return r ? 1.0 : 0.0;
    });
  });
  table.add<SelectOp>([](Frame &frame, SelectOp o) {
    return mapN(shapeOf(o.getResult()),
                {&frame.get(o.getCondition()), &frame.get(o.getOnTrue()),
                 &frame.get(o.getOnFalse())},
                [](const Vals &v) { return v[0] != 0 ? v[1] : v[2]; });
  });
}

} // namespace

void dlc::reference::populateReferenceElementwise(EvalTable &table) {
  table.add<BroadcastToOp, CastOp>([](Frame &frame, auto o) {
    const Tensor &x = frame.get(o.getInput());
    bool toBool = o.getType().getElementType().isInteger(1);
    bool toInt = isa<IntegerType>(o.getType().getElementType());
    return mapN(shapeOf(o.getResult()), {&x}, [&](const Vals &v) {
      if (toBool)
        return v[0] != 0 ? 1.0 : 0.0;
      return toInt ? std::trunc(v[0]) : v[0];
    });
  });
  addUnaryOps(table);
  addBinaryOps(table);
}
