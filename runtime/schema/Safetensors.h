//===- Safetensors.h - read and write the safetensors format ----*- C++ -*-===//
// The weights of a package and the runtime's checkpoints are safetensors
// files (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//    "__metadata__": {"key": "value"}}
// and then the data; offsets are bytes relative to the end of the header.
#ifndef DLC_RUNTIME_SCHEMA_SAFETENSORS_H
#define DLC_RUNTIME_SCHEMA_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dlrt::safetensors {

/// One named tensor. `dtype` is a safetensors dtype string (the runtime's
/// tensors are "F32", "F64", "I64", "I32", "BOOL", "F16" and "BF16"; "I8",
/// "U8", "I16", "U16", "U32", "U64" are read as well); `data` holds numel *
/// element-size bytes, little-endian, row-major.
struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Bytes per element of safetensors dtype |dtype|, or 0 when unknown.
size_t dtypeSize(const std::string &dtype);

/// Serializes |tensors| (data laid out in the given order, names must be
/// distinct and not "__metadata__") with |metadata| as "__metadata__"
/// (omitted when empty). The header is padded with spaces to a multiple of
/// 8 bytes.
std::vector<uint8_t>
serialize(const std::vector<Tensor> &tensors,
          const std::map<std::string, std::string> &metadata = {});

/// A tensor of serializeHeader(): a Tensor without its data, whose data is
/// `bytes` bytes long.
struct TensorInfo {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
};

/// The first bytes of serialize()'s output for tensors of these names,
/// dtypes, shapes and data sizes (the 8-byte length and the padded JSON
/// header); the tensors' data follows it, in the given order. For writers
/// that place large data straight into its destination without building
/// each Tensor's `data` first (the package writer's weights).
std::vector<uint8_t>
serializeHeader(const std::vector<TensorInfo> &tensors,
                const std::map<std::string, std::string> &metadata = {});

/// Parses the safetensors bytes |data| of |size| bytes into |out| (in data
/// offset order) and |metadata| (either may be null). Returns false with a
/// one-line |error| (if not null) when the file is truncated, the header is
/// not valid JSON of the expected form, a dtype is unknown, a shape does not
/// match its byte range, or a byte range lies outside the data.
bool parse(const uint8_t *data, size_t size, std::vector<Tensor> *out,
           std::map<std::string, std::string> *metadata, std::string *error);

/// Whether writeFileAtomic() makes the file durable before it returns.
enum class Durability {
  /// fsync the file before the rename and the folder after it: after a
  /// crash or power loss |path| holds the old or the new bytes, never an
  /// empty or partial file (checkpoints: the only copy of a training run).
  Synced,
  /// No fsync: readers still see the old file or the whole new one (the
  /// rename is atomic), but after a power loss the new file may be empty.
  /// For outputs that a rerun regenerates (dlc's packages), as compilers
  /// and linkers (gcc, ld) write theirs: an fsync of a 650 MB package costs
  /// seconds.
  Unsynced,
};

/// Writes |size| bytes to |path| atomically: a temporary file in the same
/// folder, fsync (with Durability::Synced), rename over |path|. On any
/// failure the old file (if any) is left intact, the temporary file is
/// removed and |error| (if not null) says what failed.
bool writeFileAtomic(const std::string &path, const uint8_t *data, size_t size,
                     std::string *error,
                     Durability durability = Durability::Synced);

} // namespace dlrt::safetensors

#endif
