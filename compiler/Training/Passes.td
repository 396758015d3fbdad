//===- Passes.td - the training phase's passes --------------*- tablegen -*-===//
//
// The training phase on dlgraph (docs/architecture.md): the training step
// (loss, BatchNorm in training mode, autodiff, optimizer: the four passes
// `buildTrainingStepPipeline` runs in this order, BuildTrainingStep.h),
// mixed precision and loss scaling (docs/mixed-precision.md), and
// rematerialization (docs/remat.md). Between two passes the IR is an ordinary
// dlgraph module that the next pass reads back, so each pass can be run and
// tested on its own.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_PASSES_TD
#define DLC_COMPILER_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// The training step
//===----------------------------------------------------------------------===//

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

    Options: the fields of `dlc::TrainingOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
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
    family in compiler/Training/Gradients/) gives the gradient of the
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
    their traits and interfaces (NormalizesScores, ScoreMaskOpInterface,
    Periodic, Elementwise, MovesElements).

    Errors: no `@train_step`, a loss that is not one `tensor<f32>` result,
    an op without a gradient rule on a path from a parameter to the loss (at
    the op), no trainable parameter (at the module), a `freeze` or
    `no-freeze` regex that is invalid or matches no variable (naming the
    variables), a `trainable` file that cannot be read or names no variable
    (a warning lists the names it holds that are no variable).

    Options: the fields of `dlc::TrainingOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
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

    Options: the fields of `dlc::TrainingOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Mixed precision and loss scaling
//===----------------------------------------------------------------------===//

def MixedPrecisionPass : Pass<"dlgraph-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Rewrites every function to bf16 or f16 compute by each op's precision class";
  let description = [{
    Automatic mixed precision as a compiler pass (docs/mixed-precision.md;
    Micikevicius et al. 2018, "Mixed Precision Training"; PyTorch autocast's
    op lists). Runs on every `func.func` of the module (`@forward` and
    `@train_step`) after the training step is built, and asks each op its
    precision class (PrecisionClassOpInterface):

    * `LowPrecision` (gemm, matmul, conv, conv_backward_data/filter): float
      operands are cast to the low type (bf16 or f16), the result is in the
      low type; the library accumulates in f32. One cast per value is shared
      by every such op that reads it, so a parameter is cast once per step
      and forward and backward GEMMs read the same copy.
    * `KeepsF32` (reductions, softmax, log-softmax, losses, exp/log/pow,
      batch statistics, optimizer updates): low operands are cast to f32 and
      the result is f32. Weight gradients therefore reach the update in f32.
    * `FollowsOperands` (elementwise, data movement, pooling, max-like
      reductions): the op runs in the widest type of its non-constant
      operands. An elementwise op stores its result in the widest type of the
      operands that have the result's shape: a wider operand broadcast into
      it (a per-channel statistic, a bias) or a constant that the low type
      cannot hold exactly makes it compute in f32 and round the result once.
      Constants that convert exactly take the op's type.

    Variables (parameters, optimizer state, running statistics) stay f32:
    `dlgraph.write_variable` casts what it writes back to the variable's
    type. Function signatures stay as compiled (f32 in, f32 out). A value
    rounded to the low type only to be widened again by all of its readers is
    left in f32 (the inside of a normalization's elementwise chain); casts
    x -> wider -> x's type fold away (dlgraph.cast's folder).

    ```mlir
    // before
    %w = dlgraph.read_variable @w : tensor<10x64xf32>
    %y = dlgraph.gemm %x, %w {trans_b = true} : (tensor<4x64xf32>, tensor<10x64xf32>) -> tensor<4x10xf32>
    %l = dlgraph.softmax_cross_entropy %y, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    // after (precision=bf16)
    %xb = dlgraph.cast %x : tensor<4x64xf32> to tensor<4x64xbf16>
    %w = dlgraph.read_variable @w : tensor<10x64xf32>
    %wb = dlgraph.cast %w : tensor<10x64xf32> to tensor<10x64xbf16>
    %y = dlgraph.gemm %xb, %wb {trans_b = true} : (tensor<4x64xbf16>, tensor<10x64xbf16>) -> tensor<4x10xbf16>
    %yf = dlgraph.cast %y : tensor<4x10xbf16> to tensor<4x10xf32>
    %l = dlgraph.softmax_cross_entropy %yf, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    ```
    f64 and integer tensors are left alone. Errors: an unknown `precision`
    (at the module).

    Options: the fields of `dlc::PrecisionOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

