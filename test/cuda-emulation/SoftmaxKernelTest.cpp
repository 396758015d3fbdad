//===- SoftmaxKernelTest.cpp - softmax and cross-entropy row kernels ------===//
//
// The CUDA forms of the softmax / log_softmax and softmax cross-entropy
// builtins (codegen/BuiltinSoftmax.cpp, codegen/RowKernel.h; issue 14 item
// 1): a warp or a block per row, the row held in registers (read once,
// written once) where it fits, else streamed with the online softmax
// (Milakov & Gimelshein 2018); 128-bit accesses where every row start is
// provably aligned. Rows of 1 to 50,257 elements, ragged and misaligned, f32,
// f64 and bf16, rows of -inf and of large values, run on the CUDA stand-in
// (threads in a seeded random order, a new order every launch) and must
// match a float64 reference (softmax) or the host library (cross entropy,
// whose host loops these kernels leave unchanged) within the tolerances of
// a different summation order, and two stand-in runs
// must agree bit for bit (fixed combination order; the loss's last block,
// elected by an atomic counter, adds the blocks' sums in a fixed tree, and
// a second run of the same module checks it reset the counter). Launch
// shapes and the number of passes over each row are asserted, and every
// kernel compiles with the real NVRTC for sm_80 and sm_90.
//
//===----------------------------------------------------------------------===//
#include "StandinRun.h"
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/ExecOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <tuple>

using namespace mlir;
using namespace dlc::codegen;
using namespace dlc::codegen::test;

