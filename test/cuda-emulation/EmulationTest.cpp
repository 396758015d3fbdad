//===- EmulationTest.cpp - barriers, warps and planted bugs, emulated ---===//
//
// The kernels are the files in kernels/, compiled here by the host compiler
// (NvrtcCompileTest.cpp compiles the same files with the real NVRTC).
//
//===----------------------------------------------------------------------===//
// NVRTC compiles without NDEBUG, so device assert() is live; the stand-in's
// kernel modules are built the same way. This Release test build defines
// NDEBUG, so it is undone before the emulation header defines assert.
#undef NDEBUG

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

// Standard headers go before the emulation header (see Launch.h).
#include "dlc_cuda_emulation/Launch.h"

#include "kernels/block_reduce.cu"
#include "kernels/dynamic_shared.host.cu"
#include "kernels/errors.cu"
#include "kernels/indexing.cu"
#include "kernels/races.cu"
#include "kernels/warp.cu"

// What the stand-in NVRTC appends to a module, for the ABI test below.
DLC_EMU_EXPORT_KERNEL(block_sum)
DLC_EMU_EXPORT_KERNEL(shuffle_halves)

namespace {

using dlc_emu::launch;
using dlc_emu::options;

options withSeed(unsigned long long seed, int fibers = 1) {
  options o;
  o.seed = seed;
  o.fibers = fibers;
  return o;
}

std::vector<int> pattern(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = (int)((i * 7919u) % 1001u) - 500;
  return v;
}

const unsigned long long kSeeds[] = {1, 2, 3, 4, 5};

TEST(Barrier, TreeReductionIsExactForBlockSizesAndSeeds) {
  for (unsigned block : {1u, 7u, 32u, 33u, 100u, 256u, 1024u}) {
    const int numBlocks = 3, n = numBlocks * (int)block - (block > 1 ? 1 : 0);
    std::vector<int> in = pattern(n), out(numBlocks, -1);
    for (unsigned long long seed : kSeeds) {
      auto r = launch(block_sum, dim3(numBlocks), dim3(block), withSeed(seed),
                      in.data(), out.data(), n);
      ASSERT_TRUE(r.ok()) << r.message;
      for (int b = 0; b < numBlocks; ++b) {
        int expect = 0;
        for (int i = b * (int)block; i < std::min(n, (b + 1) * (int)block); ++i)
          expect += in[i];
        EXPECT_EQ(out[b], expect)
            << "block size " << block << " seed " << seed << " block " << b;
      }
    }
  }
}

TEST(Barrier, PlantedMissingBarrierGivesAWrongSum) {
  const unsigned block = 256;
  const int n = 4 * block;
  std::vector<int> in = pattern(n);
  int wrongLaunches = 0;
  for (unsigned long long seed : kSeeds) {
    std::vector<int> good(4), bad(4);
    ASSERT_TRUE(launch(block_sum, dim3(4), dim3(block), withSeed(seed),
                       in.data(), good.data(), n)
                    .ok());
    ASSERT_TRUE(launch(block_sum_missing_barrier, dim3(4), dim3(block),
                       withSeed(seed), in.data(), bad.data(), n)
                    .ok());
    for (int b = 0; b < 4; ++b)
      EXPECT_EQ(good[b], std::accumulate(in.begin() + b * block,
                                         in.begin() + (b + 1) * block, 0));
    wrongLaunches += good != bad;
  }
  // Each phase runs its threads in a fresh random order, so reads of
  // partial[t + half] before its owner's add are all but certain.
  EXPECT_GE(wrongLaunches, 1) << "the missing __syncthreads went unnoticed";
}

TEST(Barrier, PredicateForms) {
  std::vector<int> pred(70, 0), counts(3, -1);
  for (int i = 0; i < 70; i += 3)
    pred[i] = i + 1;
  ASSERT_TRUE(launch(barrier_predicates, dim3(1), dim3(70), withSeed(9),
                     pred.data(), counts.data())
                  .ok());
  EXPECT_EQ(counts, (std::vector<int>{24, 0, 1}));
  std::fill(pred.begin(), pred.end(), 1);
  ASSERT_TRUE(launch(barrier_predicates, dim3(1), dim3(70), withSeed(9),
                     pred.data(), counts.data())
                  .ok());
  EXPECT_EQ(counts, (std::vector<int>{70, 1, 1}));
}

TEST(Race, PlantedInPlaceShiftIsCaughtByTheOrder) {
  const int n = 64;
  std::vector<int> expect(n);
  for (int i = 0; i < n; ++i)
    expect[i] = i + 1 < n ? i + 1 : i;
  // Without fibers the threads run one after another in a seeded
  // permutation, which exposes the race as well.
  for (int fibers : {1, 0}) {
    int racyWrong = 0;
    for (unsigned long long seed : kSeeds) {
      std::vector<int> x(n), y(n);
      std::iota(x.begin(), x.end(), 0);
      std::iota(y.begin(), y.end(), 0);
      if (fibers) { // the barrier-correct form needs fibers
        ASSERT_TRUE(
            launch(shift_left, dim3(1), dim3(n), withSeed(seed), x.data(), n)
                .ok());
        EXPECT_EQ(x, expect) << "seed " << seed;
      }
      ASSERT_TRUE(launch(shift_left_racy, dim3(1), dim3(n),
                         withSeed(seed, fibers), y.data(), n)
                      .ok());
      racyWrong += y != expect;
    }
    EXPECT_GE(racyWrong, 1) << "the in-place shift race went unnoticed, "
                               "fibers = "
                            << fibers;
  }
}

TEST(Race, PlantedSharedSlotWriteReadInOnePhase) {
  int racyWrong = 0;
  for (unsigned long long seed : kSeeds) {
    int good = -1, bad = -1;
    ASSERT_TRUE(
        launch(shared_slot, dim3(1), dim3(2), withSeed(seed), &good).ok());
    EXPECT_EQ(good, 7) << "seed " << seed;
    ASSERT_TRUE(
        launch(shared_slot_racy, dim3(1), dim3(2), withSeed(seed), &bad).ok());
    EXPECT_TRUE(bad == 0 || bad == 7) << bad;
    racyWrong += bad != 7;
  }
  EXPECT_GE(racyWrong, 1) << "the shared-slot race went unnoticed";
}

TEST(Order, SameSeedSameOrderOtherSeedOtherOrder) {
  const int n = 64;
  auto run = [&](unsigned long long seed) {
    std::vector<int> y(n);
    std::iota(y.begin(), y.end(), 0);
    EXPECT_TRUE(
        launch(shift_left_racy, dim3(1), dim3(n), withSeed(seed), y.data(), n)
            .ok());
    return y;
  };
  EXPECT_EQ(run(11), run(11));
  bool differs = false;
  for (unsigned long long seed = 12; seed < 17 && !differs; ++seed)
    differs = run(seed) != run(11);
  EXPECT_TRUE(differs);
}

// Blocks of 16 x 4 threads: warp 0 is rows y = 0 and 1 (linear ids
// 0..31), as CUDA numbers lanes.
TEST(Warp, ShuffleReductionsAndLaneNumbering) {
  const int n = 64;
  std::vector<int> in = pattern(n), out(2, 0), all(n, 0);
  for (unsigned long long seed : kSeeds) {
    auto r = launch(warp_sums, dim3(1), dim3(16, 4), withSeed(seed), in.data(),
                    out.data(), all.data());
    ASSERT_TRUE(r.ok()) << r.message;
    for (int w = 0; w < 2; ++w) {
      int expect =
          std::accumulate(in.begin() + 32 * w, in.begin() + 32 * w + 32, 0);
      EXPECT_EQ(out[w], expect);
      for (int l = 0; l < 32; ++l)
        EXPECT_EQ(all[32 * w + l], expect) << "lane " << l;
    }
  }
}

TEST(Warp, VotesAndBroadcast) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i)
    in[i] = (i % 3 == 0) ? i + 1 : -(i + 1);
  in[40] = -200;
  std::vector<unsigned> ballot(2);
  std::vector<int> any(2), all(2), lane5(64);
  auto r = launch(warp_votes, dim3(1), dim3(64), withSeed(3), in.data(),
                  ballot.data(), any.data(), all.data(), lane5.data());
  ASSERT_TRUE(r.ok()) << r.message;
  for (int w = 0; w < 2; ++w) {
    unsigned expect = 0;
    for (int l = 0; l < 32; ++l)
      expect |= (in[32 * w + l] > 0 ? 1u : 0u) << l;
    EXPECT_EQ(ballot[w], expect);
    for (int l = 0; l < 32; ++l)
      EXPECT_EQ(lane5[32 * w + l], in[32 * w + 5]);
  }
  EXPECT_EQ(ballot[0], 0x49249249u);
  EXPECT_EQ(any, (std::vector<int>{0, 1}));
  EXPECT_EQ(all, (std::vector<int>{1, 1}));
  in[33] = 0;
  r = launch(warp_votes, dim3(1), dim3(64), withSeed(3), in.data(),
             ballot.data(), any.data(), all.data(), lane5.data());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(all, (std::vector<int>{1, 0}));
}

