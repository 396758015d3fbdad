//===- AtomicsAndHalfTest.cpp - atomics and CUDA's half rounding --------===//
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

// Standard headers go before the emulation header (see Launch.h).
#include "dlc_cuda_emulation/Launch.h"

#include "kernels/atomics.cu"

namespace {

using dlc_emu::launch;
using dlc_emu::options;

options onThreads(unsigned threads, int fibers, unsigned long long seed) {
  options o;
  o.threads = threads;
  o.fibers = fibers;
  o.seed = seed;
  return o;
}

TEST(Atomics, SumsFromManyBlocksOnTwoOSThreadsAreExact) {
  const int n = 8000;
  std::vector<int> in(n);
  long long expect = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = (i * 37) % 201 - 100;
    expect += in[i];
  }
  for (int fibers : {0, 1}) {
    int isum = 0, imin = 1 << 30, imax = -(1 << 30);
    unsigned long long usum = 0;
    float fsum = 0;
    double dsum = 0;
    __half hsum = __float2half(0.0f);
    __nv_bfloat16 bsum = __float2bfloat16(0.0f);
    auto r = launch(atomic_sums, dim3(64), dim3(128), onThreads(2, fibers, 3),
                    in.data(), n, &isum, &usum, &fsum, &dsum, &hsum, &bsum,
                    &imin, &imax);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(isum, expect);
    EXPECT_EQ(usum, (unsigned long long)(expect + 100LL * n));
    EXPECT_EQ(fsum, (float)expect); // integers far below 2^24: exact
    EXPECT_EQ(dsum, (double)expect);
    EXPECT_EQ(__half2float(hsum), 1024.0f);
    EXPECT_EQ(__bfloat162float(bsum), 256.0f);
    EXPECT_EQ(imin, -100);
    EXPECT_EQ(imax, 100);
  }
}

TEST(Atomics, IncWrapsAtTheLimit) {
  // 3000 tickets from atomicInc(counter, 9): 0..9 repeating, each 300 times,
  // and the counter ends at 3000 mod 10 = 0.
  unsigned counter = 0;
  std::vector<unsigned> histogram(10, 0);
  auto r = launch(atomic_inc_wrap, dim3(30), dim3(100), onThreads(2, 0, 1),
                  &counter, 9u, histogram.data());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(counter, 0u);
  EXPECT_EQ(histogram, std::vector<unsigned>(10, 300));
}

TEST(Atomics, CasLoopMaximum) {
  const int n = 5000;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i)
    in[i] = std::sin((float)i) * 1000.0f;
  float expect = *std::max_element(in.begin(), in.end());
  float max = -INFINITY;
  auto r = launch(atomic_cas_max, dim3(40), dim3(128), onThreads(2, 1, 5),
                  in.data(), n, &max);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(max, expect);
}

TEST(Atomics, SequenceOfOldValues) {
  unsigned u = 0;
  int s = 0;
  std::vector<unsigned> results(12, 12345);
  auto r = launch(atomic_sequence, dim3(1), dim3(1), options(), &u, &s,
                  results.data());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(results,
            (std::vector<unsigned>{0, 2, 1, 40, 2, 1, 1, 13, 8, 8, 0, 99}));
  EXPECT_EQ(u, 0u);
  EXPECT_EQ(s, -5);
}

