//===- CompileCache.cpp - on-disk cache of compiled kernels ---------------===//
#include "codegen/CompileCache.h"

#include "runtime/schema/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>

using namespace llvm;

namespace dlc::codegen {

namespace {
constexpr char kMagic[] = "DLCCACHE1"; // 9 bytes + NUL: a 10-byte field
constexpr size_t kMagicBytes = sizeof(kMagic);
constexpr size_t kDigestBytes = 32;
constexpr size_t kHeaderBytes = kMagicBytes + 8 + kDigestBytes;

std::array<uint8_t, kDigestBytes> digest(ArrayRef<uint8_t> data) {
  return BLAKE3::hash<kDigestBytes>(data);
}
} // namespace

std::string contentKey(ArrayRef<StringRef> parts) {
  BLAKE3 hasher;
  for (StringRef part : parts) {
    uint64_t size = part.size();
    uint8_t prefix[8];
    for (int i = 0; i < 8; ++i)
      prefix[i] = uint8_t(size >> (8 * i));
    hasher.update(ArrayRef<uint8_t>(prefix, 8));
    hasher.update(part);
  }
  auto result = hasher.final<kDigestBytes>();
  return toHex(ArrayRef<uint8_t>(result.data(), result.size()),
               /*LowerCase=*/true);
}

std::string CompileCache::entryPath(StringRef kind, StringRef key) const {
  SmallString<256> path(dir_);
  sys::path::append(path, kind, key.take_front(2), key);
  return std::string(path);
}

/// The entry of |kind| and |key| mapped, with its payload checked (header,
/// size, digest), or null; counts a miss (and a corrupt entry) when null.
static std::unique_ptr<MemoryBuffer>
mapEntry(const std::string &path, std::atomic<unsigned> &misses,
         std::atomic<unsigned> &corrupt, ArrayRef<uint8_t> &payload) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf) {
    ++misses;
    return nullptr;
  }
  StringRef bytes = (*buf)->getBuffer();
  auto bad = [&]() -> std::unique_ptr<MemoryBuffer> {
    ++corrupt;
    ++misses;
    return nullptr;
  };
  if (bytes.size() < kHeaderBytes ||
      std::memcmp(bytes.data(), kMagic, kMagicBytes) != 0)
    return bad();
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= uint64_t(uint8_t(bytes[kMagicBytes + i])) << (8 * i);
  if (size != bytes.size() - kHeaderBytes)
    return bad();
  payload = ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()) + kHeaderBytes, size);
  auto expected = digest(payload);
  if (std::memcmp(expected.data(), bytes.data() + kMagicBytes + 8,
                  kDigestBytes) != 0)
    return bad();
  // A hit is a use: trim() evicts by modification time.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return std::move(*buf);
}

std::optional<std::vector<uint8_t>> CompileCache::lookup(StringRef kind,
                                                         StringRef key) {
  if (!enabled())
    return std::nullopt;
  ArrayRef<uint8_t> payload;
  auto buf = mapEntry(entryPath(kind, key), misses, corrupt, payload);
  if (!buf)
    return std::nullopt;
  ++hits;
  return std::vector<uint8_t>(payload.begin(), payload.end());
}

bool CompileCache::lookupToFile(StringRef kind, StringRef key,
                                StringRef path) {
  if (!enabled())
    return false;
  ArrayRef<uint8_t> payload;
  auto buf = mapEntry(entryPath(kind, key), misses, corrupt, payload);
  if (!buf)
    return false;
  // As the package writer writes packages: atomic, unsynced.
  if (!dlrt::safetensors::writeFileAtomic(
          path.str(), payload.data(), payload.size(), /*error=*/nullptr,
          dlrt::safetensors::Durability::Unsynced)) {
    ++misses;
    return false;
  }
  ++hits;
  return true;
}

void CompileCache::storeFile(StringRef kind, StringRef key, StringRef path) {
  if (!enabled())
    return;
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return;
  StringRef bytes = (*buf)->getBuffer();
  store(kind, key,
        ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()),
                          bytes.size()));
}

