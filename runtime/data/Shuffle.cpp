//===- Shuffle.cpp - seeded, portable epoch permutations ------------------===//
#include "runtime/data/Shuffle.h"

namespace dlrt::data {

static uint64_t splitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t epochSeed(uint64_t seed, int64_t epoch) {
  return splitMix64(splitMix64(seed) ^ static_cast<uint64_t>(epoch));
}

uint64_t uniformBelow(std::mt19937_64 &engine, uint64_t bound) {
  // Accept draws below the largest multiple of |bound|.
  uint64_t limit = UINT64_MAX - (UINT64_MAX % bound + 1) % bound;
  uint64_t r;
  do
    r = engine();
  while (r > limit);
  return r % bound;
}

std::vector<int64_t> epochPermutation(int64_t n, uint64_t seed,
                                      int64_t epoch) {
  std::vector<int64_t> p(n > 0 ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i)
    p[i] = i;
  std::mt19937_64 engine(epochSeed(seed, epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(
        uniformBelow(engine, static_cast<uint64_t>(i) + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

} // namespace dlrt::data
