//===- idx.cpp - fuzz target: IDX bytes, plain or gzip-compressed ----------===//
// parseIdx, as the Fashion-MNIST loader reads its files; an accepted array
// must have rank 1 to 4 and data size = numel * element size.
#include "runtime/data/Idx.h"

#include <cstdio>
#include <cstdlib>

using namespace dlrt::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Array a;
  std::string error;
  if (!parseIdx(data, size, "fuzz.idx", a, error)) {
    if (error.rfind("fuzz.idx: ", 0) != 0) {
      std::fprintf(stderr, "idx: error without the file name: '%s'\n",
                   error.c_str());
      std::abort();
    }
    return 0;
  }
  uint64_t bytes = dtypeSize(a.dtype);
  for (int64_t d : a.shape)
    bytes *= static_cast<uint64_t>(d);
  if (a.shape.empty() || a.shape.size() > 4 || bytes != a.data.size()) {
    std::fprintf(stderr, "idx: accepted %s with %zu bytes\n",
                 a.describe().c_str(), a.data.size());
    std::abort();
  }
  return 0;
}
