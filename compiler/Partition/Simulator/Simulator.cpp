//===- Simulator.cpp - pipeline schedule simulator ------------------------===//

#include "compiler/Partition/Simulator/Simulator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>

namespace dlc::partition {

using exec::PipelineAction;

double allReduceSeconds(int64_t gradientBytes, int64_t numReplicas,
                        double busBandwidth, double latencySeconds) {
  if (numReplicas <= 1)
    return 0;
  double d = double(numReplicas);
  return latencySeconds + 2.0 * (d - 1.0) / d * double(gradientBytes) /
                              busBandwidth;
}

static bool fail(std::string *error, const std::string &message) {
  if (error)
    *error = "pipeline simulator: " + message;
  return false;
}

static bool checkTime(double v, const std::string &what, std::string *error) {
  if (!std::isfinite(v) || v < 0)
    return fail(error, what + " must be a finite number >= 0 seconds, got " +
                           std::to_string(v));
  return true;
}

static bool validate(const PipelineConfig &c, std::string *error) {
  if (c.stages.empty())
    return fail(error, "the pipeline has no stages (need at least 1)");
  if (c.numMicroBatches < 1)
    return fail(error, "the number of micro-batches must be at least 1, got " +
                           std::to_string(c.numMicroBatches));
  if (c.numReplicas < 1)
    return fail(error, "the number of replicas must be at least 1, got " +
                           std::to_string(c.numReplicas));
  if (!checkTime(c.transferSeconds, "the boundary transfer time", error))
    return false;
  for (size_t s = 0; s < c.stages.size(); ++s) {
    const StageCost &st = c.stages[s];
    std::string name = "stage " + std::to_string(s);
    if (!checkTime(st.forwardSeconds, name + " forward time", error) ||
        !checkTime(st.backwardSeconds, name + " backward time", error) ||
        !checkTime(st.allReduceLatencySeconds, name + " all-reduce latency",
                   error))
      return false;
    if (st.activationBytes < 0 || st.parameterBytes < 0)
      return fail(error, name + " activation and parameter bytes must be >= 0");
    if (c.numReplicas > 1 && (!std::isfinite(st.allReduceBusBandwidth) ||
                              st.allReduceBusBandwidth <= 0))
      return fail(error, name + " all-reduce bus bandwidth must be > 0 bytes/s "
                                "with " + std::to_string(c.numReplicas) +
                                " replicas, got " +
                                std::to_string(st.allReduceBusBandwidth));
  }
  return true;
}

bool simulatePipeline(const PipelineConfig &config, SimulationResult &out,
                      std::string *error) {
  if (!validate(config, error))
    return false;
  const int64_t S = int64_t(config.stages.size());
  const int64_t M = config.numMicroBatches;
  std::vector<std::vector<PipelineAction>> schedule;
  if (!exec::buildPipelineSchedule(config.schedule, S, M, schedule, error))
    return false;

  // End times of every action; negative while not yet run.
  std::vector<std::vector<double>> fwdEnd(S, std::vector<double>(M, -1));
  std::vector<std::vector<double>> bwdEnd(S, std::vector<double>(M, -1));
  std::vector<size_t> next(S, 0);
  std::vector<double> stageFree(S, 0);
  std::vector<std::vector<TimelineEvent>> events(S);
  const double t = config.transferSeconds;

  // Run, stage by stage, every action whose inputs are ready, until all ran.
  // The times do not depend on the visiting order: each start is the max of
  // the stage's previous end and the inputs' ready times.
  int64_t remaining = S * 2 * M;
  while (remaining > 0) {
    bool progress = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < schedule[s].size()) {
        const PipelineAction &a = schedule[s][next[s]];
        const int64_t m = a.microBatch;
        double ready = stageFree[s];
        double duration;
        TimelineEvent::Kind kind;
        if (a.kind == PipelineAction::Kind::Forward) {
          if (s > 0) {
            if (fwdEnd[s - 1][m] < 0)
              break;
            ready = std::max(ready, fwdEnd[s - 1][m] + t);
          }
          duration = config.stages[s].forwardSeconds;
          kind = TimelineEvent::Kind::Forward;
        } else {
          if (fwdEnd[s][m] < 0)
            return fail(error, "schedule runs Backward(" + std::to_string(m) +
                                   ") before Forward(" + std::to_string(m) +
                                   ") on stage " + std::to_string(s));
          ready = std::max(ready, fwdEnd[s][m]);
          if (s + 1 < S) {
            if (bwdEnd[s + 1][m] < 0)
              break;
            ready = std::max(ready, bwdEnd[s + 1][m] + t);
          }
          duration = config.stages[s].backwardSeconds;
          kind = TimelineEvent::Kind::Backward;
        }
        double end = ready + duration;
        (a.kind == PipelineAction::Kind::Forward ? fwdEnd : bwdEnd)[s][m] = end;
        stageFree[s] = end;
        events[s].push_back({s, kind, m, ready, end});
        ++next[s];
        --remaining;
        progress = true;
      }
    }
    if (!progress)
      return fail(error, "the schedule deadlocks (no stage can run its next "
                         "action)");
  }

  out = SimulationResult();
  out.stages.resize(S);
  for (int64_t s = 0; s < S; ++s) {
    const StageCost &c = config.stages[s];
    StageReport &r = out.stages[s];
    r.busySeconds = double(M) * (c.forwardSeconds + c.backwardSeconds);
    r.computeEndSeconds = stageFree[s];
    r.allReduceSeconds =
        allReduceSeconds(c.parameterBytes, config.numReplicas,
                         c.allReduceBusBandwidth, c.allReduceLatencySeconds);
    int64_t inFlight = 0;
    for (const PipelineAction &a : schedule[s]) {
      inFlight += a.kind == PipelineAction::Kind::Forward ? 1 : -1;
      r.peakInFlight = std::max(r.peakInFlight, inFlight);
    }
    r.peakActivationBytes = r.peakInFlight * c.activationBytes;
    out.pipelineSeconds = std::max(out.pipelineSeconds, r.computeEndSeconds);
    out.stepSeconds =
        std::max(out.stepSeconds, r.computeEndSeconds + r.allReduceSeconds);
  }
  double busy = 0;
  for (int64_t s = 0; s < S; ++s) {
    StageReport &r = out.stages[s];
    r.idleSeconds = out.pipelineSeconds - r.busySeconds;
    busy += r.busySeconds;
    for (const TimelineEvent &e : events[s])
      out.timeline.push_back(e);
    if (config.numReplicas > 1)
      out.timeline.push_back({s, TimelineEvent::Kind::AllReduce, -1,
                              r.computeEndSeconds,
                              r.computeEndSeconds + r.allReduceSeconds});
  }
  out.bubbleFraction =
      out.pipelineSeconds > 0 ? 1.0 - busy / (double(S) * out.pipelineSeconds)
                              : 0.0;
  out.idealBubbleFraction = double(S - 1) / double(M + S - 1);
  return true;
}