TEST(Warp, ShuffleUpScanWithWidth8) {
  std::vector<int> in = pattern(48), out(48);
  auto r = launch(segment_scan8, dim3(1), dim3(48), withSeed(5), in.data(),
                  out.data());
  ASSERT_TRUE(r.ok()) << r.message;
  for (int i = 0; i < 48; ++i) {
    int expect = 0;
    for (int k = i & ~7; k <= i; ++k)
      expect += in[k];
    EXPECT_EQ(out[i], expect) << "thread " << i;
  }
}

TEST(Warp, ShufflesOfHalfTypes) {
  std::vector<__half> h(32);
  std::vector<__half2> h2(32);
  std::vector<__nv_bfloat16> b(32);
  for (int i = 0; i < 32; ++i) {
    h[i] = __float2half((float)i);
    h2[i] = __floats2half2_rn((float)i, -(float)i);
    b[i] = __float2bfloat16((float)(i + 100));
  }
  auto r = launch(shuffle_halves, dim3(1), dim3(32), withSeed(2), h.data(),
                  h2.data(), b.data());
  ASSERT_TRUE(r.ok()) << r.message;
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(__half2float(h[i]), (float)(i ^ 1));
    int src = i < 31 ? i + 1 : i;
    EXPECT_EQ(__low2float(h2[i]), (float)src);
    EXPECT_EQ(__high2float(h2[i]), -(float)src);
    EXPECT_EQ(__bfloat162float(b[i]), 100.0f);
  }
}

