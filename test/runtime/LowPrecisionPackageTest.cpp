//===- LowPrecisionPackageTest.cpp - library-call dtype in packages -------===//
// The `dtype` of GemmAttrs / BatchedGemmAttrs / ConvAttrs (package.fbs):
// absent means f32 (packages written before the field load unchanged), f16
// and bf16 calls need buffers of that type, and other types are refused
// with a message that names what is supported.
#include <tuple>

#include <gtest/gtest.h>

#include "runtime/src/Package.h"
#include "TestPackage.h"

using namespace dlrt;
using namespace dlrt::test;
using dlc::exec::ElementType;

namespace {

constexpr int kF32 = 0, kF16 = 5, kBF16 = 6; // package.fbs DType

/// y[2,3] = x[2,2] w[2,2->3] as one gemm call over buffers of |bufferType|
/// whose parameters say |callType|; w has |wElements| elements.
PkgSpec gemmSpec(int bufferType, ElementType callType, int64_t wElements = 6) {
  PkgSpec s;
  s.formatVersion = 3;
  s.buffers = {
      {"x", 3, bufferType, {2, 2}},      // 0 Input
      {"w", 3, bufferType, {wElements}}, // 1 Input
      {"", 4, bufferType, {2, 3}, 0},    // 2 Arena @0
  };
  FnSpec f;
  f.name = "forward";
  f.inputs = {{"x", 0}, {"w", 1}};
  f.outputs = {{"y", 2}};
  StepSpec step;
  step.launch = false;
  step.callee = "gemm";
  step.args = {0, 1, 2};
  dlc::exec::LibraryCallParams p;
  p.call = dlc::exec::LibraryCall::Gemm;
  p.gemm.m = 2, p.gemm.n = 3, p.gemm.k = 2;
  p.gemm.dtype = callType;
  step.params = p;
  f.steps = {step};
  f.arenaBytes = 24;
  s.functions = {f};
  return s;
}

Status parse(const PkgSpec &spec, Package *out) {
  std::vector<uint8_t> bytes = buildPackage(spec);
  return parsePackage(bytes.data(), bytes.size(), "t.dlcp", out);
}

TEST(LowPrecisionPackage, CallDtypeIsDecoded) {
  for (auto [buffer, call] :
       {std::pair{kBF16, ElementType::BF16}, std::pair{kF16, ElementType::F16},
        std::pair{kF32, ElementType::F32}}) {
    SCOPED_TRACE(dlc::exec::elementTypeName(call));
    Package p;
    Status s = parse(gemmSpec(buffer, call), &p);
    ASSERT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(p.functions[0].steps[0].call.gemm.dtype, call);
  }
}

TEST(LowPrecisionPackage, MismatchesAndOtherTypesAreCorrupt) {
  const struct {
    const char *name;
    PkgSpec spec;
    const char *expect;
  } cases[] = {
      // An f32 call (or a package without the field) on bf16 buffers.
      {"f32 call, bf16 buffers", gemmSpec(kBF16, ElementType::F32),
       "A (buffer 0) is not f32"},
      {"bf16 call, f32 buffers", gemmSpec(kF32, ElementType::BF16),
       "A (buffer 0) is not bf16"},
      {"f16 call, bf16 buffers", gemmSpec(kBF16, ElementType::F16),
       "A (buffer 0) is not f16"},
      {"f64 call", gemmSpec(kF32, ElementType::F64),
       "library call 'gemm' supports f32, f16 and bf16, got dtype F64"},
      {"bf16 call, small B", gemmSpec(kBF16, ElementType::BF16, 5),
       "B (buffer 1, 10 bytes) is smaller than 6 bf16 elements"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    Package p;
    Status s = parse(c.spec, &p);
    EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
    EXPECT_NE(s.message.find(c.expect), std::string::npos) << s.message;
  }
}

// A bf16 gemm's bias_grad_b with an f32 dBias (mixed precision's bias
// gradient kept in f32) loads with f32_bias set; a bf16 dBias loads
// without it; an f32 dBias of the drelu_bgrad epilogue is corrupt.
TEST(LowPrecisionPackage, F32BiasGradientOfA16BitGemm) {
  for (auto [epilogue, dbType, ok] :
       {std::tuple{dlc::exec::GemmEpilogue::BiasGradB, kF32, true},
        std::tuple{dlc::exec::GemmEpilogue::BiasGradB, kBF16, true},
        std::tuple{dlc::exec::GemmEpilogue::DReluBiasGrad, kF32, false}}) {
    SCOPED_TRACE(std::string(dlc::exec::gemmEpilogueName(epilogue)) +
                 (dbType == kF32 ? " f32" : " bf16"));
    PkgSpec s = gemmSpec(kBF16, ElementType::BF16);
    s.buffers.push_back({"", 4, dbType, {3}, 64}); // 3 dBias, Arena @64
    StepSpec &step = s.functions[0].steps[0];
    step.params->gemm.epilogue = epilogue;
    step.args = {0, 1, 2, 3};
    if (epilogue == dlc::exec::GemmEpilogue::DReluBiasGrad) {
      s.buffers.push_back({"", 4, 3, {2, 4}, 128}); // 4 the ReLU mask, i32
      step.args = {0, 1, 4, 2, 3};
    }
    s.functions[0].arenaBytes = 256;
    Package p;
    Status st = parse(s, &p);
    if (!ok) {
      EXPECT_EQ(st.code, DLRT_CORRUPT) << st.message;
      EXPECT_NE(st.message.find("dBias (buffer 3"), std::string::npos)
          << st.message;
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(p.functions[0].steps[0].call.gemm.f32_bias, dbType == kF32);
  }
}

TEST(LowPrecisionPackage, PackagesWithoutTheFieldReadAsF32) {
  // The fuzz seeds were written before `dtype` existed: every call is f32.
  for (const char *seed : {"cnn_sgd", "mlp_adam", "cnn_sgd-v1"}) {
    SCOPED_TRACE(seed);
    Package p;
    Status s = loadPackage(
        std::string(DLRT_TEST_PACKAGE_SEEDS) + "/" + seed + ".dlcp", &p);
    ASSERT_TRUE(s.ok()) << s.message;
    int calls = 0;
    for (const FunctionInfo &f : p.functions)
      for (const StepInfo &step : f.steps)
        if (!step.isLaunch()) {
          ++calls;
          EXPECT_EQ(dlc::exec::elementTypeOf(step.call), ElementType::F32);
        }
    EXPECT_GT(calls, 0);
  }
}

} // namespace
