//===- Simulator.h - pipeline schedule simulator ----------------*- C++ -*-===//
//
// Simulates one training step of a pipeline of S stages running M
// micro-batches under a schedule (GPipe or 1F1B), with D data-parallel
// replicas of the pipeline. MLIR-free. Times are in seconds, sizes in bytes,
// bandwidths in bytes/s.
//
// The simulation follows the dependencies only:
//   Forward(s, m)  starts after Forward(s-1, m) ends + the boundary transfer;
//   Backward(s, m) starts after Backward(s+1, m) ends + the boundary transfer
//                  and after Forward(s, m) ends;
// and each stage runs its actions in schedule order, one at a time. The
// transfer does not occupy either stage (it overlaps compute).
//
//===----------------------------------------------------------------------===//

#ifndef DLC_COMPILER_PARTITION_SIMULATOR_SIMULATOR_H
#define DLC_COMPILER_PARTITION_SIMULATOR_SIMULATOR_H

#include "runtime/schema/PipelineSchedule.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace dlc::partition {

/// The cost of one pipeline stage.
struct StageCost {
  /// Forward time of one micro-batch, seconds.
  double forwardSeconds = 0;
  /// Backward time of one micro-batch, seconds.
  double backwardSeconds = 0;
  /// Activation bytes one micro-batch holds on this stage from the start of
  /// its forward to the end of its backward.
  int64_t activationBytes = 0;
  /// Parameter bytes of the stage; its gradients, all-reduced across the D
  /// replicas, are the same size.
  int64_t parameterBytes = 0;
  /// All-reduce bus bandwidth among this stage's D replicas, bytes/s (the
  /// "busbw" nccl-tests reports). Only used when D > 1; must then be > 0.
  double allReduceBusBandwidth = 0;
  /// All-reduce fixed latency, seconds. Only used when D > 1.
  double allReduceLatencySeconds = 0;
};

/// What to simulate.
struct PipelineConfig {
  /// One entry per stage, stage 0 first (S = stages.size() >= 1).
  std::vector<StageCost> stages;
  /// Time to move one micro-batch's boundary tensor between neighbouring
  /// stages, seconds, the same in each direction (activation forward,
  /// gradient backward).
  double transferSeconds = 0;
  /// M >= 1.
  int64_t numMicroBatches = 1;
  exec::PipelineScheduleKind schedule = exec::PipelineScheduleKind::GPipe;
  /// D >= 1 data-parallel replicas of the whole pipeline.
  int64_t numReplicas = 1;
};

/// One interval of the simulated timeline.
struct TimelineEvent {
  enum class Kind { Forward, Backward, AllReduce };
  int64_t stage;
  Kind kind;
  /// Micro-batch index; -1 for AllReduce.
  int64_t microBatch;
  /// Seconds from the start of the step.
  double startSeconds;
  double endSeconds;
};

/// Per-stage results.
struct StageReport {
  /// Sum of forward and backward times, seconds.
  double busySeconds = 0;
  /// Idle (bubble) time within the pipeline phase: pipelineSeconds -
  /// busySeconds, seconds.
  double idleSeconds = 0;
  /// End of the stage's last backward, seconds.
  double computeEndSeconds = 0;
  /// All-reduce time of the stage's gradients, seconds (0 when D = 1).
  double allReduceSeconds = 0;
  /// Most micro-batches whose forward has started and backward not ended.
  int64_t peakInFlight = 0;
  /// peakInFlight * activationBytes.
  int64_t peakActivationBytes = 0;
};

/// The outcome of simulatePipeline.
struct SimulationResult {
  std::vector<StageReport> stages;
  /// Max over stages of computeEndSeconds (the step without all-reduce).
  double pipelineSeconds = 0;
  /// Max over stages of computeEndSeconds + allReduceSeconds.
  double stepSeconds = 0;
  /// 1 - sum(busy) / (S * pipelineSeconds).
  double bubbleFraction = 0;
  /// GPipe's bubble fraction with equal stages and free transfers,
  /// (S-1)/(M+S-1) (Huang et al. 2019; Narayanan et al. 2021, sec. 2.2),
  /// for comparison.
  double idealBubbleFraction = 0;
  /// Every action and all-reduce, ordered by stage, then by start time.
  std::vector<TimelineEvent> timeline;
};

/// All-reduce time of |gradientBytes| among |numReplicas| replicas with the
/// ring model used by nccl-tests (PERFORMANCE.md, "bus bandwidth"):
/// latency + 2(D-1)/D * bytes / busbw, seconds; 0 when D = 1.
double allReduceSeconds(int64_t gradientBytes, int64_t numReplicas,
                        double busBandwidth, double latencySeconds);

/// Simulates one step of |config|. The all-reduce of a stage's gradients
/// starts when that stage's last backward ends and does not overlap compute,
/// like PyTorch DDP with overlap turned off (gradient buckets reduced after
/// the backward). Returns false and sets |*error| (if non-null) to a one-line
/// message on bad input: no stages, M < 1, D < 1, a negative or non-finite
/// time or size, busbw <= 0 with D > 1.
bool simulatePipeline(const PipelineConfig &config, SimulationResult &out,
                      std::string *error);

/// Prints the table issue 13 asks for: per stage busy, idle, all-reduce and
/// peak activation; the bubble fraction next to (S-1)/(M+S-1); the step time.
void printSimulationTable(const PipelineConfig &config,
                          const SimulationResult &result, std::ostream &os);

/// The timeline as Chrome trace JSON (the format runtime/src/Trace.cpp
/// writes): "X" events with pid = stage, tid 0 compute (forwards and
/// backwards), tid 1 communication (all-reduces), ts and dur in µs, plus "M"
/// events naming the processes and threads.
std::string simulationTraceJson(const SimulationResult &result);

/// Writes simulationTraceJson to |path|. Returns false and sets |*error| (if
/// non-null) when the file cannot be written.
bool writeSimulationTrace(const SimulationResult &result,
                          const std::string &path, std::string *error);

} // namespace dlc::partition

#endif // DLC_COMPILER_PARTITION_SIMULATOR_SIMULATOR_H
