//===- Passes.td - mixed precision and loss scaling --------*- tablegen -*-===//
#ifndef DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_TD
#define DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MixedPrecisionPass : Pass<"dlgraph-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Rewrites every function to bf16 or f16 compute by each op's precision class";
  let description = [{
    TODO(mixed precision): description written with the implementation.
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
