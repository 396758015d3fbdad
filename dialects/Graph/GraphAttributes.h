//===- GraphAttributes.h - dlgraph.* attributes between phases --*- C++ -*-===//
//
// Every discardable `dlgraph.*` attribute that carries information from one
// phase to the next is declared here, with who writes it, who reads it, where
// it may appear and its kind. GraphDialect::verifyOperationAttribute (and the
// argument and result verifiers) check each one and reject any other
// `dlgraph.`-prefixed discardable attribute (docs/architecture.md, "How
// phases talk").
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_GRAPH_GRAPHATTRIBUTES_H
#define DLC_DIALECTS_GRAPH_GRAPHATTRIBUTES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace dlc::graph {

/// String attribute on function arguments and results: the graph input or
/// output name. Written by the importer and the training passes; read by the
/// training passes and the lowering (the package's input and output names).
constexpr llvm::StringLiteral kNameAttr = "dlgraph.name";

/// String attribute on the module: the ONNX graph's name. Written by the
/// importer; read by no pass yet (the package's model name is the input
/// file's stem).
constexpr llvm::StringLiteral kModelNameAttr = "dlgraph.model_name";

/// Unit attribute on `dlgraph.variable`s the optimizer, loss scaling and the
/// pipeline split create. Read by the lowering: they become `optimizer_state`
/// buffers.
constexpr llvm::StringLiteral kOptimizerStateAttr = "dlgraph.optimizer_state";

/// String attribute on the `dlgraph.variable`s the training step keeps
/// constant (no gradient, no optimizer state): why ("--freeze", "not in
/// --trainable", or the trainable-set rule's reason). Written by
/// dlgraph-differentiate; read by `dlc --stats`.
constexpr llvm::StringLiteral kFrozenAttr = "dlgraph.frozen";

/// Unit attribute on the trained `dlgraph.variable`s --no-weight-decay
/// updates without weight decay. Written and read by dlgraph-apply-optimizer;
/// read by `dlc --stats`.
constexpr llvm::StringLiteral kNoWeightDecayAttr = "dlgraph.no_weight_decay";

/// Non-negative i64 on an op in a function: its pipeline stage. Written by
/// dlgraph-partition-pipeline on @main and carried by the training passes to
/// the ops they create from it; read by dlgraph-split-pipeline-stages, which
/// removes it (docs/pipeline.md).
constexpr llvm::StringLiteral kStageAttr = "dlgraph.stage";

/// Unit attribute on an op in a function: in a staged @train_step, created by
/// the backward pass (with the stage of the forward op it differentiates).
/// Written by the autodiff (StageTagger); read and removed by
/// dlgraph-split-pipeline-stages.
constexpr llvm::StringLiteral kBackwardAttr = "dlgraph.backward";

/// Array of dictionaries on a function (@main), one per pipeline stage:
/// `ops`, `param_bytes`, `activation_bytes` (i64), `cost`, `forward`,
/// `backward`, `transfer` (f64 seconds), `first`, `last` (ONNX node names).
/// Written by dlgraph-partition-pipeline; read by `dlc --stats` and
/// `dlc --simulate`.
constexpr llvm::StringLiteral kPipelineStagesAttr = "dlgraph.pipeline.stages";

/// Dictionary on the module: the pipeline record, `micro_batches`,
/// `loss_stage` (i64), `schedule` (string), `stages`, `transfers` (arrays of
/// dictionaries) and `inputs` (array of strings). Written by
/// dlgraph-split-pipeline-stages; the conversion to dlexec moves it to
/// `dlexec.pipeline` (dialects/Exec/ExecAttributes.h) for the package writer.
constexpr llvm::StringLiteral kPipelineAttr = "dlgraph.pipeline";

/// Array of dictionaries on a function (@train_step), one per gradient
/// bucket in issue order: `bytes` (i64) and `gradients` (array of
/// "<parameter>.grad" strings, packing order). Written by
/// dlgraph-data-parallel; the conversion to dlexec carries it to
/// `dlexec.data_parallel.buckets` for `dlc --stats`.
constexpr llvm::StringLiteral kBucketsAttr = "dlgraph.data_parallel.buckets";

/// Unit attribute on the ops dlgraph-remat cloned into the backward.
constexpr llvm::StringLiteral kRecomputedAttr = "dlgraph.recomputed";

/// The prefix of dlgraph-remat's summary on a function (@train_step): one
/// i64 attribute per key of records::kRematSummaryKeys
/// (dialects/PhaseRecords.h). Read by the memory budget
/// search; the conversion to dlexec carries them to `dlexec.remat.<key>` for
/// `dlc --stats`.
constexpr llvm::StringLiteral kRematSummaryPrefix = "dlgraph.remat.";

/// Dictionary on the module: the memory budget search's record, `budget`,
/// `persistent_before`, `inputs_before`, `arena_before`, `workspace_before`
/// (i64 bytes) and `mode` (the dlgraph-remat mode that fit). Written by
/// dlc-fit-memory-budget; read by `dlc --stats` (readMemoryBudgetFit).
constexpr llvm::StringLiteral kMemoryBudgetAttr = "dlgraph.memory_budget";

/// Dictionary on the module: dlgraph-fuse-attention's record, `candidates`
/// and `fused` (i64 counts) and `unfused` (array of "<node>: <reason>"
/// strings). Written by dlgraph-fuse-attention; read by `dlc --stats`
/// (readAttentionFusionRecord, compiler/GraphFusion/Passes.h); removed by the
/// conversion to dlexec.
constexpr llvm::StringLiteral kAttentionFusionAttr = "dlgraph.attention_fusion";

/// Every declared name, the remat summary's as "dlgraph.remat.<key>" (for
/// diagnostics).
std::vector<std::string> declaredAttributeNames();

} // namespace dlc::graph

#endif // DLC_DIALECTS_GRAPH_GRAPHATTRIBUTES_H
