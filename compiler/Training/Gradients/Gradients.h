//===- Gradients.h - attach the dlgraph gradient rules ----------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H
#define DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace dlc {

/// Adds to |registry| the dlgraph dialect extensions that attach
/// `graph::DifferentiableOpInterface` (the reverse-mode gradient rules, one
/// file per op family in compiler/Training/Gradients/) to every
/// differentiable dlgraph op. `registerAllDialects` calls it; a context built
/// without that must call it before differentiating. Idempotent.
void registerGradientInterfaceExternalModels(mlir::DialectRegistry &registry);

/// The dlgraph ops declared to have no gradient rule, on purpose (full
/// names, `dlgraph.compare`): comparisons, index results and floor-style
/// mod; one_hot, whose only operand is the integer indices; the integer
/// bitwise ops and bitcast; constants and variables, which have no operands
/// (a read of a trainable variable is where its gradient arrives) or, for
/// write_variable, no results; the gradient ops themselves (there
/// is no second-order autodiff), the ops the training step adds after
/// differentiation (optimizer updates, all_reduce), batch_norm (training
/// decomposes it first, dlgraph-decompose-batch-norm-for-training), and
/// cumprod (no rule yet). One on a path from a trainable parameter to the
/// loss is an error of dlgraph-differentiate. The gradient-rule test checks
/// that none of them has a rule; the op-coverage test lists, per op, a rule
/// or this declaration.
llvm::ArrayRef<llvm::StringLiteral> nonDifferentiableOps();

/// Rewrites every dlgraph.max_pool_grad in |root| to read the argmax
/// instead of the pooling's input, as PyTorch's max_pool2d_with_indices
/// does: dlgraph.max_pool_indices of the input (i32, the pooled shape) is
/// computed right after the forward max_pool that reads the same input with
/// the same attributes (or right after the input's definition), and the
/// gradient becomes dlgraph.max_pool_indices_grad, whose result is
/// bit-identical. Rematerialization calls it, so that a pooling's input is
/// neither kept nor recomputed for its backward. Returns the number of
/// gradients rewritten.
int64_t useMaxPoolIndices(mlir::Operation *root);

} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H
