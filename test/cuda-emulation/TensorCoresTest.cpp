//===- TensorCoresTest.cpp - the emulated mma.sync against a matmul -----===//
//
// kernels/mma.cu gathers its fragments in the PTX ISA's m16n8k16 layouts;
// every element of A, B and C is distinct, so a register placed at the
// wrong row or column in the emulation (or in the kernel) changes D.
//
//===----------------------------------------------------------------------===//
#undef NDEBUG

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "dlc_cuda_emulation/Launch.h"

#include "kernels/mma.cu"

namespace {

/// Bits of |x| as bf16 or f16 (x is exactly representable in both here).
unsigned short bits16(float x, bool bf16) {
  if (bf16) {
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return (unsigned short)(u >> 16);
  }
  __half h = __float2half_rn(x);
  __half_raw raw = h;
  return raw.x;
}

void checkMma(bool bf16, unsigned warps) {
  // Small integers and halves: exact in bf16 (8 significant bits) and f16,
  // distinct per element, so every product and sum is exact in float too.
  std::vector<float> a(warps * 256), b(warps * 128), c(warps * 128);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = (float)((int)(i * 37 % 251) - 125) / 2;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = (float)((int)(i * 53 % 127) - 63) / 4;
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = (float)i * 0.5f - 100;
  std::vector<unsigned short> a16(a.size()), b16(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    a16[i] = bits16(a[i], bf16);
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = bits16(b[i], bf16);
  std::vector<float> d(c.size(), NAN);
  for (unsigned long long seed : {1ULL, 2ULL, 3ULL}) {
    dlc_emu::options o;
    o.seed = seed;
    auto r = dlc_emu::launch(mma_tile, dim3(1), dim3(32 * warps), o, a16.data(),
                             b16.data(), c.data(), d.data(), (int)bf16);
    ASSERT_TRUE(r.ok()) << r.message;
    for (unsigned w = 0; w < warps; ++w)
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
          double s = c[w * 128 + i * 8 + j];
          for (int k = 0; k < 16; ++k)
            s += (double)a[w * 256 + i * 16 + k] * b[w * 128 + k * 8 + j];
          ASSERT_EQ(d[w * 128 + i * 8 + j], (float)s)
              << (bf16 ? "bf16" : "f16") << " warp " << w << " D[" << i << "]["
              << j << "]";
        }
  }
}

TEST(TensorCores, MmaM16N8K16Bf16MatchesScalarMatmul) { checkMma(true, 2); }

TEST(TensorCores, MmaM16N8K16F16MatchesScalarMatmul) { checkMma(false, 2); }

TEST(TensorCores, MmaInPartialWarpFailsTheLaunch) {
  std::vector<unsigned short> a(256), b(128);
  std::vector<float> c(128), d(128);
  auto r = dlc_emu::launch(mma_tile, dim3(1), dim3(20), dlc_emu::options{},
                           a.data(), b.data(), c.data(), d.data(), 1);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("needs all 32"), std::string::npos) << r.message;
}

} // namespace
