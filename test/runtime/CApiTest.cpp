//===- CApiTest.cpp - contexts, sessions, runs and checkpoints via dlrt.h -===//
// An end-to-end host run of a package built here: a host kernel library
// compiled by the test, gemm and the three convolution calls, persistent
// state, aliases and the arena; numbers checked against naive loops.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "runtime/schema/Safetensors.h"
#include "TestPackage.h"
#include "dlrt/dlrt.h"
#include "dlrt/dlrt.hpp"

using namespace dlrt::test;

namespace {


// Shapes of the test model.
constexpr int64_t N = 2, C = 4, H = 7, W = 7, K = 6, R = 3, S = 3, P = 4, Q = 4,
                  G = 2, O = 5, F = K * P * Q; // F = 96 features

const char *kKernels = R"(
  extern "C" void k0(void **args) {  // z = 2 y + 1
    const float *y = static_cast<const float *>(args[0]);
    float *z = static_cast<float *>(args[1]);
    for (int i = 0; i < 192; ++i) z[i] = 2.0f * y[i] + 1.0f;
  }
  extern "C" void k1(void **args) {  // counter += 1
    float *c = static_cast<float *>(args[0]);
    c[0] += 1.0f;
  }
)";

struct Weights {
  std::vector<float> w = randomVector(K * (C / G) * R * S, 1);
  std::vector<float> b = randomVector(K, 2);
  std::vector<float> wg = randomVector(O * F, 3);
  std::vector<float> gb = randomVector(O, 4);
  std::vector<float> wb = randomVector(3 * 5, 5);
};

PkgSpec modelSpec(const std::vector<uint8_t> &hostLibrary, const Weights &w) {
  PkgSpec s;
  s.training = true;
  s.hostLibrary = hostLibrary;
  s.kernels = {"k0", "k1"};
  s.buffers = {
      {"x", 3, 0, {N, C, H, W}},                  // 0 Input
      {"w", 0, 0, {K, C / G, R, S}, -1, -1, "w"}, // 1 Parameter
      {"b", 0, 0, {K}, -1, -1, "b"},              // 2 Parameter
      {"", 4, 0, {N, K, P, Q}, 0},                // 3 y, Arena
      {"", 4, 0, {N, K, P, Q}, 768},              // 4 z, Arena
      {"", 5, 0, {N, F}, -1, 4},                  // 5 zf, Alias of z
      {"wg", 0, 0, {O, F}, -1, -1, "wg"},         // 6 Parameter
      {"gb", 6, 0, {O}, -1, -1, "gb"},            // 7 Constant
      {"", 4, 0, {N, O}, 1536},                   // 8 out, Arena
      {"dy", 3, 0, {N, K, P, Q}},                 // 9 Input
      {"", 4, 0, {N, C, H, W}, 1600},             // 10 dx, Arena
      {"", 4, 0, {K, C / G, R, S}, 3200},         // 11 dw, Arena
      {"counter", 2, 0, {}},                      // 12 State, zeros
      {"m", 1, 0, {O, F}},                        // 13 OptimizerState
      {"a", 3, 0, {3, 4}},                        // 14 Input
      {"c", 3, 0, {4, 5}},                        // 15 Input
      {"wb", 0, 0, {3, 5}, -1, -1, "wb"},         // 16 Parameter
      {"", 4, 0, {4, 5}, 0},                      // 17 Arena
  };
  std::vector<int64_t> conv = {N, C, H, W, K, R, S, P, Q, 2,
                               2, 1, 1, 1, 1, 1, 1, G, 1};
  std::vector<int64_t> convNoBias = conv;
  convNoBias.back() = 0;
  FnSpec train;
  train.name = "train_step";
  train.inputs = {{"x", 0}, {"dy", 9}};
  train.outputs = {{"loss", 8}, {"dx", 10}, {"dw", 11}, {"z", 5}};
  train.steps = {
      {false, 0, "conv2d_forward", {0, 1, 2, 3}, conv, {}},
      {true, 0, "", {3, 4}, {}, {}},
      {false, 0, "gemm", {5, 6, 7, 8}, {N, O, F, 0, 1, 1, 1}, {1.0f, 1.0f}},
      {false, 0, "conv2d_backward_data", {9, 1, 10}, convNoBias, {}},
      {false, 0, "conv2d_backward_filter", {0, 9, 11}, convNoBias, {}},
      {true, 1, "", {12}, {}, {}},
  };
  train.arenaBytes = 3648;
  FnSpec fwd;
  fwd.name = "forward";
  fwd.inputs = {{"a", 14}, {"c", 15}};
  fwd.outputs = {{"y", 17}};
  // Y[4,5] = 0.5 * A^T[4,3] * WB[3,5] + 2 * C[4,5]
  fwd.steps = {{false,
                0,
                "gemm",
                {14, 16, 15, 17},
                {4, 5, 3, 1, 0, 1, 0},
                {0.5f, 2.0f}}};
  fwd.arenaBytes = 80;
  s.functions = {train, fwd};
  s.weights = dlrt::safetensors::serialize({
      {"w", "F32", {K, C / G, R, S}, floatBytes(w.w)},
      {"b", "F32", {K}, floatBytes(w.b)},
      {"wg", "F32", {O, F}, floatBytes(w.wg)},
      {"gb", "F32", {O}, floatBytes(w.gb)},
      {"wb", "F32", {3, 5}, floatBytes(w.wb)},
  });
  return s;
}

