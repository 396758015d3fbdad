//===- PipelineSchedule.cpp - GPipe and 1F1B pipeline schedules -----------===//

#include "runtime/schema/PipelineSchedule.h"

#include <algorithm>

namespace dlc::exec {

std::optional<PipelineScheduleKind> parsePipelineSchedule(std::string_view name,
                                                          std::string *error) {
  if (name == "gpipe")
    return PipelineScheduleKind::GPipe;
  if (name == "1f1b")
    return PipelineScheduleKind::OneFOneB;
  if (error)
    *error = "unknown pipeline schedule '" + std::string(name) +
             "' (supported: gpipe, 1f1b)";
  return std::nullopt;
}

const char *pipelineScheduleName(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::GPipe ? "gpipe" : "1f1b";
}

std::string formatPipelineAction(const PipelineAction &action) {
  return (action.kind == PipelineAction::Kind::Forward ? "F" : "B") +
         std::to_string(action.microBatch);
}

static bool checkSizes(int64_t numStages, int64_t numMicroBatches,
                       std::string *error) {
  if (numStages < 1) {
    if (error)
      *error = "pipeline schedule: the number of stages must be at least 1, "
               "got " + std::to_string(numStages);
    return false;
  }
  if (numMicroBatches < 1) {
    if (error)
      *error = "pipeline schedule: the number of micro-batches must be at "
               "least 1, got " + std::to_string(numMicroBatches);
    return false;
  }
  return true;
}

bool buildStageSchedule(PipelineScheduleKind kind, int64_t numStages,
                        int64_t stage, int64_t numMicroBatches,
                        std::vector<PipelineAction> &out, std::string *error) {
  if (!checkSizes(numStages, numMicroBatches, error))
    return false;
  if (stage < 0 || stage >= numStages) {
    if (error)
      *error = "pipeline schedule: stage " + std::to_string(stage) +
               " is out of range [0, " + std::to_string(numStages) + ")";
    return false;
  }
  using Kind = PipelineAction::Kind;
  const int64_t m = numMicroBatches;
  out.clear();
  out.reserve(2 * m);
  if (kind == PipelineScheduleKind::GPipe) {
    for (int64_t i = 0; i < m; ++i)
      out.push_back({Kind::Forward, i});
    for (int64_t i = 0; i < m; ++i)
      out.push_back({Kind::Backward, i});
    return true;
  }
  // 1F1B: warm-up, steady state (one forward, one backward), cool-down.
  const int64_t warmup = std::min(numStages - stage - 1, m);
  for (int64_t i = 0; i < warmup; ++i)
    out.push_back({Kind::Forward, i});
  for (int64_t i = 0; i < m - warmup; ++i) {
    out.push_back({Kind::Forward, warmup + i});
    out.push_back({Kind::Backward, i});
  }
  for (int64_t i = m - warmup; i < m; ++i)
    out.push_back({Kind::Backward, i});
  return true;
}

bool buildPipelineSchedule(PipelineScheduleKind kind, int64_t numStages,
                           int64_t numMicroBatches,
                           std::vector<std::vector<PipelineAction>> &out,
                           std::string *error) {
  if (!checkSizes(numStages, numMicroBatches, error))
    return false;
  out.assign(numStages, {});
  for (int64_t s = 0; s < numStages; ++s)
    if (!buildStageSchedule(kind, numStages, s, numMicroBatches, out[s], error))
      return false;
  return true;
}

} // namespace dlc::exec
