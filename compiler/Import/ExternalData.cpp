//===- ExternalData.cpp - ONNX tensors stored in external data files ------===//
//
// A TensorProto with data_location EXTERNAL keeps its bytes (little-endian,
// the raw_data format) in a file beside the model, named by its
// `external_data` entries: `location` (relative to the model's folder),
// `offset` (default 0) and `length` (default: the rest of the file);
// `checksum` and other keys are ignored. Models over 2 GB and those of
// PyTorch's dynamo exporter store their weights so.
//
// Each file is memory-mapped once per import; a large f32 initializer becomes
// a `dense_resource` attribute whose blob views the mapping and keeps it
// alive (a shared_ptr in the blob's deleter), so the weights are not copied
// into the MLIR context: the package writer reads them from the mapping.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <climits>
#include <set>

using namespace mlir;
using namespace dlc::onnx_import;

namespace {

/// The `external_data` entries the importer reads, as written.
struct ExternalEntries {
  std::string location;
  std::optional<std::string> offset, length;
};

ExternalEntries readEntries(const onnx::TensorProto &t) {
  ExternalEntries e;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      e.location = kv.value();
    else if (kv.key() == "offset")
      e.offset = kv.value();
    else if (kv.key() == "length")
      e.length = kv.value();
  }
  return e;
}

/// Why |location| may not be read from the model's folder, or "".
std::string locationProblem(llvm::StringRef location) {
  namespace path = llvm::sys::path;
  if (path::is_absolute(location, path::Style::posix) ||
      path::is_absolute(location, path::Style::windows) ||
      path::has_root_name(location, path::Style::windows))
    return "is an absolute path (it must be relative to the model's folder";
  for (llvm::StringRef part : llvm::make_range(
           path::begin(location, path::Style::posix), path::end(location)))
    if (part == "..")
      return "goes up with '..' (it must stay inside the model's folder";
  return "";
}

} // namespace

FailureOr<StringRef>
Importer::externalData(const onnx::TensorProto &t, int64_t bytes, Location loc,
                       StringRef what,
                       std::shared_ptr<llvm::MemoryBuffer> *file) {
  namespace fs = llvm::sys::fs;
  auto error = [&]() {
    return emitError(loc) << what << " '" << t.name() << "' ";
  };
  ExternalEntries e = readEntries(t);
  if (externalDataDir.empty())
    return error() << "stores its data in an external file ('" << e.location
                   << "'), which is read only when the model is imported "
                      "from its file (the file's folder holds the data)";
  if (e.location.empty())
    return error() << "stores its data externally but names no file (no "
                      "external_data 'location' entry)";
  if (std::string problem = locationProblem(e.location); !problem.empty())
    return error() << "has external data location '" << e.location
                   << "', which " << problem << " '" << externalDataDir << "')";
  llvm::SmallString<256> full(externalDataDir);
  llvm::sys::path::append(full, e.location);

  // offset and length are decimal integers stored as strings.
  auto integer = [&](const std::optional<std::string> &v, StringRef key,
                     uint64_t &out) -> LogicalResult {
    if (!v)
      return success();
    if (StringRef(*v).getAsInteger(10, out) ||
        out > (uint64_t)std::numeric_limits<int64_t>::max())
      return error() << "has external data " << key << " '" << *v << "' for '"
                     << full << "', which is not a non-negative integer";
    return success();
  };
  uint64_t offset = 0, length = 0;
  if (failed(integer(e.offset, "offset", offset)) ||
      failed(integer(e.length, "length", length)))
    return failure();

  // The real path must stay inside the model's real folder (symbolic links
  // included).
  llvm::SmallString<256> real, realDir;
  if (std::error_code ec = fs::real_path(full, real))
    return error() << "has its data in '" << full
                   << "', which cannot be opened: " << ec.message();
  if (std::error_code ec = fs::real_path(externalDataDir, realDir))
    return error() << "has its data in '" << full
                   << "', but the model's folder '" << externalDataDir
                   << "' cannot be resolved: " << ec.message();
  llvm::SmallString<256> prefix(realDir);
  if (!prefix.ends_with("/"))
    prefix += "/";
  if (!StringRef(real).starts_with(prefix))
    return error() << "has its data in '" << full << "', which resolves to '"
                   << real << "', outside the model's folder '" << realDir
                   << "'";

  std::shared_ptr<llvm::MemoryBuffer> &mapped = externalFiles[real];
  if (!mapped) {
    fs::file_status status;
    if (std::error_code ec = fs::status(real, status))
      return error() << "has its data in '" << full
                     << "', which cannot be opened: " << ec.message();
    if (status.type() != fs::file_type::regular_file)
      return error() << "has its data in '" << full
                     << "', which is not a regular file";
    // Mapped, not read (MemoryBuffer maps files of 16 KiB and more when no
    // null terminator is needed): only the pages a later phase reads are
    // ever loaded.
    auto buffer = llvm::MemoryBuffer::getFile(real, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false,
                                              /*IsVolatile=*/false);
    if (std::error_code ec = buffer.getError())
      return error() << "has its data in '" << full
                     << "', which cannot be opened: " << ec.message();
    mapped = std::move(*buffer);
  }
  uint64_t size = mapped->getBufferSize();
  if (!e.length) {
    if (offset > size)
      return error() << "has its data in '" << full << "', which has " << size
                     << " bytes, fewer than its offset " << offset;
    length = size - offset;
  } else if (offset > size || length > size - offset) {
    return error() << "has its data in '" << full << "', which has " << size
                   << " bytes, fewer than offset " << offset << " + length "
                   << length;
  }
  if ((int64_t)length != bytes) {
    SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
    return error() << "of shape " << shapeStr(dims) << " and element type "
                   << onnxTypeName(t.data_type()) << " has " << bytes
                   << " bytes, but its external data in '" << full << "' has "
                   << (e.length ? "length "
                                : "length (to the end of the file) ")
                   << length;
  }
  if (file)
    *file = mapped;
  return StringRef(mapped->getBufferStart() + offset, length);
}