/// Compiles the kernels once and writes the package into a temp dir.
class CApiTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::string error;
    library = new std::vector<uint8_t>(compileHostLibrary(kKernels, &error));
    ASSERT_FALSE(library->empty()) << error;
  }
  static void TearDownTestSuite() {
    delete library;
    library = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(library && !library->empty());
    path = dir.file("model.dlcp");
    writeBytes(path, buildPackage(modelSpec(*library, weights)));
    dlrt_context_options_t opts;
    dlrt_context_options_init(&opts);
    opts.device = DLRT_DEVICE_HOST;
    ASSERT_FALSE(dlrt::Context::create(&opts, &ctx));
    dlrt::Error e = dlrt::Model::load(ctx, path, &model);
    ASSERT_FALSE(e) << e.message();
    e = dlrt::Session::create(model, &session);
    ASSERT_FALSE(e) << e.message();
  }

  static std::vector<uint8_t> *library;
  TempDir dir;
  std::string path;
  Weights weights;
  dlrt::Context ctx;
  dlrt::Model model;
  dlrt::Session session;
};
std::vector<uint8_t> *CApiTest::library = nullptr;

std::vector<float> getOutput(dlrt::Session &s, const char *fn, const char *name,
                             size_t n) {
  std::vector<float> v(n);
  dlrt::Error e = s.getOutput(fn, name, v.data(), n * 4);
  EXPECT_FALSE(e) << e.message();
  return v;
}

TEST_F(CApiTest, ModelInfo) {
  EXPECT_TRUE(model.hasFunction("train_step"));
  EXPECT_TRUE(model.hasFunction("forward"));
  EXPECT_FALSE(model.hasFunction("backward"));
  EXPECT_EQ(model.inputCount("train_step"), 2);
  EXPECT_EQ(model.outputCount("train_step"), 4);
  EXPECT_EQ(model.inputCount("nope"), 0);
  dlrt_tensor_info_t info;
  ASSERT_FALSE(model.inputInfo("train_step", 1, &info));
  EXPECT_STREQ(info.name, "dy");
  EXPECT_EQ(info.dtype, DLRT_F32);
  ASSERT_EQ(info.rank, 4);
  EXPECT_EQ(info.shape[1], K);
  ASSERT_FALSE(model.outputInfo("train_step", 0, &info));
  EXPECT_STREQ(info.name, "loss");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(model.inputInfo("train_step", 2, &info).code(),
            DLRT_INVALID_ARGUMENT);
  EXPECT_EQ(model.inputInfo("train_step", -1, &info).code(),
            DLRT_INVALID_ARGUMENT);
  EXPECT_EQ(model.outputInfo("nope", 0, &info).code(), DLRT_NOT_FOUND);
  EXPECT_STREQ(model.lossOutput(), "loss");
  EXPECT_STREQ(model.optimizer(), "sgd");
  EXPECT_EQ(model.batchSize(), 2);
  EXPECT_EQ(dlrt_dtype_size(DLRT_F64), 8u);
  EXPECT_EQ(dlrt_dtype_size(DLRT_BOOL), 1u);
}

