//===- Passes.h - mixed precision and loss scaling --------------*- C++ -*-===//
//
// The mixed-precision pass family (docs/mixed-precision.md): the cast policy
// of `--precision` and in-graph dynamic loss scaling (`--loss-scale`), with
// the one set of defaults that the passes' options, PipelineOptions and
// `dlc`'s flags share.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_H
#define DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_H

#include "dialects/Graph/GraphDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace dlc {

/// Defaults of mixed precision. The loss-scaling ones are
/// torch.cuda.amp.GradScaler's (init_scale=2**16, growth_factor=2.0,
/// backoff_factor=0.5, growth_interval=2000).
struct MixedPrecisionDefaults {
  static constexpr const char *kPrecision = "fp32";
  static constexpr double kInitScale = 65536.0;
  static constexpr double kGrowthFactor = 2.0;
  static constexpr double kBackoffFactor = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;
};

/// The values `--precision` accepts: "fp32", "bf16", "fp16".
llvm::ArrayRef<llvm::StringLiteral> supportedPrecisions();

#define GEN_PASS_DECL
#include "compiler/Training/MixedPrecision/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Training/MixedPrecision/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_TRAINING_MIXEDPRECISION_PASSES_H
