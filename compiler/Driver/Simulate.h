//===- Simulate.h - `dlc --simulate` on the partition record ---*- C++ -*-===//
//
// Builds the simulator's PipelineConfig (compiler/Partition/Simulator) from
// dlgraph-partition-pipeline's record on @main, or from measured stage times,
// and prints its table (docs/pipeline.md, "Simulating a pipeline").
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_DRIVER_SIMULATE_H
#define DLC_COMPILER_DRIVER_SIMULATE_H

#include "compiler/Driver/Driver.h"
#include "compiler/Partition/Simulator/Simulator.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace dlc {

/// Measured times of a pipeline (`--stage-times FILE.json`):
/// {"stages": [{"forward": s, "backward": s}, ...], "transfer": s}.
struct StageTimes {
  /// Per stage, stage 0 first: forward and backward of one micro-batch,
  /// seconds (>= 0).
  std::vector<std::pair<double, double>> stages;
  /// Boundary transfer of one micro-batch in one direction, seconds (>= 0);
  /// unset: the cost model's.
  std::optional<double> transferSeconds;
};

/// Parses --stage-times JSON text. |name| names the source in errors.
/// Errors (one line each, naming the file): malformed JSON, a top level that
/// is not an object with a "stages" array, an unknown key, a stage without
/// "forward" or "backward", a time that is not a number >= 0, and a stage
/// count other than |numStages|.
llvm::Expected<StageTimes> parseStageTimesJSON(llvm::StringRef text,
                                               llvm::StringRef name,
                                               int64_t numStages);

/// The simulator's input from the `dlgraph.pipeline.stages` record on
/// @main of |module| (after dlgraph-partition-pipeline): per stage its
/// forward and backward (seconds per micro-batch), activation_bytes and
/// param_bytes; the all-reduce bus bandwidth and latency of the device
/// model |options.deviceModel| (all_reduce_busbw, link_latency); the
/// slowest boundary's transfer time (the simulator takes one for all
/// boundaries); M, the schedule and D from |options|. |times|, when given,
/// replaces the forward, backward and (if it has one) transfer times.
/// Errors: no record on @main, an unknown device model or schedule.
llvm::Expected<partition::PipelineConfig>
buildSimulationConfig(mlir::ModuleOp module, const CompileOptions &options,
                      const StageTimes *times);

/// `dlc --simulate`: reads --stage-times (if given), builds the config,
/// simulates one step and prints to stdout |stageStats| (the --stats lines
/// of the split, when options.stats), a line naming where the times come
/// from, and printSimulationTable; writes --simulate-trace (if given).
/// Every error is one line `dlc: error: <message>` on stderr.
mlir::LogicalResult simulatePipelineStep(mlir::ModuleOp module,
                                         const CompileOptions &options,
                                         llvm::StringRef stageStats);

} // namespace dlc

#endif // DLC_COMPILER_DRIVER_SIMULATE_H