TEST_F(CApiTest, EndToEndHostRun) {
  auto x = randomVector(N * C * H * W, 10);
  auto dy = randomVector(N * K * P * Q, 11);
  ASSERT_FALSE(session.setInput("train_step", "x", x.data(), x.size() * 4));
  ASSERT_FALSE(session.setInput("train_step", "dy", dy.data(), dy.size() * 4));
  for (int step = 0; step < 2; ++step) {
    dlrt::Error e = session.run("train_step");
    ASSERT_FALSE(e) << e.message();
  }

  // Reference: conv (stride 2, pad 1, group 2, bias), z = 2y + 1,
  // out = z W_g^T + gb, and the two convolution gradients.
  const Weights &wt = weights;
  std::vector<double> z(N * K * P * Q), dx(N * C * H * W, 0),
      dw(wt.w.size(), 0);
  const int64_t cg = C / G, kg = K / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          int64_t yi = ((n * K + k) * P + p) * Q + q;
          double acc = wt.b[k];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                int64_t h = p * 2 - 1 + r, w = q * 2 - 1 + s;
                if (h < 0 || h >= H || w < 0 || w >= W)
                  continue;
                int64_t xi = ((n * C + (k / kg) * cg + c) * H + h) * W + w;
                int64_t wi = ((k * cg + c) * R + r) * S + s;
                acc += double(x[xi]) * wt.w[wi];
                dx[xi] += double(dy[yi]) * wt.w[wi];
                dw[wi] += double(x[xi]) * dy[yi];
              }
          // z is computed in f32 from the f32 conv result by the kernel.
          z[yi] = 2.0 * acc + 1.0;
        }
  std::vector<double> out(N * O);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      double acc = wt.gb[o];
      for (int64_t f = 0; f < F; ++f)
        acc += z[n * F + f] * wt.wg[o * F + f];
      out[n * O + o] = acc;
    }
  expectClose(getOutput(session, "train_step", "z", z.size()), z, "z");
  expectClose(getOutput(session, "train_step", "loss", out.size()), out, "out");
  expectClose(getOutput(session, "train_step", "dx", dx.size()), dx, "dx");
  expectClose(getOutput(session, "train_step", "dw", dw.size()), dw, "dw");

  // The State buffer persists across runs: k1 ran twice.
  float counter = -1;
  ASSERT_FALSE(session.readState("counter", &counter, 4));
  EXPECT_EQ(counter, 2.0f);

  // The second function shares the arena; its outputs are its own.
  auto a = randomVector(12, 20), c = randomVector(20, 21);
  ASSERT_FALSE(session.setInput("forward", "a", a.data(), a.size() * 4));
  ASSERT_FALSE(session.setInput("forward", "c", c.data(), c.size() * 4));
  dlrt::Error e = session.run("forward");
  ASSERT_FALSE(e) << e.message();
  std::vector<double> y(20);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k)
        acc += double(a[k * 4 + i]) * wt.wb[k * 5 + j];
      y[i * 5 + j] = 0.5 * acc + 2.0 * c[i * 5 + j];
    }
  expectClose(getOutput(session, "forward", "y", 20), y, "forward y");
  // train_step's outputs are kept from its last run.
  expectClose(getOutput(session, "train_step", "loss", out.size()), out,
              "out after forward");
}

