//===- TestPackage.h - build .dlcp packages and host kernels in tests ----===//
#ifndef DLRT_TEST_RUNTIME_TESTPACKAGE_H
#define DLRT_TEST_RUNTIME_TESTPACKAGE_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/schema/LibraryCalls.h"

namespace dlrt::test {

/// A buffer of the package; kind/dtype values as in package.fbs.
struct BufSpec {
  std::string name;
  int kind = 4;  // Arena
  int dtype = 0; // F32
  std::vector<int64_t> shape;
  int64_t arenaOffset = -1;
  int32_t aliasOf = -1;
  std::string init;
  int64_t sizeBytes = -1; // -1: numel * element size
};

struct StepSpec {
  bool launch = true;
  uint32_t kernel = 0;
  std::string callee;
  std::vector<uint32_t> args;
  /// Format version 1: the positional parameters.
  std::vector<int64_t> intAttrs;
  std::vector<float> floatAttrs;
  /// Format version 2: the typed parameters (package.fbs LibraryCallAttrs);
  /// absent = no attrs table.
  std::optional<dlc::exec::LibraryCallParams> params;
  /// A collective instead (args[0] is its buffer): 1 AllReduce ("avg" when
  /// |average|, else "sum"), 2 WaitCollective.
  int collective = 0;
  bool average = true;
};

struct FnSpec {
  std::string name;
  std::vector<std::pair<std::string, uint32_t>> inputs, outputs;
  std::vector<StepSpec> steps;
  int64_t arenaBytes = 0;
};

/// The Pipeline table of a pipeline package (package.fbs).
struct PipelineSpec {
  struct Stage {
    std::string forward, backward, update;
    std::vector<std::string> accumulators;
  };
  struct Transfer {
    std::string name;
    int32_t from = 0, to = 0;
    bool backward = false;
  };
  std::string schedule = "1f1b";
  int32_t microBatches = 2;
  int32_t lossStage = 0;
  std::string stepFunction = "train_step";
  std::vector<Stage> stages;
  std::vector<Transfer> transfers;
  std::vector<std::string> inputs;
};

/// A tensor of the weights section (package.fbs WeightRef, format
/// version 8). |offset| / |length| are bytes from the section's start;
/// -1 places the tensor at the next multiple of 64 / takes data's size.
struct WeightRefSpec {
  std::string name;
  int dtype = 0; // F32
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t offset = -1;
  int64_t length = -1;
};

struct PkgSpec {
  uint32_t formatVersion = 1;  // 2: library calls carry `params`
  std::vector<BufSpec> buffers;
  std::vector<std::string> kernels;
  std::vector<FnSpec> functions;
  std::vector<uint8_t> hostLibrary;
  std::vector<uint8_t> weights;
  bool training = false;
  /// The MemoryPlan table (persistent, input, arena, workspace bytes);
  /// absent = no table, as in packages written before issue 11.
  std::optional<std::array<int64_t, 4>> memoryPlan;
  /// The Pipeline table; absent = not a pipeline package.
  std::optional<PipelineSpec> pipeline;
  /// Format version 8: with |weightsSection|, the tensors of the weights
  /// section after the FlatBuffer (at the FlatBuffer's size rounded up to
  /// 64, as dlc writes it, unless |sectionOffset| >= 0 says otherwise; its
  /// length is the bytes the tensors need unless |sectionLength| >= 0).
  bool weightsSection = false;
  std::vector<WeightRefSpec> weightRefs;
  int64_t sectionOffset = -1;
  int64_t sectionLength = -1;
};

/// Serializes |spec| with the FlatBuffers builder (file identifier "DLCP").
std::vector<uint8_t> buildPackage(const PkgSpec &spec);

/// A fresh empty temporary directory, removed by the destructor.
class TempDir {
public:
  TempDir();
  ~TempDir();
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes);
std::vector<uint8_t> readBytes(const std::string &path);

/// Compiles the C++ |source| into a shared object with the build's C++
/// compiler (-O2 -shared -fPIC) and returns its bytes; empty with |error| set
/// on failure.
std::vector<uint8_t> compileHostLibrary(const std::string &source,
                                        std::string *error);

/// Bytes of a float vector (for weights and inputs).
std::vector<uint8_t> floatBytes(const std::vector<float> &v);

/// |n| pseudo-random floats in [-1, 1) from |seed| (an LCG; |salt| keeps the
/// streams of different test files apart).
std::vector<float> randomVector(size_t n, uint32_t seed, uint32_t salt = 7);

/// Expects |got| to match |ref| within 1e-4 * (1 + |ref|) element-wise.
/// Tolerance: f32 results of sums of at most ~100 products of values in
/// [-1, 1]; rounding error is ~1e-6 relative, oneDNN/cuBLAS may reorder sums,
/// so the bound is loose for correct code and tight for wrong code (a missed
/// or extra term is >= ~1e-3). Reports at most 5 bad elements.
void expectClose(const std::vector<float> &got, const std::vector<double> &ref,
                 const char *what);

} // namespace dlrt::test

#endif
