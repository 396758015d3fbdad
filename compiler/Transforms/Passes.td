//===- Passes.td - dlgraph graph transforms ----------------*- tablegen -*-===//
//
// Compiled training as four passes that `buildTrainingStepPipeline`
// (BuildTrainingStep.h, pipeline `dlgraph-build-training-step`) runs in this
// order: append the loss (creating @train_step), decompose BatchNorm into
// training mode, differentiate, apply the optimizer. Between two passes the
// IR is an ordinary dlgraph module that the next pass reads back (@train_step
// returns the loss first; after differentiation also the gradients), so each
// pass can be run and tested on its own. Option defaults are the constants of
// `dlc::TrainingOptions`, the one place they are written.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRANSFORMS_PASSES_TD
#define DLC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RenameMainToForwardPass
    : Pass<"dlgraph-rename-main-to-forward", "mlir::ModuleOp"> {
  let summary = "Names the inference entry point @forward";
  let description = [{
    Packages call their inference function `forward`; the importer names it
    `main`. Renames `func.func @main` to `@forward` when the module has no
    `@forward` yet, and otherwise changes nothing (a module without `@main`,
    or one that already has `@forward`, is left as it is). Training does not
    use this pass: `--dlgraph-append-loss` renames `@main` itself.

    Before / after:
    ```mlir
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32>
    // becomes
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def AppendLossPass : Pass<"dlgraph-append-loss", "mlir::ModuleOp"> {
  let summary = "Creates @train_step from @main and appends the loss";
  let description = [{
    Assumes a module with one `func.func @main` of one block (the importer's
    output) and no symbols `@forward`, `@train_step` or `@__step`.
    Guarantees:

    * `@main` is renamed `@forward` and otherwise unchanged (inference).
    * a new `@train_step`, a copy of `@main`, returns only the loss, as
      `tensor<f32> {dlgraph.name = "loss"}`: with `loss` =
      `softmax-cross-entropy`, a `dlgraph.softmax_cross_entropy` over the
      last axis of the first output against a new last argument
      `%labels: tensor<...xi64> {dlgraph.name = "labels"}` (the first
      output's shape without its last axis); with `loss-output`, the scalar
      f32 output of that name. The computation of the other outputs stays in
      the body until `--dlgraph-apply-optimizer` drops what the step does
      not need.

    Before / after:
    ```mlir
    func.func @main(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
      %y = ...
      return %y : tensor<4x2xf32>
    }
    // becomes
    func.func @main -> @forward, unchanged
    func.func @train_step(%x: tensor<4x3xf32>,
                          %labels: tensor<4xi64> {dlgraph.name = "labels"})
        -> (tensor<f32> {dlgraph.name = "loss"}) {
      %y = ...
      %loss = dlgraph.softmax_cross_entropy %y, %labels
      return %loss : tensor<f32>
    }
    ```
    With `label-smoothing` e > 0 the loss op carries `label_smoothing = e`
    (PyTorch's semantics: the target is (1 - e) one_hot + e / C).

    Errors (at the module or at `@main`): an unknown loss, no `@main`, an
    existing `@forward`/`@train_step`/`@__step`, `loss-output` not an output
    or not a scalar f32, a first output of rank 0 or not float, an input
    already named `labels`, label-smoothing outside [0, 1] or with
    loss-output.
  }];
  let options = [
    Option<"loss", "loss", "std::string",
           /*default=*/"::dlc::TrainingOptions::kDefaultLoss",
           "Loss applied to the first output: softmax-cross-entropy">,
    Option<"lossOutput", "loss-output", "std::string", /*default=*/"\"\"",
           "Name (dlgraph.name) of a scalar model output to use as the loss instead">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "label_smoothing of the softmax cross-entropy, in [0, 1]">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

def DecomposeBatchNormForTrainingPass
    : Pass<"dlgraph-decompose-batch-norm-for-training", "mlir::ModuleOp"> {
  let summary = "Rewrites @train_step's batch_norm ops into training mode";
  let description = [{
    Assumes a module with `func.func @train_step` (from
    `--dlgraph-append-loss`) whose `dlgraph.batch_norm` ops (inference
    semantics) read their running mean and variance with
    `dlgraph.read_variable`, one pair of variables per batch_norm.
    Guarantees: every `dlgraph.batch_norm` of `@train_step` is replaced by
    training-mode batch normalization built from primitive ops (batch
    statistics over all axes but 1: reduce_mean / sub / mul / add / rsqrt,
    the biased variance), and the running statistics are written as PyTorch
    does in training mode: running' = m * running + (1 - m) * batch, the
    variance unbiased by n / (n - 1) (n = elements per channel). Other
    functions (`@forward`) keep inference batch norm.

    Before / after:
    ```mlir
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v
    // becomes
    %mean = dlgraph.reduce_mean %x {axes = [0, 2, 3], keepdims}
    %xc = dlgraph.sub %x, %mean
    %var = dlgraph.reduce_mean (%xc * %xc) ...
    %y = (%xc * rsqrt(%var + eps)) * reshape(%s) + reshape(%b)
    dlgraph.write_variable @running_mean, m * %m + (1 - m) * mean
    dlgraph.write_variable @running_var, m * %v + (1 - m) * n/(n-1) * var
    ```
    When neither statistic is read from a variable the batch norm is
    functional (`F.batch_norm(x, None, None, training=True)`, weight
    standardization): batch statistics, and no write.
    Errors (at the batch_norm): one running statistic read from a variable
    and the other not, a statistic shared with another batch_norm, a non-f32
    input, at most 1 value per channel.
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

def DifferentiatePass : Pass<"dlgraph-differentiate", "mlir::ModuleOp"> {
  let summary = "Reverse-mode gradients of @train_step's loss w.r.t. every parameter";
  let description = [{
    Assumes `func.func @train_step` (from `--dlgraph-append-loss`) of one
    block that returns only the loss, a `tensor<f32>`. Every f32
    `dlgraph.read_variable` is a source; reverse-mode differentiation over
    the body (each op's `DifferentiableOpInterface` rule, attached per op
    family in compiler/Transforms/Gradients/) gives the gradient of the
    loss with respect to each read, and the gradients of the reads of one
    variable are summed with `dlgraph.add`. Guarantees: every f32 variable
    the loss depends on differentiably gets the `trainable` attribute, and
    `@train_step` returns, after the loss, the gradient of every trainable
    variable in module order, named `"<parameter>.grad"`.

    Before / after:
    ```mlir
    func.func @train_step(%x, %labels) -> (tensor<f32> {dlgraph.name = "loss"}) {
      %w = dlgraph.read_variable @w : tensor<2x3xf32>
      %y = dlgraph.gemm %x, %w {trans_b = true}
      %loss = dlgraph.softmax_cross_entropy %y, %labels
      return %loss
    }
    // becomes
    func.func @train_step(%x, %labels)
        -> (tensor<f32> {dlgraph.name = "loss"},
            tensor<2x3xf32> {dlgraph.name = "w.grad"}) {
      ...
      %dy = dlgraph.softmax_cross_entropy_grad %y, %labels, %one
      %dw = dlgraph.gemm %dy, %x {trans_a = true}
      return %loss, %dw
    }
    ```
    Frozen variables are marked `dlgraph.frozen` (with the reason) and are
    not sources: they get no gradient and stay constant. With `trainable` (a
    file of names, one per line: PyTorch's `named_parameters()`), every
    variable it does not name is frozen. Else those matching `freeze` (a
    regex, POSIX extended, matched anywhere in the name) are, and so are the
    f32 buffers that PyTorch would not train, unless they match
    `no-freeze`: variables holding non-finite values, those whose every
    read only reaches softmaxes' inputs through elementwise and
    element-moving ops (attention masks), and those whose every read only
    reaches sin/cos through ops not mixing in the step's float inputs
    (rotary and sinusoidal position frequencies); the ops are recognized by
    their traits (NormalizesScores, Periodic, Elementwise, MovesElements).

    Errors: no `@train_step`, a loss that is not one `tensor<f32>` result,
    an op without a gradient rule on a path from a parameter to the loss (at
    the op), no trainable parameter (at the module), a `freeze` or
    `no-freeze` regex that is invalid or matches no variable (naming the
    variables), a `trainable` file that cannot be read or names no variable
    (a warning lists the names it holds that are no variable).
  }];
  let options = [
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "Regex of the variables not to train (no gradient, no optimizer state)">,
    Option<"noFreeze", "no-freeze", "std::string", /*default=*/"\"\"",
           "Regex of the variables the buffer rule must not freeze">,
    Option<"trainable", "trainable", "std::string", /*default=*/"\"\"",
           "File naming the variables to train, one per line; the others are frozen">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

def ApplyOptimizerPass : Pass<"dlgraph-apply-optimizer", "mlir::ModuleOp"> {
  let summary = "Adds the optimizer update of every trainable parameter to @train_step";
  let description = [{
    Assumes `@train_step` as `--dlgraph-differentiate` leaves it: it returns
    the loss, then the gradient of every trainable variable in module order
    named `"<parameter>.grad"`. Guarantees:

    * a step counter `@__step : tensor<f32>` that the step increments before
      the updates, and per parameter one `dlgraph.sgd_update` (state
      `@"<p>.momentum_buffer"`) or `dlgraph.adam_update` (state
      `@"<p>.exp_avg"`, `@"<p>.exp_avg_sq"`; `decoupled` for adamw) with
      torch.optim semantics (see GraphTrainingOps.td) and a
      `dlgraph.write_variable` of every new value. New variables are
      zero-initialized and marked `dlgraph.optimizer_state`. The update reads
      the parameter's first `dlgraph.read_variable` in `@train_step`.
    * `@train_step` returns the loss, and with `expose-gradients` also the
      gradients (the values the updates read); what the step no longer needs
      (other outputs, unused gradients, unused reads) is erased.

    Before / after:
    ```mlir
      %dw = ...
      return %loss, %dw    // {"loss"}, {"w.grad"}
    // becomes (adam)
      %s = dlgraph.add (dlgraph.read_variable @__step), 1.0
      dlgraph.write_variable @__step, %s
      %p, %m, %v = dlgraph.adam_update %w, %dw, %m0, %v0, %s {lr = ...}
      dlgraph.write_variable @w, %p ...
      return %loss
    ```
    Training recipes (docs/dlc.md, "Training recipes"):

    * `lr-schedule` (constant, linear, cosine, step): the updates read an lr
      computed in the step from the incremented counter t = `@__step`
      (1, 2, ...): base * t / W while t <= W (warmup-steps); then cosine
      M + (base - M) / 2 * (1 + cos(pi (t - W) / (T - W))), linear
      M + (base - M) (T - t) / (T - W) up to T (total-steps), M (min-lr)
      after; step base * gamma^floor(t / step-size); constant base. The step
      returns it as a result named "lr" after the loss. Without a schedule
      the lr is a constant and there is no "lr" result.
    * `clip-grad-norm` MAX > 0: norm = sqrt(sum of every trained gradient's
      squares); every gradient the updates read is multiplied by
      min(1, MAX / (norm + 1e-6)) (torch.nn.utils.clip_grad_norm_); the
      norm is a result named "grad_norm" (after "lr").
    * `no-weight-decay` (a regex): the matching trained parameters are
      updated with weight decay 0 and marked `dlgraph.no_weight_decay`.
    * `accumulate` N > 1: a persistent call count `@__accumulate_count` and
      per parameter `@"<p>.grad_accumulator"`; each call adds its gradient
      to the accumulator, the updates read the mean over the calls (before
      clipping), and only every N-th call's writes of the parameters, their
      state and `@__step` take effect (selects between the new and the old
      value), which also zeroes the accumulators. The updates run on every
      call (their results discarded on N - 1 of N).

    Errors (at the module): an unknown optimizer or an option out of range,
    a `@train_step` without gradient results, an existing optimizer-state
    symbol, an invalid recipe (checkTrainingRecipe's one-line messages), a
    `no-weight-decay` regex that is invalid or matches no trained parameter.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string",
           /*default=*/"::dlc::TrainingOptions::kDefaultOptimizer",
           "sgd, adam or adamw (torch.optim semantics)">,
    Option<"lr", "lr", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultLearningRate",
           "Learning rate">,
    Option<"momentum", "momentum", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultMomentum",
           "SGD momentum (torch.optim.SGD, no dampening, no Nesterov)">,
    Option<"weightDecay", "weight-decay", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultWeightDecay",
           "Weight decay; negative means the optimizer's PyTorch default "
           "(0 for sgd and adam, 0.01 for adamw)">,
    Option<"beta1", "beta1", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultBeta1", "Adam beta1">,
    Option<"beta2", "beta2", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultBeta2", "Adam beta2">,
    Option<"adamEpsilon", "adam-epsilon", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultAdamEpsilon",
           "Adam epsilon">,
    Option<"exposeGradients", "expose-gradients", "bool", /*default=*/"false",
           "Keep returning each trainable parameter's gradient from "
           "@train_step, named \"<parameter>.grad\"">,
    Option<"noWeightDecay", "no-weight-decay", "std::string",
           /*default=*/"\"\"",
           "Regex of the trained parameters updated without weight decay">,
    Option<"lrSchedule", "lr-schedule", "std::string", /*default=*/"\"\"",
           "constant, linear, cosine or step (empty: constant lr, no lr result)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warm-up over the first W updates">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "linear/cosine: the update at which the lr reaches min-lr">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0",
           "linear/cosine: the final lr">,
    Option<"stepSize", "step-size", "int64_t", /*default=*/"0",
           "step: updates between decays">,
    Option<"gamma", "gamma", "double",
           /*default=*/"::dlc::TrainingOptions::kDefaultGamma",
           "step: the decay factor">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the gradients' global L2 norm to this value (0: off)">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Accumulate the gradients of N calls; the optimizer applies on every N-th">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_TRANSFORMS_PASSES_TD
