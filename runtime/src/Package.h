//===- Package.h - the loaded, validated form of a .dlcp package -*- C++
//-*-===//
// The loader reads the FlatBuffers plan into plain structs after checking
// every index and size, so the executor never trusts the file.
#ifndef DLRT_SRC_PACKAGE_H
#define DLRT_SRC_PACKAGE_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/Device.h"
#include "dlrt/dlrt.h"
#include "runtime/schema/FormatVersion.h"

namespace dlrt {

/// The package format version this runtime reads up to (the one constant
/// dlc writes, runtime/schema/FormatVersion.h).
constexpr uint32_t kPackageFormatVersion = dlc::schema::kPackageFormatVersion;
/// The first format version with the weights section after the FlatBuffer.
constexpr uint32_t kWeightsSectionFormatVersion = 8;
/// The alignment, bytes, of the weights section and of each of its tensors
/// (package.fbs WeightsSection, WeightRef).
constexpr uint64_t kWeightsSectionAlignment = 64;
/// The oldest format version this runtime still reads: version 1 stored
/// library-call parameters positionally (LibraryCall.int_attrs).
constexpr uint32_t kOldestPackageFormatVersion = 1;

/// Mirrors dlc.package.BufferKind.
enum class BufferKind : int8_t {
  Parameter = 0,
  OptimizerState = 1,
  Buffer = 2,
  Input = 3,
  Arena = 4,
  Alias = 5,
  Constant = 6
};

/// Whether buffers of |kind| get their own allocation that lives as long as
/// the session (Parameter, OptimizerState, State, Constant).
bool isPersistent(BufferKind kind);
/// Whether buffers of |kind| are checkpointed (Parameter, OptimizerState,
/// State).
bool isCheckpointed(BufferKind kind);
/// The safetensors dtype string of |dtype| ("F32", ...).
const char *safetensorsDType(dlrt_dtype_t dtype);

struct BufferInfo {
  std::string name;
  BufferKind kind = BufferKind::Arena;
  dlrt_dtype_t dtype = DLRT_F32;
  std::vector<int64_t> shape;
  int64_t sizeBytes = 0;
  int64_t arenaOffset = -1;
  int32_t aliasOf = -1;
  std::string init;
  /// A strided Alias (format version 6): element i is element viewOffset +
  /// sum_d i_d * viewStrides[d] of aliasOf; empty strides for a dense
  /// buffer or a reshape.
  int64_t viewOffset = 0;
  std::vector<int64_t> viewStrides;
};

/// The buffer |index| is stored in (aliases followed) and the byte offset
/// of its first element there. The loader checks that alias chains end.
uint32_t resolveAlias(const std::vector<BufferInfo> &buffers, uint32_t index,
                      int64_t *byteOffset);

struct StepInfo {
  /// A kernel launch, a library call, or a collective: an asynchronous
  /// in-place all-reduce of args[0], or the wait for the collective in
  /// flight on args[0].
  enum class Kind { Launch, LibraryCall, AllReduce, Wait };
  Kind kind = Kind::Launch;
  bool isLaunch() const { return kind == Kind::Launch; }
  uint32_t kernel = 0; // LaunchKernel: index into Package::kernels
  std::vector<uint32_t> args; // buffer indices, inputs then outputs
  bool average = false; // AllReduce: the mean over the ranks (else the sum)
  /// LibraryCall: the call (a row of runtime/schema/LibraryCalls.def) and
  /// the parameters of its family.
  dlc::exec::LibraryCallParams call;
};

struct NamedBufferInfo {
  std::string name;
  uint32_t buffer = 0;
};

struct FunctionInfo {
  std::string name;
  std::vector<NamedBufferInfo> inputs;
  std::vector<NamedBufferInfo> outputs;
  std::vector<StepInfo> steps;
  int64_t arenaBytes = 0;
};

/// The memory a session of a package holds on its device, bytes, as the
/// compiler planned it (package.fbs MemoryPlan; docs/memory.md): every
/// persistent buffer, every Input buffer, one arena (the largest function's)
/// and one library-call workspace. The predicted peak is their sum.
struct MemoryPlan {
  int64_t persistentBytes = 0;
  int64_t inputBytes = 0;
  int64_t arenaBytes = 0;
  int64_t workspaceBytes = 0;
  /// True when the package carries the MemoryPlan table; false when the
  /// loader computed the four from the plan (packages before issue 11).
  bool fromPackage = false;

