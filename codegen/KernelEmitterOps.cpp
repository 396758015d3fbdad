//===- KernelEmitterOps.cpp - one dlexec.kernel body op as C --------------===//
//
// The C statement of each arith / math / dlexec body op of a generated kernel:
// integer arithmetic defined where C's is not (wrapping, division by zero,
// shift amounts), NaN-propagating min/max, f16 / bf16 rounded once per op.
//
//===----------------------------------------------------------------------===//
#include "codegen/GeneratedKernel.h"
#include "dialects/Exec/KernelBodyOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <string>
#include <vector>

using namespace mlir;

namespace dlc::codegen::detail {

static std::string unsignedOf(const std::string &cType) {
  if (cType == "long long")
    return "unsigned long long";
  if (cType == "int")
    return "unsigned int";
  return cType;
}

static const char *mathName(Operation *op, bool isF32) {
#define DLC_CASE(Op, F32, F64)                                                 \
  .Case<Op>([&](auto) { return isF32 ? F32 : F64; })
  return llvm::TypeSwitch<Operation *, const char *>(op)
      DLC_KERNEL_MATH_CALLS(DLC_CASE)
          .Default([](Operation *) { return nullptr; });
#undef DLC_CASE
}

/// Whether integer division by |v| is defined in C for every dividend: |v|
/// is a constant other than 0 and -1.
static bool isSafeDivisor(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto attr = cst ? dyn_cast<IntegerAttr>(cst.getValue()) : IntegerAttr();
  return attr && !attr.getValue().isZero() && !attr.getValue().isAllOnes();
}

static const char *binaryOperator(Operation *op) {
#define DLC_CASE(Op, Operator) .Case<Op>([](auto) { return Operator; })
  return llvm::TypeSwitch<Operation *, const char *>(op)
      DLC_KERNEL_BINARY_OPERATORS(DLC_CASE)
          .Default([](Operation *) { return nullptr; });
#undef DLC_CASE
}

static std::string cmpfExpr(arith::CmpFPredicate p, const std::string &a,
                            const std::string &b) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse:
    return "false";
  case P::OEQ:
    return a + " == " + b;
  case P::OGT:
    return a + " > " + b;
  case P::OGE:
    return a + " >= " + b;
  case P::OLT:
    return a + " < " + b;
  case P::OLE:
    return a + " <= " + b;
  case P::ONE:
    return "(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::ORD:
    return "(" + a + " == " + a + " && " + b + " == " + b + ")";
  case P::UEQ:
    return "!(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::UGT:
    return "!(" + a + " <= " + b + ")";
  case P::UGE:
    return "!(" + a + " < " + b + ")";
  case P::ULT:
    return "!(" + a + " >= " + b + ")";
  case P::ULE:
    return "!(" + a + " > " + b + ")";
  case P::UNE:
    return a + " != " + b;
  case P::UNO:
    return "(" + a + " != " + a + " || " + b + " != " + b + ")";
  case P::AlwaysTrue:
    return "true";
  }
  return "false";
}

static std::string cmpiExpr(arith::CmpIPredicate p, const std::string &a,
                            const std::string &b, const std::string &cType) {
  using P = arith::CmpIPredicate;
  std::string ua = "(" + unsignedOf(cType) + ")" + a;
  std::string ub = "(" + unsignedOf(cType) + ")" + b;
  switch (p) {
  case P::eq:
    return a + " == " + b;
  case P::ne:
    return a + " != " + b;
  case P::slt:
    return a + " < " + b;
  case P::sle:
    return a + " <= " + b;
  case P::sgt:
    return a + " > " + b;
  case P::sge:
    return a + " >= " + b;
  case P::ult:
    return ua + " < " + ub;
  case P::ule:
    return ua + " <= " + ub;
  case P::ugt:
    return ua + " > " + ub;
  case P::uge:
    return ua + " >= " + ub;
  }
  return "false";
}

std::string nanPropagatingMinMax(bool max, const std::string &a,
                                 const std::string &b) {
  return "((" + a + (max ? " > " : " < ") + b + " || " + a + " != " + a +
         ") ? " + a + " : " + b + ")";
}

