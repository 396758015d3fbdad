//===- npy.cpp - fuzz target: NumPy .npy bytes -----------------------------===//
// parseNpy, as `dlrt run --inputs x.npy` reads a file; an accepted array must
// be consistent (data size = numel * element size) and survive a
// serialize/parse round trip unchanged.
#include "runtime/data/Npy.h"

#include <cstdio>
#include <cstdlib>

using namespace dlrt::data;

namespace {
[[noreturn]] void violation(const std::string &what) {
  std::fprintf(stderr, "npy: %s\n", what.c_str());
  std::abort();
}

void checkArray(const Array &a) {
  uint64_t bytes = dtypeSize(a.dtype);
  for (int64_t d : a.shape) {
    if (d < 0)
      violation("negative dimension");
    bytes *= static_cast<uint64_t>(d);
  }
  if (bytes != a.data.size())
    violation("data size " + std::to_string(a.data.size()) +
              " does not match " + a.describe());
  if (a.dtype == DType::Bool)
    for (uint8_t b : a.data)
      if (b > 1)
        violation("bool byte other than 0 or 1");
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Array a;
  std::string error;
  if (!parseNpy(data, size, "fuzz.npy", a, error)) {
    if (error.rfind("fuzz.npy: ", 0) != 0)
      violation("error without the file name: '" + error + "'");
    return 0;
  }
  checkArray(a);
  std::vector<uint8_t> again = serializeNpy(a);
  Array back;
  if (!parseNpy(again.data(), again.size(), "again.npy", back, error))
    violation("the serialized form does not parse: " + error);
  if (back.dtype != a.dtype || back.shape != a.shape || back.data != a.data)
    violation("the round trip changed the array");
  return 0;
}
