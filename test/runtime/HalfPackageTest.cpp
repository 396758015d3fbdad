//===- HalfPackageTest.cpp - f16 and bf16 tensors through the C API -------===//
// A hand-built format-version-3 package with f16 and bf16 inputs, outputs,
// parameters (initialized from F16/BF16 weights) and state: it loads, reports
// its dtypes, copies bytes in and out unchanged, runs a host kernel and
// checkpoints to F16/BF16 safetensors; bad dtypes are clean errors.
#include <cstring>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "runtime/device/HalfConversions.h"
#include "runtime/src/Package.h"
#include "runtime/schema/Safetensors.h"
#include "TestPackage.h"
#include "dlrt/dlrt.h"
#include "dlrt/dlrt.hpp"

using namespace dlrt::test;

namespace {

constexpr int kF16 = 5, kBF16 = 6; // package.fbs DType

// yh = -xh and yb = -xb (sign bit flipped: exact in both formats), and
// wb += 1 ulp of its bit pattern (a visible change to persistent bf16 state).
const char *kKernels = R"(
  #include <cstdint>
  extern "C" void negate(void **args) {
    const uint16_t *xh = static_cast<const uint16_t *>(args[0]);
    const uint16_t *xb = static_cast<const uint16_t *>(args[1]);
    uint16_t *yh = static_cast<uint16_t *>(args[2]);
    uint16_t *yb = static_cast<uint16_t *>(args[3]);
    for (int i = 0; i < 6; ++i) {
      yh[i] = xh[i] ^ 0x8000u;
      yb[i] = xb[i] ^ 0x8000u;
    }
  }
  extern "C" void bump(void **args) {
    uint16_t *wb = static_cast<uint16_t *>(args[0]);
    for (int i = 0; i < 3; ++i) wb[i] += 1;
  }
)";

std::vector<uint8_t> halfBytes(const std::vector<uint16_t> &v) {
  std::vector<uint8_t> out(v.size() * 2);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Weights: wh (f16) = [1, -2, 0.5], wb (bf16) = [1, 3, -0.25].
const std::vector<uint16_t> kWh = {0x3c00, 0xc000, 0x3800};
const std::vector<uint16_t> kWb = {0x3f80, 0x4040, 0xbe80};

PkgSpec halfSpec(const std::vector<uint8_t> &hostLibrary) {
  PkgSpec s;
  s.formatVersion = 3;
  s.hostLibrary = hostLibrary;
  s.kernels = {"negate", "bump"};
  s.buffers = {
      {"xh", 3, kF16, {2, 3}},             // 0 Input
      {"xb", 3, kBF16, {2, 3}},            // 1 Input
      {"", 4, kF16, {2, 3}, 0},            // 2 yh, Arena
      {"", 4, kBF16, {2, 3}, 16},          // 3 yb, Arena
      {"wh", 0, kF16, {3}, -1, -1, "wh"},  // 4 Parameter
      {"wb", 0, kBF16, {3}, -1, -1, "wb"}, // 5 Parameter
      {"mh", 1, kF16, {3}},                // 6 OptimizerState, zeros
  };
  FnSpec f;
  f.name = "forward";
  f.inputs = {{"xh", 0}, {"xb", 1}};
  f.outputs = {{"yh", 2}, {"yb", 3}};
  f.steps = {{true, 0, "", {0, 1, 2, 3}, {}, {}}, {true, 1, "", {5}, {}, {}}};
  f.arenaBytes = 28;
  s.functions = {f};
  s.weights = dlrt::safetensors::serialize({
      {"wh", "F16", {3}, halfBytes(kWh)},
      {"wb", "BF16", {3}, halfBytes(kWb)},
  });
  return s;
}

class HalfPackageTest : public ::testing::Test {
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
    path = dir.file("half.dlcp");
    writeBytes(path, buildPackage(halfSpec(*library)));
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
  dlrt::Context ctx;
  dlrt::Model model;
  dlrt::Session session;
};
std::vector<uint8_t> *HalfPackageTest::library = nullptr;

} // namespace

