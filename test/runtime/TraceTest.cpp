//===- TraceTest.cpp - collective steps and the session timeline ---------===//
// A package with an AllReduce / WaitCollective pair around a GEMM's result:
// on a context without a communicator (one rank) the all-reduce is the
// identity; the trace records every step on the compute lane, in order; and
// malformed collective steps are clean package errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "runtime/schema/Safetensors.h"
#include "TestPackage.h"
#include "dlrt/dlrt.hpp"

using namespace dlrt::test;

namespace {

constexpr int64_t M = 4, K = 8, N = 4;

/// x [M, K] (input) times w [K, N] (parameter) into h (arena), then buffer
/// |reduced| (h; 3 is an i64 buffer, 7 does not exist) is all-reduced
/// ("avg") and waited for; h is the output.
PkgSpec collectiveSpec(uint32_t reduced = 2) {
  PkgSpec s;
  s.formatVersion = 2;
  s.training = true;
  s.buffers = {
      {"x", 3, 0, {M, K}},              // 0 Input
      {"w", 0, 0, {K, N}, -1, -1, "w"}, // 1 Parameter
      {"", 4, 0, {M, N}, 0},            // 2 h, Arena
      {"", 4, 2, {M, N}, M * N * 4},    // 3 i64, Arena
  };
  FnSpec f;
  f.name = "train_step";
  f.inputs = {{"x", 0}};
  f.outputs = {{"loss", 2}};
  StepSpec gemm{false, 0, "gemm", {0, 1, 2}, {}, {}};
  dlc::exec::LibraryCallParams p;
  p.call = dlc::exec::LibraryCall::Gemm;
  p.gemm.m = M;
  p.gemm.n = N;
  p.gemm.k = K;
  p.gemm.alpha = 1;
  p.gemm.beta = 0;
  gemm.params = p;
  StepSpec start;
  start.collective = 1;
  start.args = {reduced};
  StepSpec wait;
  wait.collective = 2;
  wait.args = {reduced};
  f.steps = {gemm, start, wait};
  f.arenaBytes = M * N * 12;
  s.functions = {f};
  s.weights = dlrt::safetensors::serialize(
      {{"w", "F32", {K, N}, floatBytes(randomVector(K * N, 1, 13))}});
  return s;
}

} // namespace

TEST(Collectives, OneRankAllReduceIsTheIdentityAndTheTraceShowsEveryStep) {
  TempDir dir;
  std::string path = dir.file("c.dlcp");
  writeBytes(path, buildPackage(collectiveSpec()));
  dlrt_context_options_t options;
  dlrt_context_options_init(&options);
  options.device = DLRT_DEVICE_HOST;
  dlrt::Context context;
  ASSERT_FALSE(dlrt::Context::create(&options, &context));
  dlrt::Model model;
  dlrt::Error e = dlrt::Model::load(context, path, &model);
  ASSERT_FALSE(e) << e.message();
  dlrt::Session session;
  e = dlrt::Session::create(model, &session);
  ASSERT_FALSE(e) << e.message();
  ASSERT_FALSE(dlrt::Error(dlrt_session_set_trace(session.get(), 1)));
  std::vector<float> x = randomVector(M * K, 2, 13);
  std::vector<float> w = randomVector(K * N, 1, 13);
  for (int step = 0; step < 2; ++step) {
    ASSERT_FALSE(session.setInput("train_step", "x", x.data(), x.size() * 4));
    e = session.run("train_step");
    ASSERT_FALSE(e) << e.message();
  }
  std::vector<float> h(M * N);
  ASSERT_FALSE(session.getOutput("train_step", "loss", h.data(), h.size() * 4));
  std::vector<double> ref(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        ref[i * N + j] += double(x[i * K + k]) * w[k * N + j];
  expectClose(h, ref, "h = x w after the one-rank all-reduce");

  std::string tracePath = dir.file("trace.json");
  ASSERT_FALSE(dlrt::Error(
      dlrt_session_write_trace(session.get(), tracePath.c_str(), 3, "rank 3")));
  std::ifstream in(tracePath);
  nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<std::string> names;
  double last = -1;
  bool processNamed = false;
  for (const auto &ev : doc.at("traceEvents")) {
    EXPECT_EQ(ev.at("pid"), 3);
    if (ev.at("ph") == "M") {
      if (ev.at("name") == "process_name")
        processNamed = ev.at("args").at("name") == "rank 3";
      continue;
    }
    ASSERT_EQ(ev.at("ph"), "X");
    EXPECT_GE(ev.at("dur").get<double>(), 0.0);
    // One rank: nothing is in flight, so nothing on the communication lane.
    EXPECT_EQ(ev.at("tid"), 0);
    names.push_back(ev.at("name"));
    if (ev.at("cat") != "step") { // steps in issue order
      EXPECT_GE(ev.at("ts").get<double>(), last);
      last = ev.at("ts").get<double>();
    }
  }
  EXPECT_TRUE(processNamed);
  std::vector<std::string> expected = {"gemm", "issue all_reduce #2", "wait #2",
                                       "train_step"};
  ASSERT_EQ(names.size(), 2 * expected.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(names[i], expected[i % expected.size()]) << "event " << i;

  // Turning the trace off and on again starts a new recording.
  ASSERT_FALSE(dlrt::Error(dlrt_session_set_trace(session.get(), 0)));
  ASSERT_FALSE(dlrt::Error(dlrt_session_set_trace(session.get(), 1)));
  ASSERT_FALSE(dlrt::Error(
      dlrt_session_write_trace(session.get(), tracePath.c_str(), 0, "rank 0")));
  std::ifstream again(tracePath);
  EXPECT_EQ(nlohmann::json::parse(again).at("traceEvents").size(), 3u)
      << "only the metadata events";
  dlrt::Error bad(dlrt_session_write_trace(
      session.get(), (dir.file("no/such/dir") + "/t.json").c_str(), 0, "r"));
  EXPECT_EQ(bad.code(), DLRT_IO_ERROR) << bad.message();
}

TEST(Collectives, MalformedCollectiveStepsAreCorruptPackages) {
  TempDir dir;
  dlrt_context_options_t options;
  dlrt_context_options_init(&options);
  options.device = DLRT_DEVICE_HOST;
  dlrt::Context context;
  ASSERT_FALSE(dlrt::Context::create(&options, &context));
  struct Case {
    PkgSpec spec;
    std::string message;
  } cases[] = {
      {collectiveSpec(7), "step 1 of function 'train_step'"},
      {collectiveSpec(3), "step 1 of function 'train_step' all-reduces "
                          "buffer 3, which is not f32, f16 or bf16"},
  };
  for (const Case &c : cases) {
    std::string path = dir.file("bad.dlcp");
    writeBytes(path, buildPackage(c.spec));
    dlrt::Model model;
    dlrt::Error e = dlrt::Model::load(context, path, &model);
    EXPECT_EQ(e.code(), DLRT_CORRUPT) << e.message();
    EXPECT_NE(std::string(e.message()).find(c.message), std::string::npos)
        << e.message();
  }
}
