//===- GatherKernelTest.cpp - the gather gradient on the stand-in --------===//
//
// gather_grad (an embedding's gradient, codegen/BuiltinGather.cpp) on CUDA
// gives each block of 256 threads a range of dx rows: it reads the indices
// 256 at a time (coalesced), lists in index order those naming its rows
// (ballot, warp counts) and adds their dy rows; the host keeps one thread
// per column. Both add a row's dy terms in index order from zero, so the
// stand-in (blocks and threads in a seeded random order) must match the
// host library bit for bit, with repeated, negative and out-of-range
// indices, more indices than a block reads at once (700: three chunks, the
// last partial, repeated rows in each), an axis with outer dimensions, a
// row narrower than a block, and i32 and i64 indices; the host must match a
// plain reference loop in the same order, and the CUDA launch must be a
// block per row here. The kernels compile with the real NVRTC for sm_80 and
// sm_90.
//
//===----------------------------------------------------------------------===//
#include "StandinRun.h"
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/ExecOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

using namespace mlir;
using namespace dlc::codegen;
using namespace dlc::codegen::test;

namespace {

/// emb: an embedding [1000, 64] from 37 i64 indices; small: [300, 64] from
/// 700 indices (three chunks of the CUDA block's index reads);
/// outer: axis 1 of [3, 50, 40] from i32 indices [2, 5] (inner 40, not a
/// multiple of a warp).
const char *kModule = R"mlir(
dlexec.func @f attributes {arena_bytes = 409600 : i64} {
  %ie = dlexec.input "ie" : memref<37xi64>
  %de = dlexec.input "de" : memref<37x64xf32>
  %is = dlexec.input "is" : memref<700xi64>
  %ds = dlexec.input "ds" : memref<700x64xf32>
  %io = dlexec.input "io" : memref<2x5xi32>
  %do = dlexec.input "do" : memref<3x2x5x40xf32>
  %emb = dlexec.alloc {offset = 0 : i64} : memref<1000x64xf32>
  %small = dlexec.alloc {offset = 256000 : i64} : memref<300x64xf32>
  %outer = dlexec.alloc {offset = 332800 : i64} : memref<3x50x40xf32>
  dlexec.builtin_kernel @emb_grad "gather_grad" ins(%ie, %de : memref<37xi64>, memref<37x64xf32>) outs(%emb : memref<1000x64xf32>) {axis = 0 : i64}
  dlexec.builtin_kernel @small_grad "gather_grad" ins(%is, %ds : memref<700xi64>, memref<700x64xf32>) outs(%small : memref<300x64xf32>) {axis = 0 : i64}
  dlexec.builtin_kernel @outer_grad "gather_grad" ins(%io, %do : memref<2x5xi32>, memref<3x2x5x40xf32>) outs(%outer : memref<3x50x40xf32>) {axis = 1 : i64}
  dlexec.output "emb", %emb : memref<1000x64xf32>
}
)mlir";

template <typename T>
std::vector<uint8_t> bytesOfVector(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// Indices into n rows: repeats (a few rows drawn often), negatives that
/// count from the end, and some outside [-n, n) that must add nothing.
template <typename T>
std::vector<T> indicesFor(size_t count, int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    switch (rng() % 5) {
    case 0:
      out[i] = T(rng() % 3);
      break; // repeated rows
    case 1:
      out[i] = T(-1 - int64_t(rng() % n));
      break; // from the end
    case 2:
      out[i] = T(n + int64_t(rng() % 4));
      break; // out of range
    default:
      out[i] = T(rng() % n);
      break;
    }
  }
  return out;
}

std::vector<float> valuesFor(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> out(count);
  for (float &v : out)
    v = float(int(rng() % 2001) - 1000) / 97.0f;
  return out;
}

/// dx [outer, n, inner] of dy [outer, m, inner]: rows added in index order.
template <typename T>
std::vector<float> reference(const std::vector<T> &idx,
                             const std::vector<float> &dy, int64_t outer,
                             int64_t n, int64_t inner) {
  const int64_t m = int64_t(idx.size());
  std::vector<float> dx(size_t(outer * n * inner), 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = int64_t(idx[j]);
      if (k < 0)
        k += n;
      if (k < 0 || k >= n)
        continue;
      for (int64_t c = 0; c < inner; ++c)
        dx[(o * n + k) * inner + c] += dy[(o * m + j) * inner + c];
    }
  return dx;
}