TEST(HalfDTypes, SizesAndValues) {
  // Appended to the enum: the old values are unchanged.
  EXPECT_EQ(DLRT_BOOL, 4);
  EXPECT_EQ(DLRT_F16, 5);
  EXPECT_EQ(DLRT_BF16, 6);
  EXPECT_EQ(dlrt_dtype_size(DLRT_F16), 2u);
  EXPECT_EQ(dlrt_dtype_size(DLRT_BF16), 2u);
  EXPECT_EQ(dlrt_dtype_size(DLRT_F32), 4u);
  EXPECT_EQ(dlrt_dtype_size(static_cast<dlrt_dtype_t>(7)), 0u);
  EXPECT_STREQ(dlrt::safetensorsDType(DLRT_F16), "F16");
  EXPECT_STREQ(dlrt::safetensorsDType(DLRT_BF16), "BF16");
  EXPECT_GE(DLRT_API_VERSION, 200);
}

TEST_F(HalfPackageTest, ReportsDtypes) {
  dlrt_tensor_info_t info;
  ASSERT_FALSE(model.inputInfo("forward", 0, &info));
  EXPECT_STREQ(info.name, "xh");
  EXPECT_EQ(info.dtype, DLRT_F16);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[1], 3);
  ASSERT_FALSE(model.inputInfo("forward", 1, &info));
  EXPECT_EQ(info.dtype, DLRT_BF16);
  ASSERT_FALSE(model.outputInfo("forward", 0, &info));
  EXPECT_STREQ(info.name, "yh");
  EXPECT_EQ(info.dtype, DLRT_F16);
  ASSERT_FALSE(model.outputInfo("forward", 1, &info));
  EXPECT_EQ(info.dtype, DLRT_BF16);
  ASSERT_EQ(session.stateCount(), 3);
  const dlrt_dtype_t want[] = {DLRT_F16, DLRT_BF16, DLRT_F16};
  for (int32_t i = 0; i < 3; ++i) {
    ASSERT_FALSE(session.stateInfo(i, &info));
    EXPECT_EQ(info.dtype, want[i]) << info.name;
  }
}

TEST_F(HalfPackageTest, CopiesRoundTripAndRun) {
  // Bit patterns that a conversion would change: NaN payloads, subnormals,
  // -0, infinities.
  std::vector<uint16_t> xh = {0x7e01, 0x0001, 0x8000, 0x7c00, 0x3c01, 0xfbff};
  std::vector<uint16_t> xb = {0x7fc1, 0x0001, 0x8000, 0xff80, 0x3f81, 0x7f7f};
  ASSERT_FALSE(session.setInput("forward", "xh", xh.data(), 12));
  ASSERT_FALSE(session.setInput("forward", "xb", xb.data(), 12));
  // Byte counts are those of 2-byte elements.
  EXPECT_EQ(session.setInput("forward", "xh", xh.data(), 24).code(),
            DLRT_INVALID_ARGUMENT);
  ASSERT_FALSE(session.run("forward"));
  std::vector<uint16_t> yh(6), yb(6);
  ASSERT_FALSE(session.getOutput("forward", "yh", yh.data(), 12));
  ASSERT_FALSE(session.getOutput("forward", "yb", yb.data(), 12));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(yh[i], xh[i] ^ 0x8000u) << i;
    EXPECT_EQ(yb[i], xb[i] ^ 0x8000u) << i;
  }
  // Parameters start from the F16/BF16 weights; the kernel bumped wb.
  std::vector<uint16_t> wh(3), wb(3), mh(3, 0xffff);
  ASSERT_FALSE(session.readState("wh", wh.data(), 6));
  ASSERT_FALSE(session.readState("wb", wb.data(), 6));
  ASSERT_FALSE(session.readState("mh", mh.data(), 6));
  EXPECT_EQ(wh, kWh);
  EXPECT_EQ(wb, (std::vector<uint16_t>{0x3f81, 0x4041, 0xbe81}));
  EXPECT_EQ(mh, (std::vector<uint16_t>{0, 0, 0}));
  EXPECT_EQ(dlrt::halfBitsToFloat(wh[1]), -2.0f);
}

