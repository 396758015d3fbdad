//===- npz.cpp - fuzz target: NumPy .npz (zip) bytes -----------------------===//
// parseNpz, as `dlrt train --data x.npz` and `dlrt run --inputs x.npz` read a
// file: the zip structure (zip64 too), stored and deflate entries, CRCs and
// each entry's .npy. Accepted arrays must be consistent.
#include "runtime/data/Npy.h"

#include <cstdio>
#include <cstdlib>

using namespace dlrt::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<NamedArray> arrays;
  std::string error;
  if (!parseNpz(data, size, "fuzz.npz", arrays, error)) {
    if (error.rfind("fuzz.npz", 0) != 0) {
      std::fprintf(stderr, "npz: error without the file name: '%s'\n",
                   error.c_str());
      std::abort();
    }
    return 0;
  }
  for (const NamedArray &na : arrays) {
    uint64_t bytes = dtypeSize(na.array.dtype);
    for (int64_t d : na.array.shape)
      bytes *= static_cast<uint64_t>(d);
    if (bytes != na.array.data.size()) {
      std::fprintf(stderr, "npz: entry '%s' has %zu bytes for %s\n",
                   na.name.c_str(), na.array.data.size(),
                   na.array.describe().c_str());
      std::abort();
    }
  }
  return 0;
}
