//===- Shuffle.h - seeded, portable epoch permutations ----------*- C++ -*-===//
// The data order of `dlrt train`: each epoch is a Fisher-Yates shuffle
// (Knuth, TAOCP vol. 2, Algorithm P) driven by std::mt19937_64, whose output
// sequence the C++ standard fixes, with our own unbiased bounded draw
// (std::uniform_int_distribution differs between standard libraries), so a
// seed gives the same order everywhere and a resumed run can recompute it.
#ifndef DLRT_DATA_SHUFFLE_H
#define DLRT_DATA_SHUFFLE_H

#include <cstdint>
#include <random>
#include <vector>

namespace dlrt::data {

/// The engine seed for |epoch| (0-based) of a run seeded with |seed|: both
/// mixed through SplitMix64 (Steele et al. 2014) so nearby seeds/epochs
/// give unrelated streams.
uint64_t epochSeed(uint64_t seed, int64_t epoch);

/// A uniform integer in [0, bound) from |engine| (bound >= 1), by rejection
/// sampling on the top of the 64-bit range (no modulo bias).
uint64_t uniformBelow(std::mt19937_64 &engine, uint64_t bound);

/// The sample order of |epoch|: a permutation of 0..n-1.
std::vector<int64_t> epochPermutation(int64_t n, uint64_t seed,
                                      int64_t epoch);

} // namespace dlrt::data

#endif // DLRT_DATA_SHUFFLE_H