TEST(Warp, ShuffleEdgesReductionsAndMatch) {
  std::vector<int> out(7 * 32, 12345);
  auto r = launch(warp_edges, dim3(1), dim3(32), withSeed(6), out.data());
  ASSERT_TRUE(r.ok()) << r.message;
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(out[0 * 32 + t], t < 16 ? t : t - 16) << t;
    EXPECT_EQ(out[1 * 32 + t], (t & ~7) | 5) << t;
    EXPECT_EQ(out[2 * 32 + t], (t & 7) + 3 < 8 ? t + 3 : t) << t;
    EXPECT_EQ(out[3 * 32 + t], 496) << t;
    EXPECT_EQ(out[4 * 32 + t], 21) << t;
    EXPECT_EQ((unsigned)out[5 * 32 + t], 0xffu << (t / 8 * 8)) << t;
    EXPECT_EQ(out[6 * 32 + t], t < 16 ? -1 : 12345) << t;
  }
}

//===-- Errors: a launch error with a message, never a hang or an abort
//----===//

TEST(Errors, DivergentBarrierFailsTheLaunch) {
  std::vector<int> out(64);
  options o = withSeed(1);
  o.name = "early_exit_barrier";
  auto r = launch(early_exit_barrier, dim3(2), dim3(64), o, out.data(), 40);
  EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
  EXPECT_NE(r.message.find("kernel early_exit_barrier block ("),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("divergent __syncthreads"), std::string::npos)
      << r.message;
  // Every thread below 40 reaches it: the launch is fine.
  r = launch(early_exit_barrier, dim3(2), dim3(40), o, out.data(), 40);
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(Errors, DeadlockFailsTheLaunch) {
  std::vector<int> out(2, 0);
  for (unsigned long long seed : kSeeds) {
    options o = withSeed(seed);
    o.name = "syncwarp_vs_barrier";
    auto r = launch(syncwarp_vs_barrier, dim3(1), dim3(2), o, out.data());
    EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
    EXPECT_EQ(r.message,
              "kernel syncwarp_vs_barrier block (0,0,0): deadlock: no thread "
              "can go on; threads (1,0,0) wait at __syncthreads; threads "
              "(0,0,0) wait in a warp collective; 0 of 2 threads have exited");
  }
  EXPECT_EQ(out, (std::vector<int>{0, 0}));
}

TEST(Errors, MaskExcludingTheCaller) {
  std::vector<int> out(2);
  options o = withSeed(1);
  o.name = "mask_excludes_caller";
  auto r = launch(mask_excludes_caller, dim3(1), dim3(2), o, out.data());
  EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(r.message,
            "kernel mask_excludes_caller block (0,0,0) thread (0,0,0): "
            "__shfl_sync with mask 0x00000002, which excludes the "
            "caller's own lane 0");
}

TEST(Errors, MaskNamingAnExitedLane) {
  std::vector<int> out(2);
  for (unsigned long long seed : kSeeds) {
    auto r = launch(mask_names_exited_lane, dim3(1), dim3(2), withSeed(seed),
                    out.data());
    EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
    // Depending on the order, lane 0 names the exited lane 1, or lane 1
    // exits while lane 0 waits for it.
    EXPECT_NE(r.message.find("__shfl_sync with mask 0x00000003"),
              std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("exited"), std::string::npos) << r.message;
  }
}

TEST(Errors, LanesInDifferentIntrinsics) {
  std::vector<int> out(2);
  for (unsigned long long seed : kSeeds) {
    options o = withSeed(seed);
    o.name = "lanes_disagree";
    auto r = launch(lanes_disagree, dim3(1), dim3(2), o, out.data());
    EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
    EXPECT_NE(r.message.find("lanes disagree: lane 0 calls __shfl_sync with "
                             "mask 0x00000003 but lane 1 calls __ballot_sync "
                             "with mask 0x00000003"),
              std::string::npos)
        << r.message;
  }
}

TEST(Errors, CollectivesAndBarriersNeedFibers) {
  std::vector<int> in = pattern(64), out(2), all(64);
  options o = withSeed(1, /*fibers=*/0);
  o.name = "warp_sums";
  auto r = launch(warp_sums, dim3(1), dim3(64), o, in.data(), out.data(),
                  all.data());
  EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
  EXPECT_NE(r.message.find("kernel warp_sums block (0,0,0) thread ("),
            std::string::npos)
      << r.message;
  EXPECT_NE(
      r.message.find("__shfl_down_sync needs the threads of a block to run "
                     "as fibers, but the launch has fibers = 0"),
      std::string::npos)
      << r.message;
  r = launch(block_sum, dim3(1), dim3(64), o, in.data(), out.data(), 64);
  EXPECT_EQ(r.code, DLC_EMU_ERROR_LAUNCH_FAILED);
  EXPECT_NE(r.message.find("__syncthreads needs the threads"),
            std::string::npos)
      << r.message;
}

TEST(Errors, AssertAndTrapNameFileLineAndThread) {
  std::vector<int> a(8, 1);
  a[5] = -1;
  for (int fibers : {0, 1}) {
    options o = withSeed(1, fibers);
    o.name = "assert_nonnegative";
    auto r = launch(assert_nonnegative, dim3(1), dim3(8), o, a.data());
    EXPECT_EQ(r.code, DLC_EMU_ERROR_ASSERT);
    EXPECT_NE(r.message.find("kernel assert_nonnegative block (0,0,0) thread "
                             "(5,0,0): "),
              std::string::npos)
        << r.message;
    EXPECT_NE(
        r.message.find("errors.cu:36: assertion `a[threadIdx.x] >= 0' failed"),
        std::string::npos)
        << r.message;
    std::vector<int> out(8, 0);
    o.name = "trap_in_thread3";
    r = launch(trap_in_thread3, dim3(1), dim3(8), o, out.data());
    EXPECT_EQ(r.code, DLC_EMU_ERROR_ILLEGAL_INSTR);
    EXPECT_NE(r.message.find("thread (3,0,0): "), std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("errors.cu:42: __trap()"), std::string::npos)
        << r.message;
  }
}

TEST(Errors, LaunchConfigurationChecks) {
  std::vector<int> out(2);
  auto r = launch(shared_slot, dim3(1), dim3(1025), withSeed(1), out.data());
  EXPECT_EQ(r.code, DLC_EMU_ERROR_INVALID_VALUE);
  EXPECT_EQ(r.message,
            "kernel kernel: grid (1,1,1) block (1025,1,1): every "
            "dimension must be >= 1 and a block at most 1024 threads");
  r = launch(shared_slot, dim3(0), dim3(2), withSeed(1), out.data());
  EXPECT_EQ(r.code, DLC_EMU_ERROR_INVALID_VALUE);
}

TEST(DynamicShared, UnwrittenReadsAreNaNAndTheRegionIsAligned) {
  const int blocks = 3, block = 50;
  std::vector<float> in(blocks * block), first(blocks * block, 0), out(blocks);
  std::vector<unsigned long long> address(blocks);
  for (int i = 0; i < blocks * block; ++i)
    in[i] = (float)(i % 13);
  options o = withSeed(4);
  o.dynamic_shared_bytes = block * sizeof(float);
  for (unsigned threads : {1u, 2u}) {
    o.threads = threads;
    auto r = launch(dynamic_shared_sum, dim3(blocks), dim3(block), o, in.data(),
                    first.data(), out.data(), address.data());
    ASSERT_TRUE(r.ok()) << r.message;
    for (int i = 0; i < blocks * block; ++i) {
      unsigned bits;
      std::memcpy(&bits, &first[i], 4);
      EXPECT_EQ(bits, 0xffffffffu) << i;
    }
    for (int b = 0; b < blocks; ++b) {
      float expect = 0;
      for (int k = 0; k < block; ++k)
        expect += in[b * block + k];
      EXPECT_EQ(out[b], expect);
      EXPECT_EQ(address[b] % 16, 0u);
    }
  }
}

TEST(Grid, EveryBlockRunsOnceOnOneAndThreeOSThreads) {
  const int numBlocks = 37, block = 33, n = numBlocks * block;
  std::vector<int> in(n, 1), out(numBlocks, 0);
  for (unsigned threads : {1u, 3u}) {
    options o = withSeed(8);
    o.threads = threads;
    std::fill(out.begin(), out.end(), 0);
    auto r = launch(block_sum, dim3(numBlocks), dim3(block), o, in.data(),
                    out.data(), n);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(out, std::vector<int>(numBlocks, block));
  }
}

TEST(Grid, BuiltInVariablesInThreeDimensions) {
  const dim3 grid(3, 2, 4), block(5, 3, 2);
  const unsigned total = 3 * 2 * 4 * 5 * 3 * 2;
  for (int fibers : {0, 1}) {
    std::vector<unsigned> out(total, 0), dims(6, 0);
    options o = withSeed(2, fibers);
    o.threads = 2;
    auto r = launch(index_map, grid, block, o, out.data(), dims.data());
    ASSERT_TRUE(r.ok()) << r.message;
    for (unsigned i = 0; i < total; ++i)
      ASSERT_EQ(out[i], i + 1) << "thread " << i << " fibers " << fibers;
    EXPECT_EQ(dims, (std::vector<unsigned>{5, 3, 2, 3, 2, 4}));
  }
}

TEST(Grid, BlockOrderIsAPermutation) {
  for (unsigned long long n :
       {1ULL, 2ULL, 3ULL, 7ULL, 64ULL, 1000ULL, 4097ULL}) {
    for (unsigned long long seed : kSeeds) {
      dlc_emu::detail::Permutation perm(n, seed);
      std::vector<int> hits(n, 0);
      bool identity = true;
      for (unsigned long long i = 0; i < n; ++i) {
        unsigned long long j = perm(i);
        ASSERT_LT(j, n);
        ++hits[j];
        identity = identity && j == i;
      }
      EXPECT_EQ(hits, std::vector<int>(n, 1)) << "n " << n << " seed " << seed;
      if (n >= 64) {
        EXPECT_FALSE(identity) << "n " << n << " seed " << seed;
      }
    }
  }
}

TEST(Exports, EntryAndParameterTablesFollowTheKernelType) {
  EXPECT_EQ(dlc_emu_param_count_block_sum, 3);
  const unsigned long long *sizes = dlc_emu_param_sizes_block_sum.v;
  const unsigned char *pointers = dlc_emu_param_is_pointer_block_sum.v;
  EXPECT_EQ(sizes[0], 8u);
  EXPECT_EQ(sizes[1], 8u);
  EXPECT_EQ(sizes[2], 4u);
  EXPECT_EQ(pointers[0], 1);
  EXPECT_EQ(pointers[1], 1);
  EXPECT_EQ(pointers[2], 0);
  EXPECT_EQ(dlc_emu_param_count_shuffle_halves, 3);
  EXPECT_EQ(dlc_emu_param_sizes_shuffle_halves.v[2], 8u);
  static_assert(sizeof(dlc_emu_param_sizes_block_sum) == 4 * 8,
                "count + 1 entries, laid out as the C array the ABI names");

  // The entry as the driver calls it: kernelParams-style pointers.
  std::vector<int> in = pattern(100), out(2, 0);
  const int *inPtr = in.data();
  int *outPtr = out.data(), n = 100;
  void *params[] = {&inPtr, &outPtr, &n};
  char error[256] = "unset";
  dlc_emu_launch l{};
  l.grid[0] = 2;
  l.grid[1] = l.grid[2] = 1;
  l.block[0] = 50;
  l.block[1] = l.block[2] = 1;
  l.fibers = 1;
  l.seed = 3;
  l.params = params;
  l.error = error;
  l.error_size = sizeof(error);
  ASSERT_EQ(dlc_emu_entry_block_sum(&l), DLC_EMU_OK) << error;
  EXPECT_STREQ(error, "");
  EXPECT_EQ(out[0], std::accumulate(in.begin(), in.begin() + 50, 0));
  EXPECT_EQ(out[1], std::accumulate(in.begin() + 50, in.end(), 0));
  l.fibers = 0; // the kernel has barriers: the error names the kernel
  EXPECT_EQ(dlc_emu_entry_block_sum(&l), DLC_EMU_ERROR_LAUNCH_FAILED);
  EXPECT_NE(std::string(error).find("kernel block_sum block ("),
            std::string::npos)
      << error;
}

extern "C" __global__ void print_thread(int value) {
  printf("thread %u of block %u: %d\n", threadIdx.x, blockIdx.x, value);
}

TEST(Printf, WorksFromKernels) {
  testing::internal::CaptureStdout();
  auto r = launch(print_thread, dim3(2), dim3(1), withSeed(1, 0), 42);
  fflush(stdout);
  std::string text = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(text.find("thread 0 of block 0: 42\n"), std::string::npos) << text;
  EXPECT_NE(text.find("thread 0 of block 1: 42\n"), std::string::npos) << text;
}

// Not a pass/fail figure: prints emulated threads per second for a kernel
// with 10 barriers per thread (README.md quotes it), after checking it.
TEST(Figures, TreeReductionWithBarriers) {
  const int numBlocks = 256, block = 256, n = numBlocks * block;
  std::vector<int> in = pattern(n), out(numBlocks);
  auto start = std::chrono::steady_clock::now();
  auto r = launch(block_sum, dim3(numBlocks), dim3(block), withSeed(1),
                  in.data(), out.data(), n);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(std::accumulate(out.begin(), out.end(), 0LL),
            std::accumulate(in.begin(), in.end(), 0LL));
  printf("[ figures  ] block_sum (256 threads, 9 barriers each), fibers, 1 OS "
         "thread: %.3g emulated threads/s\n",
         n / seconds);
}

} // namespace