TEST_F(HalfPackageTest, CheckpointHoldsF16AndBF16) {
  std::vector<uint16_t> mh = {0x0001, 0x7bff, 0xfc00};
  ASSERT_FALSE(session.writeState("mh", mh.data(), 6));
  std::string ckpt = dir.file("ckpt.safetensors");
  dlrt::Error e = session.saveCheckpoint(ckpt, "{}");
  ASSERT_FALSE(e) << e.message();
  std::vector<uint8_t> bytes = readBytes(ckpt);
  std::vector<dlrt::safetensors::Tensor> tensors;
  std::string error;
  ASSERT_TRUE(dlrt::safetensors::parse(bytes.data(), bytes.size(), &tensors,
                                       nullptr, &error))
      << error;
  std::map<std::string, dlrt::safetensors::Tensor> byName;
  for (auto &t : tensors)
    byName[t.name] = t;
  ASSERT_EQ(byName.size(), 3u);
  EXPECT_EQ(byName["wh"].dtype, "F16");
  EXPECT_EQ(byName["wb"].dtype, "BF16");
  EXPECT_EQ(byName["mh"].dtype, "F16");
  EXPECT_EQ(byName["mh"].data, halfBytes(mh));
  EXPECT_EQ(byName["wb"].data, halfBytes(kWb));

  std::vector<uint16_t> zeros(3, 0);
  ASSERT_FALSE(session.writeState("mh", zeros.data(), 6));
  e = session.loadCheckpoint(ckpt);
  ASSERT_FALSE(e) << e.message();
  std::vector<uint16_t> back(3);
  ASSERT_FALSE(session.readState("mh", back.data(), 6));
  EXPECT_EQ(back, mh);

  // A checkpoint whose tensor has the right bytes but another dtype (F16
  // where the model has BF16) is refused.
  byName["wb"].dtype = "F16";
  std::vector<dlrt::safetensors::Tensor> changed;
  for (auto &kv : byName)
    changed.push_back(kv.second);
  std::string bad = dir.file("bad.safetensors");
  writeBytes(bad, dlrt::safetensors::serialize(changed));
  e = session.loadCheckpoint(bad);
  ASSERT_TRUE(e);
  EXPECT_NE(std::string(e.message()).find("'wb' is F16"), std::string::npos)
      << e.message();
  EXPECT_NE(std::string(e.message()).find("BF16"), std::string::npos)
      << e.message();
}

TEST(HalfPackage, BadDtypesAreCorrupt) {
  auto parse = [](const PkgSpec &spec) {
    std::vector<uint8_t> bytes = buildPackage(spec);
    dlrt::Package p;
    return dlrt::parsePackage(bytes.data(), bytes.size(), "h.dlcp", &p);
  };
  PkgSpec good = halfSpec({});
  ASSERT_TRUE(parse(good).ok()) << parse(good).message;

  struct Case {
    const char *what;
    std::function<void(PkgSpec &)> change;
    const char *message;
  } cases[] = {
      {"unknown dtype 7",
       [](PkgSpec &s) {
         s.buffers[0].dtype = 7;
         s.buffers[0].sizeBytes = 12;
       },
       "buffer 0 has unknown dtype 7 (supported: 0 f32, 1 f64, 2 i64, 3 i32, "
       "4 bool, 5 f16, 6 bf16)"},
      {"negative dtype",
       [](PkgSpec &s) {
         s.buffers[1].dtype = -3;
         s.buffers[1].sizeBytes = 12;
       },
       "buffer 1 has unknown dtype -3"},
      {"f32-sized f16 buffer", [](PkgSpec &s) { s.buffers[0].sizeBytes = 24; },
       "buffer 0 has size_bytes 24 but its shape and dtype need 12"},
      {"f16 weight for a bf16 parameter",
       [](PkgSpec &s) {
         s.weights = dlrt::safetensors::serialize({
             {"wh", "F16", {3}, halfBytes(kWh)},
             {"wb", "F16", {3}, halfBytes(kWb)},
         });
       },
       "buffer 5 ('wb') is BF16 of 6 bytes but weight 'wb' is F16 of 6 "
       "bytes"},
      {"f16 in a version 2 package", [](PkgSpec &s) { s.formatVersion = 2; },
       "buffer 0 has dtype f16, which needs format version 3 (the package is "
       "version 2)"},
  };
  for (const Case &c : cases) {
    PkgSpec s = halfSpec({});
    c.change(s);
    dlrt::Status st = parse(s);
    EXPECT_EQ(st.code, DLRT_CORRUPT) << c.what;
    EXPECT_NE(st.message.find(c.message), std::string::npos)
        << c.what << ": " << st.message;
  }
}
