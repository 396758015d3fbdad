//===- HalfTypesTest.cpp - f16/bf16 kernels bit for bit against CUDA ----===//
//
// The host conversions of the emitted prelude against CUDA's own host
// implementations (<cuda_fp16.h>, <cuda_bf16.h>) over every f16/bf16 bit
// pattern and millions of float and double patterns around the rounding
// boundaries; then a dlgraph model with fused f16 and bf16 chains and casts,
// lowered with the dlc pipeline, emitted as host C++, compiled, run, and
// every output compared bit for bit with a reference that does each op in
// float on the widened inputs and rounds once with CUDA's __float2half_rn /
// __float2bfloat16_rn. No tolerance: the semantics are exact. The same
// model's CUDA kernels then run on the CUDA stand-in (its NVRTC and driver,
// test/cuda-emulation/standin, loaded with dlopen so that its NVRTC does not
// clash with the real one codegen links) and must give the host's bytes.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/Analysis/PlanStats.h"
#include "compiler/Pipeline/Pipeline.h"
#include "test/cuda-emulation/StandinRun.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

using namespace mlir;
using namespace dlc::codegen;

namespace {

using dlc::codegen::test::HostLib;

uint16_t bitsOf(__half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t bitsOf(__nv_bfloat16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
__half halfOf(uint16_t b) {
  __half h;
  std::memcpy(&h, &b, 2);
  return h;
}
__nv_bfloat16 bfloatOf(uint16_t b) {
  __nv_bfloat16 h;
  std::memcpy(&h, &b, 2);
  return h;
}
uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// CUDA's host conversions, the reference.
float f16ToF32(uint16_t b) { return __half2float(halfOf(b)); }
float bf16ToF32(uint16_t b) { return __bfloat162float(bfloatOf(b)); }
uint16_t roundF16(float f) { return bitsOf(__float2half_rn(f)); }
uint16_t roundBF16(float f) { return bitsOf(__float2bfloat16_rn(f)); }
/// f32 arithmetic result rounded to f16 and widened back.
float r16(float f) { return f16ToF32(roundF16(f)); }
float rb16(float f) { return bf16ToF32(roundBF16(f)); }

/// The emitted host conversions, exported from a library of their own.
struct HostConversions {
  using FromF32 = uint16_t (*)(float);
  using FromF64 = uint16_t (*)(double);
  using ToF32 = float (*)(uint16_t);
  HostLib lib;
  FromF32 f32ToF16, f32ToBF16;
  FromF64 f64ToF16, f64ToBF16;
  ToF32 f16ToF32, bf16ToF32;

  HostConversions()
      : lib(dlc::codegen::detail::hostPrelude({}) +
            dlc::codegen::detail::halfHelpers(false, false) +
            dlc::codegen::detail::halfHelpers(true, false) + R"(
extern "C" dlc_f16 t_f32_to_f16(float x) { return dlc_f32_to_f16(x); }
extern "C" dlc_bf16 t_f32_to_bf16(float x) { return dlc_f32_to_bf16(x); }
extern "C" dlc_f16 t_f64_to_f16(double x) { return dlc_f64_to_f16(x); }
extern "C" dlc_bf16 t_f64_to_bf16(double x) { return dlc_f64_to_bf16(x); }
extern "C" float t_f16_to_f32(dlc_f16 x) { return dlc_f16_to_f32(x); }
extern "C" float t_bf16_to_f32(dlc_bf16 x) { return dlc_bf16_to_f32(x); }
)"),
        f32ToF16(lib.get<FromF32>("t_f32_to_f16")),
        f32ToBF16(lib.get<FromF32>("t_f32_to_bf16")),
        f64ToF16(lib.get<FromF64>("t_f64_to_f16")),
        f64ToBF16(lib.get<FromF64>("t_f64_to_bf16")),
        f16ToF32(lib.get<ToF32>("t_f16_to_f32")),
        bf16ToF32(lib.get<ToF32>("t_bf16_to_f32")) {}
  bool ok() const {
    return f32ToF16 && f32ToBF16 && f64ToF16 && f64ToBF16 && f16ToF32 &&
           bf16ToF32;
  }
};

TEST(HalfConversions, WideningMatchesCudaForEveryPattern) {
  HostConversions c;
  ASSERT_TRUE(c.ok());
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    ASSERT_EQ(bitsOf(c.f16ToF32(b)), bitsOf(f16ToF32(b))) << std::hex << b;
    ASSERT_EQ(bitsOf(c.bf16ToF32(b)), bitsOf(bf16ToF32(b))) << std::hex << b;
  }
}

TEST(HalfConversions, F32RoundingMatchesCuda) {
  HostConversions c;
  ASSERT_TRUE(c.ok());
  // Every sign/exponent/upper-mantissa prefix, with low bits that make the
  // value exact, just above, at and around the halfway point of either
  // format (f16 drops 13 bits of a normal float, bf16 16; subnormal results
  // drop more, which the prefixes vary), plus random low bits.
  std::mt19937 rng(42);
  const uint32_t lows[] = {0,      1,      0x0fff, 0x1000, 0x1001,
                           0x1fff, 0x7fff, 0x8000, 0x8001, 0xffff};
  size_t checked = 0;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (int k = 0; k < 12; ++k) {
      uint32_t low = k < 10 ? lows[k] : rng() & 0xffff;
      float f = floatOf(hi << 16 | low);
      ASSERT_EQ(c.f32ToF16(f), roundF16(f)) << std::hex << bitsOf(f);
      ASSERT_EQ(c.f32ToBF16(f), roundBF16(f)) << std::hex << bitsOf(f);
      ++checked;
    }
  // f16 keeps bits 13 and up of a normal float: every pattern of bits 0-18
  // under a few exponents where f16 is normal, subnormal or overflows.
  for (uint32_t exp : {0x70u, 0x66u, 0x67u, 0x71u, 0x8eu, 0x8fu})
    for (uint32_t m = 0; m < (1u << 19); m += 7) {
      float f = floatOf(exp << 23 | m << 4 | (m & 15));
      ASSERT_EQ(c.f32ToF16(f), roundF16(f)) << std::hex << bitsOf(f);
      ASSERT_EQ(c.f32ToF16(-f), roundF16(-f)) << std::hex << bitsOf(f);
      ++checked;
    }
  EXPECT_GT(checked, 1000000u);
  // The named cases: NaN is 0x7fff, overflow inf, the largest finite
  // values, ties to even, the smallest subnormals.
  EXPECT_EQ(c.f32ToF16(NAN), 0x7fff);
  EXPECT_EQ(c.f32ToBF16(-NAN), 0x7fff);
  EXPECT_EQ(c.f32ToF16(65520.0f), 0x7c00);
  EXPECT_EQ(c.f32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(c.f32ToF16(-1e30f), 0xfc00);
  EXPECT_EQ(c.f32ToF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(c.f32ToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(c.f32ToF16(0x1p-25f), 0x0000);
  EXPECT_EQ(c.f32ToF16(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(c.f32ToBF16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(c.f32ToBF16(0x1.fffffep127f), 0x7f80);
}

TEST(HalfConversions, F64RoundingIsSingleLikeCuda) {
  HostConversions c;
  ASSERT_TRUE(c.ok());
  std::mt19937_64 rng(7);
  for (int k = 0; k < 2000000; ++k) {
    // Exponents around both formats' ranges; mantissas random or near a
    // tie of the f16 / bf16 mantissa.
    uint64_t exp = 1023 - 140 + rng() % 300, mant = rng() & ((1ull << 52) - 1);
    if (k % 3 == 1)
      mant = (mant & ~((1ull << 42) - 1)) | (1ull << 41) | (rng() & 1);
    if (k % 3 == 2)
      mant = (mant & ~((1ull << 45) - 1)) | (1ull << 44) | (rng() & 1);
    uint64_t bits = (rng() & 1) << 63 | exp << 52 | mant;
    double d;
    std::memcpy(&d, &bits, 8);
    ASSERT_EQ(c.f64ToF16(d), bitsOf(__double2half(d))) << std::hexfloat << d;
    ASSERT_EQ(c.f64ToBF16(d), bitsOf(__double2bfloat16(d)))
        << std::hexfloat << d;
  }
  // Rounding through float first would give 0x3c00 (1 + 2^-11 is a tie).
  EXPECT_EQ(c.f64ToF16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  EXPECT_EQ(c.f64ToF16(std::nan("")), 0x7fff);
  EXPECT_EQ(c.f64ToBF16(-INFINITY), 0xff80);
}

/// A model with fused f16 and bf16 chains and casts between every type.
const char *kModel = R"mlir(
module {
  func.func @main(%x: tensor<64x32xf16> {dlgraph.name = "x"}, %y: tensor<32xf16> {dlgraph.name = "y"},
                  %b: tensor<64x32xbf16> {dlgraph.name = "b"}, %f: tensor<64x32xf32> {dlgraph.name = "f"},
                  %d: tensor<64x32xf64> {dlgraph.name = "d"}, %i: tensor<64x32xi32> {dlgraph.name = "i"})
      -> (tensor<64x32xf16> {dlgraph.name = "h"}, tensor<64x32xbf16> {dlgraph.name = "g"},
          tensor<64x32xf32> {dlgraph.name = "w"}, tensor<64x32xi1> {dlgraph.name = "c"},
          tensor<64x32xf16> {dlgraph.name = "dh"}, tensor<64x32xbf16> {dlgraph.name = "ib"},
          tensor<64x32xi32> {dlgraph.name = "hi"}, tensor<32x64xf16> {dlgraph.name = "tx"}) {
    %k = dlgraph.constant dense<0.1> : tensor<f16>
    %m = dlgraph.mul %x, %y : (tensor<64x32xf16>, tensor<32xf16>) -> tensor<64x32xf16>
    %a = dlgraph.add %m, %k : (tensor<64x32xf16>, tensor<f16>) -> tensor<64x32xf16>
    %h = dlgraph.relu %a : tensor<64x32xf16>
    %fb = dlgraph.cast %f : tensor<64x32xf32> to tensor<64x32xbf16>
    %s = dlgraph.sub %b, %fb : (tensor<64x32xbf16>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %hb = dlgraph.cast %h : tensor<64x32xf16> to tensor<64x32xbf16>
    %g = dlgraph.div %s, %hb : (tensor<64x32xbf16>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %w = dlgraph.cast %g : tensor<64x32xbf16> to tensor<64x32xf32>
    %c = dlgraph.compare "gt", %h, %x : (tensor<64x32xf16>, tensor<64x32xf16>) -> tensor<64x32xi1>
    %dh = dlgraph.cast %d : tensor<64x32xf64> to tensor<64x32xf16>
    %ib = dlgraph.cast %i : tensor<64x32xi32> to tensor<64x32xbf16>
    %hi = dlgraph.cast %h : tensor<64x32xf16> to tensor<64x32xi32>
    %tx = dlgraph.transpose %x {perm = array<i64: 1, 0>} : tensor<64x32xf16> -> tensor<32x64xf16>
    return %h, %g, %w, %c, %dh, %ib, %hi, %tx : tensor<64x32xf16>, tensor<64x32xbf16>, tensor<64x32xf32>, tensor<64x32xi1>, tensor<64x32xf16>, tensor<64x32xbf16>, tensor<64x32xi32>, tensor<32x64xf16>
  }
}
)mlir";

constexpr int kRows = 64, kCols = 32, kN = kRows * kCols;

/// Test inputs: random bit patterns (NaN, inf, subnormals included) mixed
/// with ordinary values, and values on the rounding boundaries.
struct Inputs {
  std::vector<uint16_t> x, y, b;
  std::vector<float> f;
  std::vector<double> d;
  std::vector<int32_t> i;
  Inputs() : x(kN), y(kCols), b(kN), f(kN), d(kN), i(kN) {
    std::mt19937 rng(3);
    for (int e = 0; e < kN; ++e) {
      x[e] = e % 4 == 0 ? rng()
                        : roundF16((float)((int)(rng() % 2001) - 1000) / 37.0f);
      b[e] = e % 5 == 0
                 ? rng()
                 : roundBF16((float)((int)(rng() % 2001) - 1000) / 13.0f);
      uint32_t fb = rng();
      f[e] = e % 3 == 0 ? floatOf(fb) : floatOf((fb & 0xc7ff0000u) | 0x8000u);
      uint64_t db = (uint64_t)rng() << 32 | rng();
      double dv = (double)((int)(rng() % 200001) - 100000) / 7.0;
      if (e % 4 == 1)
        std::memcpy(&dv, &db, 8);
      if (e % 4 == 2)
        dv = std::ldexp(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
                        (int)(rng() % 40) - 30);
      d[e] = dv;
      i[e] = e % 2 ? (int32_t)rng() : (int32_t)(rng() % 100000) - 50000;
    }
    i[1] = (1 << 24) + (1 << 16) + 1; // float first would round to a tie
    for (int c = 0; c < kCols; ++c)
      y[c] = c == 5 ? 0x7c00 : roundF16((float)(c - 16) / 3.0f);
    x[7] = 0x7bff; // times y: overflow to inf
  }
};

/// Runs the dlexec function of |module| on the host library: every
/// dlexec.input from |inputs|, a buffer of its own per alloc (the planned
/// offsets are ignored), kernels in order; returns the output buffers.
std::map<std::string, std::vector<uint8_t>>
runHost(ModuleOp module, HostLib &lib,
        std::map<std::string, std::vector<uint8_t>> inputs) {
  std::map<std::string, std::vector<uint8_t>> outputs;
  llvm::DenseMap<Value, std::vector<uint8_t> *> buffers;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> storage;
  auto bytesOf = [](Value v) {
    auto t = cast<MemRefType>(v.getType());
    return (size_t)t.getNumElements() *
           std::max<size_t>(1, t.getElementTypeBitWidth() / 8);
  };
  module.walk([&](Operation *op) {
    if (auto in = dyn_cast<dlc::exec::InputOp>(op)) {
      auto &bytes = inputs[in.getName().str()];
      EXPECT_EQ(bytes.size(), bytesOf(in.getResult())) << in.getName().str();
      buffers[in.getResult()] = &bytes;
    } else if (auto alloc = dyn_cast<dlc::exec::AllocOp>(op)) {
      storage.push_back(
          std::make_unique<std::vector<uint8_t>>(bytesOf(alloc), 0xcd));
      buffers[alloc] = storage.back().get();
    } else if (auto reshape = dyn_cast<dlc::exec::ReshapeOp>(op)) {
      buffers[reshape] = buffers.lookup(reshape.getSource());
    } else if (auto k = dyn_cast<dlc::exec::KernelOp>(op)) {
      std::vector<void *> args;
      for (Value v : k->getOperands())
        args.push_back(buffers.lookup(v)->data());
      auto fn = lib.get<void (*)(void **)>(
          dlc::codegen::detail::sanitizeName(k.getSymName()).c_str());
      ASSERT_NE(fn, nullptr) << k.getSymName().str();
      fn(args.data());
    } else if (auto out = dyn_cast<dlc::exec::OutputOp>(op)) {
      outputs[out.getName().str()] = *buffers.lookup(out.getBuffer());
    } else if (isa<dlc::exec::BuiltinKernelOp, dlc::exec::LibraryCallOp,
                   dlc::exec::VariableRefOp>(op)) {
      ADD_FAILURE() << "unexpected step " << op->getName().getStringRef().str();
    }
  });
  return outputs;
}

using dlc::codegen::test::Standin;

/// Runs the dlexec function of |module| through the stand-in as runHost
/// does on the host: kernels launched the runtime's way (blocks of
/// blockSize threads covering numThreads).
std::map<std::string, std::vector<uint8_t>>
runStandin(ModuleOp module, Standin &cu,
           std::map<std::string, std::vector<uint8_t>> inputs) {
  std::map<std::string, std::vector<uint8_t>> outputs;
  auto kernels = emitCudaKernels(module);
  EXPECT_TRUE(succeeded(kernels));
  if (failed(kernels))
    return outputs;
  std::map<std::string, std::pair<CUfunction, KernelSource>> byName;
  for (const KernelSource &k : *kernels)
    byName[k.name] = {cu.compile(k), k};
  llvm::DenseMap<Value, CUdeviceptr> buffers;
  auto bytesOf = [](Value v) {
    auto t = cast<MemRefType>(v.getType());
    return (size_t)t.getNumElements() *
           std::max<size_t>(1, t.getElementTypeBitWidth() / 8);
  };
  module.walk([&](Operation *op) {
    if (isa<dlc::exec::InputOp, dlc::exec::AllocOp>(op)) {
      Value v = op->getResult(0);
      CUdeviceptr p = 0;
      ASSERT_EQ(cu.cuMemAlloc(&p, bytesOf(v)), CUDA_SUCCESS);
      buffers[v] = p;
      if (auto in = dyn_cast<dlc::exec::InputOp>(op)) {
        auto &bytes = inputs[in.getName().str()];
        ASSERT_EQ(bytes.size(), bytesOf(v));
        ASSERT_EQ(cu.cuMemcpyHtoD(p, bytes.data(), bytes.size()), CUDA_SUCCESS);
      }
    } else if (auto reshape = dyn_cast<dlc::exec::ReshapeOp>(op)) {
      buffers[reshape] = buffers.lookup(reshape.getSource());
    } else if (auto k = dyn_cast<dlc::exec::KernelOp>(op)) {
      auto &[fn, src] =
          byName[dlc::codegen::detail::sanitizeName(k.getSymName())];
      ASSERT_NE(fn, nullptr) << k.getSymName().str();
      std::vector<CUdeviceptr> ptrs;
      for (Value v : k->getOperands())
        ptrs.push_back(buffers.lookup(v));
      std::vector<void *> args;
      for (CUdeviceptr &p : ptrs)
        args.push_back(&p);
      unsigned blocks =
          (unsigned)((src.numThreads + src.blockSize - 1) / src.blockSize);
      ASSERT_EQ(cu.cuLaunchKernel(fn, blocks, 1, 1, src.blockSize, 1, 1, 0,
                                  nullptr, args.data(), nullptr),
                CUDA_SUCCESS);
    } else if (auto out = dyn_cast<dlc::exec::OutputOp>(op)) {
      std::vector<uint8_t> bytes(bytesOf(out.getBuffer()));
      ASSERT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
      ASSERT_EQ(cu.cuMemcpyDtoH(bytes.data(), buffers.lookup(out.getBuffer()),
                                bytes.size()),
                CUDA_SUCCESS);
      outputs[out.getName().str()] = std::move(bytes);
    }
  });
  return outputs;
}

template <typename T> std::vector<uint8_t> rawBytes(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}
template <typename T> std::vector<T> typed(const std::vector<uint8_t> &bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

TEST(HalfKernels, HostRunIsBitExact) {
  DialectRegistry registry;
  dlc::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = parseSourceString<ModuleOp>(kModel, &ctx);
  ASSERT_TRUE(module);
  PassManager pm(&ctx);
  dlc::buildLoweringPipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto source = emitHostSource(*module);
  ASSERT_TRUE(succeeded(source));
  HostLib lib(*source);

  Inputs in;
  auto out = runHost(*module, lib,
                     {{"x", rawBytes(in.x)},
                      {"y", rawBytes(in.y)},
                      {"b", rawBytes(in.b)},
                      {"f", rawBytes(in.f)},
                      {"d", rawBytes(in.d)},
                      {"i", rawBytes(in.i)}});
  ASSERT_EQ(out.size(), 8u);
  // Data movement keeps every bit, NaN payloads and signs included.
  auto tx = typed<uint16_t>(out["tx"]);
  ASSERT_EQ(tx.size(), (size_t)kN);
  int nanPayloads = 0;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      ASSERT_EQ(tx[c * kRows + r], in.x[r * kCols + c]);
      uint16_t v = in.x[r * kCols + c];
      nanPayloads += (v & 0x7c00) == 0x7c00 && (v & 0x3ff) && v != 0x7fff;
    }
  EXPECT_GT(nanPayloads, 0);
  auto h = typed<uint16_t>(out["h"]), g = typed<uint16_t>(out["g"]),
       dh = typed<uint16_t>(out["dh"]), ib = typed<uint16_t>(out["ib"]);
  auto w = typed<uint32_t>(out["w"]);
  auto hi = typed<int32_t>(out["hi"]);
  auto c = out["c"];
  ASSERT_EQ(h.size(), (size_t)kN);
  const float k = f16ToF32(bitsOf(__double2half(0.1)));
  int nanH = 0, infH = 0;
  for (int e = 0; e < kN; ++e) {
    // One rounding per op, on the float result of the widened inputs.
    float x = f16ToF32(in.x[e]), y = f16ToF32(in.y[e % kCols]);
    float a = r16(r16(x * y) + k);
    float hv = r16((a > 0.0f || a != a) ? a : 0.0f);
    ASSERT_EQ(h[e], roundF16(hv)) << "h[" << e << "]";
    float s = rb16(bf16ToF32(in.b[e]) - rb16(in.f[e]));
    float gv = rb16(s / rb16(hv));
    ASSERT_EQ(g[e], roundBF16(gv)) << "g[" << e << "]";
    ASSERT_EQ(w[e], bitsOf(gv)) << "w[" << e << "]";
    ASSERT_EQ(c[e], hv > x ? 1 : 0) << "c[" << e << "]";
    ASSERT_EQ(dh[e], bitsOf(__double2half(in.d[e]))) << "dh[" << e << "]";
    ASSERT_EQ(ib[e], bitsOf(__double2bfloat16((double)in.i[e])))
        << "ib[" << e << "]";
    if (std::isfinite(hv) && std::fabs(hv) < 2e9f)
      ASSERT_EQ(hi[e], (int32_t)hv) << "hi[" << e << "]";
    nanH += hv != hv;
    infH += std::isinf(hv);
  }
  // The inputs reach the special cases.
  EXPECT_GT(nanH, 0);
  EXPECT_GT(infH, 0);
  // i = 2^24 + 2^16 + 1 rounds once to 2^24 + 2^17 (through float it would
  // tie down to 2^24).
  EXPECT_EQ(ib[1], roundBF16(16908288.0f));

  // The CUDA kernels on the stand-in: the host's bytes exactly.
  Standin cu;
  ASSERT_TRUE(cu.start());
  auto onCuda = runStandin(*module, cu,
                           {{"x", rawBytes(in.x)},
                            {"y", rawBytes(in.y)},
                            {"b", rawBytes(in.b)},
                            {"f", rawBytes(in.f)},
                            {"d", rawBytes(in.d)},
                            {"i", rawBytes(in.i)}});
  ASSERT_EQ(onCuda.size(), out.size());
  for (auto &[name, bytes] : out)
    if (name != "hi")
      EXPECT_TRUE(onCuda[name] == bytes) << "output " << name;
  // f16 -> i32 of inf and NaN is undefined in C and differs between the
  // host (INT_MIN) and CUDA (saturation, 0 for NaN); the rest must agree.
  auto hiCuda = typed<int32_t>(onCuda["hi"]);
  ASSERT_EQ(hiCuda.size(), hi.size());
  int compared = 0;
  for (int e = 0; e < kN; ++e)
    if (std::isfinite(f16ToF32(h[e]))) {
      EXPECT_EQ(hiCuda[e], hi[e]) << "hi[" << e << "]";
      ++compared;
    }
  EXPECT_GT(compared, kN / 2);
}

} // namespace
