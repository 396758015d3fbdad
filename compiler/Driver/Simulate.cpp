//===- Simulate.cpp - `dlc --simulate`: the pipeline simulator on @main ---===//

#include "compiler/Driver/Simulate.h"

#include "compiler/Partition/DeviceModel.h"
#include "dialects/Graph/GraphAttributes.h"
#include "runtime/schema/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <sstream>

using namespace llvm;

namespace dlc {

namespace {
Error stageTimesError(StringRef name, const Twine &message) {
  return createStringError(inconvertibleErrorCode(), "--stage-times '" +
                                                         name.str() +
                                                         "': " + message.str());
}

constexpr StringLiteral kStageTimesShape =
    "expected {\"stages\": [{\"forward\": s, \"backward\": s}, ...], "
    "\"transfer\": s} (seconds per micro-batch; \"transfer\" optional)";

/// The number >= 0 at |key| of |obj|; |where| names it in errors.
Expected<double> readSeconds(const json::Object &obj, StringRef key,
                             StringRef name, const Twine &where) {
  std::string prefix = where.str();
  if (!prefix.empty())
    prefix += " ";
  const json::Value *v = obj.get(key);
  if (!v)
    return stageTimesError(name, prefix + "has no '" + key + "'");
  std::optional<double> d = v->getAsNumber();
  if (!d || !(*d >= 0) || !std::isfinite(*d)) {
    std::string text;
    raw_string_ostream os(text);
    os << *v;
    return stageTimesError(name, prefix + "'" + key +
                                     "' must be a number >= 0 (seconds), got " +
                                     text);
  }
  return *d;
}
} // namespace

Expected<StageTimes> parseStageTimesJSON(StringRef text, StringRef name,
                                         int64_t numStages) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return stageTimesError(name,
                           "malformed JSON: " + toString(parsed.takeError()));
  const json::Object *top = parsed->getAsObject();
  const json::Array *stages =
      top && top->get("stages") ? top->get("stages")->getAsArray() : nullptr;
  if (!stages)
    return stageTimesError(name, kStageTimesShape);
  for (const auto &kv : *top)
    if (kv.first != "stages" && kv.first != "transfer")
      return stageTimesError(name, "unknown key '" + kv.first.str() +
                                       "' (supported: stages, transfer)");
  if (int64_t(stages->size()) != numStages)
    return stageTimesError(name, Twine(stages->size()) +
                                     " stages given, --pipeline-stages is " +
                                     Twine(numStages));
  StageTimes times;
  for (auto [i, v] : llvm::enumerate(*stages)) {
    std::string where = "stage " + std::to_string(i);
    const json::Object *stage = v.getAsObject();
    if (!stage)
      return stageTimesError(name,
                             where + " is not an object; " + kStageTimesShape);
    for (const auto &kv : *stage)
      if (kv.first != "forward" && kv.first != "backward")
        return stageTimesError(name, where + ": unknown key '" +
                                         kv.first.str() +
                                         "' (supported: forward, backward)");
    Expected<double> fwd = readSeconds(*stage, "forward", name, where);
    if (!fwd)
      return fwd.takeError();
    Expected<double> bwd = readSeconds(*stage, "backward", name, where);
    if (!bwd)
      return bwd.takeError();
    times.stages.push_back({*fwd, *bwd});
  }
  if (top->get("transfer")) {
    Expected<double> t = readSeconds(*top, "transfer", name, "");
    if (!t)
      return t.takeError();
    times.transferSeconds = *t;
  }
  return times;
}

