//===- ElementwiseKernelTest.cpp - vectorized, grid-stride kernels -------===//
//
// The CUDA form of dlc's generated elementwise kernels (issue 14 item 2):
// 128-bit vector accesses where every operand is contiguous and provably
// aligned, grid-stride loops with 32-bit indices. A dlexec function whose
// buffers lie where the runtime puts them (inputs and variables in
// allocations of their own, activations at their planned offsets in one
// arena, so an alloc at an offset that is not a multiple of 16 bytes is a
// misaligned view) runs twice on the CUDA stand-in (its NVRTC and driver,
// test/cuda-emulation/standin, threads of a block in a seeded random
// order), once with the grid the package asks for and once with two blocks,
// so that every thread walks many vectors; every buffer must equal, byte
// for byte, what the host library (the loop nests, unchanged) computes.
// Which kernels are vectorized, and with which width, is asserted, and the
// sources compile with the real NVRTC for sm_80 and sm_90.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/ExecOps.h"
#include "StandinRun.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

using namespace mlir;
using namespace dlc::codegen;
using namespace dlc::codegen::test;

namespace {

/// One function with a kernel per case. Arena offsets: y 0, u 8192, hh 8448,
/// gg 12544, v 16644 (4 mod 16: misaligned), z 25088, q 33280, n 41472.
const char *kModule = R"mlir(
dlexec.variable @w : memref<64x32xf32> {kind = "parameter"}
dlexec.func @f attributes {arena_bytes = 65536 : i64} {
  %x = dlexec.input "x" : memref<64x32xf32>
  %b = dlexec.input "b" : memref<32xf32>
  %s = dlexec.input "s" : memref<64x1xf32>
  %t = dlexec.input "t" : memref<7x5xf32>
  %h = dlexec.input "h" : memref<64x32xf16>
  %g = dlexec.input "g" : memref<64x32xbf16>
  %xw = dlexec.input "xw" : memref<64x40xf32>
  %w = dlexec.variable_ref @w : memref<64x32xf32>
  %y = dlexec.alloc {offset = 0 : i64} : memref<64x32xf32>
  %u = dlexec.alloc {offset = 8192 : i64} : memref<7x5xf32>
  %hh = dlexec.alloc {offset = 8448 : i64} : memref<64x32xf16>
  %gg = dlexec.alloc {offset = 12544 : i64} : memref<64x32xbf16>
  %v = dlexec.alloc {offset = 16644 : i64} : memref<64x32xf32>
  %z = dlexec.alloc {offset = 25088 : i64} : memref<64x32xf32>
  %q = dlexec.alloc {offset = 33280 : i64} : memref<64x32xf32>
  %n = dlexec.alloc {offset = 41472 : i64} : memref<64x32xf32>
  // An aligned f32 chain with a bias along the last axis and a per-row
  // scale: y = max(x * s + b, 0).
  dlexec.kernel @chain ins(%x, %b, %s : memref<64x32xf32>, memref<32xf32>, memref<64x1xf32>)
      outs(%y : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%xv: f32, %bv: f32, %sv: f32, %o: f32):
    %m = arith.mulf %xv, %sv : f32
    %a = arith.addf %m, %bv : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %a, %zero : f32
    dlexec.yield %r : f32
  }
  // 35 elements: 8 vectors and a scalar tail of 3.
  dlexec.kernel @tail ins(%t : memref<7x5xf32>) outs(%u : memref<7x5xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%tv: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %m = arith.mulf %tv, %two : f32
    %a = arith.addf %m, %one : f32
    dlexec.yield %a : f32
  }
  // f16 and bf16: 8 elements a vector.
  dlexec.kernel @f16_chain ins(%h : memref<64x32xf16>) outs(%hh : memref<64x32xf16>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%hv: f16, %o: f16):
    %c = arith.constant 0.1 : f16
    %m = arith.mulf %hv, %hv : f16
    %a = arith.addf %m, %c : f16
    dlexec.yield %a : f16
  }
  dlexec.kernel @bf16_chain ins(%g, %h : memref<64x32xbf16>, memref<64x32xf16>) outs(%gg : memref<64x32xbf16>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%gv: bf16, %hv: f16, %o: bf16):
    %hf = arith.extf %hv : f16 to f32
    %hb = arith.truncf %hf : f32 to bf16
    %d = arith.subf %gv, %hb : bf16
    dlexec.yield %d : bf16
  }
  // A misaligned output: the whole kernel stays scalar.
  dlexec.kernel @fill ins(%x : memref<64x32xf32>) outs(%v : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%xv: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %a = arith.addf %xv, %one : f32
    dlexec.yield %a : f32
  }
  // A misaligned input: read element by element, the rest vectorized.
  dlexec.kernel @view ins(%v, %x : memref<64x32xf32>, memref<64x32xf32>) outs(%z : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%vv: f32, %xv: f32, %o: f32):
    %a = arith.mulf %vv, %xv : f32
    dlexec.yield %a : f32
  }
  // Two slices of a wider buffer (folded subviews): columns 3.. start off
  // a vector boundary (scalar), columns 4.. on one (a vector).
  dlexec.kernel @slices ins(%xw, %xw : memref<64x40xf32>, memref<64x40xf32>) outs(%q : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j + 3)>, affine_map<(i, j) -> (i, j + 4)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %c : f32
    dlexec.yield %d : f32
  }
  // In place: a parameter update (output = an input) and an accumulation
  // into an arena buffer (the output's old value read through its block
  // argument).
  dlexec.kernel @update ins(%w, %x : memref<64x32xf32>, memref<64x32xf32>) outs(%w : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%wv: f32, %xv: f32, %o: f32):
    %lr = arith.constant 0.25 : f32
    %m = arith.mulf %lr, %xv : f32
    %d = arith.subf %wv, %m : f32
    dlexec.yield %d : f32
  }
  dlexec.kernel @accumulate ins(%x : memref<64x32xf32>) outs(%y : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%xv: f32, %o: f32):
    %a = arith.addf %o, %xv : f32
    dlexec.yield %a : f32
  }
  // An index read per element: the vector's lanes decode their column.
  dlexec.kernel @iota ins(%x : memref<64x32xf32>) outs(%n : memref<64x32xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%xv: f32, %o: f32):
    %j = dlexec.index 1 : index
    %i = dlexec.index 0 : index
    %ji = arith.index_cast %j : index to i64
    %ii = arith.index_cast %i : index to i64
    %k = arith.constant 100 : i64
    %p = arith.muli %ii, %k : i64
    %sum = arith.addi %p, %ji : i64
    %f = arith.sitofp %sum : i64 to f32
    %a = arith.addf %f, %xv : f32
    dlexec.yield %a : f32
  }
  dlexec.output "y", %y : memref<64x32xf32>
}
)mlir";

