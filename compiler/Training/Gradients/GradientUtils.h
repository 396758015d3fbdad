//===- GradientUtils.h - helpers shared by the gradient rules ---*- C++ -*-===//
//
// Internal to compiler/Training: the dlgraph op builders the per-family
// gradient rules share (splat constants, NumPy-broadcast reduction), the
// adapter that turns a rule function into a DifferentiableOpInterface
// external model, and the per-family registration functions.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTUTILS_H
#define DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTUTILS_H

#include "dialects/Graph/DifferentiableOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"

namespace dlc::gradients {

/// The gradients of an op's operands, filled in by a rule (see
/// `DifferentiableOpInterface::buildGradients`).
using Grads = llvm::MutableArrayRef<mlir::Value>;
/// The gradients of an op's results, given to a rule.
using RGrads = llvm::ArrayRef<mlir::Value>;

/// A vector-Jacobian product: given |op|'s result gradients |dy|, builds its
/// operand gradients into |dx| with |b| (the contract of
/// `DifferentiableOpInterface::buildGradients`).
using GradientFn = mlir::LogicalResult (*)(mlir::OpBuilder &b,
                                           mlir::Operation *op, RGrads dy,
                                           Grads dx);

/// The external model that gives ops of type |OpTy| the gradient |Rule|.
template <typename OpTy, GradientFn Rule>
struct GradientModel
    : graph::DifferentiableOpInterface::ExternalModel<GradientModel<OpTy, Rule>,
                                                      OpTy> {
  mlir::LogicalResult buildGradients(mlir::Operation *op, mlir::OpBuilder &b,
                                     RGrads resultGrads,
                                     Grads operandGrads) const {
    return Rule(b, op, resultGrads, operandGrads);
  }
};

/// Attaches |Rule| to |OpTy| in |ctx| (the dlgraph dialect must be loaded,
/// as it is inside a dialect extension).
template <typename OpTy, GradientFn Rule>
void attachGradient(mlir::MLIRContext *ctx) {
  OpTy::template attachInterface<GradientModel<OpTy, Rule>>(*ctx);
}

/// |v|'s type, which must be a ranked tensor.
mlir::RankedTensorType tensorType(mlir::Value v);

/// |type|'s shape with element type i1 (compare results).
mlir::RankedTensorType maskType(mlir::RankedTensorType type);

/// A splat constant of |type| (floating-point element type) holding |v|.
mlir::Value splat(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::RankedTensorType type, double v);

/// A binary elementwise op |OpTy| of result type |type| on |x| and |y|.
template <typename OpTy>
mlir::Value binary(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::RankedTensorType type, mlir::Value x, mlir::Value y) {
  return OpTy::create(b, loc, type, x, y);
}

/// Sums |g| over the axes along which a value of |target| type was
/// broadcast (NumPy rules: leading axes, and size-1 axes of the target),
/// then reshapes to |target|. Returns |g| when no reduction is needed.
mlir::Value reduceTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value g,
                     mlir::RankedTensorType target);

/// Broadcasts |v| to |type| unless it already has it.
mlir::Value broadcastTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        mlir::RankedTensorType type);

/// |type| with the dims in |axes| set to 1 (a keepdims reduction result).
mlir::RankedTensorType keepDimsType(mlir::RankedTensorType type,
                                    llvm::ArrayRef<int64_t> axes);

/// Whether |v| is a ranked tensor with a floating-point element type.
bool isFloatTensor(mlir::Value v);

/// Per-family registration: each adds a dlgraph dialect extension that
/// attaches the family's rules. `registerGradientInterfaceExternalModels`
/// calls them all.
void registerElementwiseGradients(mlir::DialectRegistry &registry);
void registerLinearGradients(mlir::DialectRegistry &registry);
void registerConvGradients(mlir::DialectRegistry &registry);
void registerPoolGradients(mlir::DialectRegistry &registry);
void registerReductionGradients(mlir::DialectRegistry &registry);
void registerDataMovementGradients(mlir::DialectRegistry &registry);
void registerLossGradients(mlir::DialectRegistry &registry);
void registerAttentionGradients(mlir::DialectRegistry &registry);

} // namespace dlc::gradients

#endif // DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTUTILS_H
