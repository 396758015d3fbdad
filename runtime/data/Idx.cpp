//===- Idx.cpp - the IDX format of the MNIST family -----------------------===//
#include "data/Idx.h"

#include <cerrno>
#include <cstdio>
#include <utility>
#include <cstring>
#include <zlib.h>

namespace dlrt::data {

namespace {
/// Reads exactly |n| bytes; false on a short read or a gzip error.
bool readExact(gzFile f, uint8_t *dst, size_t n) {
  while (n > 0) {
    unsigned chunk = n > (1u << 30) ? (1u << 30) : static_cast<unsigned>(n);
    int got = gzread(f, dst, chunk);
    if (got <= 0)
      return false;
    dst += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

uint32_t be32(const uint8_t *p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
         (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool idxType(uint8_t code, DType &out) {
  switch (code) {
  case 0x08:
    out = DType::U8;
    return true;
  case 0x0C:
    out = DType::I32;
    return true;
  case 0x0D:
    out = DType::F32;
    return true;
  case 0x0E:
    out = DType::F64;
    return true;
  default:
    return false;
  }
}

/// Byte-swaps elements of |size| bytes in place (IDX is big-endian).
void swapElements(std::vector<uint8_t> &data, size_t size) {
  if (size == 1)
    return;
  for (size_t i = 0; i + size <= data.size(); i += size)
    for (size_t a = 0, b = size - 1; a < b; ++a, --b)
      std::swap(data[i + a], data[i + b]);
}
} // namespace

bool readIdx(const std::string &path, Array &out, std::string &error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " +
            (errno ? std::strerror(errno) : "out of memory");
    return false;
  }
  auto fail = [&](const std::string &m) {
    gzclose(f);
    error = path + ": " + m;
    return false;
  };
  uint8_t magic[4];
  if (!readExact(f, magic, 4))
    return fail("not an IDX file (shorter than its 4-byte magic, or a "
                "corrupt gzip stream)");
  DType dtype;
  if (magic[0] != 0 || magic[1] != 0 || !idxType(magic[2], dtype) ||
      magic[3] < 1 || magic[3] > 4) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "not an IDX file (bad magic 0x%02x%02x%02x%02x)",
                  magic[0], magic[1], magic[2], magic[3]);
    return fail(buf);
  }
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (int i = 0; i < magic[3]; ++i) {
    uint8_t b[4];
    if (!readExact(f, b, 4))
      return fail("truncated header");
    uint32_t d = be32(b);
    shape.push_back(d);
    numel *= d;
    if (numel > (uint64_t(1) << 36))
      return fail("implausible sizes " + shapeString(shape));
  }
  size_t bytes = numel * dtypeSize(dtype);
  std::vector<uint8_t> data(bytes);
  if (!readExact(f, data.data(), bytes))
    return fail("truncated data: expected " + std::to_string(bytes) +
                " bytes for sizes " + shapeString(shape));
  uint8_t extra;
  if (gzread(f, &extra, 1) > 0)
    return fail("trailing bytes after the data of sizes " +
                shapeString(shape));
  int errnum = 0;
  gzerror(f, &errnum);
  if (errnum != Z_OK && errnum != Z_BUF_ERROR)
    return fail("corrupt gzip stream");
  gzclose(f);
  swapElements(data, dtypeSize(dtype));
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.data = std::move(data);
  return true;
}

bool writeIdx(const std::string &path, const Array &array, bool gzip,
              std::string &error) {
  uint8_t code;
  switch (array.dtype) {
  case DType::U8:
    code = 0x08;
    break;
  case DType::I32:
    code = 0x0C;
    break;
  case DType::F32:
    code = 0x0D;
    break;
  case DType::F64:
    code = 0x0E;
    break;
  default:
    error = path + ": IDX cannot hold " + dtypeName(array.dtype);
    return false;
  }
  if (array.shape.empty() || array.shape.size() > 4) {
    error = path + ": IDX needs rank 1 to 4";
    return false;
  }
  std::vector<uint8_t> bytes = {0, 0, code,
                                static_cast<uint8_t>(array.shape.size())};
  for (int64_t d : array.shape)
    for (int s = 24; s >= 0; s -= 8)
      bytes.push_back(static_cast<uint8_t>(uint64_t(d) >> s));
  std::vector<uint8_t> data = array.data;
  swapElements(data, dtypeSize(array.dtype));
  bytes.insert(bytes.end(), data.begin(), data.end());
  // "wbT" writes a plain (transparent) file through the same API.
  gzFile f = gzopen(path.c_str(), gzip ? "wb" : "wbT");
  if (!f) {
    error = path + ": cannot create";
    return false;
  }
  bool ok = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size());
  ok = (gzclose(f) == Z_OK) && ok;
  if (!ok)
    error = path + ": write failed";
  return ok;
}

} // namespace dlrt::data