Expected<partition::PipelineConfig>
buildSimulationConfig(mlir::ModuleOp module, const CompileOptions &options,
                      const StageTimes *times) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  auto record =
      main ? main->getAttrOfType<mlir::ArrayAttr>(graph::kPipelineStagesAttr)
           : mlir::ArrayAttr();
  if (!record)
    return error("--simulate: @main has no dlgraph.pipeline.stages record "
                 "(dlgraph-partition-pipeline did not run)");
  Expected<DeviceModel> model = loadDeviceModel(options.pipeline.deviceModel);
  if (!model)
    return model.takeError();
  std::string scheduleError;
  std::optional<exec::PipelineScheduleKind> schedule =
      exec::parsePipelineSchedule(options.pipeline.schedule, &scheduleError);
  if (!schedule)
    return error("--schedule: " + scheduleError);

  partition::PipelineConfig config;
  config.numMicroBatches = options.pipeline.microbatches;
  config.numReplicas = options.replicas;
  config.schedule = *schedule;
  auto number = [](mlir::DictionaryAttr d, StringRef key) {
    auto f = d.getAs<mlir::FloatAttr>(key);
    return f ? f.getValueAsDouble() : 0.0;
  };
  auto integer = [](mlir::DictionaryAttr d, StringRef key) {
    auto i = d.getAs<mlir::IntegerAttr>(key);
    return i ? i.getInt() : int64_t(0);
  };
  for (auto [i, a] : llvm::enumerate(record)) {
    auto d = cast<mlir::DictionaryAttr>(a);
    partition::StageCost stage;
    stage.forwardSeconds = number(d, "forward");
    stage.backwardSeconds = number(d, "backward");
    stage.activationBytes = integer(d, "activation_bytes");
    stage.parameterBytes = integer(d, "param_bytes");
    stage.allReduceBusBandwidth = model->allReduceBusBandwidth;
    stage.allReduceLatencySeconds = model->linkLatency;
    if (times) {
      stage.forwardSeconds = times->stages[i].first;
      stage.backwardSeconds = times->stages[i].second;
    }
    // The simulator has one transfer time for every boundary: the slowest.
    if (i + 1 < record.size())
      config.transferSeconds =
          std::max(config.transferSeconds, number(d, "transfer"));
    config.stages.push_back(stage);
  }
  if (times && times->transferSeconds)
    config.transferSeconds = *times->transferSeconds;
  return config;
}

mlir::LogicalResult simulatePipelineStep(mlir::ModuleOp module,
                                         const CompileOptions &options,
                                         StringRef stageStats) {
  auto fail = [](const Twine &message) {
    llvm::errs() << "dlc: error: " << message << "\n";
    return mlir::failure();
  };
  std::optional<StageTimes> times;
  if (!options.stageTimes.empty()) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> buf =
        MemoryBuffer::getFile(options.stageTimes);
    if (!buf)
      return fail("--stage-times '" + options.stageTimes +
                  "': cannot read: " + buf.getError().message());
    Expected<StageTimes> parsed = parseStageTimesJSON(
        (*buf)->getBuffer(), options.stageTimes, options.pipeline.pipelineStages);
    if (!parsed)
      return fail(toString(parsed.takeError()));
    times = std::move(*parsed);
  }
  Expected<partition::PipelineConfig> config =
      buildSimulationConfig(module, options, times ? &*times : nullptr);
  if (!config)
    return fail(toString(config.takeError()));
  partition::SimulationResult result;
  std::string error;
  if (!partition::simulatePipeline(*config, result, &error))
    return fail(error);
  if (!options.simulateTrace.empty() &&
      !partition::writeSimulationTrace(result, options.simulateTrace, &error))
    return fail(error);

  if (options.stats)
    llvm::outs() << stageStats;
  llvm::outs() << "times: "
               << (times ? "--stage-times '" + options.stageTimes + "'"
                         : "cost model, device model " + options.pipeline.deviceModel)
               << "; transfer " << llvm::format("%.6g", config->transferSeconds)
               << " s per boundary and micro-batch"
               << (times && times->transferSeconds ? "" : " (cost model)")
               << "\n";
  std::ostringstream table;
  partition::printSimulationTable(*config, result, table);
  llvm::outs() << table.str();
  return mlir::success();
}

} // namespace dlc
