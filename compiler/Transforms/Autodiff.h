//===- Autodiff.h - reverse-mode automatic differentiation of dlgraph -*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_AUTODIFF_H
#define DLC_COMPILER_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"

#include <functional>

namespace dlc {

/// A vector-Jacobian product for one op kind. Given the op, the gradient of
/// the loss with respect to each of its results (|resultGrads|, same types
/// as the results; never null) it builds, with |b| (whose insertion point is
/// after every value it may use), the gradient with respect to each operand
/// into |operandGrads| (pre-sized to the operand count, initially null; the
/// rule leaves an entry null for operands that have no gradient, e.g. i64
/// labels or a select condition). Each gradient has exactly the operand's
/// type (broadcasting rules reduce with reduce_sum then reshape). A rule that
/// cannot handle the op's form emits an error at the op and fails.
using GradientRule = std::function<mlir::LogicalResult(
    mlir::OpBuilder &b, mlir::Operation *op,
    llvm::ArrayRef<mlir::Value> resultGrads,
    llvm::MutableArrayRef<mlir::Value> operandGrads)>;

/// Registers (or replaces) the gradient rule for ops named |opName| (e.g.
/// "dlgraph.relu"). The built-in rules (every differentiable dlgraph op) are
/// registered on first use of the table.
void registerGradientRule(llvm::StringRef opName, GradientRule rule);

/// The rule for |opName|, or null when none is registered.
const GradientRule *lookupGradientRule(llvm::StringRef opName);

/// Reverse-mode differentiation of the straight-line code in |ops| (in
/// program order). |active| holds the values that depend on a parameter
/// (only their gradients are accumulated; the pass computes it with
/// `computeActiveValues`). Starting from |seed| as the gradient of |loss|,
/// visits |ops| backwards and applies each op's rule when a result has a
/// gradient and an operand is active; gradients of values used several
/// times are summed with `dlgraph.add`. New ops go at |b|'s insertion point.
/// Returns the gradient of every active value reached, or fails with an
/// error naming an op that has no rule (at the op's location).
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