void CompileCache::store(StringRef kind, StringRef key,
                         ArrayRef<uint8_t> data) {
  if (!enabled())
    return;
  std::string path = entryPath(kind, key);
  StringRef folder = sys::path::parent_path(path);
  if (sys::fs::create_directories(folder))
    return;
  SmallString<256> model(folder);
  sys::path::append(model, key + ".tmp-%%%%%%%%");
  int fd = -1;
  SmallString<256> temp;
  if (sys::fs::createUniqueFile(model, fd, temp))
    return;
  bool ok;
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(kMagic, kMagicBytes);
    uint64_t size = data.size();
    for (int i = 0; i < 8; ++i)
      os << char(uint8_t(size >> (8 * i)));
    auto d = digest(data);
    os.write(reinterpret_cast<const char *>(d.data()), d.size());
    os.write(reinterpret_cast<const char *>(data.data()), data.size());
    os.close();
    ok = !os.has_error();
    if (!ok)
      os.clear_error();
  }
  // rename() replaces an existing (possibly corrupt) entry atomically.
  if (!ok || sys::fs::rename(temp, path)) {
    sys::fs::remove(temp);
    return;
  }
  ++stores;
}

uint64_t CompileCache::trim(uint64_t maxBytes) {
  if (!enabled() || maxBytes == 0)
    return 0;
  struct File {
    std::string path;
    uint64_t size;
    sys::TimePoint<> modified;
  };
  std::vector<File> files;
  uint64_t total = 0;
  const auto staleTemp =
      std::chrono::system_clock::now() - std::chrono::hours(1);
  uint64_t removed = 0;
  std::error_code ec;
  for (sys::fs::recursive_directory_iterator it(dir_, ec), end;
       it != end && !ec; it.increment(ec)) {
    if (it->type() != sys::fs::file_type::regular_file)
      continue;
    auto status = it->status();
    if (!status)
      continue;
    File file{it->path(), status->getSize(),
              status->getLastModificationTime()};
    if (StringRef(file.path).contains(".tmp-")) {
      // A writer's temporary file: in use while young, left by a crash
      // when old.
      if (file.modified < staleTemp && !sys::fs::remove(file.path))
        removed += file.size;
      continue;
    }
    total += file.size;
    files.push_back(std::move(file));
  }
  if (total <= maxBytes)
    return removed;
  std::sort(files.begin(), files.end(), [](const File &a, const File &b) {
    return a.modified < b.modified;
  });
  const uint64_t goal = maxBytes / 10 * 9;
  for (const File &file : files) {
    if (total <= goal)
      break;
    if (sys::fs::remove(file.path))
      continue;
    total -= file.size;
    removed += file.size;
  }
  return removed;
}

uint64_t CompileCache::maxBytesFromEnvironment(std::string *error) {
  const char *value = std::getenv("DLC_CACHE_MAX_SIZE");
  if (!value || !*value)
    return kDefaultMaxBytes;
  StringRef text(value);
  unsigned shift = 0;
  if (text.ends_with("K") || text.ends_with("M") || text.ends_with("G")) {
    shift = text.back() == 'K' ? 10 : text.back() == 'M' ? 20 : 30;
    text = text.drop_back();
  }
  uint64_t number = 0;
  if (text.getAsInteger(10, number) ||
      (shift && (number >> (64 - shift)) != 0)) {
    if (error)
      *error = (Twine("DLC_CACHE_MAX_SIZE='") + value +
                "' is not a size (bytes, or a number with K, M or G); "
                "using the default 5G")
                   .str();
    return kDefaultMaxBytes;
  }
  return number << shift;
}

std::string CompileCache::defaultDir() {
  if (const char *off = std::getenv("DLC_NO_CACHE");
      off && *off && StringRef(off) != "0")
    return "";
  if (const char *dir = std::getenv("DLC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (Twine(xdg) + "/dlc").str();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (Twine(home) + "/.cache/dlc").str();
  return "";
}

} // namespace dlc::codegen
