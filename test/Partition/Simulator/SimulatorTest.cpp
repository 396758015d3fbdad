//===- SimulatorTest.cpp - pipeline schedules and the simulator -----------===//

#include "compiler/Partition/Simulator/Simulator.h"
#include "runtime/schema/PipelineSchedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

using namespace dlc;
using exec::PipelineAction;
using exec::PipelineScheduleKind;
using partition::PipelineConfig;
using partition::SimulationResult;
using partition::StageCost;

namespace {

std::string joined(const std::vector<PipelineAction> &actions) {
  std::string s;
  for (const PipelineAction &a : actions)
    s += (s.empty() ? "" : " ") + exec::formatPipelineAction(a);
  return s;
}

PipelineConfig equalStages(int64_t S, int64_t M, PipelineScheduleKind kind,
                           double f = 1.0, double b = 2.0) {
  PipelineConfig c;
  c.stages.assign(S, StageCost{f, b, /*activationBytes=*/1000, 0, 0, 0});
  c.numMicroBatches = M;
  c.schedule = kind;
  return c;
}

SimulationResult simulate(const PipelineConfig &c) {
  SimulationResult r;
  std::string error;
  EXPECT_TRUE(partition::simulatePipeline(c, r, &error)) << error;
  return r;
}

TEST(PipelineSchedule, ParseAndPrintNames) {
  std::string error;
  EXPECT_EQ(exec::parsePipelineSchedule("gpipe", &error),
            PipelineScheduleKind::GPipe);
  EXPECT_EQ(exec::parsePipelineSchedule("1f1b", &error),
            PipelineScheduleKind::OneFOneB);
  EXPECT_STREQ(exec::pipelineScheduleName(PipelineScheduleKind::GPipe), "gpipe");
  EXPECT_STREQ(exec::pipelineScheduleName(PipelineScheduleKind::OneFOneB),
               "1f1b");
  EXPECT_FALSE(exec::parsePipelineSchedule("interleaved", &error));
  EXPECT_EQ(error,
            "unknown pipeline schedule 'interleaved' (supported: gpipe, 1f1b)");
}

TEST(PipelineSchedule, HandWrittenOrderS3M4) {
  std::vector<std::vector<PipelineAction>> g, o;
  std::string error;
  ASSERT_TRUE(exec::buildPipelineSchedule(PipelineScheduleKind::GPipe, 3, 4, g,
                                          &error));
  ASSERT_TRUE(exec::buildPipelineSchedule(PipelineScheduleKind::OneFOneB, 3, 4,
                                          o, &error));
  ASSERT_EQ(g.size(), 3u);
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(joined(g[s]), "F0 F1 F2 F3 B0 B1 B2 B3") << "stage " << s;
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(joined(o[0]), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(joined(o[1]), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(joined(o[2]), "F0 B0 F1 B1 F2 B2 F3 B3");
}

TEST(PipelineSchedule, FewerMicroBatchesThanWarmUp) {
  std::vector<PipelineAction> a;
  std::string error;
  // S = 4, stage 0 would warm up with 3 forwards but M = 2.
  ASSERT_TRUE(exec::buildStageSchedule(PipelineScheduleKind::OneFOneB, 4, 0, 2,
                                       a, &error));
  EXPECT_EQ(joined(a), "F0 F1 B0 B1");
}

TEST(PipelineSchedule, Errors) {
  std::vector<std::vector<PipelineAction>> out;
  std::vector<PipelineAction> one;
  std::string error;
  EXPECT_FALSE(exec::buildPipelineSchedule(PipelineScheduleKind::GPipe, 0, 4,
                                           out, &error));
  EXPECT_EQ(error, "pipeline schedule: the number of stages must be at least "
                   "1, got 0");
  EXPECT_FALSE(exec::buildPipelineSchedule(PipelineScheduleKind::OneFOneB, 2, 0,
                                           out, &error));
  EXPECT_EQ(error, "pipeline schedule: the number of micro-batches must be at "
                   "least 1, got 0");
  EXPECT_FALSE(exec::buildStageSchedule(PipelineScheduleKind::GPipe, 2, 2, 4,
                                        one, &error));
  EXPECT_EQ(error, "pipeline schedule: stage 2 is out of range [0, 2)");
}

TEST(PipelineSimulator, GPipeBubbleMatchesFormula) {
  for (int64_t S : {1, 2, 3, 4, 8})
    for (int64_t M : {1, 2, 4, 7, 16}) {
      SimulationResult r = simulate(equalStages(S, M, PipelineScheduleKind::GPipe));
      double expected = double(S - 1) / double(M + S - 1);
      EXPECT_NEAR(r.bubbleFraction, expected, 1e-12) << "S=" << S << " M=" << M;
      EXPECT_DOUBLE_EQ(r.idealBubbleFraction, expected);
      // (M + S - 1) slots of forward + backward, 1 + 2 seconds each.
      EXPECT_NEAR(r.pipelineSeconds, 3.0 * double(M + S - 1), 1e-12);
      EXPECT_EQ(r.stepSeconds, r.pipelineSeconds);
      for (const auto &st : r.stages) {
        EXPECT_EQ(st.peakInFlight, M);
        EXPECT_EQ(st.peakActivationBytes, M * 1000);
        EXPECT_NEAR(st.busySeconds, 3.0 * double(M), 1e-12);
        EXPECT_NEAR(st.idleSeconds, r.pipelineSeconds - 3.0 * double(M), 1e-12);
      }
    }
}

TEST(PipelineSimulator, OneFOneBSameStepLessMemory) {
  for (int64_t S : {2, 3, 4, 8})
    for (int64_t M : {1, 3, 4, 8, 16}) {
      SimulationResult g = simulate(equalStages(S, M, PipelineScheduleKind::GPipe));
      SimulationResult o =
          simulate(equalStages(S, M, PipelineScheduleKind::OneFOneB));
      EXPECT_NEAR(o.stepSeconds, g.stepSeconds, 1e-12) << "S=" << S << " M=" << M;
      EXPECT_NEAR(o.bubbleFraction, g.bubbleFraction, 1e-12);
      EXPECT_EQ(o.stages[0].peakInFlight, std::min(S, M));
      EXPECT_EQ(g.stages[0].peakInFlight, M);
      EXPECT_EQ(o.stages[0].peakActivationBytes, std::min(S, M) * 1000);
      for (int64_t s = 0; s < S; ++s)
        EXPECT_EQ(o.stages[s].peakInFlight, std::min(S - s, M)) << "stage " << s;
    }
}

// S = 2, M = 2, GPipe, stage 0: f = 1, b = 2; stage 1: f = 3, b = 4;
// transfer 0.5 s. By hand:
//   stage 0: F0 [0,1]     F1 [1,2]
//   stage 1: F0 [1.5,4.5] F1 [4.5,7.5] B0 [7.5,11.5] B1 [11.5,15.5]
//   stage 0: B0 [12,14]   B1 [16,18]
// pipeline 18 s; busy 6 s and 14 s; bubble 1 - 20/36 = 4/9.
PipelineConfig unequal() {
  PipelineConfig c;
  c.stages = {StageCost{1, 2, 100, 1000000000, 1e10, 1e-3},
              StageCost{3, 4, 300, 2000000000, 1e10, 1e-3}};
  c.transferSeconds = 0.5;
  c.numMicroBatches = 2;
  c.schedule = PipelineScheduleKind::GPipe;
  return c;
}

TEST(PipelineSimulator, UnequalStagesByHand) {
  SimulationResult r = simulate(unequal());
  EXPECT_DOUBLE_EQ(r.pipelineSeconds, 18.0);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 18.0);
  EXPECT_DOUBLE_EQ(r.stages[0].busySeconds, 6.0);
  EXPECT_DOUBLE_EQ(r.stages[1].busySeconds, 14.0);
  EXPECT_DOUBLE_EQ(r.stages[0].idleSeconds, 12.0);
  EXPECT_DOUBLE_EQ(r.stages[1].idleSeconds, 4.0);
  EXPECT_DOUBLE_EQ(r.stages[1].computeEndSeconds, 15.5);
  EXPECT_NEAR(r.bubbleFraction, 4.0 / 9.0, 1e-12);
  EXPECT_EQ(r.stages[1].peakActivationBytes, 600);
  // Stage 0's timeline, in order.
  std::vector<std::pair<double, double>> s0;
  for (const auto &e : r.timeline)
    if (e.stage == 0)
      s0.push_back({e.startSeconds, e.endSeconds});
  std::vector<std::pair<double, double>> expected = {
      {0, 1}, {1, 2}, {12, 14}, {16, 18}};
  EXPECT_EQ(s0, expected);
}

TEST(PipelineSimulator, AllReduceAfterLastBackward) {
  PipelineConfig c = unequal();
  c.numReplicas = 4;
  SimulationResult r = simulate(c);
  // 1e-3 + 2 * 3/4 * 1e9 / 1e10 = 0.151 s; stage 1: 1e-3 + 1.5 * 0.2 = 0.301.
  EXPECT_NEAR(r.stages[0].allReduceSeconds, 0.151, 1e-12);
  EXPECT_NEAR(r.stages[1].allReduceSeconds, 0.301, 1e-12);
  EXPECT_NEAR(r.stepSeconds, 18.151, 1e-12);
  EXPECT_DOUBLE_EQ(r.pipelineSeconds, 18.0);
  EXPECT_NEAR(r.bubbleFraction, 4.0 / 9.0, 1e-12); // excludes all-reduce
  EXPECT_DOUBLE_EQ(partition::allReduceSeconds(1000, 1, 1.0, 5.0), 0.0);
}

TEST(PipelineSimulator, TraceHasOneEventPerAction) {
  PipelineConfig c = equalStages(3, 4, PipelineScheduleKind::OneFOneB);
  c.numReplicas = 2;
  for (auto &s : c.stages) {
    s.parameterBytes = 1000;
    s.allReduceBusBandwidth = 1e6;
  }
  SimulationResult r = simulate(c);
  nlohmann::json doc = nlohmann::json::parse(partition::simulationTraceJson(r));
  int compute = 0, comm = 0;
  for (const auto &ev : doc.at("traceEvents")) {
    if (ev.at("ph") != "X")
      continue;
    EXPECT_GE(ev.at("dur").get<double>(), 0.0);
    (ev.at("tid") == 0 ? compute : comm)++;
  }
  EXPECT_EQ(compute, 3 * 2 * 4);
  EXPECT_EQ(comm, 3);
  // Stage 2's first forward starts after two 1 s forwards: ts = 2e6 µs.
  bool found = false;
  for (const auto &ev : doc.at("traceEvents"))
    if (ev.at("ph") == "X" && ev.at("pid") == 2 && ev.at("name") == "F0") {
      EXPECT_DOUBLE_EQ(ev.at("ts").get<double>(), 2e6);
      EXPECT_DOUBLE_EQ(ev.at("dur").get<double>(), 1e6);
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(PipelineSimulator, TableFormat) {
  PipelineConfig c = unequal();
  c.numReplicas = 4;
  SimulationResult r = simulate(c);
  std::ostringstream os;
  partition::printSimulationTable(c, r, os);
  EXPECT_EQ(os.str(),
            "pipeline: 2 stages, 2 micro-batches, schedule gpipe, 4 replicas\n"
            "stage      busy (s)      idle (s)  all-reduce (s)  in-flight  "
            "peak activation (bytes)\n"
            "    0             6            12           0.151          2  "
            "                    200\n"
            "    1            14             4           0.301          2  "
            "                    600\n"
            "bubble fraction: 0.4444 (GPipe, equal stages: (S-1)/(M+S-1) = "
            "0.3333)\n"
            "step time: 18.151 s (pipeline 18 s + all-reduce 0.151 s)\n");
}

TEST(PipelineSimulator, Errors) {
  SimulationResult r;
  std::string error;
  PipelineConfig c;
  EXPECT_FALSE(partition::simulatePipeline(c, r, &error));
  EXPECT_EQ(error, "pipeline simulator: the pipeline has no stages (need at "
                   "least 1)");
  c = equalStages(2, 0, PipelineScheduleKind::GPipe);
  EXPECT_FALSE(partition::simulatePipeline(c, r, &error));
  EXPECT_EQ(error, "pipeline simulator: the number of micro-batches must be at "
                   "least 1, got 0");
  c = equalStages(2, 2, PipelineScheduleKind::GPipe);
  c.numReplicas = 0;
  EXPECT_FALSE(partition::simulatePipeline(c, r, &error));
  EXPECT_EQ(error, "pipeline simulator: the number of replicas must be at "
                   "least 1, got 0");
  c = equalStages(2, 2, PipelineScheduleKind::GPipe);
  c.stages[1].backwardSeconds = -1;
  EXPECT_FALSE(partition::simulatePipeline(c, r, &error));
  EXPECT_NE(error.find("stage 1 backward time must be a finite number >= 0"),
            std::string::npos)
      << error;
  c = equalStages(2, 2, PipelineScheduleKind::GPipe);
  c.numReplicas = 2;
  EXPECT_FALSE(partition::simulatePipeline(c, r, &error));
  EXPECT_NE(error.find("stage 0 all-reduce bus bandwidth must be > 0 bytes/s "
                       "with 2 replicas"),
            std::string::npos)
      << error;
  EXPECT_FALSE(partition::writeSimulationTrace(
      simulate(equalStages(1, 1, PipelineScheduleKind::GPipe)),
      "/nonexistent-dir/trace.json", &error));
  EXPECT_NE(error.find("cannot write the trace '/nonexistent-dir/trace.json'"),
            std::string::npos)
      << error;
}

} // namespace