FailureOr<std::string>
GeneratedKernelEmitter::arithmeticExpr(Operation *bodyOp,
                                       ArrayRef<std::string> args,
                                       const std::string &cType) const {
  Value result = bodyOp->getResult(0);
  std::string expr;
  if (auto cst = dyn_cast<arith::ConstantOp>(bodyOp)) {
    auto lit = attrLiteral(cst.getValue(), result.getType());
    if (failed(lit))
      return bodyOp->emitOpError()
             << "constant " << cst.getValue() << " is not supported by codegen";
    expr = *lit;
  } else if (auto idx = dyn_cast<exec::IndexOp>(bodyOp)) {
    int64_t dim = idx.getDim();
    if (dim < 0 || dim >= (int64_t)loopSizes.size())
      return bodyOp->emitOpError()
             << "loop " << dim << " does not exist; the "
             << "kernel has " << loopSizes.size() << " loops";
    expr = "i" + std::to_string(dim);
  } else if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(bodyOp) &&
             unsignedOf(cType) != cType) {
    // Signed overflow is undefined in C++ and CUDA C++; the same operation
    // on the unsigned type wraps (two's complement), as arith.addi/subi/muli
    // and ONNX integer arithmetic do.
    std::string u = "(" + unsignedOf(cType) + ")";
    expr = "(" + cType + ")(" + u + args[0] + " " + binaryOperator(bodyOp) +
           " " + u + args[1] + ")";
  } else if (isa<arith::DivSIOp, arith::RemSIOp>(bodyOp) &&
             !isSafeDivisor(bodyOp->getOperand(1))) {
    // Defined results where C's are undefined: x / 0 == x % 0 == 0 (NumPy
    // gives 0 too; ONNX leaves integer division by zero undefined), and
    // INT_MIN / -1 wraps to INT_MIN (so x / -1 is the wrapping 0 - x and
    // x % -1 is 0).
    const std::string &a = args[0], &b = args[1];
    if (isa<arith::DivSIOp>(bodyOp))
      expr = "(" + b + " == 0 ? (" + cType + ")0 : " + b + " == -1 ? (" +
             cType + ")((" + unsignedOf(cType) + ")0 - (" + unsignedOf(cType) +
             ")" + a + ") : (" + cType + ")(" + a + " / " + b + "))";
    else
      expr = "((" + b + " == 0 || " + b + " == -1) ? (" + cType + ")0 : (" +
             cType + ")(" + a + " % " + b + "))";
  } else if (const char *binop = binaryOperator(bodyOp)) {
    expr = "(" + cType + ")(" + args[0] + " " + binop + " " + args[1] + ")";
  } else if (isa<arith::ShLIOp, arith::ShRSIOp>(bodyOp)) {
    // The amount taken modulo the bit width: C leaves larger (and negative)
    // amounts undefined where arith.shli/shrsi give poison, so any value is
    // a refinement; the lowering selects ONNX's result for those amounts.
    // The left shift runs on the unsigned type (no signed overflow); the
    // right shift on the signed one is arithmetic (sign-extending).
    unsigned bits = result.getType().getIntOrFloatBitWidth();
    std::string u = "(" + unsignedOf(cType) + ")";
    std::string amount =
        "(" + u + args[1] + " & " + std::to_string(bits - 1) + "u)";
    if (isa<arith::ShLIOp>(bodyOp))
      expr = "(" + cType + ")(" + u + args[0] + " << " + amount + ")";
    else
      expr = "(" + cType + ")(" + args[0] + " >> " + amount + ")";
  } else if (isa<arith::BitcastOp>(bodyOp)) {
    Type from = bodyOp->getOperand(0).getType(), to = result.getType();
    const char *fn = from.isF32() && to.isInteger(32)   ? "dlc_f32_as_i32"
                     : from.isInteger(32) && to.isF32() ? "dlc_i32_as_f32"
                     : from.isF64() && to.isInteger(64) ? "dlc_f64_as_i64"
                     : from.isInteger(64) && to.isF64() ? "dlc_i64_as_f64"
                                                        : nullptr;
    if (from == to)
      expr = args[0];
    else if (!fn)
      return bodyOp->emitOpError()
             << "from " << from << " to " << to
             << " is not supported by codegen (f32 <-> i32, f64 <-> i64)";
    else
      expr = std::string(fn) + "(" + args[0] + ")";
  } else if (isa<arith::NegFOp>(bodyOp)) {
    expr = "-" + args[0];
  } else if (isa<arith::MaximumFOp, arith::MinimumFOp>(bodyOp)) {
    expr =
        nanPropagatingMinMax(isa<arith::MaximumFOp>(bodyOp), args[0], args[1]);
  } else if (isa<arith::MaxSIOp>(bodyOp)) {
    expr = "(" + args[0] + " > " + args[1] + " ? " + args[0] + " : " + args[1] +
           ")";
  } else if (isa<arith::MinSIOp>(bodyOp)) {
    expr = "(" + args[0] + " < " + args[1] + " ? " + args[0] + " : " + args[1] +
           ")";
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(bodyOp)) {
    expr = "(" + cmpfExpr(cmp.getPredicate(), args[0], args[1]) + ")";
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(bodyOp)) {
    auto operandType = cScalarType(cmp.getLhs().getType());
    if (failed(operandType))
      return bodyOp->emitOpError() << "operand type " << cmp.getLhs().getType()
                                   << " is not supported by codegen";
    expr = "(" + cmpiExpr(cmp.getPredicate(), args[0], args[1], *operandType) +
           ")";
  } else if (isa<arith::SelectOp>(bodyOp)) {
    expr = "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
  }
  return expr;
}