class GatherKernels : public ::testing::Test {
protected:
  void SetUp() override {
    parseAndEmit(ctx, kModule, module, kernels);
    if (HasFatalFailure())
      return;
    ie = indicesFor<int64_t>(37, 1000, 1);
    is = indicesFor<int64_t>(700, 300, 2);
    io = indicesFor<int32_t>(10, 50, 3);
    de = valuesFor(37 * 64, 4);
    ds = valuesFor(700 * 64, 5);
    dout = valuesFor(3 * 10 * 40, 6);
  }

  Memory initialMemory() {
    Memory mem;
    mem["in:ie"] = bytesOfVector(ie);
    mem["in:is"] = bytesOfVector(is);
    mem["in:io"] = bytesOfVector(io);
    mem["in:de"] = bytesOfVector(de);
    mem["in:ds"] = bytesOfVector(ds);
    mem["in:do"] = bytesOfVector(dout);
    // A poisoned arena: every dx element must be written.
    mem["arena"] = std::vector<uint8_t>(409600, 0xff);
    return mem;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::map<std::string, KernelSource> kernels;
  std::vector<int64_t> ie, is;
  std::vector<int32_t> io;
  std::vector<float> de, ds, dout;
};

TEST_F(GatherKernels, BlocksOwnRowRangesOnCuda) {
  ASSERT_EQ(kernels.size(), 3u);
  // Fewer rows than the 1,024 blocks aimed at: a block a row (1000, 300,
  // 3 x 50 blocks of 256 threads), each reading the indices in chunks of
  // 256 and listing its hits with a ballot.
  for (auto [name, blocks] : {std::pair<const char *, int64_t>{"emb_grad", 1000},
                              {"small_grad", 300},
                              {"outer_grad", 150}}) {
    const KernelSource &k = kernels.at(name);
    EXPECT_EQ(k.blockSize, 256) << name;
    EXPECT_EQ(k.numThreads, blocks * 256) << name;
    EXPECT_NE(k.cudaSource.find("__ballot_sync(0xffffffffu, hit)"),
              std::string::npos)
        << name << "\n"
        << k.cudaSource;
  }
}

TEST_F(GatherKernels, CompileWithNvrtcForSm80AndSm90) {
  for (auto &[name, k] : kernels)
    for (const char *arch : {"sm_80", "sm_90"})
      EXPECT_TRUE(succeeded(compileWithNVRTC(UnknownLoc::get(&ctx), k, arch)))
          << name << " " << arch;
}

TEST_F(GatherKernels, StandinMatchesTheHostAndTheReferenceBitForBit) {
  auto source = emitHostSource(*module);
  ASSERT_TRUE(succeeded(source));
  HostLib lib(*source);
  Memory want = initialMemory();
  runHost(*module, lib, want);
  auto arenaFloats = [](const Memory &mem, size_t offset, size_t count) {
    std::vector<float> out(count);
    std::memcpy(out.data(), mem.at("arena").data() + offset, count * 4);
    return out;
  };
  EXPECT_EQ(arenaFloats(want, 0, 1000 * 64), reference(ie, de, 1, 1000, 64));
  EXPECT_EQ(arenaFloats(want, 256000, 300 * 64), reference(is, ds, 1, 300, 64));
  EXPECT_EQ(arenaFloats(want, 332800, 3 * 50 * 40),
            reference(io, dout, 3, 50, 40));

  Standin cu;
  ASSERT_TRUE(cu.start());
  std::map<std::string, CUfunction> functions;
  for (auto &[name, k] : kernels)
    functions[name] = cu.compile(k);
  Memory got = initialMemory();
  runStandin(*module, cu, functions, kernels, 0, got);
  EXPECT_EQ(got.at("arena"), want.at("arena"));
}

} // namespace