TEST_F(CApiTest, PersistentState) {
  // Parameters, optimizer state and State buffers, in package order; not the
  // Constant "gb" and not inputs.
  const char *expected[] = {"w", "b", "wg", "counter", "m", "wb"};
  ASSERT_EQ(session.stateCount(), 6);
  for (int i = 0; i < 6; ++i) {
    dlrt_tensor_info_t info;
    ASSERT_FALSE(session.stateInfo(i, &info));
    EXPECT_STREQ(info.name, expected[i]);
  }
  dlrt_tensor_info_t info;
  EXPECT_EQ(session.stateInfo(6, &info).code(), DLRT_INVALID_ARGUMENT);
  ASSERT_FALSE(session.stateInfo(3, &info));
  EXPECT_EQ(info.rank, 0);

  // Initialized from the package weights, or zeros.
  std::vector<float> w(weights.w.size()), m(O * F, 1.0f);
  ASSERT_FALSE(session.readState("w", w.data(), w.size() * 4));
  EXPECT_EQ(w, weights.w);
  ASSERT_FALSE(session.readState("m", m.data(), m.size() * 4));
  EXPECT_EQ(m, std::vector<float>(O * F, 0.0f));
  float gb[O];
  EXPECT_EQ(session.readState("gb", gb, sizeof(gb)).code(), DLRT_NOT_FOUND);

  std::vector<float> w2 = randomVector(w.size(), 99);
  ASSERT_FALSE(session.writeState("w", w2.data(), w2.size() * 4));
  ASSERT_FALSE(session.readState("w", w.data(), w.size() * 4));
  EXPECT_EQ(w, w2);
  EXPECT_EQ(session.writeState("w", w2.data(), 4).code(),
            DLRT_INVALID_ARGUMENT);
}

TEST_F(CApiTest, CheckpointRoundTrip) {
  auto x = randomVector(N * C * H * W, 10),
       dy = randomVector(N * K * P * Q, 11);
  ASSERT_FALSE(session.setInput("train_step", "x", x.data(), x.size() * 4));
  ASSERT_FALSE(session.setInput("train_step", "dy", dy.data(), dy.size() * 4));
  ASSERT_FALSE(session.run("train_step"));
  std::vector<float> m = randomVector(O * F, 7);
  ASSERT_FALSE(session.writeState("m", m.data(), m.size() * 4));

  std::string ckpt = dir.file("ckpt.safetensors");
  dlrt::Error e =
      session.saveCheckpoint(ckpt, R"({"epoch": "3", "lr": "0.1"})");
  ASSERT_FALSE(e) << e.message();
  // The file is plain safetensors with every persistent tensor.
  std::vector<uint8_t> bytes = readBytes(ckpt);
  std::vector<dlrt::safetensors::Tensor> tensors;
  std::map<std::string, std::string> meta;
  std::string error;
  ASSERT_TRUE(dlrt::safetensors::parse(bytes.data(), bytes.size(), &tensors,
                                       &meta, &error))
      << error;
  EXPECT_EQ(tensors.size(), 6u);
  EXPECT_EQ(meta.at("epoch"), "3");

  // Clobber the state, then restore it.
  std::vector<float> zeros(O * F, 0.0f);
  float hundred = 100;
  ASSERT_FALSE(session.writeState("m", zeros.data(), zeros.size() * 4));
  ASSERT_FALSE(session.writeState("counter", &hundred, 4));
  std::string metadata;
  e = session.loadCheckpoint(ckpt, &metadata);
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(metadata, R"({"epoch":"3","lr":"0.1"})");
  std::vector<float> m2(O * F);
  float counter = 0;
  ASSERT_FALSE(session.readState("m", m2.data(), m2.size() * 4));
  ASSERT_FALSE(session.readState("counter", &counter, 4));
  EXPECT_EQ(m2, m);
  EXPECT_EQ(counter, 1.0f);

  // A second session of the same model starts from the package weights and
  // takes the checkpoint too.
  dlrt::Session other;
  ASSERT_FALSE(dlrt::Session::create(model, &other));
  ASSERT_FALSE(other.readState("counter", &counter, 4));
  EXPECT_EQ(counter, 0.0f);
  ASSERT_FALSE(other.loadCheckpoint(ckpt));
  ASSERT_FALSE(other.readState("counter", &counter, 4));
  EXPECT_EQ(counter, 1.0f);
}