unsigned short halfBits(float f) {
  return __half_as_ushort(__float2half_rn(f));
}
unsigned short bf16Bits(unsigned floatBits) {
  float f;
  std::memcpy(&f, &floatBits, 4);
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// Bit patterns checked by hand against IEEE 754 binary16 (1 + 5 + 10 bits)
// and bfloat16 (the top 16 bits of a binary32), round to nearest even.
TEST(HalfTypes, FloatToHalfRounding) {
  EXPECT_EQ(halfBits(1.0f), 0x3C00);
  EXPECT_EQ(halfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);     // tie -> even
  EXPECT_EQ(halfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02); // tie -> even
  EXPECT_EQ(halfBits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3C01); // above the tie
  EXPECT_EQ(halfBits(-2.5f), 0xC100);
  EXPECT_EQ(halfBits(65504.0f), 0x7BFF); // the largest half
  EXPECT_EQ(halfBits(65519.0f), 0x7BFF);
  EXPECT_EQ(halfBits(65520.0f), 0x7C00); // tie with 65536 -> even -> inf
  EXPECT_EQ(halfBits(1e10f), 0x7C00);
  EXPECT_EQ(halfBits(-1e10f), 0xFC00);
  EXPECT_EQ(halfBits(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(halfBits(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(halfBits(std::ldexp(1.0f, -25)), 0x0000); // tie -> even 0
  EXPECT_EQ(halfBits(std::ldexp(1.5f, -24)), 0x0002); // tie -> even 2
  EXPECT_EQ(halfBits(std::ldexp(1.25f, -25)), 0x0001);
  unsigned short nan = halfBits(NAN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(HalfTypes, HalfToFloatAndHalfArithmetic) {
  EXPECT_EQ(__half2float(__ushort_as_half(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(__half2float(__ushort_as_half(0x7BFF)), 65504.0f);
  EXPECT_TRUE(std::isinf(__half2float(__ushort_as_half(0x7C00))));
  EXPECT_TRUE(std::signbit(__half2float(__ushort_as_half(0x8000))));
  EXPECT_TRUE(std::isnan(__half2float(__ushort_as_half(0x7E00))));
  // 2049 is a tie between 2048 and 2050: even wins; 2051 rounds to 2052.
  EXPECT_EQ(__half2float(__hadd(__float2half(2048.0f), __float2half(1.0f))),
            2048.0f);
  EXPECT_EQ(__half2float(__hadd(__float2half(2050.0f), __float2half(1.0f))),
            2052.0f);
  EXPECT_EQ(__half_as_ushort(hexp(__float2half(0.0f))), 0x3C00);
  EXPECT_EQ(__half_as_ushort(hsqrt(__float2half(4.0f))), 0x4000);
  EXPECT_EQ(__half_as_ushort(__hfma(__float2half(2048.0f), __float2half(1.0f),
                                    __float2half(1.0f))),
            0x6800); // 2049 -> 2048, rounded once
}

TEST(HalfTypes, FloatToBfloat16Rounding) {
  EXPECT_EQ(bf16Bits(0x3F800000u), 0x3F80); // 1.0
  EXPECT_EQ(bf16Bits(0x3F808000u), 0x3F80); // tie -> even
  EXPECT_EQ(bf16Bits(0x3F818000u), 0x3F82); // tie -> even
  EXPECT_EQ(bf16Bits(0x3F808001u), 0x3F81); // above the tie
  EXPECT_EQ(bf16Bits(0x3F807FFFu), 0x3F80); // below the tie
  EXPECT_EQ(bf16Bits(0x7F7F7FFFu), 0x7F7F); // the largest bfloat16
  EXPECT_EQ(bf16Bits(0x7F7F8000u), 0x7F80); // tie, odd -> up -> inf
  EXPECT_EQ(bf16Bits(0xFF7FC000u), 0xFF80); // -inf
  EXPECT_EQ(bf16Bits(0x00018000u), 0x0002); // subnormal tie -> even
  EXPECT_EQ(bf16Bits(0x00008000u), 0x0000); // subnormal tie -> even 0
  EXPECT_EQ(bf16Bits(0x00010001u), 0x0001);
  unsigned short nan = bf16Bits(0x7FC00000u);
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  EXPECT_EQ(__bfloat162float(__ushort_as_bfloat16(0x4049)), 3.140625f);
}

TEST(DeviceMath, FunctionsLibmLacks) {
  EXPECT_EQ(rsqrtf(4.0f), 0.5f);
  EXPECT_EQ(__saturatef(-1.0f), 0.0f);
  EXPECT_EQ(__saturatef(2.0f), 1.0f);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
  EXPECT_EQ(__saturatef(0.25f), 0.25f);
  EXPECT_NEAR(normcdff(1.0f), 0.8413447f, 1e-6f);
  EXPECT_NEAR(erfcinvf(0.5f), 0.4769363f, 1e-6f);
  EXPECT_NEAR(erfcinvf(1e-30f), 8.148616f, 1e-4f); // erfc(8.148616) = 1e-30
  EXPECT_NEAR(erff(erfinvf(0.9f)), 0.9f, 1e-6f);
  EXPECT_TRUE(std::isinf(erfcinvf(0.0f)));
  EXPECT_TRUE(std::isnan(erfcinvf(2.5f)));
  EXPECT_EQ(__float_as_uint(1.0f), 0x3F800000u);
  EXPECT_EQ(__uint_as_float(0x40490FDBu), 3.14159274f);
  EXPECT_EQ(__double_as_longlong(1.0), 0x3FF0000000000000LL);
  EXPECT_EQ(__popc(0xF0F0u), 8);
  EXPECT_EQ(__popcll(~0ULL), 64);
  EXPECT_EQ(__clz(0), 32);
  EXPECT_EQ(__clz(1), 31);
  EXPECT_EQ(__clzll(1), 63);
  EXPECT_EQ(__ffs(0), 0);
  EXPECT_EQ(__ffs(0x10), 5);
  EXPECT_EQ(__ffsll(1LL << 40), 41);
  EXPECT_EQ(__brev(1u), 0x80000000u);
  EXPECT_EQ(__brev(0x12345678u), 0x1E6A2C48u);
  EXPECT_EQ(__mul24(0x00FFFFFF, 2), -2); // the 24-bit operand is -1
  EXPECT_EQ(__umul24(0x01000003u, 5u), 15u);
  EXPECT_EQ(__mulhi(0x40000000, 8), 2);
  EXPECT_EQ(__umulhi(0xFFFFFFFFu, 0xFFFFFFFFu), 0xFFFFFFFEu);
  EXPECT_EQ(__float2int_rn(2.5f), 2);
  EXPECT_EQ(__float2int_rn(3.5f), 4);
  EXPECT_EQ(__float2int_rz(-2.7f), -2);
  EXPECT_EQ(__float2int_rn(3e9f), 2147483647);
  EXPECT_EQ(__float2int_rn(NAN), 0);
  EXPECT_EQ(min(3, -4), -4);
  EXPECT_EQ(max(2u, 7), 7u);
  EXPECT_EQ(max(NAN, 1.0f), 1.0f); // fmaxf
  EXPECT_EQ(min(1LL, 2ULL), 1ULL);
  EXPECT_EQ(__fmul_rn(3.0f, 0.1f), 3.0f * 0.1f);
  int x = 42;
  EXPECT_EQ(__ldg(&x), 42);
  EXPECT_GT(clock64(), 0);
}

} // namespace
