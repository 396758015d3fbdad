//===- HalfConversionsTest.cpp - HalfConversions.h against CUDA's host code
//===//
// The runtime's f16/bf16 conversions must equal CUDA's own host
// implementations bit for bit: the CUDA headers are included here, in the
// test only (libdlrt never depends on CUDA).
#include "runtime/device/HalfConversions.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t cudaHalf(float f) {
  return static_cast<__half_raw>(__float2half_rn(f)).x;
}
uint16_t cudaBFloat16(float f) {
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x;
}
float cudaHalfToFloat(uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half2float(__half(r));
}
float cudaBFloat16ToFloat(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}

/// f32 patterns that sit on or next to every rounding decision: for each
/// 16-bit result pattern, the f32 values at, one ulp below and one ulp above
/// the midpoint to its neighbour, and the pattern itself widened.
std::vector<uint32_t> boundaryPatterns() {
  std::vector<uint32_t> out;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    // bf16: the widened pattern, midpoints at +0x8000 (ties), +-1 around.
    uint32_t w = h << 16;
    for (uint32_t d : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      out.push_back(w + d);
    // f16: the exact f32 value of the pattern and its neighbours' midpoint.
    uint16_t hb = static_cast<uint16_t>(h);
    float v = dlrt::halfBitsToFloat(hb);
    if (std::isnan(v))
      continue;
    uint32_t u = bitsOf(v);
    for (int64_t d = -2; d <= 2; ++d)
      out.push_back(static_cast<uint32_t>(static_cast<int64_t>(u) + d));
    if ((h & 0x7fffu) < 0x7c00u) {
      float next = dlrt::halfBitsToFloat(static_cast<uint16_t>(hb + 1));
      if (!std::isinf(next) || (h & 0x7fffu) == 0x7bffu) {
        // The midpoint to the next magnitude; for 0x7bff (65504) the
        // midpoint to "65536" (65520) decides overflow.
        double mid = (h & 0x7fffu) == 0x7bffu
                         ? std::copysign(65520.0, v)
                         : (static_cast<double>(v) + next) / 2;
        uint32_t m = bitsOf(static_cast<float>(mid));
        for (int64_t d = -2; d <= 2; ++d)
          out.push_back(static_cast<uint32_t>(static_cast<int64_t>(m) + d));
      }
    }
  }
  // Specials: zeros, infinities, the largest finite, f32 subnormals, NaNs
  // with and without payloads and signs.
  for (uint32_t s : {0u, 0x80000000u})
    for (uint32_t m :
         {0x0u,        0x1u,        0x7fffffu,   0x400000u,   0x7f800000u,
          0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7f7fffffu, 0x7f7f8000u,
          0x7f7f7fffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
          0x47800000u, 0x33000000u, 0x33000001u, 0x32ffffffu, 0x387fc000u,
          0x38800000u})
      out.push_back(s | m);
  return out;
}

