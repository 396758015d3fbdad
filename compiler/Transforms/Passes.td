//===- Passes.td - dlgraph graph transforms ----------------*- tablegen -*-===//
#ifndef DLC_COMPILER_TRANSFORMS_PASSES_TD
#define DLC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTrainingStepPass : Pass<"dlgraph-build-training-step", "mlir::ModuleOp"> {
  let summary = "Builds @train_step: forward, loss, reverse-mode gradients, optimizer update";
  let description = [{
    Assumes a module with `dlgraph.variable` parameters and one `func.func
    @main` (the importer's output). Guarantees:

    * `@main` is renamed `@forward` and otherwise unchanged (inference).
    * a new `@train_step` takes main's arguments plus
      `%labels: tensor<...xi64> {dlgraph.name = "labels"}` (the first
      output's shape without its last axis) and returns
      `tensor<f32> {dlgraph.name = "loss"}`. Its body is the forward
      computation with every `dlgraph.batch_norm` decomposed into training
      mode (batch statistics over all axes but 1, built from reduce_mean /
      sub / mul / add / rsqrt) plus the PyTorch running-statistics update;
      the loss (`dlgraph.softmax_cross_entropy` over the last axis of the
      first output, or the scalar output named by `loss-output`); the
      gradients (reverse-mode autodiff, one rule per op, see Autodiff.h);
      and one `dlgraph.sgd_update` / `dlgraph.adam_update` per trainable
      parameter with `dlgraph.write_variable` of every new value.
    * with `expose-gradients`, `@train_step` also returns the gradient of
      every trainable parameter (the value its optimizer update reads), in
      variable order, named `"<parameter>.grad"`; without it the gradients
      stay internal (and may be fused into the updates).
    * every f32 variable the loss depends on differentiably gets the
      `trainable` attribute; optimizer state (`@"<p>.momentum_buffer"`,
      `@"<p>.exp_avg"`, `@"<p>.exp_avg_sq"`) and the step counter
      `@__step : tensor<f32>` are new zero-initialized variables marked
      `dlgraph.optimizer_state`.

    Before:
    ```mlir
    func.func @main(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
      %w = dlgraph.read_variable @w : tensor<2x3xf32>
      %y = dlgraph.gemm %x, %w {trans_b = true} : ... -> tensor<4x2xf32>
      return %y : tensor<4x2xf32>
    }
    ```
    After (sketch):
    ```mlir
    func.func @forward(...)   // unchanged
    func.func @train_step(%x: tensor<4x3xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
      ... forward ...
      %loss = dlgraph.softmax_cross_entropy %y, %labels
      %dy = dlgraph.softmax_cross_entropy_grad %y, %labels, %one
      %dw = dlgraph.gemm %dy, %x {trans_a = true}
      %p, %m, %v = dlgraph.adam_update %w, %dw, %m0, %v0, %step
      dlgraph.write_variable @w, %p ...
      return %loss : tensor<f32>
    }
    ```
    Errors (diagnostics): unknown loss or optimizer, `loss-output` not an
    output or not a scalar, first output of rank 0, no trainable parameter,
    running statistics not read from variables, an op without a gradient
    rule on a path from a parameter to the loss.
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"softmax-cross-entropy\"",
           "Loss applied to the first output: softmax-cross-entropy">,
    Option<"lossOutput", "loss-output", "std::string", /*default=*/"\"\"",
           "Name (dlgraph.name) of a scalar model output to use as the loss instead">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam or adamw (torch.optim semantics)">,
    Option<"lr", "lr", "double", /*default=*/"1.0e-3", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum (torch.optim.SGD, no dampening, no Nesterov)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay; negative means the optimizer's PyTorch default "
           "(0 for sgd and adam, 0.01 for adamw)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1.0e-8", "Adam epsilon">,
    Option<"exposeGradients", "expose-gradients", "bool", /*default=*/"false",
           "Also return each trainable parameter's gradient from @train_step, "
           "named \"<parameter>.grad\"">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

#endif // DLC_COMPILER_TRANSFORMS_PASSES_TD
