//===- PipelineSchedule.h - GPipe and 1F1B pipeline schedules ---*- C++ -*-===//
//
// The ordered list of actions each pipeline stage runs in one training step.
// MLIR-free and LLVM-free: the runtime includes it.
//
// Sends and receives are implied by the neighbours: the output of Forward(m)
// on stage s goes to stage s+1, the input gradient of Backward(m) on stage s
// goes to stage s-1.
//
//===----------------------------------------------------------------------===//

#ifndef DLC_RUNTIME_SCHEMA_PIPELINESCHEDULE_H
#define DLC_RUNTIME_SCHEMA_PIPELINESCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlc::exec {

/// Which pipeline schedule a step runs.
enum class PipelineScheduleKind {
  /// GPipe (Huang et al. 2019, "GPipe: Efficient Training of Giant Neural
  /// Networks using Pipeline Parallelism"): every stage runs all M forwards,
  /// then all M backwards. Backwards run in the same order as the forwards
  /// (micro-batch 0 first), as PyTorch's ScheduleGPipe does: with equal
  /// stages the step time is the same either way, and first-in first-out
  /// frees activations in the order they were made, the order 1F1B uses too,
  /// so the two schedules differ only in where the backwards are placed.
  GPipe,
  /// 1F1B / PipeDream-Flush (Narayanan et al. 2021, "Efficient Large-Scale
  /// Language Model Training on GPU Clusters Using Megatron-LM", sec. 2.2):
  /// stage s runs a warm-up of min(S - s - 1, M) forwards, then alternates
  /// one forward and one backward, then a cool-down of the remaining
  /// backwards. At most min(S - s, M) micro-batches are in flight on stage s.
  OneFOneB,
};

/// One action of a stage: the forward or the backward of one micro-batch.
struct PipelineAction {
  enum class Kind { Forward, Backward };
  Kind kind;
  /// Micro-batch index in [0, M).
  int64_t microBatch;

  bool operator==(const PipelineAction &other) const {
    return kind == other.kind && microBatch == other.microBatch;
  }
};

/// Parses a schedule name: "gpipe" or "1f1b". On an unknown name returns
/// std::nullopt and sets |*error| (if non-null) to a one-line message naming
/// the name and the supported ones.
std::optional<PipelineScheduleKind> parsePipelineSchedule(std::string_view name,
                                                          std::string *error);

/// The name parsePipelineSchedule accepts for |kind|: "gpipe" or "1f1b".
const char *pipelineScheduleName(PipelineScheduleKind kind);

/// Short text of an action: "F3" for Forward(3), "B3" for Backward(3).
std::string formatPipelineAction(const PipelineAction &action);

/// The actions stage |stage| of |numStages| runs, in order, for
/// |numMicroBatches| micro-batches. Each micro-batch appears exactly once as
/// a forward and once as a backward, its forward first. Returns false and
/// sets |*error| (if non-null) when numStages < 1, numMicroBatches < 1 or
/// stage is not in [0, numStages).
bool buildStageSchedule(PipelineScheduleKind kind, int64_t numStages,
                        int64_t stage, int64_t numMicroBatches,
                        std::vector<PipelineAction> &out, std::string *error);

/// buildStageSchedule for every stage: |out|[s] is stage s's list.
bool buildPipelineSchedule(PipelineScheduleKind kind, int64_t numStages,
                           int64_t numMicroBatches,
                           std::vector<std::vector<PipelineAction>> &out,
                           std::string *error);

} // namespace dlc::exec

#endif // DLC_RUNTIME_SCHEMA_PIPELINESCHEDULE_H
