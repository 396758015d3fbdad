//===- Gradients.h - attach the dlgraph gradient rules ----------*- C++ -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H
#define DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H

#include "mlir/IR/DialectRegistry.h"

namespace dlc {

/// Adds to |registry| the dlgraph dialect extensions that attach
/// `graph::DifferentiableOpInterface` (the reverse-mode gradient rules, one
/// file per op family in compiler/Transforms/Gradients/) to every
/// differentiable dlgraph op. `registerAllDialects` calls it; a context built
/// without that must call it before differentiating. Idempotent.
void registerGradientInterfaceExternalModels(mlir::DialectRegistry &registry);

} // namespace dlc

#endif // DLC_COMPILER_TRANSFORMS_GRADIENTS_GRADIENTS_H