TEST_F(CApiTest, CheckpointErrors) {
  // Missing, corrupt, and from another model (shape / missing / extra).
  EXPECT_EQ(session.loadCheckpoint(dir.file("none")).code(), DLRT_NOT_FOUND);
  writeBytes(dir.file("bad"), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  dlrt::Error e = session.loadCheckpoint(dir.file("bad"));
  EXPECT_EQ(e.code(), DLRT_CORRUPT) << e.message();

  std::string good = dir.file("good");
  ASSERT_FALSE(session.saveCheckpoint(good));
  std::vector<uint8_t> bytes = readBytes(good);
  std::vector<dlrt::safetensors::Tensor> tensors;
  ASSERT_TRUE(dlrt::safetensors::parse(bytes.data(), bytes.size(), &tensors,
                                       nullptr, nullptr));
  float before = 5;
  ASSERT_FALSE(session.writeState("counter", &before, 4));

  auto shape = tensors;
  for (auto &t : shape)
    if (t.name == "wb")
      t.shape = {5, 3};
  writeBytes(dir.file("shape"), dlrt::safetensors::serialize(shape));
  e = session.loadCheckpoint(dir.file("shape"));
  EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.message())
                .find("'wb' is F32[5,3] but the model has F32[3,5]"),
            std::string::npos)
      << e.message();

  auto missing = tensors;
  missing.erase(missing.begin());
  writeBytes(dir.file("missing"), dlrt::safetensors::serialize(missing));
  e = session.loadCheckpoint(dir.file("missing"));
  EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.message()).find("lacks tensor"), std::string::npos);

  auto extra = tensors;
  extra.push_back({"other", "F32", {1}, floatBytes({1})});
  writeBytes(dir.file("extra"), dlrt::safetensors::serialize(extra));
  EXPECT_EQ(session.loadCheckpoint(dir.file("extra")).code(),
            DLRT_INVALID_ARGUMENT);

  // Failed loads leave the state alone.
  float counter = 0;
  ASSERT_FALSE(session.readState("counter", &counter, 4));
  EXPECT_EQ(counter, 5.0f);

  EXPECT_EQ(session.saveCheckpoint(dir.file("no/such/dir/ckpt")).code(),
            DLRT_IO_ERROR);
  EXPECT_EQ(session.saveCheckpoint(dir.file("m"), "[1,2]").code(),
            DLRT_INVALID_ARGUMENT);
  EXPECT_EQ(session.saveCheckpoint(dir.file("m"), R"({"a": 1})").code(),
            DLRT_INVALID_ARGUMENT);
}

TEST_F(CApiTest, Misuse) {
  dlrt_session_t s = session.get();
  std::vector<float> x(N * C * H * W);
  auto expectCode = [](dlrt_status_t st, dlrt_status_code_t code,
                       const char *fragment) {
    EXPECT_EQ(dlrt_status_code(st), code) << dlrt_status_message(st);
    std::string message = dlrt_status_message(st);
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    dlrt_status_free(st);
  };
  expectCode(
      dlrt_session_set_input(s, "train_step", "image", x.data(), x.size() * 4),
      DLRT_NOT_FOUND, "has no input 'image'");
  expectCode(dlrt_session_set_input(s, "train_step", "x", x.data(), 12),
             DLRT_INVALID_ARGUMENT, "input 'x' is 1568 bytes, got 12");
  expectCode(dlrt_session_set_input(s, "predict", "x", x.data(), x.size() * 4),
             DLRT_NOT_FOUND, "no function 'predict'");
  expectCode(
      dlrt_session_set_input(s, "train_step", "x", nullptr, x.size() * 4),
      DLRT_INVALID_ARGUMENT, "NULL");
  expectCode(dlrt_session_set_input(s, "train_step", nullptr, x.data(), 4),
             DLRT_INVALID_ARGUMENT, "name is NULL");
  expectCode(dlrt_session_run(s, "predict"), DLRT_NOT_FOUND,
             "no function 'predict'");
  expectCode(dlrt_session_run(nullptr, "train_step"), DLRT_INVALID_ARGUMENT,
             "session is NULL");
  float out[N * O];
  expectCode(dlrt_session_get_output(s, "train_step", "loss", out, sizeof(out)),
             DLRT_INVALID_ARGUMENT, "has not run yet");
  ASSERT_FALSE(session.run("train_step"));
  expectCode(dlrt_session_get_output(s, "train_step", "loss", out, 4),
             DLRT_INVALID_ARGUMENT, "output 'loss' is 40 bytes, got 4");
  expectCode(dlrt_session_get_output(s, "train_step", "logits", out, 40),
             DLRT_NOT_FOUND, "has no output 'logits'");
  expectCode(dlrt_session_read_state(s, "nope", out, 4), DLRT_NOT_FOUND,
             "no persistent tensor 'nope'");
  dlrt_tensor_info_t info;
  expectCode(dlrt_model_input_info(model.get(), "train_step", 7, &info),
             DLRT_INVALID_ARGUMENT, "out of range");
  EXPECT_STREQ(info.name, "");
  dlrt_model_t m = reinterpret_cast<dlrt_model_t>(0x1);
  expectCode(dlrt_model_load(nullptr, path.c_str(), &m), DLRT_INVALID_ARGUMENT,
             "context is NULL");
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(dlrt_status_code(nullptr), DLRT_OK);
  EXPECT_STREQ(dlrt_status_message(nullptr), "");
  dlrt_status_free(nullptr);
  dlrt_session_release(nullptr);
  dlrt_model_release(nullptr);
  dlrt_context_release(nullptr);
}