namespace {

/// Inputs x<n> / d<n> (f32 / f64 rows of n elements) for softmax and
/// log_softmax, ce*_logits / ce*_labels / g for the cross-entropy pairs; every
/// output in the arena, 256-byte aligned but ym, at 4 mod 16 (a misaligned
/// output: the kernel must stay scalar).
const char *kModule = R"mlir(
dlexec.func @f attributes {arena_bytes = 2112000 : i64} {
  %x1 = dlexec.input "x1" : memref<4x1xf32>
  %x31 = dlexec.input "x31" : memref<4x31xf32>
  %x32 = dlexec.input "x32" : memref<4x32xf32>
  %x33 = dlexec.input "x33" : memref<4x33xf32>
  %x1000 = dlexec.input "x1000" : memref<5x1000xf32>
  %x1024 = dlexec.input "x1024" : memref<9x1024xf32>
  %x1025 = dlexec.input "x1025" : memref<3x1025xf32>
  %x4096 = dlexec.input "x4096" : memref<3x4096xf32>
  %x6000 = dlexec.input "x6000" : memref<2x6000xf32>
  %x8200 = dlexec.input "x8200" : memref<2x8200xf32>
  %x50257 = dlexec.input "x50257" : memref<3x50257xf32>
  %d1000 = dlexec.input "d1000" : memref<3x1000xf64>
  %d33 = dlexec.input "d33" : memref<2x33xf64>
  %g = dlexec.input "g" : memref<f32>
  %ce_logits = dlexec.input "ce_logits" : memref<5x1000xf32>
  %ce_labels = dlexec.input "ce_labels" : memref<5xi64>
  %ce_bf16_logits = dlexec.input "ce_bf16_logits" : memref<4x1000xbf16>
  %ce_bf16_labels = dlexec.input "ce_bf16_labels" : memref<4xi32>
  %ce_long_logits = dlexec.input "ce_long_logits" : memref<2x50257xf32>
  %ce_long_labels = dlexec.input "ce_long_labels" : memref<2xi64>
  %ce_mlp_logits = dlexec.input "ce_mlp_logits" : memref<6x10xf32>
  %ce_mlp_labels = dlexec.input "ce_mlp_labels" : memref<6xi64>
  %ce_many_logits = dlexec.input "ce_many_logits" : memref<1000x40xf32>
  %ce_many_labels = dlexec.input "ce_many_labels" : memref<1000xi64>
  %y1 = dlexec.alloc {offset = 0 : i64} : memref<4x1xf32>
  %ly1 = dlexec.alloc {offset = 256 : i64} : memref<4x1xf32>
  %y31 = dlexec.alloc {offset = 512 : i64} : memref<4x31xf32>
  %y32 = dlexec.alloc {offset = 1024 : i64} : memref<4x32xf32>
  %y33 = dlexec.alloc {offset = 1536 : i64} : memref<4x33xf32>
  %ly33 = dlexec.alloc {offset = 2304 : i64} : memref<4x33xf32>
  %y1000 = dlexec.alloc {offset = 3072 : i64} : memref<5x1000xf32>
  %y1024 = dlexec.alloc {offset = 23296 : i64} : memref<9x1024xf32>
  %ly1024 = dlexec.alloc {offset = 60160 : i64} : memref<9x1024xf32>
  %y1025 = dlexec.alloc {offset = 97024 : i64} : memref<3x1025xf32>
  %y4096 = dlexec.alloc {offset = 109568 : i64} : memref<3x4096xf32>
  %y6000 = dlexec.alloc {offset = 158720 : i64} : memref<2x6000xf32>
  %ly6000 = dlexec.alloc {offset = 206848 : i64} : memref<2x6000xf32>
  %y8200 = dlexec.alloc {offset = 254976 : i64} : memref<2x8200xf32>
  %ly8200 = dlexec.alloc {offset = 320768 : i64} : memref<2x8200xf32>
  %y50257 = dlexec.alloc {offset = 386560 : i64} : memref<3x50257xf32>
  %ly50257 = dlexec.alloc {offset = 989696 : i64} : memref<3x50257xf32>
  %ym = dlexec.alloc {offset = 1592836 : i64} : memref<9x1024xf32>
  %dy1000 = dlexec.alloc {offset = 1629952 : i64} : memref<3x1000xf64>
  %dly1000 = dlexec.alloc {offset = 1654016 : i64} : memref<3x1000xf64>
  %dy33 = dlexec.alloc {offset = 1678080 : i64} : memref<2x33xf64>
  %dly33 = dlexec.alloc {offset = 1678848 : i64} : memref<2x33xf64>
  %ce_loss = dlexec.alloc {offset = 1679616 : i64} : memref<f32>
  %ce_dx = dlexec.alloc {offset = 1679872 : i64} : memref<5x1000xf32>
  %ce_bf16_loss = dlexec.alloc {offset = 1700096 : i64} : memref<f32>
  %ce_bf16_dx = dlexec.alloc {offset = 1700352 : i64} : memref<4x1000xbf16>
  %ce_long_loss = dlexec.alloc {offset = 1708544 : i64} : memref<f32>
  %ce_long_dx = dlexec.alloc {offset = 1708800 : i64} : memref<2x50257xf32>
  %ce_mlp_loss = dlexec.alloc {offset = 2110976 : i64} : memref<f32>
  %ce_mlp_dx = dlexec.alloc {offset = 2111232 : i64} : memref<6x10xf32>
  %ce_many_loss = dlexec.alloc {offset = 2111488 : i64} : memref<f32>
  %ce_many_smooth_loss = dlexec.alloc {offset = 2111744 : i64} : memref<f32>
  dlexec.builtin_kernel @softmax_1 "softmax" ins(%x1 : memref<4x1xf32>) outs(%y1 : memref<4x1xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_1 "log_softmax" ins(%x1 : memref<4x1xf32>) outs(%ly1 : memref<4x1xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_31 "softmax" ins(%x31 : memref<4x31xf32>) outs(%y31 : memref<4x31xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_32 "softmax" ins(%x32 : memref<4x32xf32>) outs(%y32 : memref<4x32xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_33 "softmax" ins(%x33 : memref<4x33xf32>) outs(%y33 : memref<4x33xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_33 "log_softmax" ins(%x33 : memref<4x33xf32>) outs(%ly33 : memref<4x33xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_1000 "softmax" ins(%x1000 : memref<5x1000xf32>) outs(%y1000 : memref<5x1000xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_1024 "softmax" ins(%x1024 : memref<9x1024xf32>) outs(%y1024 : memref<9x1024xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_1024 "log_softmax" ins(%x1024 : memref<9x1024xf32>) outs(%ly1024 : memref<9x1024xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_1025 "softmax" ins(%x1025 : memref<3x1025xf32>) outs(%y1025 : memref<3x1025xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_4096 "softmax" ins(%x4096 : memref<3x4096xf32>) outs(%y4096 : memref<3x4096xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_6000 "softmax" ins(%x6000 : memref<2x6000xf32>) outs(%y6000 : memref<2x6000xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_6000 "log_softmax" ins(%x6000 : memref<2x6000xf32>) outs(%ly6000 : memref<2x6000xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_8200 "softmax" ins(%x8200 : memref<2x8200xf32>) outs(%y8200 : memref<2x8200xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_8200 "log_softmax" ins(%x8200 : memref<2x8200xf32>) outs(%ly8200 : memref<2x8200xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_50257 "softmax" ins(%x50257 : memref<3x50257xf32>) outs(%y50257 : memref<3x50257xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_50257 "log_softmax" ins(%x50257 : memref<3x50257xf32>) outs(%ly50257 : memref<3x50257xf32>) {axis = -1 : i64}
  dlexec.builtin_kernel @softmax_misaligned "softmax" ins(%x1024 : memref<9x1024xf32>) outs(%ym : memref<9x1024xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_f64_1000 "softmax" ins(%d1000 : memref<3x1000xf64>) outs(%dy1000 : memref<3x1000xf64>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_f64_1000 "log_softmax" ins(%d1000 : memref<3x1000xf64>) outs(%dly1000 : memref<3x1000xf64>) {axis = 1 : i64}
  dlexec.builtin_kernel @softmax_f64_33 "softmax" ins(%d33 : memref<2x33xf64>) outs(%dy33 : memref<2x33xf64>) {axis = 1 : i64}
  dlexec.builtin_kernel @log_softmax_f64_33 "log_softmax" ins(%d33 : memref<2x33xf64>) outs(%dly33 : memref<2x33xf64>) {axis = 1 : i64}
  dlexec.builtin_kernel @ce "softmax_cross_entropy" ins(%ce_logits, %ce_labels : memref<5x1000xf32>, memref<5xi64>) outs(%ce_loss : memref<f32>) {label_smoothing = 0.1 : f32}
  dlexec.builtin_kernel @ce_grad "softmax_cross_entropy_grad" ins(%ce_logits, %ce_labels, %g : memref<5x1000xf32>, memref<5xi64>, memref<f32>) outs(%ce_dx : memref<5x1000xf32>) {label_smoothing = 0.1 : f32}
  dlexec.builtin_kernel @ce_bf16 "softmax_cross_entropy" ins(%ce_bf16_logits, %ce_bf16_labels : memref<4x1000xbf16>, memref<4xi32>) outs(%ce_bf16_loss : memref<f32>)
  dlexec.builtin_kernel @ce_bf16_grad "softmax_cross_entropy_grad" ins(%ce_bf16_logits, %ce_bf16_labels, %g : memref<4x1000xbf16>, memref<4xi32>, memref<f32>) outs(%ce_bf16_dx : memref<4x1000xbf16>)
  dlexec.builtin_kernel @ce_long "softmax_cross_entropy" ins(%ce_long_logits, %ce_long_labels : memref<2x50257xf32>, memref<2xi64>) outs(%ce_long_loss : memref<f32>)
  dlexec.builtin_kernel @ce_long_grad "softmax_cross_entropy_grad" ins(%ce_long_logits, %ce_long_labels, %g : memref<2x50257xf32>, memref<2xi64>, memref<f32>) outs(%ce_long_dx : memref<2x50257xf32>)
  dlexec.builtin_kernel @ce_mlp "softmax_cross_entropy" ins(%ce_mlp_logits, %ce_mlp_labels : memref<6x10xf32>, memref<6xi64>) outs(%ce_mlp_loss : memref<f32>)
  dlexec.builtin_kernel @ce_mlp_grad "softmax_cross_entropy_grad" ins(%ce_mlp_logits, %ce_mlp_labels, %g : memref<6x10xf32>, memref<6xi64>, memref<f32>) outs(%ce_mlp_dx : memref<6x10xf32>)
  dlexec.builtin_kernel @ce_many "softmax_cross_entropy" ins(%ce_many_logits, %ce_many_labels : memref<1000x40xf32>, memref<1000xi64>) outs(%ce_many_loss : memref<f32>)
  dlexec.builtin_kernel @ce_many_smooth "softmax_cross_entropy" ins(%ce_many_logits, %ce_many_labels : memref<1000x40xf32>, memref<1000xi64>) outs(%ce_many_smooth_loss : memref<f32>) {label_smoothing = 0.1 : f32}
}
)mlir";

/// A row of |n| f32 values for row |r| of input |name|: uniform in [-8, 8];
/// row 1 starts with 40 -inf (the online softmax's first elements) where
/// the row is long enough, row 2 is scaled by 10 (exp(x) would overflow
/// without the maximum subtracted), row 3 of a softmax input is all -inf
/// (NaN on both targets).
std::vector<double> rowValues(const std::string &name, int64_t r, int64_t n,
                              std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(-8.0, 8.0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  if (r == 1 && n >= 64)
    std::fill(v.begin(), v.begin() + 40, -inf);
  if (r == 2)
    for (double &x : v)
      x *= 10;
  if (r == 3 && (name[0] == 'x' || name[0] == 'd'))
    std::fill(v.begin(), v.end(), -inf);
  return v;
}

Memory initialMemory(ModuleOp module) {
  Memory mem;
  unsigned salt = 1;
  module.walk([&](Operation *op) {
    if (auto fn = dyn_cast<dlc::exec::FuncOp>(op)) {
      mem["arena"] = std::vector<uint8_t>(*fn.getArenaBytes(), 0);
      return;
    }
    auto in = dyn_cast<dlc::exec::InputOp>(op);
    if (!in)
      return;
    std::string name = in.getName().str();
    auto type = cast<MemRefType>(in.getType());
    Type elem = type.getElementType();
    std::vector<uint8_t> &bytes = mem["in:" + name];
    bytes.assign(bytesOf(in.getResult()), 0);
    std::mt19937 rng(salt++);
    if (name == "g") {
      float g = 1.5f;
      std::memcpy(bytes.data(), &g, 4);
      return;
    }
    if (elem.isInteger(64) || elem.isInteger(32)) {
      // Labels: valid classes, and -1 and C (no loss, no gradient) in rows
      // 3 and 4.
      auto logits = name.substr(0, name.size() - 7) + "_logits";
      int64_t c = 0;
      module.walk([&](dlc::exec::InputOp l) {
        if (l.getName() == logits)
          c = cast<MemRefType>(l.getType()).getShape().back();
      });
      for (int64_t r = 0; r < type.getNumElements(); ++r) {
        int64_t label = r == 3 ? -1 : r == 4 ? c : (int64_t)(rng() % c);
        if (elem.isInteger(64))
          std::memcpy(bytes.data() + 8 * r, &label, 8);
        else {
          int32_t l32 = (int32_t)label;
          std::memcpy(bytes.data() + 4 * r, &l32, 4);
        }
      }
      return;
    }
    const int64_t n = type.getShape().back(), rows = type.getNumElements() / n;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> v = rowValues(name, r, n, rng);
      for (int64_t k = 0; k < n; ++k) {
        const size_t i = r * n + k;
        if (elem.isF64())
          std::memcpy(bytes.data() + 8 * i, &v[k], 8);
        else if (elem.isF32()) {
          float f = (float)v[k];
          std::memcpy(bytes.data() + 4 * i, &f, 4);
        } else { // bf16: the float's top half (the values are exact enough)
          float f = (float)v[k];
          uint32_t u;
          std::memcpy(&u, &f, 4);
          uint16_t h = (uint16_t)(u >> 16);
          std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
      }
    }
  });
  return mem;
}

/// Element |i| of a buffer of |elem| as a double.
double elementAt(const uint8_t *p, Type elem, size_t i) {
  if (elem.isF64()) {
    double d;
    std::memcpy(&d, p + 8 * i, 8);
    return d;
  }
  float f;
  if (elem.isF32()) {
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  uint32_t u = (uint32_t)h << 16;
  std::memcpy(&f, &u, 4);
  return f;
}

class SoftmaxKernels : public ::testing::Test {
protected:
  void SetUp() override {
    parseAndEmit(ctx, kModule, module, kernels);
  }

  /// How many times the kernel's source reads its row input: once in the
  /// load of a held row, twice for a streamed row (online statistics, then
  /// the output).
  static size_t rowReads(const std::string &src) {
    size_t count = 0;
    for (const char *read :
         {"= *(const dlc_row_vec *)(x + q", "] = x[q];", "_to_f32(x[q]);"})
      for (size_t at = src.find(read); at != std::string::npos;
           at = src.find(read, at + 1))
        ++count;
    return count;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::map<std::string, KernelSource> kernels;
};

TEST_F(SoftmaxKernels, LaunchShapesVectorsAndPasses) {
  struct Want {
    int64_t threads, block, vec, reads;
  };
  // Warp rows: 8 rows a 256-thread block; block rows: a block a row.
  const std::map<std::string, Want> want = {
      {"softmax_1", {256, 256, 1, 1}},
      {"softmax_31", {256, 256, 1, 1}},
      {"softmax_32", {256, 256, 4, 1}},
      {"softmax_33", {256, 256, 1, 1}},
      {"softmax_1000", {256, 256, 4, 1}},
      // [2^17, 1024] in kernels.py: a warp a row, 8 float4 per lane.
      {"softmax_1024", {512, 256, 4, 1}},
      {"log_softmax_1024", {512, 256, 4, 1}},
      {"softmax_misaligned", {512, 256, 1, 1}},
      {"softmax_1025", {3 * 64, 64, 1, 1}},
      {"softmax_4096", {3 * 128, 128, 4, 1}},
      {"softmax_6000", {2 * 256, 256, 4, 1}},
      // Beyond 256 threads x 128 bytes: streamed, online statistics.
      {"softmax_8200", {2 * 512, 512, 4, 2}},
      {"softmax_50257", {3 * 512, 512, 1, 2}},
      {"softmax_f64_1000", {3 * 64, 64, 2, 1}},
      {"softmax_f64_33", {256, 256, 1, 1}},
      {"ce_grad", {256, 256, 4, 1}},
      {"ce_bf16_grad", {256, 256, 8, 1}},
      {"ce_long_grad", {2 * 512, 512, 1, 2}},
      {"ce_mlp_grad", {256, 256, 1, 1}},
  };
  for (auto &[name, w] : want) {
    ASSERT_TRUE(kernels.count(name)) << name;
    const KernelSource &k = kernels.at(name);
    EXPECT_EQ(k.numThreads, w.threads) << name;
    EXPECT_EQ(k.blockSize, w.block) << name;
    EXPECT_EQ(k.cudaSource.find("struct alignas(16) dlc_row_vec") !=
                  std::string::npos,
              w.vec > 1)
        << name << "\n"
        << k.cudaSource;
    if (w.vec > 1)
      EXPECT_NE(k.cudaSource.find("v[" + std::to_string(w.vec) + "]; };"),
                std::string::npos)
          << name;
    EXPECT_EQ(rowReads(k.cudaSource), (size_t)w.reads) << name << "\n"
                                                       << k.cudaSource;
    // Streamed rows keep a running maximum and a rescaled sum.
    EXPECT_EQ(k.cudaSource.find("s = s * expf(m - v); m = v;") !=
                  std::string::npos,
              w.reads == 2)
        << name;
  }
  // The loss: a warp a row, 8 rows a block; a batch of more than 8 rows
  // spreads over blocks whose sums the last block to finish adds (125
  // blocks for 1,000 rows), fewer rows are one block of a warp a row.
  for (auto [name, threads, block] :
       {std::tuple<const char *, int64_t, int64_t>{"ce", 160, 160},
        {"ce_bf16", 128, 128},
        {"ce_long", 64, 64},
        {"ce_mlp", 192, 192},
        {"ce_many", 125 * 256, 256},
        {"ce_many_smooth", 125 * 256, 256}}) {
    const KernelSource &k = kernels.at(name);
    EXPECT_EQ(k.numThreads, threads) << name;
    EXPECT_EQ(k.blockSize, block) << name;
    EXPECT_EQ(k.cudaSource.find("atomicAdd(&dlc_loss_done, 1u) == 124u") !=
                  std::string::npos,
              threads > block)
        << name << "\n"
        << k.cudaSource;
  }
  // The loss reads each row once, online, a warp a row.
  for (const char *name :
       {"ce", "ce_bf16", "ce_long", "ce_mlp", "ce_many", "ce_many_smooth"})
    EXPECT_NE(kernels.at(name).cudaSource.find("s = s * expf(m - v); m = v;"),
              std::string::npos)
        << name;
}

TEST_F(SoftmaxKernels, CompileWithNvrtcForSm80AndSm90) {
  for (auto &[name, k] : kernels)
    for (const char *arch : {"sm_80", "sm_90"}) {
      auto cubin = compileWithNVRTC(UnknownLoc::get(&ctx), k, arch);
      EXPECT_TRUE(succeeded(cubin)) << name << " " << arch;
    }
}

TEST_F(SoftmaxKernels, StandinMatchesTheHostAndIsDeterministic) {
  auto source = emitHostSource(*module);
  ASSERT_TRUE(succeeded(source));
  HostLib lib(*source);
  Memory want = initialMemory(*module);
  runHost(*module, lib, want);

  Standin cu;
  ASSERT_TRUE(cu.start());
  std::map<std::string, CUfunction> functions;
  for (auto &[name, k] : kernels)
    functions[name] = cu.compile(k);
  // Two runs: every launch gets a new thread order.
  Memory got = initialMemory(*module), again = initialMemory(*module);
  runStandin(*module, cu, functions, kernels, 0, got);
  runStandin(*module, cu, functions, kernels, 0, again);
  EXPECT_TRUE(got == again) << "two stand-in runs differ";

  // softmax / log_softmax against a float64 reference; the cross entropy
  // against the host library. Tolerances: x - m rounds to the compute type
  // (half an ulp of |x - m| <= 160: 7.6e-6 in f32) before the exp, and the
  // row's sum of exps has rounding errors of its own (CUDA: per thread,
  // then a tree; streamed rows also rescale partial sums), so softmax is
  // within 2e-5 relative in f32 (1e-12 in f64), log_softmax's
  // x - m - log(s) within 2e-5 absolute. Against the host, whose serial
  // sums of up to 50,257 terms are less exact than CUDA's: the gradient
  // (p - target) * scale within 1e-5 relative and 1e-6 absolute (p - 1
  // cancels for the label; scale 1.5 / rows), the mean loss within 1e-5
  // relative; bf16 outputs may round the other way (one bf16 ulp: 2^-7
  // relative).
  size_t checked = 0, finite = 0;
  for (auto &[k, name] : kernelsOf(*module)) {
    auto b = cast<dlc::exec::BuiltinKernelOp>(k);
    Value out = b.getOutputs()[0];
    Type elem = cast<MemRefType>(out.getType()).getElementType();
    const std::string tmpl = b.getTemplateName().str();
    const bool isSoftmax = tmpl == "softmax", isLog = tmpl == "log_softmax";
    double rtol = elem.isF64() ? 1e-12
                  : isSoftmax  ? 2e-5
                               : 1e-5,
           atol = elem.isF64() ? 1e-300 : 1e-38;
    if (isLog)
      atol = elem.isF64() ? 1e-12 : 2e-5;
    if (tmpl == "softmax_cross_entropy_grad")
      atol = 1e-6;
    if (elem.isBF16())
      rtol = 1.0 / 128;
    auto [key, offset] = placeOf(out);
    const size_t n = cast<MemRefType>(out.getType()).getNumElements();
    std::vector<double> reference;
    if (isSoftmax || isLog) {
      // Rows along the last axis, in float64.
      auto [inKey, inOffset] = placeOf(b.getInputs()[0]);
      const int64_t c = cast<MemRefType>(out.getType()).getShape().back();
      reference.resize(n);
      for (size_t r = 0; r * c < n; ++r) {
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j < c; ++j)
          m = std::max(
              m, elementAt(want[inKey].data() + inOffset, elem, r * c + j));
        for (int64_t j = 0; j < c; ++j)
          sum += std::exp(
              elementAt(want[inKey].data() + inOffset, elem, r * c + j) - m);
        for (int64_t j = 0; j < c; ++j) {
          double x = elementAt(want[inKey].data() + inOffset, elem, r * c + j);
          reference[r * c + j] =
              isLog ? x - m - std::log(sum) : std::exp(x - m) / sum;
        }
      }
    }
    size_t bad = 0;
    std::string first;
    for (size_t i = 0; i < n; ++i) {
      double g = elementAt(got[key].data() + offset, elem, i);
      double w = reference.empty()
                     ? elementAt(want[key].data() + offset, elem, i)
                     : reference[i];
      ++checked;
      if (g == w || (std::isnan(g) && std::isnan(w)))
        continue; // equal, infinities included
      finite += std::isfinite(w);
      if (!(std::fabs(g - w) <= rtol * std::fabs(w) + atol)) {
        if (!bad++)
          first = "element " + std::to_string(i) + ": " +
                  llvm::formatv("{0:e}", g).str() + " vs " +
                  llvm::formatv("{0:e}", w).str();
      }
    }
    EXPECT_EQ(bad, 0u) << name << ": " << bad << " of " << n
                       << " elements differ from the "
                       << (reference.empty() ? "host's" : "reference")
                       << "; first " << first;
  }
  // The cases compute something: most outputs are finite numbers.
  EXPECT_GT(finite, checked / 2);
}

} // namespace