void printSimulationTable(const PipelineConfig &config,
                          const SimulationResult &result, std::ostream &os) {
  char line[256];
  const int64_t S = int64_t(result.stages.size());
  std::snprintf(line, sizeof(line),
                "pipeline: %lld stages, %lld micro-batches, schedule %s, "
                "%lld replicas\n",
                (long long)S, (long long)config.numMicroBatches,
                exec::pipelineScheduleName(config.schedule),
                (long long)config.numReplicas);
  os << line;
  os << "stage      busy (s)      idle (s)  all-reduce (s)  in-flight  "
        "peak activation (bytes)\n";
  for (int64_t s = 0; s < S; ++s) {
    const StageReport &r = result.stages[s];
    std::snprintf(line, sizeof(line), "%5lld  %12.6g  %12.6g  %14.6g  %9lld  %23lld\n",
                  (long long)s, r.busySeconds, r.idleSeconds,
                  r.allReduceSeconds, (long long)r.peakInFlight,
                  (long long)r.peakActivationBytes);
    os << line;
  }
  std::snprintf(line, sizeof(line),
                "bubble fraction: %.4f (GPipe, equal stages: (S-1)/(M+S-1) = "
                "%.4f)\n",
                result.bubbleFraction, result.idealBubbleFraction);
  os << line;
  std::snprintf(line, sizeof(line),
                "step time: %.6g s (pipeline %.6g s + all-reduce %.6g s)\n",
                result.stepSeconds, result.pipelineSeconds,
                result.stepSeconds - result.pipelineSeconds);
  os << line;
}

std::string simulationTraceJson(const SimulationResult &result) {
  using nlohmann::json;
  json events = json::array();
  for (size_t s = 0; s < result.stages.size(); ++s) {
    auto meta = [&](const char *what, int tid, const std::string &name) {
      events.push_back({{"name", what},
                        {"ph", "M"},
                        {"pid", s},
                        {"tid", tid},
                        {"args", {{"name", name}}}});
    };
    meta("process_name", 0, "stage " + std::to_string(s));
    meta("thread_name", 0, "compute");
    meta("thread_name", 1, "communication");
  }
  for (const TimelineEvent &e : result.timeline) {
    std::string name, cat;
    int tid = 0;
    switch (e.kind) {
    case TimelineEvent::Kind::Forward:
      name = "F" + std::to_string(e.microBatch);
      cat = "forward";
      break;
    case TimelineEvent::Kind::Backward:
      name = "B" + std::to_string(e.microBatch);
      cat = "backward";
      break;
    case TimelineEvent::Kind::AllReduce:
      name = "all-reduce";
      cat = "all-reduce";
      tid = 1;
      break;
    }
    json ev = {{"name", name},
               {"cat", cat},
               {"ph", "X"},
               {"pid", e.stage},
               {"tid", tid},
               // Microseconds, the format's unit.
               {"ts", e.startSeconds * 1e6},
               {"dur", (e.endSeconds - e.startSeconds) * 1e6}};
    if (e.microBatch >= 0)
      ev["args"] = {{"micro_batch", e.microBatch}};
    events.push_back(std::move(ev));
  }
  json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump() + "\n";
}

bool writeSimulationTrace(const SimulationResult &result,
                          const std::string &path, std::string *error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return fail(error, "cannot write the trace '" + path +
                           "': " + std::strerror(errno));
  out << simulationTraceJson(result);
  out.close();
  if (!out)
    return fail(error, "cannot write the trace '" + path + "'");
  return true;
}

} // namespace dlc::partition