def LossScalingPass : Pass<"dlgraph-loss-scaling", "mlir::ModuleOp"> {
  let summary = "Adds dynamic (or static) loss scaling to @train_step";
  let description = [{
    torch.cuda.amp.GradScaler's algorithm (Micikevicius et al. 2018; PyTorch's
    `_amp_update_scale_`) inside the training step, so that no host logic
    is needed between steps. docs/loss-scaling.md has the user's view.

    Assumes `@train_step` as `--dlgraph-apply-optimizer` leaves it (after
    `--dlgraph-mixed-precision` when that runs): a result named `"loss"` of
    type `tensor<f32>`, optimizer updates (`dlgraph.sgd_update`,
    `dlgraph.adam_update`) whose gradient operands are f32 and computed
    before the first update, and the backward seed of
    `--dlgraph-differentiate`: a rank-0 floating-point `dlgraph.constant`
    1.0 that the gradients depend on and the loss does not. The seed is
    found from that structure (the first such constant in the block), not by
    the op that consumes it. Works on f32 graphs as well as mixed-precision
    ones.

    Guarantees:
    * with `loss-scale` dynamic, two new f32 scalar variables marked
      `dlgraph.optimizer_state` (so checkpoints save and restore them):
      `@__loss_scale` (initially `loss-scale-init`) and
      `@__loss_scale_growth_tracker` (initially 0, the count of finite steps
      since the last change); with a number as `loss-scale` the scale is
      that constant and there is no new state;
    * the seed's uses on the way to the gradients read the scale instead, so
      the backward computes scale * d(loss);
    * each gradient an update reads is unscaled in f32 (`g * (1 / scale)`)
      and the updates (and, with expose-gradients, the `"<p>.grad"` results)
      read the unscaled value;
    * one finiteness check over all unscaled gradients: `found_inf` is
      `p != p` for `p = sum_g(sum(g * 0))` (p is 0 when every element is
      finite, NaN otherwise). The probe recomputes `g * (1 / scale)` rather than reading
      the update's operand, so that each chain has one consumer: the probe
      fuses into one reduction kernel per gradient and the unscale into the
      update's kernel;
    * every other `dlgraph.write_variable` of `@train_step` (parameters,
      optimizer state, `@__step`, BatchNorm running statistics) writes
      `select(found_inf, <value before the step>, <new value>)`: a skipped
      step leaves them bit-for-bit unchanged. Writes move to the end of the
      body (they take effect at the end of the step wherever they stand);
    * dynamic: on found_inf `scale *= loss-scale-backoff-factor`, tracker = 0;
      else tracker += 1, and when it reaches `loss-scale-growth-interval` the tracker
      restarts at 0 and `scale *= loss-scale-growth-factor` unless that exceeds the
      largest f32 (then the scale stays, as in PyTorch). The factors are
      applied in f32;
    * two more results: `"loss_scale"` (`tensor<f32>`, the scale this step
      used) and `"skipped"` (`tensor<f32>`, 1.0 when the step found inf/NaN
      gradients and changed nothing but the scale state, else 0.0).

    Before / after (dynamic, SGD, one parameter):
    ```mlir
      %one = dlgraph.constant dense<1.0> : tensor<f32>
      %dy = dlgraph.softmax_cross_entropy_grad %y, %t, %one
      %dw = ...
      %s = dlgraph.add (dlgraph.read_variable @__step), 1.0
      dlgraph.write_variable @__step, %s
      %p, %b = dlgraph.sgd_update %w, %dw, %buf, %s
      dlgraph.write_variable @w, %p
      dlgraph.write_variable @w.momentum_buffer, %b
      return %loss                                  // {"loss"}
    // becomes
      %scale = dlgraph.read_variable @__loss_scale
      %tracker = dlgraph.read_variable @__loss_scale_growth_tracker
      %dy = dlgraph.softmax_cross_entropy_grad %y, %t, %scale
      %dw = ...
      %inv = dlgraph.div 1.0, %scale
      %u = dlgraph.mul %dw, %inv
      %probe = dlgraph.reduce_sum (dlgraph.mul (dlgraph.mul %dw, %inv), 0.0)
      %found_inf = dlgraph.compare "ne", %probe, %probe
      %p, %b = dlgraph.sgd_update %w, %u, %buf, %s
      dlgraph.write_variable @__step, (dlgraph.select %found_inf, %step0, %s)
      dlgraph.write_variable @w, (dlgraph.select %found_inf, %w, %p)
      ...
      dlgraph.write_variable @__loss_scale, %new_scale
      dlgraph.write_variable @__loss_scale_growth_tracker, %new_tracker
      return %loss, %scale, %skipped   // {"loss"}, {"loss_scale"}, {"skipped"}
    ```

    Errors: an option out of range (at the module: the initial scale not
    positive or not finite in f32, growth factor <= 1, backoff factor outside
    (0, 1), growth interval outside [1, 2^24]; a `loss-scale` that is neither
    dynamic nor a number); an existing `@__loss_scale` or
    `@__loss_scale_growth_tracker`; no `@train_step`, no f32 `"loss"`
    result, no optimizer update, a non-f32 gradient operand of an update, a
    gradient computed after the first update, no backward seed.

    Options: the fields of `dlc::PrecisionOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Rematerialization
//===----------------------------------------------------------------------===//

def RematerializationPass : Pass<"dlgraph-remat", "mlir::ModuleOp"> {
  let summary = "Recomputes forward activations in the backward pass of @train_step instead of keeping them";
  let description = [{
    Activation checkpointing (docs/remat.md). Runs on `@train_step` after the
    training step is built (and after mixed precision and loss scaling).
    A *held activation* is a value computed in the forward pass (before the
    op that computes the `"loss"` result) that the backward pass reads; it
    stays in the arena from the forward to its last backward use. The pass
    chooses a set of forward values to drop: each backward use of a dropped
    value reads a copy recomputed from kept values, cloned right before the
    first backward op that needs it; the forward keeps its original.

    What may be dropped comes from each op's RecomputeCostOpInterface: ops
    of cost `never` (side effects), ops with regions and values the function
    returns are never recomputed; `free` ops (reshape, identity, variable
    reads, constants) are views or persistent and are cloned along with what
    they view. Recomputation is exact: a clone is the same op on the same
    operands (dropout's mask comes from its (seed, step, index) Philox
    stream, so the clone draws the same mask; BatchNorm's running-statistic
    updates are `write_variable`s, which are never cloned, so they happen
    once). Clones carry the unit attribute `dlgraph.recomputed`, which also
    keeps CSE from merging them back into the originals.

    Modes:
    * `none`: nothing changes.
    * `sqrt`: Chen et al. 2016 ("Training Deep Nets with Sublinear Memory
      Cost", section 4): the forward ops are cut into ceil(sqrt(n))
      segments of about equal output bytes (n = forward ops that compute);
      values read by a later segment (the segment outputs), the last
      segment (its backward follows at once) and values that cannot be
      recomputed are kept; every other forward value is dropped.
    * `auto`: greedy rematerialization to a memory target, in the manner of
      XLA's HloRematerialization: the pass simulates the step's activation
      memory over the program order (every value that is not a view,
      variable or input, live from its definition to its last use; clones
      live from their insertion to their last use), and while the peak
      exceeds `arena-target` bytes it drops, among the held activations
      live across the peak, the one (with the forward values its
      recomputation needs that would otherwise be kept past the peak) that
      adds the fewest FLOPs per byte it frees, when the simulation confirms
      that the peak does not rise and the memory summed over the step falls.
      It stops when the peak fits or no candidate helps, then undoes the
      choices (latest first) the final peak does not need.

    The pass records on `@train_step`: `dlgraph.remat.recomputed_ops` (ops
    cloned, views not counted), `dlgraph.remat.added_flops` and
    `dlgraph.remat.step_flops` (the FLOPs of the step before the pass, from
    getRecomputeFlops), and `dlgraph.remat.simulated_peak_before` /
    `_after` (bytes, the pass's own model, not the planned arena).

    ```mlir
    // before (held: %h is read by the backward gemm)
    %h = dlgraph.relu %a : tensor<64x128xf32>
    ...                                         // forward, loss
    %dw = dlgraph.gemm %h, %dy {trans_a = true} : ...
    // after
    %h = dlgraph.relu %a : tensor<64x128xf32>
    ...
    %h2 = dlgraph.relu %a {dlgraph.recomputed} : tensor<64x128xf32>
    %dw = dlgraph.gemm %h2, %dy {trans_a = true} : ...
    ```
    Errors: an unknown `remat` mode; `sqrt`/`auto` on a module without
    `@train_step` or without a `"loss"` result.

    Options: the fields of `dlc::RematOptions` (Passes.h), under the names of
    `dlc`'s flags (OptionsBinder.h; declared once, in its bindOptions).
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

def ScheduleUpdatesPass : Pass<"dlgraph-schedule-updates", "mlir::ModuleOp"> {
  let summary = "Moves each optimizer update of @train_step to right after its gradient is final";
  let description = [{
    `--dlgraph-apply-optimizer` appends the updates after the whole backward
    pass, so every weight gradient stays in the arena until the end of the
    step. This pass moves each *update* (a pure op without regions whose
    results only `dlgraph.write_variable` reads, e.g. `dlgraph.sgd_update`,
    `dlgraph.adam_update`) to right after the last of: the definitions of its
    operands, and every reader of a value read from a variable it writes (so
    that the lowering can still write the variable in place: nothing reads
    its old value afterwards). Single-use `dlgraph.read_variable`s of its
    optimizer state move with it. Pure ops that compute only from variables
    and constants and feed an update (the step counter `@__step + 1`) move to
    the start of the body first. The gradient then dies at its update, as in
    PyTorch's optimizer-in-backward hooks; the values computed are the same.

    Runs on `@train_step` before rematerialization; `dlc` runs it for every
    training step without loss scaling (with loss scaling every update waits
    for the step's overflow check, so nothing can move). A module without
    `@train_step` is left alone.
  }];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_TRAINING_PASSES_TD