FailureOr<std::string> GeneratedKernelEmitter::conversionOrMathExpr(
    Operation *bodyOp, ArrayRef<std::string> args, const std::string &cType,
    bool &roundedHalf) const {
  Value result = bodyOp->getResult(0);
  bool isHalf = isHalfFloat(result.getType());
  bool isF32 = result.getType().isF32() || isHalf;
  std::string expr;
  if (isHalf &&
      isa<arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp>(bodyOp)) {
    // One rounding from the exact source value: f64 and integers go through
    // double (exact for every f64, i32 and i1; i64 beyond 2^53 rounds
    // twice), float and the other 2-byte type through float.
    Type src = bodyOp->getOperand(0).getType();
    std::string h = halfName(result.getType());
    if (src.isF32() || isHalfFloat(src))
      expr = "(float)" + args[0];
    else
      roundedHalf = true;
    if (roundedHalf && isa<arith::UIToFPOp>(bodyOp))
      expr = "dlc_" + h + "_to_f32(dlc_f64_to_" + h + "((double)(" +
             unsignedOf(*cScalarType(src)) + ")" + args[0] + "))";
    else if (roundedHalf)
      expr =
          "dlc_" + h + "_to_f32(dlc_f64_to_" + h + "((double)" + args[0] + "))";
  } else if (isa<arith::FPToSIOp>(bodyOp) &&
             result.getType().getIntOrFloatBitWidth() > 1) {
    // Float -> signed integer, defined for every input (a plain C cast is
    // undefined for NaN and out-of-range values): truncation toward zero,
    // saturated to the integer's range, NaN to 0 -- what the GPU's cvt.rzi
    // conversion gives. The bounds +-2^(bits-1) are exact in f32 and f64.
    unsigned bits = result.getType().getIntOrFloatBitWidth();
    std::string bound = "0x1p" + std::to_string(bits - 1);
    std::string x = "(" + args[0] + ")";
    expr = "(" + x + " != " + x + " ? (" + cType + ")0 : " + x +
           " >= " + bound + " ? (" + cType + ")(~((" + unsignedOf(cType) +
           ")1 << " + std::to_string(bits - 1) + ")) : " + x + " <= -" + bound +
           " ? (" + cType + ")((" + unsignedOf(cType) + ")1 << " +
           std::to_string(bits - 1) + ") : (" + cType + ")" + x + ")";
  } else if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                 arith::FPToSIOp, arith::IndexCastOp, arith::ExtSIOp,
                 arith::TruncIOp>(bodyOp)) {
    expr = "(" + cType + ")" + args[0];
  } else if (isa<arith::UIToFPOp, arith::ExtUIOp>(bodyOp)) {
    auto srcType = cScalarType(bodyOp->getOperand(0).getType());
    if (failed(srcType))
      return bodyOp->emitOpError()
             << "operand type " << bodyOp->getOperand(0).getType()
             << " is not supported by codegen";
    expr = "(" + cType + ")(" + unsignedOf(*srcType) + ")" + args[0];
  } else if (isa<math::RsqrtOp>(bodyOp)) {
    expr = isF32 ? "(1.0f / sqrtf(" + args[0] + "))"
                 : "(1.0 / sqrt(" + args[0] + "))";
  } else if (const char *fn = mathName(bodyOp, isF32)) {
    if (!isF32 && !result.getType().isF64())
      return bodyOp->emitOpError()
             << "on " << result.getType() << " is not supported by codegen";
    expr = std::string(fn) + "(";
    for (size_t i = 0; i < args.size(); ++i)
      expr += (i ? ", " : "") + args[i];
    expr += ")";
  }
  return expr;
}

