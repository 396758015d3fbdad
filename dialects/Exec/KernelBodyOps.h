//===- KernelBodyOps.h - the ops a dlexec.kernel body may hold -*- C++ -*-===//
//
// The one list of upstream ops that codegen prints as C expressions inside a
// dlexec.kernel body. KernelOp's verifier accepts exactly these (and
// dlexec.index); codegen (codegen/KernelEmitter.cpp) spells the math calls
// and binary operators from the same lists, and prints the others by hand.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_EXEC_KERNELBODYOPS_H
#define DLC_DIALECTS_EXEC_KERNELBODYOPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Operation.h"

/// Float ops printed as a C math call: X(op class, f32 function, f64
/// function). Their results must be f32 or f64.
#define DLC_KERNEL_MATH_CALLS(X)                                               \
  X(::mlir::math::ExpOp, "expf", "exp")                                        \
  X(::mlir::math::Exp2Op, "exp2f", "exp2")                                     \
  X(::mlir::math::LogOp, "logf", "log")                                        \
  X(::mlir::math::Log2Op, "log2f", "log2")                                     \
  X(::mlir::math::SqrtOp, "sqrtf", "sqrt")                                     \
  X(::mlir::math::TanhOp, "tanhf", "tanh")                                     \
  X(::mlir::math::AbsFOp, "fabsf", "fabs")                                     \
  X(::mlir::math::ErfOp, "erff", "erf")                                        \
  X(::mlir::math::Log1pOp, "log1pf", "log1p")                                  \
  X(::mlir::math::ExpM1Op, "expm1f", "expm1")                                  \
  X(::mlir::math::FloorOp, "floorf", "floor")                                  \
  X(::mlir::math::CeilOp, "ceilf", "ceil")                                     \
  /* rint rounds half to even in the default rounding mode. */                 \
  X(::mlir::math::RoundEvenOp, "rintf", "rint")                                \
  X(::mlir::math::SinOp, "sinf", "sin")                                        \
  X(::mlir::math::CosOp, "cosf", "cos")                                        \
  X(::mlir::math::TanOp, "tanf", "tan")                                        \
  X(::mlir::math::AsinOp, "asinf", "asin")                                     \
  X(::mlir::math::AcosOp, "acosf", "acos")                                     \
  X(::mlir::math::AtanOp, "atanf", "atan")                                     \
  X(::mlir::math::SinhOp, "sinhf", "sinh")                                     \
  X(::mlir::math::CoshOp, "coshf", "cosh")                                     \
  X(::mlir::math::AsinhOp, "asinhf", "asinh")                                  \
  X(::mlir::math::AcoshOp, "acoshf", "acosh")                                  \
  X(::mlir::math::AtanhOp, "atanhf", "atanh")                                  \
  X(::mlir::math::PowFOp, "powf", "pow")                                       \
  X(::mlir::math::FmaOp, "fmaf", "fma")                                        \
  X(::mlir::arith::MaxNumFOp, "fmaxf", "fmax")                                 \
  X(::mlir::arith::MinNumFOp, "fminf", "fmin")                                 \
  X(::mlir::arith::RemFOp, "fmodf", "fmod")

/// Ops printed as a C binary operator: X(op class, operator).
#define DLC_KERNEL_BINARY_OPERATORS(X)                                         \
  X(::mlir::arith::AddFOp, "+")                                                \
  X(::mlir::arith::AddIOp, "+")                                                \
  X(::mlir::arith::SubFOp, "-")                                                \
  X(::mlir::arith::SubIOp, "-")                                                \
  X(::mlir::arith::MulFOp, "*")                                                \
  X(::mlir::arith::MulIOp, "*")                                                \
  X(::mlir::arith::DivFOp, "/")                                                \
  X(::mlir::arith::DivSIOp, "/")                                               \
  X(::mlir::arith::RemSIOp, "%")                                               \
  X(::mlir::arith::AndIOp, "&")                                                \
  X(::mlir::arith::OrIOp, "|")                                                 \
  X(::mlir::arith::XOrIOp, "^")

/// The other ops codegen prints, each with its own C form: X(op class).
#define DLC_KERNEL_OTHER_OPS(X)                                                \
  X(::mlir::arith::ConstantOp)                                                 \
  X(::mlir::arith::NegFOp)                                                     \
  X(::mlir::arith::MaximumFOp)                                                 \
  X(::mlir::arith::MinimumFOp)                                                 \
  X(::mlir::arith::MaxSIOp)                                                    \
  X(::mlir::arith::MinSIOp)                                                    \
  X(::mlir::arith::CmpFOp)                                                     \
  X(::mlir::arith::CmpIOp)                                                     \
  X(::mlir::arith::SelectOp)                                                   \
  X(::mlir::arith::ExtFOp)                                                     \
  X(::mlir::arith::TruncFOp)                                                   \
  X(::mlir::arith::SIToFPOp)                                                   \
  X(::mlir::arith::FPToSIOp)                                                   \
  X(::mlir::arith::IndexCastOp)                                                \
  X(::mlir::arith::ExtSIOp)                                                    \
  X(::mlir::arith::TruncIOp)                                                   \
  X(::mlir::arith::UIToFPOp)                                                   \
  X(::mlir::arith::ExtUIOp)                                                    \
  X(::mlir::arith::ShLIOp)                                                     \
  X(::mlir::arith::ShRSIOp)                                                    \
  X(::mlir::arith::BitcastOp)                                                  \
  X(::mlir::math::RsqrtOp)

namespace dlc::exec {

/// Whether |op| is a math call of DLC_KERNEL_MATH_CALLS.
inline bool isKernelMathCall(mlir::Operation *op) {
#define DLC_CASE(Op, F32, F64) mlir::isa<Op>(op) ||
  return DLC_KERNEL_MATH_CALLS(DLC_CASE) false;
#undef DLC_CASE
}

/// Whether codegen prints |op| in a dlexec.kernel body (dlexec.index
/// aside): an op of one of the three lists above.
inline bool isKernelBodyOp(mlir::Operation *op) {
#define DLC_CASE1(Op) mlir::isa<Op>(op) ||
#define DLC_CASE2(Op, A) mlir::isa<Op>(op) ||
  return isKernelMathCall(op) || DLC_KERNEL_BINARY_OPERATORS(DLC_CASE2)
                                     DLC_KERNEL_OTHER_OPS(DLC_CASE1) false;
#undef DLC_CASE1
#undef DLC_CASE2
}

} // namespace dlc::exec

#endif