/// The vector width each kernel must get (0: scalar).
const std::map<std::string, int> kExpectedWidth = {
    {"chain", 4}, {"tail", 4},   {"f16_chain", 8}, {"bf16_chain", 8},
    {"fill", 0},  {"view", 4},   {"slices", 4}, {"update", 4},
    {"accumulate", 4}, {"iota", 4}};

/// Deterministic bytes for a buffer of element type |elem|: ordinary values
/// (no NaN or inf bit patterns, so equality is plain byte equality).
std::vector<uint8_t> fillFor(Type elem, size_t bytes, unsigned salt) {
  std::mt19937 rng(salt);
  std::vector<uint8_t> out(bytes);
  auto value = [&] { return (float)((int)(rng() % 2001) - 1000) / 97.0f; };
  if (elem.isF32()) {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float f = value();
      std::memcpy(&out[i], &f, 4);
    }
  } else {
    // f16 / bf16: a float's top bits (bf16) or a small exponent range (f16).
    for (size_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t h = elem.isBF16()
                       ? (uint16_t)(0x3c00u + rng() % 0x0800u) ^
                             (rng() % 2 ? 0x8000u : 0)
                       : (uint16_t)(0x3000u + rng() % 0x1800u) ^
                             (rng() % 2 ? 0x8000u : 0);
      std::memcpy(&out[i], &h, 2);
    }
  }
  return out;
}

/// The initial contents: inputs and variables filled, the arena zero.
Memory initialMemory(ModuleOp module) {
  Memory mem;
  unsigned salt = 1;
  module.walk([&](Operation *op) {
    if (auto in = dyn_cast<dlc::exec::InputOp>(op))
      mem["in:" + in.getName().str()] =
          fillFor(cast<MemRefType>(in.getType()).getElementType(),
                  bytesOf(in.getResult()), salt++);
    else if (auto var = dyn_cast<dlc::exec::VariableRefOp>(op))
      mem["var:" + var.getVariable().str()] =
          fillFor(cast<MemRefType>(var.getType()).getElementType(),
                  bytesOf(var.getResult()), salt++);
    else if (auto fn = dyn_cast<dlc::exec::FuncOp>(op))
      mem["arena"] = std::vector<uint8_t>(*fn.getArenaBytes(), 0);
  });
  return mem;
}

