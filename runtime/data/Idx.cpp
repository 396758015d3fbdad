//===- Idx.cpp - the IDX format of the MNIST family -----------------------===//
#include "runtime/data/Idx.h"
#include "runtime/data/Npy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <zlib.h>

namespace dlrt::data {

namespace {
/// Reads the bytes of an IDX file held in memory: plain, or gzip-compressed
/// (the members one after another; bytes after the last member that do not
/// start another are ignored, as gzread does).
class ByteSource {
public:
  ByteSource(const uint8_t *data, size_t size) : data(data), size(size) {
    gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (gzip) {
      std::memset(&zs, 0, sizeof(zs));
      // 16 + MAX_WBITS: a gzip wrapper.
      if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        problem = "zlib inflateInit2 failed";
        return;
      }
      zinit = true;
      zs.next_in = const_cast<Bytef *>(data);
      zs.avail_in = size > kChunk ? kChunk : static_cast<uInt>(size);
      consumed = zs.avail_in;
    }
  }
  ~ByteSource() {
    if (zinit)
      inflateEnd(&zs);
  }
  ByteSource(const ByteSource &) = delete;
  ByteSource &operator=(const ByteSource &) = delete;

  /// Reads up to |n| bytes into |dst|; fewer only at the end of the data or
  /// on a corrupt stream (then problem() says why).
  size_t read(uint8_t *dst, size_t n) {
    if (!gzip) {
      size_t got = std::min(n, size - pos);
      std::memcpy(dst, data + pos, got);
      pos += got;
      return got;
    }
    size_t got = 0;
    while (got < n && !done && problem.empty()) {
      if (zs.avail_in == 0 && consumed < size) {
        size_t k = std::min(kChunk, size - consumed);
        zs.next_in = const_cast<Bytef *>(data + consumed);
        zs.avail_in = static_cast<uInt>(k);
        consumed += k;
      }
      size_t want = std::min(kChunk, n - got);
      zs.next_out = dst + got;
      zs.avail_out = static_cast<uInt>(want);
      int rc = inflate(&zs, Z_NO_FLUSH);
      got += want - zs.avail_out;
      if (rc == Z_STREAM_END) {
        // Another member follows only if the next bytes are a gzip magic.
        size_t at = consumed - zs.avail_in;
        if (size - at >= 2 && data[at] == 0x1f && data[at + 1] == 0x8b) {
          inflateReset(&zs);
        } else {
          done = true;
        }
      } else if (rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed >= size) {
        problem = "truncated gzip stream";
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        problem = std::string("corrupt gzip stream") +
                  (zs.msg ? std::string(" (") + zs.msg + ")" : std::string());
      }
    }
    return got;
  }
  const std::string &problemText() const { return problem; }
  /// The bytes left to read when they are known (plain data), else SIZE_MAX.
  size_t knownRemaining() const { return gzip ? SIZE_MAX : size - pos; }

private:
  static constexpr size_t kChunk = size_t(1) << 30; // zlib counts in uInt
  const uint8_t *data;
  size_t size;
  size_t pos = 0;
  bool gzip = false, zinit = false, done = false;
  z_stream zs;
  size_t consumed = 0; // input bytes handed to zlib
  std::string problem;
};

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
  std::vector<uint8_t> bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  return parseIdx(bytes.data(), bytes.size(), path, out, error);
}

bool parseIdx(const uint8_t *bytes, size_t size, const std::string &what,
              Array &out, std::string &error) {
  ByteSource src(bytes, size);
  auto fail = [&](const std::string &m) {
    error = what + ": " + m;
    if (!src.problemText().empty())
      error += " (" + src.problemText() + ")";
    return false;
  };
  uint8_t magic[4];
  if (src.read(magic, 4) != 4)
    return fail("not an IDX file (shorter than its 4-byte magic)");
  DType dtype;
  if (magic[0] != 0 || magic[1] != 0 || !idxType(magic[2], dtype) ||
      magic[3] < 1 || magic[3] > 4) {
    char buf[64];
    std::snprintf(buf, sizeof(buf),
                  "not an IDX file (bad magic 0x%02x%02x%02x%02x)", magic[0],
                  magic[1], magic[2], magic[3]);
    return fail(buf);
  }
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (int i = 0; i < magic[3]; ++i) {
    uint8_t b[4];
    if (src.read(b, 4) != 4)
      return fail("truncated header");
    uint32_t d = be32(b);
    shape.push_back(d);
    numel *= d;
    if (numel > (uint64_t(1) << 36))
      return fail("implausible sizes " + shapeString(shape));
  }
  size_t bytesWanted = numel * dtypeSize(dtype);
  // Grow the buffer as data arrives, so a header that claims more than the
  // file holds costs no more memory than the file's data.
  if (src.knownRemaining() < bytesWanted)
    return fail("truncated data: expected " + std::to_string(bytesWanted) +
                " bytes for sizes " + shapeString(shape) + ", found " +
                std::to_string(src.knownRemaining()));
  std::vector<uint8_t> data;
  const size_t kStep = size_t(1) << 16;
  while (data.size() < bytesWanted) {
    size_t have = data.size();
    size_t n = std::min(bytesWanted - have, std::max(kStep, have));
    data.resize(have + n);
    size_t got = src.read(data.data() + have, n);
    if (got < n)
      return fail("truncated data: expected " + std::to_string(bytesWanted) +
                  " bytes for sizes " + shapeString(shape) + ", found " +
                  std::to_string(have + got));
  }
  uint8_t extra;
  if (src.read(&extra, 1) > 0)
    return fail("trailing bytes after the data of sizes " +
                shapeString(shape));
  if (!src.problemText().empty())
    return fail("corrupt data");
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