TEST_F(CApiTest, HandlesReleasedInAnyOrder) {
  // The session keeps its model and the model its context alive.
  ctx = dlrt::Context();
  model = dlrt::Model();
  auto a = randomVector(12, 20), c = randomVector(20, 21);
  ASSERT_FALSE(session.setInput("forward", "a", a.data(), a.size() * 4));
  ASSERT_FALSE(session.setInput("forward", "c", c.data(), c.size() * 4));
  dlrt::Error e = session.run("forward");
  EXPECT_FALSE(e) << e.message();
  float counter = -1;
  EXPECT_FALSE(session.readState("counter", &counter, 4));
  EXPECT_EQ(counter, 0.0f);
}

TEST(CApiContext, HostDevice) {
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  EXPECT_EQ(opts.device, DLRT_DEVICE_AUTO);
  EXPECT_EQ(opts.device_ordinal, 0);
  opts.device = DLRT_DEVICE_HOST;
  dlrt::Context ctx;
  ASSERT_FALSE(dlrt::Context::create(&opts, &ctx));
  EXPECT_EQ(ctx.device(), DLRT_DEVICE_HOST);
  EXPECT_EQ(std::string(ctx.deviceName()).rfind("host", 0), 0u);
}

TEST(CApiContext, AutoFallsBackToHostWithNotice) {
  std::vector<std::string> notices;
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  opts.notice = [](void *user, const char *message) {
    static_cast<std::vector<std::string> *>(user)->push_back(message);
  };
  opts.notice_user_data = &notices;
  dlrt::Context ctx;
  dlrt::Error e = dlrt::Context::create(&opts, &ctx);
  ASSERT_FALSE(e) << e.message();
  if (ctx.device() == DLRT_DEVICE_CUDA) {
    EXPECT_TRUE(notices.empty());
    return;
  }
  EXPECT_EQ(ctx.device(), DLRT_DEVICE_HOST);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].rfind("no usable CUDA device (", 0), 0u) << notices[0];
  EXPECT_NE(notices[0].find("); using the host device"), std::string::npos)
      << notices[0];
}

TEST(CApiContext, CudaWithoutGpuIsUnavailable) {
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  opts.device = DLRT_DEVICE_CUDA;
  dlrt::Context ctx;
  dlrt::Error e = dlrt::Context::create(&opts, &ctx);
  if (!e) {
    EXPECT_EQ(ctx.device(), DLRT_DEVICE_CUDA);
    return;
  }
  EXPECT_EQ(e.code(), DLRT_UNAVAILABLE) << e.message();
  EXPECT_FALSE(ctx);
  // Asking for a device that does not exist is also unavailable.
  opts.device_ordinal = 1000;
  EXPECT_EQ(dlrt::Context::create(&opts, &ctx).code(), DLRT_UNAVAILABLE);
}

} // namespace