TEST(HalfConversions, EveryHalfPatternWidensLikeCuda) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    ASSERT_EQ(bitsOf(dlrt::halfBitsToFloat(b)), bitsOf(cudaHalfToFloat(b)))
        << "f16 0x" << std::hex << h;
    ASSERT_EQ(bitsOf(dlrt::bfloat16BitsToFloat(b)),
              bitsOf(cudaBFloat16ToFloat(b)))
        << "bf16 0x" << std::hex << h;
  }
  // Spot values, so a shared mistake cannot hide.
  EXPECT_EQ(dlrt::halfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(dlrt::halfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(dlrt::halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(dlrt::halfBitsToFloat(0xfc00), -INFINITY);
  EXPECT_EQ(bitsOf(dlrt::halfBitsToFloat(0x7e01)), 0x7fffffffu);
  EXPECT_EQ(dlrt::bfloat16BitsToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bitsOf(dlrt::bfloat16BitsToFloat(0xffc1)), 0xffc10000u);
}

TEST(HalfConversions, EveryHalfPatternRoundTrips) {
  // Widening then narrowing is the identity on every non-NaN pattern.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    if (!std::isnan(dlrt::halfBitsToFloat(b)))
      ASSERT_EQ(dlrt::floatToHalfBits(dlrt::halfBitsToFloat(b)), b) << h;
    if (!std::isnan(dlrt::bfloat16BitsToFloat(b)))
      ASSERT_EQ(dlrt::floatToBFloat16Bits(dlrt::bfloat16BitsToFloat(b)), b)
          << h;
  }
}

TEST(HalfConversions, RoundingBoundariesNarrowLikeCuda) {
  std::vector<uint32_t> patterns = boundaryPatterns();
  ASSERT_GT(patterns.size(), 600000u);
  for (uint32_t u : patterns) {
    float f = floatOf(u);
    ASSERT_EQ(dlrt::floatToHalfBits(f), cudaHalf(f))
        << "f32 0x" << std::hex << u;
    ASSERT_EQ(dlrt::floatToBFloat16Bits(f), cudaBFloat16(f))
        << "f32 0x" << std::hex << u;
  }
  // Spot values: ties to even, overflow, the smallest subnormal, NaN.
  EXPECT_EQ(dlrt::floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(dlrt::floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(dlrt::floatToHalfBits(65519.0f), 0x7bff);
  EXPECT_EQ(dlrt::floatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(dlrt::floatToHalfBits(-1e30f), 0xfc00);
  EXPECT_EQ(dlrt::floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(dlrt::floatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(dlrt::floatToHalfBits(-NAN), 0x7fff);
  EXPECT_EQ(dlrt::floatToBFloat16Bits(floatOf(0x3f808000u)), 0x3f80);
  EXPECT_EQ(dlrt::floatToBFloat16Bits(floatOf(0x3f818000u)), 0x3f82);
  EXPECT_EQ(dlrt::floatToBFloat16Bits(FLT_MAX), 0x7f80);
  EXPECT_EQ(dlrt::floatToBFloat16Bits(-FLT_MAX), 0xff80);
  EXPECT_EQ(dlrt::floatToBFloat16Bits(floatOf(0xffc00001u)), 0x7fff);
}

TEST(HalfConversions, RandomFloatsNarrowLikeCuda) {
  // 4 million uniformly random patterns (every exponent, NaNs included) and
  // 1 million in the f16 subnormal/overflow ranges.
  std::mt19937 rng(20260101);
  for (int i = 0; i < 4000000; ++i) {
    uint32_t u = rng();
    float f = floatOf(u);
    ASSERT_EQ(dlrt::floatToHalfBits(f), cudaHalf(f)) << std::hex << u;
    ASSERT_EQ(dlrt::floatToBFloat16Bits(f), cudaBFloat16(f)) << std::hex << u;
  }
  std::uniform_int_distribution<uint32_t> low(0x32000000u, 0x38ffffffu);
  std::uniform_int_distribution<uint32_t> high(0x477f0000u, 0x47900000u);
  for (int i = 0; i < 500000; ++i) {
    for (uint32_t u : {low(rng), high(rng), low(rng) | 0x80000000u,
                       high(rng) | 0x80000000u}) {
      float f = floatOf(u);
      ASSERT_EQ(dlrt::floatToHalfBits(f), cudaHalf(f)) << std::hex << u;
    }
  }
}

TEST(HalfConversions, DoublesNarrowLikeCuda) {
  // Doubles that round differently through a plain f32 step: an f16/bf16
  // tie after rounding to f32, but just above or below it as a double.
  std::vector<double> values = {
      1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
      1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40),
      1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40),
      1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40),
      65520.0 - std::ldexp(1.0, -30),
      1e300,
      -1e300,
      1e-300,
      std::ldexp(1.0, -25) + std::ldexp(1.0, -60),
      0.1,
      -2.5,
      NAN};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    uint64_t u = rng();
    // Keep exponents near the f16/bf16 ranges so most values are finite.
    u = (u & 0x800fffffffffffffull) |
        (static_cast<uint64_t>(0x3c0 + (u >> 52) % 0x100) << 52);
    double d;
    std::memcpy(&d, &u, 8);
    values.push_back(d);
  }
  for (double d : values) {
    ASSERT_EQ(dlrt::doubleToHalfBits(d),
              static_cast<__half_raw>(__double2half(d)).x)
        << d;
    ASSERT_EQ(dlrt::doubleToBFloat16Bits(d),
              static_cast<__nv_bfloat16_raw>(__double2bfloat16(d)).x)
        << d;
  }
  // A plain double -> f32 -> f16 would round 1 + 2^-11 + 2^-40 to 1.0.
  EXPECT_EQ(dlrt::doubleToHalfBits(values[0]), 0x3c01);
  EXPECT_EQ(dlrt::doubleToHalfBits(values[1]), 0x3c00);
}

} // namespace