class ElementwiseKernels : public ::testing::Test {
protected:
  void SetUp() override {
    parseAndEmit(ctx, kModule, module, kernels);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::map<std::string, KernelSource> kernels;
};

TEST_F(ElementwiseKernels, VectorizedWhereContiguousAndAligned) {
  ASSERT_EQ(kernels.size(), kExpectedWidth.size());
  for (auto &[name, width] : kExpectedWidth) {
    const KernelSource &k = kernels.at(name);
    EXPECT_EQ(k.vectorWidth, width) << name << "\n" << k.cudaSource;
    // Every kernel walks its elements in a grid-stride loop with 32-bit
    // indices; a vectorized one launches a thread per vector.
    EXPECT_NE(k.cudaSource.find("// dlc: grid-stride loop\n"),
              std::string::npos)
        << name;
    bool gridStride =
        k.cudaSource.find("dlc_e += dlc_stride") != std::string::npos ||
        k.cudaSource.find("dlc_v += dlc_stride") != std::string::npos;
    EXPECT_TRUE(gridStride) << name << "\n" << k.cudaSource;
    EXPECT_EQ(k.cudaSource.find("long long rem"), std::string::npos) << name;
  }
  EXPECT_EQ(kernels.at("chain").numThreads, 64 * 32 / 4);
  EXPECT_EQ(kernels.at("tail").numThreads, 35 / 4);
  EXPECT_EQ(kernels.at("f16_chain").numThreads, 64 * 32 / 8);
  EXPECT_EQ(kernels.at("fill").numThreads, 64 * 32);
  // The misaligned operands are read element by element, the aligned ones
  // as vectors: the view's a0, the slice at column 3.
  const std::string &view = kernels.at("view").cudaSource;
  EXPECT_NE(view.find("= a0[dlc_e + dlc_j];"), std::string::npos) << view;
  EXPECT_NE(view.find("*(const dlc_vec_float_4 *)(a1 + dlc_e)"),
            std::string::npos)
      << view;
  const std::string &slices = kernels.at("slices").cudaSource;
  EXPECT_NE(slices.find("= a0[i0 * 40 + (i1 + 3)];"), std::string::npos)
      << slices;
  EXPECT_NE(slices.find("*(const dlc_vec_float_4 *)(a1 + i0 * 40 + (dlc_b + "
                        "4))"),
            std::string::npos)
      << slices;
  // The bias is a vector at the column, the per-row scale one scalar.
  const std::string &chain = kernels.at("chain").cudaSource;
  EXPECT_NE(chain.find("*(const dlc_vec_float_4 *)(a1 + dlc_b)"),
            std::string::npos)
      << chain;
  EXPECT_NE(chain.find("const float s2 = a2[i0 + 0];"), std::string::npos)
      << chain;
  EXPECT_NE(kernels.at("f16_chain").cudaSource.find(
                "struct alignas(16) dlc_vec_dlc_f16_8 { dlc_f16 v[8]; };"),
            std::string::npos);
  // An input is only as aligned as its size (a pipeline stage reads
  // micro-batch m's slice of the global batch, m times its bytes into it):
  // t's 140 bytes are read element by element, u stored as vectors.
  EXPECT_NE(kernels.at("tail").cudaSource.find("= a0[dlc_e + dlc_j];"),
            std::string::npos)
      << kernels.at("tail").cudaSource;
  // The tail: the last 3 elements one by one after 8 vectors.
  EXPECT_NE(kernels.at("tail").cudaSource.find(
                "for (unsigned dlc_e = 32u + dlc_first; dlc_e < 35u;"),
            std::string::npos)
      << kernels.at("tail").cudaSource;
}

TEST_F(ElementwiseKernels, CompileWithNvrtcForSm80AndSm90) {
  for (auto &[name, k] : kernels)
    for (const char *arch : {"sm_80", "sm_90"}) {
      auto cubin = compileWithNVRTC(UnknownLoc::get(&ctx), k, arch);
      EXPECT_TRUE(succeeded(cubin)) << name << " " << arch;
    }
}

TEST_F(ElementwiseKernels, StandinMatchesTheHostBitForBit) {
  auto source = emitHostSource(*module);
  ASSERT_TRUE(succeeded(source));
  HostLib lib(*source);
  Memory want = initialMemory(*module);
  runHost(*module, lib, want);
  // The cases change memory: the host run is not a no-op.
  EXPECT_NE(want["arena"], std::vector<uint8_t>(want["arena"].size(), 0));

  Standin cu;
  ASSERT_TRUE(cu.start());
  std::map<std::string, CUfunction> functions;
  for (auto &[name, k] : kernels)
    functions[name] = cu.compile(k);
  // The stand-in's occupancy: one 256-thread block per 256 of an H100
  // multiprocessor's 2048 threads.
  int perSm = 0;
  ASSERT_EQ(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &perSm, functions.at("chain"), 256, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(perSm, 8);
  for (unsigned blocks : {0u, 2u, 1u}) {
    Memory got = initialMemory(*module);
    runStandin(*module, cu, functions, kernels, blocks, got);
    ASSERT_EQ(got.size(), want.size());
    for (auto &[key, bytes] : want) {
      const std::vector<uint8_t> &g = got[key];
      ASSERT_EQ(g.size(), bytes.size()) << key;
      size_t first = 0;
      while (first < g.size() && g[first] == bytes[first])
        ++first;
      EXPECT_EQ(first, g.size())
          << key << " differs from the host at byte " << first << " with "
          << blocks << " blocks a launch";
    }
  }
}

} // namespace
