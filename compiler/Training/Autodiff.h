//===- Autodiff.h - reverse-mode autodiff of dlgraph ------------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_AUTODIFF_H
#define DLC_COMPILER_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace dlc {

/// Reverse-mode differentiation of the straight-line code in |ops| (in
/// program order). |active| holds the values that depend on a parameter
/// (only their gradients are accumulated; the pass computes it with
/// `computeActiveValues`). Starting from |seed| as the gradient of |loss|,
/// visits |ops| backwards and applies each op's rule when a result has a
/// gradient and an operand is active; gradients of values used several
/// times are summed with `dlgraph.add`. New ops go at |b|'s insertion point.
/// Each op's rule is its `graph::DifferentiableOpInterface` (attached by
/// `registerGradientInterfaceExternalModels`, which `registerAllDialects`
/// calls); a result with no gradient is passed to the rule as a zero
/// constant. Returns the gradient of every active value reached, or fails
/// with an error naming an op on the way that does not implement the
/// interface (at the op's location).
mlir::FailureOr<llvm::DenseMap<mlir::Value, mlir::Value>>
computeGradients(mlir::OpBuilder &b, llvm::ArrayRef<mlir::Operation *> ops,
                 const llvm::DenseSet<mlir::Value> &active, mlir::Value loss,
                 mlir::Value seed);

/// Forward dependence: starting from |sources|, every floating-point result
/// of an op in |ops| (program order) that has an active operand.
llvm::DenseSet<mlir::Value>
computeActiveValues(llvm::ArrayRef<mlir::Operation *> ops,
                    llvm::ArrayRef<mlir::Value> sources);

} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_AUTODIFF_H
