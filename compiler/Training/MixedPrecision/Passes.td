//===- Passes.td - mixed precision and loss scaling --------*- tablegen -*-===//
#ifndef DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_TD
#define DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
  }];
  let options = [
    Option<"precision", "precision", "std::string",
           /*default=*/"::dlc::MixedPrecisionDefaults::kPrecision",
           "fp32 (no change), bf16 or fp16">,
  ];
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
    * with `dynamic`, two new f32 scalar variables marked
      `dlgraph.optimizer_state` (so checkpoints save and restore them):
      `@__loss_scale` (initially `init-scale`) and
      `@__loss_scale_growth_tracker` (initially 0, the count of finite steps
      since the last change); without `dynamic` the scale is the constant
      `init-scale` and there is no new state;
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
    * with `dynamic`: on found_inf `scale *= backoff-factor`, tracker = 0;
      else tracker += 1, and when it reaches `growth-interval` the tracker
      restarts at 0 and `scale *= growth-factor` unless that exceeds the
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

    Errors: an option out of range (at the module: init-scale not positive
    or not finite in f32, growth-factor <= 1, backoff-factor outside (0, 1),
    growth-interval outside [1, 2^24]); an existing `@__loss_scale` or
    `@__loss_scale_growth_tracker`; no `@train_step`, no f32 `"loss"`
    result, no optimizer update, a non-f32 gradient operand of an update, a
    gradient computed after the first update, no backward seed.
  }];
  let options = [
    Option<"dynamic", "dynamic", "bool", /*default=*/"true",
           "Adjust the scale (GradScaler's rules); false keeps init-scale">,
    Option<"initScale", "init-scale", "double",
           /*default=*/"::dlc::MixedPrecisionDefaults::kInitScale",
           "Initial loss scale">,
    Option<"growthFactor", "growth-factor", "double",
           /*default=*/"::dlc::MixedPrecisionDefaults::kGrowthFactor",
           "Scale multiplier after growth-interval finite steps">,
    Option<"backoffFactor", "backoff-factor", "double",
           /*default=*/"::dlc::MixedPrecisionDefaults::kBackoffFactor",
           "Scale multiplier after a step with inf/NaN gradients">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"::dlc::MixedPrecisionDefaults::kGrowthInterval",
           "Finite steps between growths">,
  ];
  let dependentDialects = ["::dlc::graph::GraphDialect"];
}

#endif // DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_TD
