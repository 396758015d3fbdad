//===- HalfConversions.h - f32/f64 <-> f16 and bf16, bit-exact --*- C++ -*-===//
// Conversions between float and the two 16-bit float formats the runtime
// stores: IEEE binary16 (f16) and bfloat16 (bf16, the upper half of an f32).
// They equal CUDA's host implementations bit for bit (__float2half_rn,
// __float2bfloat16_rn, __half2float, __bfloat162float, __double2half,
// __double2bfloat16; test/runtime/HalfConversionsTest.cpp checks every
// 16-bit pattern and millions of f32 ones), without depending on CUDA.
//
// Narrowing rounds to nearest, ties to even; values beyond the largest finite
// value round to infinity; subnormal results are produced (no flush to
// zero). A NaN becomes the canonical quiet NaN (0x7fff in both formats, as
// CUDA does). Widening is exact, except that an f16 NaN becomes the quiet
// NaN 0x7fffffff (CUDA's __half2float does the same).
#ifndef DLRT_DEVICE_HALFCONVERSIONS_H
#define DLRT_DEVICE_HALFCONVERSIONS_H

#include <cstdint>
#include <cstring>

namespace dlrt {

namespace detail {
inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// Rounds |kept| (the truncated result) to nearest even given the |dropped|
/// low bits of which |half| is the weight of the highest one.
inline uint32_t roundNearestEven(uint32_t kept, uint32_t dropped,
                                 uint32_t half) {
  if (dropped > half || (dropped == half && (kept & 1u)))
    return kept + 1;
  return kept;
}
} // namespace detail

/// The f16 bit pattern nearest to |value| (ties to even).
inline uint16_t floatToHalfBits(float value) {
  uint32_t x = detail::floatBits(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return 0x7fffu;
  if (a >= 0x47800000u) // >= 2^16 (or inf): beyond every rounding to finite
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) { // normal f16 range (>= 2^-14); may carry to inf
    uint32_t kept = (a - 0x38000000u) >> 13;
    return static_cast<uint16_t>(
        sign | detail::roundNearestEven(kept, a & 0x1fffu, 0x1000u));
  }
  if (a <= 0x33000000u) // <= 2^-25: rounds to zero (2^-25 is a tie to 0)
    return static_cast<uint16_t>(sign);
  // Subnormal f16: the result counts units of 2^-24.
  uint32_t exponent = a >> 23;
  uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - exponent; // 14 .. 24
  uint32_t kept = mantissa >> shift;
  uint32_t dropped = mantissa & ((1u << shift) - 1u);
  return static_cast<uint16_t>(
      sign | detail::roundNearestEven(kept, dropped, 1u << (shift - 1)));
}

/// The f32 value of the f16 bit pattern |bits| (exact; NaN -> 0x7fffffff).
inline float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu)
    return detail::bitsFloat(mantissa ? 0x7fffffffu : (sign | 0x7f800000u));
  if (exponent == 0) {
    if (mantissa == 0)
      return detail::bitsFloat(sign);
    // Subnormal: normalize so that the leading one becomes implicit.
    uint32_t e = 113; // the f32 exponent of 2^-14
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --e;
    }
    return detail::bitsFloat(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
  }
  return detail::bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// The bf16 bit pattern nearest to |value| (ties to even).
inline uint16_t floatToBFloat16Bits(float value) {
  uint32_t x = detail::floatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN
    return 0x7fffu;
  // The sign rides along in |kept|; a carry out of the largest finite
  // magnitude gives the infinity of the same sign.
  return static_cast<uint16_t>(
      detail::roundNearestEven(x >> 16, x & 0xffffu, 0x8000u));
}

/// The f32 value of the bf16 bit pattern |bits| (exact, NaN payload kept).
inline float bfloat16BitsToFloat(uint16_t bits) {
  return detail::bitsFloat(static_cast<uint32_t>(bits) << 16);
}

/// |value| rounded to f32 with round-to-odd: an inexact result keeps its
/// truncation and sets the last mantissa bit. Rounding that f32 once more to
/// a format with at least 2 fewer mantissa bits (f16, bf16) gives the same
/// result as rounding |value| directly (Boldo and Melquiond, "When double
/// rounding is odd", 2005); CUDA's __double2bfloat16 does the same.
inline float doubleToFloatRoundToOdd(double value) {
  if (value != value)
    return static_cast<float>(value);
  float f = static_cast<float>(value);
  double back = static_cast<double>(f);
  if (back == value)
    return f;
  uint32_t u = detail::floatBits(f);
  // Step back toward zero when rounding went away from it.
  if ((value > 0 && back > value) || (value < 0 && back < value))
    --u;
  return detail::bitsFloat(u | 1u);
}

/// The f16 / bf16 bit pattern nearest to the double |value| (ties to even).
inline uint16_t doubleToHalfBits(double value) {
  return floatToHalfBits(doubleToFloatRoundToOdd(value));
}
inline uint16_t doubleToBFloat16Bits(double value) {
  return floatToBFloat16Bits(doubleToFloatRoundToOdd(value));
}

} // namespace dlrt

#endif // DLRT_DEVICE_HALFCONVERSIONS_H