  int64_t predictedPeakBytes() const {
    return persistentBytes + inputBytes + arenaBytes + workspaceBytes;
  }
};

/// A pipeline package's schedule data (package.fbs Pipeline; docs/pipeline.md,
/// "Running a pipeline"), checked by the loader: every function named exists,
/// every transfer names an output of the sender's forward (or backward) and
/// an input of the receiver's, every input of a stage function is a step
/// input, a transfer, or an output of the stage's own forward.
struct PipelineInfo {
  struct Stage {
    std::string forward, backward, update;
    std::vector<std::string> gradientAccumulators;
  };
  struct Transfer {
    std::string name;
    int32_t fromStage = 0, toStage = 0;
    bool backward = false;
  };
  std::string schedule; ///< "gpipe" | "1f1b"
  int32_t microBatches = 1;
  int32_t lossStage = 0;
  std::string stepFunction; ///< "train_step"
  std::vector<Stage> stages;
  std::vector<Transfer> transfers;
  std::vector<std::string> inputs;
};

/// A read-only mapping of a whole file (mmap), unmapped when the last
/// owner lets go of it; or (copyOf) a copy of bytes in memory, freed then.
class MappedFile {
public:
  /// Maps the regular file |path|; |what| ("package") names it in messages.
  /// Errors: DLRT_NOT_FOUND, DLRT_IO_ERROR (cannot open, not a regular
  /// file, mmap fails).
  static Status open(const std::string &path, const char *what,
                     std::shared_ptr<const MappedFile> *out);
  /// A 64-byte aligned copy of the |size| bytes at |data|.
  static std::shared_ptr<const MappedFile> copyOf(const uint8_t *data,
                                                  size_t size);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return data_; }
  /// Bytes; 0 for an empty file (then data() is null).
  size_t size() const { return size_; }
  /// Drops the whole pages inside [|begin|, |begin| + |bytes|) from this
  /// process's resident memory (madvise MADV_DONTNEED: the mapping is of a
  /// file and never written, so the bytes are read from the file again if
  /// touched). A hint: does nothing on failure, nor for a copy.
  void releasePages(const uint8_t *begin, size_t bytes) const;

private:
  MappedFile() = default;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  bool copied_ = false;
};

/// The initial value of persistent buffers: little-endian, row-major bytes
/// of a safetensors dtype ("F32", ...) and shape. The bytes are |owned|
/// (weights inside the FlatBuffer, copied out), or |mappedSize| bytes at
/// |mapped| in Package::mapping (the weights section).
struct TensorData {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> owned;
  const uint8_t *mapped = nullptr;
  size_t mappedSize = 0;

  const uint8_t *data() const { return mapped ? mapped : owned.data(); }
  /// Bytes.
  size_t size() const { return mapped ? mappedSize : owned.size(); }
};

struct Package {
  uint32_t formatVersion = 0;
  std::string producer;
  std::string modelName;
  std::vector<BufferInfo> buffers;
  std::vector<Device::KernelSpec> kernels;
  std::vector<FunctionInfo> functions;
  bool hasTraining = false;
  std::string lossOutput, optimizer, stepCounter;
  float learningRate = 0;
  int64_t batchSize = 0;
  double modelFlops = 0, peakFlops = 0; ///< TrainingInfo's; 0: unknown
  std::vector<uint8_t> hostLibrary;
  std::map<std::string, TensorData> weights;
  /// What the weights of the weights section point into
  /// (TensorData::mapped): the package file's mapping (loadPackage), or one
  /// copy of the section (parsePackage). Null without a weights section.
  std::shared_ptr<const MappedFile> mapping;
  /// From the package's MemoryPlan table, or computeMemoryPlan when absent.
  MemoryPlan memory;
  /// Pipeline packages only (hasPipeline).
  bool hasPipeline = false;
  PipelineInfo pipeline;

  /// The function named |name|, or null.
  const FunctionInfo *function(const std::string &name) const;
  /// Called once |t|'s bytes are on the device: a weight read in place from
  /// the mapping leaves this process's resident memory (MappedFile::
  /// releasePages), so that loading a large package holds its weights
  /// once (on the host device: the device's copy), not twice.
  void releaseWeightPages(const TensorData &t) const;
};

/// The MemoryPlan of |pkg|'s buffers and functions, computed as the compiler
/// does (dlc::computePlanStats): persistent and Input buffer sizes summed by
/// kind, the largest function arena, and the workspace
/// dlc::exec::workspaceBytesFor the largest library-call output and the
/// largest fallback scratch (dlc::exec::libraryCallFallbackScratchBytes).
MemoryPlan computeMemoryPlan(const Package &pkg);

/// Parses and validates the package bytes |data| (|size| bytes: the
/// FlatBuffer and, format version 8, the weights section after it); |path|
/// names it in messages. Nothing in |out| points into |data|: the weights
/// are copied (the weights section once, as Package::mapping). Errors:
/// DLRT_CORRUPT (not a package, fails verification, an index, offset or size
/// out of range, a weights section or weight outside the file: "'<path>' is
/// corrupt: weight '<name>' ..."), DLRT_INCOMPATIBLE (format version).
Status parsePackage(const uint8_t *data, size_t size, const std::string &path,
                    Package *out);

/// Maps and parses the package file |path| (a file that cannot be mapped,
/// such as a pipe, is read instead). The weights of its weights section are
/// read in place from the mapping, which |out| keeps (Package::mapping).
/// Errors: DLRT_NOT_FOUND, DLRT_IO_ERROR, and those of parsePackage.
Status loadPackage(const std::string &path, Package *out);

/// Reads the whole file |path|. Errors: DLRT_NOT_FOUND, DLRT_IO_ERROR;
/// |what| ("package", "checkpoint") names the file in messages.
Status readFile(const std::string &path, const char *what,
                std::vector<uint8_t> *out);

} // namespace dlrt

#endif