FailureOr<DenseResourceElementsAttr>
Importer::externalResource(const onnx::TensorProto &t, Location loc) {
  if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL ||
      t.data_type() != onnx::TensorProto_DataType_FLOAT ||
      llvm::endianness::native != llvm::endianness::little)
    return DenseResourceElementsAttr();
  FailureOr<SmallVector<int64_t>> dims = tensorDims(t, loc, "initializer");
  if (failed(dims))
    return failure();
  int64_t bytes = product(*dims) * 4;
  std::shared_ptr<llvm::MemoryBuffer> file;
  FailureOr<StringRef> data = externalData(t, bytes, loc, "initializer", &file);
  if (failed(data))
    return failure();
  // A small tensor is read at import (a Clip bound, Resize scales) and a
  // misaligned one cannot be viewed as floats: both are copied.
  if (bytes <= kMinExternalResourceBytes ||
      reinterpret_cast<uintptr_t>(data->data()) % alignof(float))
    return DenseResourceElementsAttr();
  // The blob's key is printed bare (`dense_resource<key>`): the name's
  // letters, digits, '_' and '.'; the blob manager makes it unique.
  std::string key = "onnx_";
  for (char c : t.name())
    key += llvm::isAlnum(c) || c == '.' ? c : '_';
  AsmResourceBlob blob(
      ArrayRef<char>(data->data(), data->size()), alignof(float),
      [file = std::move(file)](void *, size_t, size_t) {
        // Releasing |file| with the blob unmaps the file once no other
        // blob views it.
      },
      /*dataIsMutable=*/false);
  return DenseResourceElementsAttr::get(
      RankedTensorType::get(*dims, builder.getF32Type()), key, std::move(blob));
}

//===----------------------------------------------------------------------===//
// Cache key
//===----------------------------------------------------------------------===//

/// Adds the external data locations of |t| and of the tensors in |g| (and
/// its nodes' attributes and subgraphs) to |out|.
static void collectLocations(const onnx::TensorProto &t,
                             std::set<std::string> &out) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    out.insert(readEntries(t).location);
}

static void collectLocations(const onnx::GraphProto &g,
                             std::set<std::string> &out) {
  for (const auto &t : g.initializer())
    collectLocations(t, out);
  for (const auto &n : g.node()) {
    for (const auto &a : n.attribute()) {
      if (a.has_t())
        collectLocations(a.t(), out);
      for (const auto &t : a.tensors())
        collectLocations(t, out);
      if (a.has_g())
        collectLocations(a.g(), out);
      for (const auto &sub : a.graphs())
        collectLocations(sub, out);
    }
  }
}

std::string dlc::externalDataKey(StringRef path, StringRef bytes) {
  // Every external tensor names its file with the key "location": a model
  // without that string has none, and is not parsed twice.
  if (bytes.find("location") == StringRef::npos ||
      bytes.size() > (size_t)INT_MAX)
    return "";
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size()))
    return "";
  std::set<std::string> locations;
  collectLocations(model.graph(), locations);
  std::string key;
  llvm::SmallString<256> dir = llvm::sys::path::parent_path(path);
  if (dir.empty())
    dir = ".";
  for (const std::string &location : locations) {
    llvm::SmallString<256> full(dir);
    llvm::sys::path::append(full, location);
    key += location + "\n";
    // Read in chunks, not mapped: the file's pages stay out of dlc's
    // resident memory.
    llvm::BLAKE3 hasher;
    int fd = -1;
    if (llvm::sys::fs::openFileForRead(full, fd)) {
      key += "unreadable\n";
      continue;
    }
    std::vector<uint8_t> chunk(1 << 20);
    bool readFailed = false;
    while (true) {
      llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(
          llvm::sys::fs::convertFDToNativeFile(fd),
          llvm::MutableArrayRef<char>(reinterpret_cast<char *>(chunk.data()),
                                      chunk.size()));
      if (!n) {
        llvm::consumeError(n.takeError());
        readFailed = true;
        break;
      }
      if (*n == 0)
        break;
      hasher.update(llvm::ArrayRef<uint8_t>(chunk.data(), *n));
    }
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    if (readFailed) {
      key += "unreadable\n";
      continue;
    }
    key += llvm::toHex(hasher.final(), /*LowerCase=*/true) + "\n";
  }
  return key;
}
