//===- Passes.h - the graph fusion phase's passes ---------------*- C++ -*-===//
//
// dlgraph fusions before the training step (Passes.td): attention.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_GRAPHFUSION_PASSES_H
#define DLC_COMPILER_GRAPHFUSION_PASSES_H

#include "compiler/Support/OptionsBinder.h"
#include "dialects/Graph/GraphDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>
#include <vector>

namespace dlc {

/// The graph fusion phase's options.
struct FusionOptions {
  /// Replace decomposed attention by dlgraph.attention
  /// (dlgraph-fuse-attention).
  bool fuseAttention = true;

  void bindOptions(OptionsBinder &binder);
  /// The one validation of these values; "" (every value is valid).
  std::string check() const { return ""; }
};

/// What dlgraph-fuse-attention recorded on |module|
/// (`dlgraph.attention_fusion`): the candidates, how many were fused, and
/// "<node>: <reason>" for each left alone. nullopt when it did not run.
struct AttentionFusionRecord {
  int64_t candidates = 0, fused = 0;
  std::vector<std::string> unfused;
};
std::optional<AttentionFusionRecord>
readAttentionFusionRecord(mlir::ModuleOp module);

#define GEN_PASS_DECL
#include "compiler/GraphFusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/GraphFusion/Passes.h.inc"

} // namespace dlc

#endif // DLC_COMPILER_GRAPHFUSION_PASSES_H
