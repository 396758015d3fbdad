//===- Gradients.cpp - attach the dlgraph gradient rules ------------------===//
#include "compiler/Training/Gradients/Gradients.h"

#include "compiler/Training/Gradients/GradientUtils.h"

void dlc::registerGradientInterfaceExternalModels(
    mlir::DialectRegistry &registry) {
  gradients::registerElementwiseGradients(registry);
  gradients::registerLinearGradients(registry);
  gradients::registerConvGradients(registry);
  gradients::registerPoolGradients(registry);
  gradients::registerReductionGradients(registry);
  gradients::registerDataMovementGradients(registry);
  gradients::registerLossGradients(registry);
  gradients::registerAttentionGradients(registry);
}

llvm::ArrayRef<llvm::StringLiteral> dlc::nonDifferentiableOps() {
  static constexpr llvm::StringLiteral ops[] = {
      "dlgraph.compare",
      "dlgraph.bitwise_and",
      "dlgraph.bitwise_or",
      "dlgraph.bitwise_xor",
      "dlgraph.bitwise_not",
      "dlgraph.shift_left",
      "dlgraph.shift_right",
      "dlgraph.bitcast",
      "dlgraph.cumprod",
      "dlgraph.arg_max",
      "dlgraph.arg_min",
      "dlgraph.mod",
      "dlgraph.conv_backward_filter",
      "dlgraph.max_pool_grad",
      "dlgraph.max_pool_indices",
      "dlgraph.max_pool_indices_grad",
      "dlgraph.softmax_cross_entropy_grad",
      "dlgraph.one_hot",
      "dlgraph.constant",
      "dlgraph.variable",
      "dlgraph.read_variable",
      "dlgraph.write_variable",
      "dlgraph.average_pool_grad",
      "dlgraph.resize_grad",
      "dlgraph.attention_grad",
      "dlgraph.sgd_update",
      "dlgraph.adam_update",
      "dlgraph.all_reduce",
      "dlgraph.batch_norm",
  };
  return ops;
}
