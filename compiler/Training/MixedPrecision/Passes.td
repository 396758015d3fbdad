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
    TODO(loss scaling): description written with the implementation.
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