// Distributed contexts (API 0.4): the rendezvous environment, the mean over
// ranks, and the state broadcast at session creation, with a second rank in
// a forked child process over loopback (Gloo).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>

namespace {

/// Sets (or with null unsets) environment variables for one scope.
class ScopedEnv {
public:
  ScopedEnv(std::initializer_list<std::pair<const char *, const char *>> vars) {
    for (const auto &[name, value] : vars) {
      const char *old = std::getenv(name);
      saved_.push_back(
          {name, old ? std::optional<std::string>(old) : std::nullopt});
      if (value)
        setenv(name, value, 1);
      else
        unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto &[name, old] : saved_) {
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// The variables of every launcher the rendezvous reads, unset.
std::initializer_list<std::pair<const char *, const char *>> kNoLauncher = {
    {"RANK", nullptr},
    {"WORLD_SIZE", nullptr},
    {"LOCAL_RANK", nullptr},
    {"LOCAL_WORLD_SIZE", nullptr},
    {"OMPI_COMM_WORLD_RANK", nullptr},
    {"SLURM_PROCID", nullptr},
    {"TORCHELASTIC_USE_AGENT_STORE", nullptr},
    {"MASTER_ADDR", nullptr},
    {"MASTER_PORT", nullptr}};

/// A TCP port that was free a moment ago.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len))
    return 29577;
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

dlrt_context_options_t distributedHost(double timeout) {
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  opts.device = DLRT_DEVICE_HOST;
  opts.distributed = 1;
  opts.comm_timeout_seconds = timeout;
  return opts;
}

TEST(CApiDistributed, OptionsDefaultToOneProcess) {
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  EXPECT_EQ(opts.distributed, 0);
  EXPECT_EQ(opts.comm_timeout_seconds, 0.0);
  EXPECT_GE(DLRT_API_VERSION, 400);
}

TEST(CApiDistributed, WithoutLauncherIsOneRank) {
  ScopedEnv env(kNoLauncher);
  dlrt_context_options_t opts = distributedHost(0);
  dlrt::Context ctx;
  dlrt::Error e = dlrt::Context::create(&opts, &ctx);
  ASSERT_FALSE(e) << e.message();
  int32_t rank = -1, size = -1;
  ASSERT_FALSE(ctx.rank(&rank, &size));
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  double values[2] = {1.25, -3.5};
  ASSERT_FALSE(ctx.average(values, 2));
  EXPECT_EQ(values[0], 1.25);
  EXPECT_EQ(values[1], -3.5);
  EXPECT_FALSE(ctx.barrier());
  // WORLD_SIZE=1 is one rank too: no store is started (port 1 would fail).
  ScopedEnv one({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "1"}});
  dlrt::Context single;
  e = dlrt::Context::create(&opts, &single);
  ASSERT_FALSE(e) << e.message();
  ASSERT_FALSE(single.rank(&rank, &size));
  EXPECT_EQ(size, 1);
}

TEST(CApiDistributed, BadArgumentsAndEnvironment) {
  EXPECT_EQ(dlrt_status_code(dlrt_context_rank(nullptr, nullptr, nullptr)),
            DLRT_INVALID_ARGUMENT);
  dlrt::Error e(dlrt_context_average(nullptr, nullptr, 0));
  EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
  EXPECT_STREQ(e.message(), "context is NULL");
  ScopedEnv env(kNoLauncher);
  dlrt::Context ctx;
  dlrt_context_options_t opts = distributedHost(-1);
  e = dlrt::Context::create(&opts, &ctx);
  EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.message()).find("timeout"), std::string::npos)
      << e.message();
  opts = distributedHost(0);
  {
    ScopedEnv bad({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    e = dlrt::Context::create(&opts, &ctx);
    EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.message()).find("RANK=2 is not below WORLD_SIZE=2"),
              std::string::npos)
        << e.message();
    EXPECT_FALSE(ctx);
  }
  {
    // torchrun's agent store holds MASTER_PORT; ours would need 65536.
    ScopedEnv agent({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_PORT", "65535"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
    e = dlrt::Context::create(&opts, &ctx);
    EXPECT_EQ(e.code(), DLRT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.message()).find("MASTER_PORT + 1"),
              std::string::npos)
        << e.message();
  }
}

TEST(CApiDistributed, MissingPeerIsAnErrorWithinTheTimeout) {
  ScopedEnv env(kNoLauncher);
  std::string port = std::to_string(freePort());
  ScopedEnv job(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", port.c_str()}});
  dlrt_context_options_t opts = distributedHost(1.0);
  dlrt::Context ctx;
  auto start = std::chrono::steady_clock::now();
  dlrt::Error e = dlrt::Context::create(&opts, &ctx);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(e.code(), DLRT_UNAVAILABLE) << e.message();
  std::printf("message: %s\n", e.message());
  EXPECT_NE(std::string(e.message()).find("rank(s) 1 did not join"),
            std::string::npos)
      << e.message();
  EXPECT_EQ(std::string(e.message()).find('\n'), std::string::npos);
  EXPECT_LT(seconds, 10.0);
  EXPECT_FALSE(ctx);
}

/// Rank |rank| of a 2-rank job on |port| with the package at |path|: checks
/// rank and size, that its session starts with rank 0's weights |expectW|
/// (read back as parameter "w"), and the mean of {10 + 10 rank, -1 + 4
/// rank}. Returns "" or the first failure.
std::string runRank(int rank, const std::string &port, const std::string &path,
                    const std::vector<float> &expectW) {
  std::string r = std::to_string(rank);
  ScopedEnv job({{"RANK", r.c_str()},
                 {"WORLD_SIZE", "2"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", port.c_str()}});
  dlrt_context_options_t opts = distributedHost(30);
  dlrt::Context ctx;
  if (dlrt::Error e = dlrt::Context::create(&opts, &ctx))
    return std::string("context: ") + e.message();
  int32_t gotRank = -1, size = -1;
  if (dlrt::Error e = ctx.rank(&gotRank, &size))
    return e.message();
  if (gotRank != rank || size != 2)
    return "rank " + std::to_string(gotRank) + " of " + std::to_string(size);
  dlrt::Model model;
  if (dlrt::Error e = dlrt::Model::load(ctx, path, &model))
    return e.message();
  dlrt::Session session;
  if (dlrt::Error e = dlrt::Session::create(model, &session))
    return std::string("session: ") + e.message();
  std::vector<float> w(expectW.size());
  if (dlrt::Error e = session.readState("w", w.data(), w.size() * 4))
    return e.message();
  if (std::memcmp(w.data(), expectW.data(), w.size() * 4) != 0)
    return "parameter 'w' is not rank 0's after the session's broadcast";
  double values[2] = {10.0 + 10 * rank, -1.0 + 4 * rank};
  if (dlrt::Error e = ctx.average(values, 2))
    return std::string("average: ") + e.message();
  if (values[0] != 15.0 || values[1] != 1.0)
    return "average gave " + std::to_string(values[0]) + ", " +
           std::to_string(values[1]) + " (expected 15, 1)";
  if (dlrt::Error e = ctx.barrier())
    return std::string("barrier: ") + e.message();
  return "";
}

TEST_F(CApiTest, DistributedSessionsStartFromRankZerosState) {
  ScopedEnv env(kNoLauncher);
  // Rank 1's package has other weights; the session must replace them.
  Weights other;
  other.w = randomVector(weights.w.size(), 101);
  other.wg = randomVector(weights.wg.size(), 103);
  ASSERT_NE(other.w, weights.w);
  std::string otherPath = dir.file("other.dlcp");
  writeBytes(otherPath, buildPackage(modelSpec(*library, other)));
  std::string port = std::to_string(freePort());
  std::fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string error = runRank(1, port, otherPath, weights.w);
    if (!error.empty())
      std::fprintf(stderr, "rank 1: %s\n", error.c_str());
    _exit(error.empty() ? 0 : 1);
  }
  std::string error = runRank(0, port, path, weights.w);
  EXPECT_EQ(error, "");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "rank 1 failed (its message is above), status " << status;
}

} // namespace
