//===- Gradients.cpp - attach the dlgraph gradient rules ------------------===//
#include "compiler/Transforms/Gradients/Gradients.h"

#include "compiler/Transforms/Gradients/GradientUtils.h"

void dlc::registerGradientInterfaceExternalModels(
    mlir::DialectRegistry &registry) {
  gradients::registerElementwiseGradients(registry);
  gradients::registerLinearGradients(registry);
  gradients::registerConvGradients(registry);
  gradients::registerPoolGradients(registry);
  gradients::registerReductionGradients(registry);
  gradients::registerDataMovementGradients(registry);
  gradients::registerLossGradients(registry);
}
