//===- TokenStream.cpp - language-model training data from token files ----===//
#include "runtime/data/TokenStream.h"

#include "runtime/data/Npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlrt::data {

namespace {
constexpr int32_t kLlmcMagic = 20240520;
constexpr size_t kLlmcHeaderBytes = 256 * 4;

size_t idBytes(TokenType t) {
  switch (t) {
  case TokenType::U16:
    return 2;
  case TokenType::U32:
  case TokenType::I32:
    return 4;
  case TokenType::I64:
    return 8;
  }
  return 2;
}

int32_t readI32(const uint8_t *p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
} // namespace

const char *tokenTypeName(TokenType type) {
  switch (type) {
  case TokenType::U16:
    return "uint16";
  case TokenType::U32:
    return "uint32";
  case TokenType::I32:
    return "int32";
  case TokenType::I64:
    return "int64";
  }
  return "?";
}

TokenFile::~TokenFile() {
  if (map)
    munmap(map, mapBytes);
  if (fd >= 0)
    close(fd);
}

std::string TokenFile::format() const {
  return kind + " " + tokenTypeName(idType);
}

bool TokenFile::open(const std::string &path, TokenType rawType,
                     std::string &error) {
  name = path;
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    return false;
  }
  mapBytes = static_cast<size_t>(st.st_size);
  if (mapBytes == 0) {
    error = path + ": empty file (no tokens)";
    return false;
  }
  map = mmap(nullptr, mapBytes, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    map = nullptr;
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  // Windows are read at scattered offsets: no read-ahead beyond them.
  madvise(map, mapBytes, MADV_RANDOM);
  const auto *bytes = static_cast<const uint8_t *>(map);
  size_t dataBytes = 0;
  if (mapBytes >= 6 && std::memcmp(bytes, "\x93NUMPY", 6) == 0) {
    kind = ".npy";
    NpyHeader h;
    if (!parseNpyHeader(bytes, mapBytes, path, h, error))
      return false;
    static const struct {
      const char *descr;
      TokenType type;
    } kTypes[] = {{"<u2", TokenType::U16},
                  {"<u4", TokenType::U32},
                  {"<i4", TokenType::I32},
                  {"<i8", TokenType::I64}};
    bool known = false;
    for (const auto &t : kTypes)
      if (h.descr == t.descr) {
        idType = t.type;
        known = true;
      }
    if (!known) {
      error = path + ": token ids of dtype '" + h.descr +
              "' (supported: <u2 <u4 <i4 <i8, i.e. uint16, uint32, int32, "
              "int64)";
      return false;
    }
    if (h.shape.size() != 1 || h.fortranOrder) {
      error = path + ": token ids must be a 1-D array, not of shape " +
              shapeString(h.shape);
      return false;
    }
    dataOffset = h.dataOffset;
    count = h.shape[0];
    dataBytes = mapBytes - dataOffset;
    if (static_cast<uint64_t>(count) * idBytes(idType) > dataBytes) {
      error = path + ": truncated: the header says " + std::to_string(count) +
              " tokens, the file holds " +
              std::to_string(dataBytes / idBytes(idType));
      return false;
    }
  } else if (mapBytes >= kLlmcHeaderBytes && readI32(bytes) == kLlmcMagic) {
    kind = "llm.c";
    int32_t version = readI32(bytes + 4);
    if (version != 1) {
      error = path + ": llm.c token file version " + std::to_string(version) +
              " (supported: 1, uint16 ids)";
      return false;
    }
    idType = TokenType::U16;
    dataOffset = kLlmcHeaderBytes;
    count = readI32(bytes + 8);
    dataBytes = mapBytes - dataOffset;
    if (count < 0 || static_cast<uint64_t>(count) * 2 != dataBytes) {
      error = path + ": the llm.c header says " + std::to_string(count) +
              " tokens, the file holds " + std::to_string(dataBytes / 2) +
              (dataBytes % 2 ? " and a half" : "");
      return false;
    }
  } else {
    kind = "raw";
    idType = rawType;
    dataOffset = 0;
    dataBytes = mapBytes;
    if (dataBytes % idBytes(idType) != 0) {
      error = path + ": odd length for " + tokenTypeName(idType) + " ids: " +
              std::to_string(dataBytes) + " bytes is not a multiple of " +
              std::to_string(idBytes(idType)) +
              (idType == TokenType::U16
                   ? " (a uint32 file? pass --token-dtype uint32)"
                   : "");
      return false;
    }
    count = static_cast<int64_t>(dataBytes / idBytes(idType));
  }
  if (count == 0) {
    error = path + ": no tokens";
    return false;
  }
  return true;
}

int64_t TokenFile::id(const uint8_t *p) const {
  switch (idType) {
  case TokenType::U16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case TokenType::U32: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case TokenType::I32:
    return readI32(p);
  case TokenType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  }
  return 0;
}

void TokenFile::release(size_t from, size_t to) const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t lo = from / page * page, hi = std::min(mapBytes, (to + page - 1) / page * page);
  if (hi > lo)
    madvise(static_cast<uint8_t *>(map) + lo, hi - lo, MADV_DONTNEED);
}

void TokenFile::copy(int64_t start, int64_t n, int64_t *dst) const {
  const size_t w = idBytes(idType);
  const auto *p = static_cast<const uint8_t *>(map) + dataOffset + start * w;
  for (int64_t i = 0; i < n; ++i)
    dst[i] = id(p + i * w);
  size_t from = dataOffset + static_cast<size_t>(start) * w;
  release(from, from + static_cast<size_t>(n) * w);
}

int64_t TokenFile::maxId(std::string &error) const {
  const size_t w = idBytes(idType);
  const int64_t chunk = (int64_t(16) << 20) / static_cast<int64_t>(w);
  const auto *base = static_cast<const uint8_t *>(map) + dataOffset;
  int64_t best = -1;
  for (int64_t s = 0; s < count; s += chunk) {
    int64_t e = std::min(count, s + chunk);
    for (int64_t i = s; i < e; ++i) {
      int64_t v = id(base + i * w);
      if (v < 0) {
        error = name + ": token " + std::to_string(i) + " is " +
                std::to_string(v) + ", negative";
        return -1;
      }
      best = std::max(best, v);
    }
    release(dataOffset + s * w, dataOffset + e * w);
  }
  return best;
}

int64_t TokenWindows::count() const {
  if (!file || seqLen <= 0 || file->size() < seqLen + 1)
    return 0;
  return (file->size() - 1) / seqLen;
}

int64_t TokenWindows::offset(int64_t epoch, int64_t k) const {
  if (!random)
    return k * seqLen;
  // SplitMix64: the golden-ratio increment, then its finalizer.
  uint64_t x = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(epoch) *
                                                   0x100000001B3ULL +
                                               static_cast<uint64_t>(k) + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  const uint64_t starts = static_cast<uint64_t>(file->size() - seqLen);
  return static_cast<int64_t>(x % starts);
}

} // namespace dlrt::data