LogicalResult GeneratedKernelEmitter::emitBodyOp(Operation *bodyOp,
                                                 const std::string &indent) {
  if (bodyOp->getNumResults() != 1)
    return bodyOp->emitOpError()
           << "is not supported in a dlexec.kernel body by codegen";
  Value result = bodyOp->getResult(0);
  auto cType = cValueType(result.getType());
  if (failed(cType))
    return bodyOp->emitOpError() << "result type " << result.getType()
                                 << " is not supported by codegen (expected "
                                    "f32, f64, f16, bf16, i64, i32, i1 or "
                                    "index)";
  std::vector<std::string> args;
  for (Value operand : bodyOp->getOperands()) {
    auto name = nameOf(operand, bodyOp);
    if (failed(name))
      return failure();
    args.push_back(*name);
  }
  // f16 / bf16 compute in float and round each result once (below).
  bool isHalf = isHalfFloat(result.getType());
  // Hoist an op whose operands are all invariant. dlexec.index reads a loop
  // index; integer division and remainder may trap, so they stay where a
  // zero-trip loop would skip them.
  bool hoist =
      !isa<exec::IndexOp, arith::DivSIOp, arith::RemSIOp>(bodyOp) &&
      !promotedAdds.count(bodyOp) &&
      llvm::all_of(bodyOp->getOperands(), [&](Value v) {
        return invariantValues.contains(v) ||
               (!names.count(v) && v.getDefiningOp<arith::ConstantOp>());
      });
  bool roundedHalf = false; // expr already holds a value of the 2-byte type
  if (promotedAdds.count(bodyOp)) {
    // acc (double) + the other operand widened to double.
    unsigned otherIdx = 1;
    if (names.lookup(bodyOp->getOperand(0)) !=
        "acc" + std::to_string(promotedAdds[bodyOp]))
      otherIdx = 0;
    std::string name = fresh();
    names[result] = name;
    os << indent << "const double " << name << " = " << args[1 - otherIdx]
       << " + (double)" << args[otherIdx] << ";\n";
    return success();
  }
  auto exprOr = arithmeticExpr(bodyOp, args, *cType);
  if (succeeded(exprOr) && exprOr->empty())
    exprOr = conversionOrMathExpr(bodyOp, args, *cType, roundedHalf);
  if (failed(exprOr))
    return failure();
  if (exprOr->empty())
    return bodyOp->emitOpError()
           << "is not supported in a dlexec.kernel body by codegen";
  std::string expr = std::move(*exprOr);
  // The result of an f16 / bf16 op is the float result rounded once to
  // nearest even; a select, a constant and a conversion from f64 or an
  // integer (rounded above) already hold values of the type.
  if (isHalf && !roundedHalf &&
      !isa<arith::SelectOp, arith::ConstantOp>(bodyOp) &&
      !halfAccumulates.contains(bodyOp))
    expr = "dlc_round_" + halfName(result.getType()) + "(" + expr + ")";
  std::string name = fresh();
  names[result] = name;
  if (hoist) {
    invariantValues.insert(result);
    invOs << "  const " << *cType << " " << name << " = " << expr << ";\n";
  } else {
    os << indent << "const " << *cType << " " << name << " = " << expr << ";\n";
  }
  return success();
}

} // namespace dlc::codegen::detail
