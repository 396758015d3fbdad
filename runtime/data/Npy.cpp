//===- Npy.cpp - NumPy .npy and .npz files --------------------------------===//
// The zip reader follows the PKWARE APPNOTE layout: the end of central
// directory record (with the zip64 locator when counts/offsets overflow),
// central directory entries (sizes, CRC, local header offsets; zip64 extra
// field 0x0001), local headers only to find where an entry's data begins.
#include "runtime/data/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <limits>
#include <zlib.h>

namespace dlrt::data {

bool readFileBytes(const std::string &path, std::vector<uint8_t> &out,
                   std::string &error) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  out.clear();
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.insert(out.end(), buf, buf + n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) {
    error = path + ": read error";
    return false;
  }
  return true;
}

static bool writeFileBytes(const std::string &path, const uint8_t *data,
                           size_t size, std::string &error) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(data, 1, size, f) == size;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok)
    error = path + ": write failed";
  return ok;
}

const NamedArray *findArray(const std::vector<NamedArray> &arrays,
                            const std::string &name, const std::string &what,
                            std::string &error) {
  for (const NamedArray &a : arrays)
    if (a.name == name)
      return &a;
  std::string have;
  for (const NamedArray &a : arrays)
    have += (have.empty() ? "" : ", ") + a.name;
  error = what + ": no array named '" + name + "' (the file has: " +
          (have.empty() ? std::string("no arrays") : have) + ")";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// .npy header: a Python dict literal.
//===----------------------------------------------------------------------===//

namespace {
/// Parses the restricted Python literal NumPy writes: a dict of string keys
/// to strings, True/False, or tuples of integers.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &s) : s(s) {}

  std::string descr;
  bool haveDescr = false, fortran = false, haveFortran = false,
       haveShape = false;
  std::vector<int64_t> shape;
  std::string error;

  bool parse() {
    if (!expect('{'))
      return false;
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos;
        break;
      }
      std::string key;
      if (!parseString(key) || !expect(':'))
        return false;
      skipSpace();
      if (key == "descr") {
        if (!parseString(descr))
          return false;
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(fortran))
          return false;
        haveFortran = true;
      } else if (key == "shape") {
        if (!parseTuple(shape))
          return false;
        haveShape = true;
      } else {
        return fail("unknown header key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (!expect('}'))
        return false;
      break;
    }
    if (!haveDescr || !haveFortran || !haveShape)
      return fail("header lacks 'descr', 'fortran_order' or 'shape'");
    return true;
  }

private:
  const std::string &s;
  size_t pos = 0;

  char peek() const { return pos < s.size() ? s[pos] : '\0'; }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool fail(const std::string &m) {
    if (error.empty())
      error = m;
    return false;
  }
  bool expect(char c) {
    skipSpace();
    if (peek() != c)
      return fail(std::string("malformed header: expected '") + c + "'");
    ++pos;
    return true;
  }
  bool parseString(std::string &out) {
    skipSpace();
    char q = peek();
    if (q != '\'' && q != '"')
      return fail("malformed header: expected a string");
    ++pos;
    out.clear();
    while (pos < s.size() && s[pos] != q)
      out += s[pos++];
    if (pos >= s.size())
      return fail("malformed header: unterminated string");
    ++pos;
    return true;
  }
  bool parseBool(bool &out) {
    if (s.compare(pos, 4, "True") == 0) {
      pos += 4;
      out = true;
      return true;
    }
    if (s.compare(pos, 5, "False") == 0) {
      pos += 5;
      out = false;
      return true;
    }
    return fail("malformed header: expected True or False");
  }
  bool parseTuple(std::vector<int64_t> &out) {
    if (!expect('('))
      return false;
    out.clear();
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos;
        return true;
      }
      if (peek() < '0' || peek() > '9')
        return fail("malformed header: bad shape");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
          return fail("shape dimension too large");
        v = v * 10 + (s[pos++] - '0');
      }
      // Python 2 era files may write long integers as "3L".
      if (peek() == 'L')
        ++pos;
      out.push_back(v);
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() != ')')
        return fail("malformed header: bad shape");
    }
  }
};

bool dtypeFromDescr(const std::string &d, DType &out) {
  if (d == "<f4")
    out = DType::F32;
  else if (d == "<f8")
    out = DType::F64;
  else if (d == "<f2")
    out = DType::F16;
  else if (d == "<i8")
    out = DType::I64;
  else if (d == "<i4")
    out = DType::I32;
  else if (d == "|u1" || d == "u1" || d == "<u1")
    out = DType::U8;
  else if (d == "|b1" || d == "b1" || d == "?")
    out = DType::Bool;
  else
    return false;
  return true;
}

const char *descrOf(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::U8:
    return "|u1";
  case DType::Bool:
    return "|b1";
  case DType::F16:
    return "<f2";
  case DType::BF16: // written widened to float32 (serializeNpy)
    return "<f4";
  }
  return "?";
}

uint16_t rd16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t *p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) |
         (uint32_t(p[3]) << 24);
}
uint64_t rd64(const uint8_t *p) {
  return uint64_t(rd32(p)) | (uint64_t(rd32(p + 4)) << 32);
}
void wr16(std::vector<uint8_t> &v, uint16_t x) {
  v.push_back(uint8_t(x));
  v.push_back(uint8_t(x >> 8));
}
void wr32(std::vector<uint8_t> &v, uint32_t x) {
  for (int i = 0; i < 4; ++i)
    v.push_back(uint8_t(x >> (8 * i)));
}
} // namespace

bool parseNpyHeader(const uint8_t *data, size_t size, const std::string &what,
                    NpyHeader &out, std::string &error) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) {
    error = what + ": not a .npy file (bad magic)";
    return false;
  }
  unsigned major = data[6], minor = data[7];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = rd16(data + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) {
      error = what + ": truncated header";
      return false;
    }
    headerLen = rd32(data + 8);
    headerStart = 12;
  } else {
    error = what + ": unsupported .npy version " + std::to_string(major) +
            "." + std::to_string(minor);
    return false;
  }
  if (headerLen > size - headerStart) {
    error = what + ": truncated header";
    return false;
  }
  std::string header(reinterpret_cast<const char *>(data + headerStart),
                     headerLen);
  HeaderParser hp(header);
  if (!hp.parse()) {
    error = what + ": " + hp.error;
    return false;
  }
  out.descr = hp.descr;
  out.shape = hp.shape;
  out.fortranOrder = hp.fortran;
  out.dataOffset = headerStart + headerLen;
  return true;
}

bool parseNpy(const uint8_t *data, size_t size, const std::string &what,
              Array &out, std::string &error) {
  NpyHeader hp;
  if (!parseNpyHeader(data, size, what, hp, error))
    return false;
  DType dtype;
  if (!dtypeFromDescr(hp.descr, dtype)) {
    error = what + ": unsupported dtype '" + hp.descr +
            "' (supported: <f4 <f8 <f2 <i8 <i4 |u1 |b1)";
    return false;
  }
  if (hp.fortranOrder) {
    error = what + ": fortran_order arrays are not supported (save the "
                   "array in C order, e.g. np.ascontiguousarray)";
    return false;
  }
  // Element count with overflow checks: garbage headers must not crash.
  uint64_t numel = 1;
  for (int64_t d : hp.shape) {
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 /
                              static_cast<uint64_t>(d)) {
      error = what + ": shape " + shapeString(hp.shape) + " is too large";
      return false;
    }
    numel *= static_cast<uint64_t>(d);
  }
  uint64_t bytes = numel * dtypeSize(dtype);
  size_t dataStart = hp.dataOffset;
  size_t avail = size - dataStart;
  if (bytes > avail) {
    error = what + ": truncated data: expected " + std::to_string(bytes) +
            " bytes for shape " + shapeString(hp.shape) + ", found " +
            std::to_string(avail);
    return false;
  }
  out.dtype = dtype;
  out.shape = hp.shape;
  out.data.assign(data + dataStart, data + dataStart + bytes);
  if (dtype == DType::Bool)
    for (uint8_t &b : out.data)
      b = b ? 1 : 0;
  return true;
}

std::vector<uint8_t> serializeNpy(const Array &array) {
  if (array.dtype == DType::BF16) {
    // NumPy has no bfloat16: write the exactly widened float32 values.
    Array wide;
    wide.dtype = DType::F32;
    wide.shape = array.shape;
    wide.data.resize(array.data.size() * 2);
    convertElements(array.data.data(), DType::BF16, wide.data.data(),
                    DType::F32, array.data.size() / 2);
    return serializeNpy(wide);
  }
  std::string header = std::string("{'descr': '") + descrOf(array.dtype) +
                       "', 'fortran_order': False, 'shape': " +
                       shapeString(array.shape) + ", }";
  // Pad with spaces so magic + version + length + header + '\n' is a
  // multiple of 64 bytes, as NumPy does.
  size_t total = 10 + header.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  header.append(pad, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  wr16(out, static_cast<uint16_t>(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

bool readNpyFile(const std::string &path, Array &out, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  return parseNpy(bytes.data(), bytes.size(), path, out, error);
}

bool writeNpyFile(const std::string &path, const Array &array,
                  std::string &error) {
  std::vector<uint8_t> bytes = serializeNpy(array);
  return writeFileBytes(path, bytes.data(), bytes.size(), error);
}

//===----------------------------------------------------------------------===//
// .npz: zip archives.
//===----------------------------------------------------------------------===//

namespace {
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;

/// Inflates raw deflate data |in| of |inSize| bytes, which its zip entry
/// says holds |rawSize| bytes, into |out|. The buffer grows with the output,
/// so an entry that claims more than its data inflates to costs no more
/// memory than the real output (at most ~1032 times the input).
bool inflateRaw(const uint8_t *in, size_t inSize, uint64_t rawSize,
                std::vector<uint8_t> &out, std::string &why) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
    why = "zlib inflateInit2 failed";
    return false;
  }
  // zlib counts in uInt; feed large buffers in pieces.
  const size_t kChunk = size_t(1) << 30;
  size_t inDone = 0;
  uint64_t produced = 0;
  uint8_t spare; // catches output beyond rawSize
  out.clear();
  while (true) {
    if (zs.avail_in == 0 && inDone < inSize) {
      size_t n = std::min(kChunk, inSize - inDone);
      zs.next_in = const_cast<Bytef *>(in + inDone);
      zs.avail_in = static_cast<uInt>(n);
      inDone += n;
    }
    bool intoSpare = produced >= rawSize;
    if (intoSpare) {
      zs.next_out = &spare;
      zs.avail_out = 1;
    } else {
      if (produced == out.size())
        out.resize(out.size() +
                   static_cast<size_t>(std::min<uint64_t>(
                       rawSize - produced,
                       std::max<size_t>(size_t(1) << 16, out.size()))));
      zs.next_out = out.data() + produced;
      zs.avail_out = static_cast<uInt>(std::min<size_t>(
          kChunk, out.size() - static_cast<size_t>(produced)));
    }
    uInt room = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    size_t got = room - zs.avail_out;
    if (intoSpare && got > 0) {
      why = "deflate data larger than its recorded size";
    } else {
      produced += got;
      if (rc == Z_STREAM_END)
        break;
      if (rc == Z_OK)
        continue;
      if (rc == Z_BUF_ERROR && zs.avail_in == 0 && inDone >= inSize)
        why = "deflate data is truncated";
      else if (rc == Z_BUF_ERROR && (zs.avail_in == 0 || zs.avail_out == 0))
        continue; // more input or room comes next round
      else
        why = std::string("corrupt deflate data") +
              (zs.msg ? std::string(": ") + zs.msg : std::string());
    }
    inflateEnd(&zs);
    return false;
  }
  inflateEnd(&zs);
  if (produced != rawSize) {
    why = "deflate data smaller than its recorded size";
    return false;
  }
  out.resize(static_cast<size_t>(produced));
  return true;
}
} // namespace

bool readNpz(const std::string &path, std::vector<NamedArray> &out,
             std::string &error) {
  out.clear();
  std::vector<uint8_t> file;
  if (!readFileBytes(path, file, error))
    return false;
  return parseNpz(file.data(), file.size(), path, out, error);
}

bool parseNpz(const uint8_t *d, size_t size, const std::string &what,
              std::vector<NamedArray> &out, std::string &error) {
  out.clear();
  auto corrupt = [&](const std::string &m) {
    error = what + ": not a valid .npz (zip) file: " + m;
    return false;
  };
  if (size < 22)
    return corrupt("too short");
  // The end of central directory record is within the last 64 KiB + 22
  // bytes (the comment is at most 65535 bytes).
  size_t eocd = SIZE_MAX;
  size_t lowest = size > 65557 ? size - 65557 : 0;
  for (size_t i = size - 22 + 1; i-- > lowest;) {
    if (rd32(d + i) == kEndSig) {
      eocd = i;
      break;
    }
  }
  if (eocd == SIZE_MAX)
    return corrupt("no end of central directory record");
  uint64_t count = rd16(d + eocd + 10);
  uint64_t cdSize = rd32(d + eocd + 12);
  uint64_t cdOffset = rd32(d + eocd + 16);
  if ((count == 0xFFFF || cdSize == 0xFFFFFFFFu || cdOffset == 0xFFFFFFFFu) &&
      eocd >= 20 && rd32(d + eocd - 20) == kZip64LocatorSig) {
    uint64_t z64 = rd64(d + eocd - 20 + 8);
    if (z64 > size || size - z64 < 56 || rd32(d + z64) != kZip64EndSig)
      return corrupt("bad zip64 end of central directory record");
    count = rd64(d + z64 + 32);
    cdSize = rd64(d + z64 + 40);
    cdOffset = rd64(d + z64 + 48);
  }
  if (cdOffset > size || cdSize > size - cdOffset)
    return corrupt("central directory lies outside the file (truncated?)");

  size_t p = cdOffset;
  for (uint64_t e = 0; e < count; ++e) {
    if (p + 46 > size || rd32(d + p) != kCentralSig)
      return corrupt("bad central directory entry");
    uint16_t flags = rd16(d + p + 8);
    uint16_t method = rd16(d + p + 10);
    uint32_t crc = rd32(d + p + 16);
    uint64_t compSize = rd32(d + p + 20);
    uint64_t rawSize = rd32(d + p + 24);
    size_t nameLen = rd16(d + p + 28), extraLen = rd16(d + p + 30),
           commentLen = rd16(d + p + 32);
    uint64_t localOffset = rd32(d + p + 42);
    if (p + 46 + nameLen + extraLen + commentLen > size)
      return corrupt("bad central directory entry");
    std::string name(reinterpret_cast<const char *>(d + p + 46), nameLen);
    // Zip64 extra field: the 64-bit values present are those whose 32-bit
    // fields are 0xFFFFFFFF, in the order raw size, compressed size, offset.
    const uint8_t *x = d + p + 46 + nameLen, *xEnd = x + extraLen;
    while (x + 4 <= xEnd) {
      uint16_t id = rd16(x), len = rd16(x + 2);
      if (x + 4 + len > xEnd)
        break;
      if (id == 0x0001) {
        const uint8_t *f = x + 4, *fEnd = f + len;
        if (rawSize == 0xFFFFFFFFu && f + 8 <= fEnd) {
          rawSize = rd64(f);
          f += 8;
        }
        if (compSize == 0xFFFFFFFFu && f + 8 <= fEnd) {
          compSize = rd64(f);
          f += 8;
        }
        if (localOffset == 0xFFFFFFFFu && f + 8 <= fEnd)
          localOffset = rd64(f);
      }
      x += 4 + len;
    }
    p += 46 + nameLen + extraLen + commentLen;

    std::string entry = what + ": entry '" + name + "'";
    if (flags & 1) {
      error = entry + " is encrypted";
      return false;
    }
    if (localOffset > size || size - localOffset < 30 ||
        rd32(d + localOffset) != kLocalSig)
      return corrupt("bad local header for '" + name + "'");
    size_t dataStart = localOffset + 30 + rd16(d + localOffset + 26) +
                       rd16(d + localOffset + 28);
    if (dataStart > size || compSize > size - dataStart) {
      error = entry + " is truncated";
      return false;
    }
    if (rawSize > (uint64_t(1) << 40)) {
      error = entry + " is implausibly large";
      return false;
    }
    std::vector<uint8_t> raw;
    if (method == 0) {
      if (compSize != rawSize)
        return corrupt("stored entry '" + name + "' has inconsistent sizes");
      raw.assign(d + dataStart, d + dataStart + compSize);
    } else if (method == 8) {
      std::string why;
      if (!inflateRaw(d + dataStart, compSize, rawSize, raw, why)) {
        error = entry + ": " + why;
        return false;
      }
    } else {
      error = entry + " uses unsupported zip compression method " +
              std::to_string(method) + " (supported: stored, deflate)";
      return false;
    }
    // crc32 takes uInt lengths; chain for large entries.
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < raw.size();) {
      size_t n = std::min<size_t>(raw.size() - off, 1u << 30);
      c = crc32(c, raw.data() + off, static_cast<uInt>(n));
      off += n;
    }
    if (static_cast<uint32_t>(c) != crc) {
      error = entry + ": CRC mismatch (corrupt file)";
      return false;
    }
    std::string arrayName = name;
    if (arrayName.size() > 4 &&
        arrayName.compare(arrayName.size() - 4, 4, ".npy") == 0)
      arrayName.resize(arrayName.size() - 4);
    NamedArray na;
    na.name = arrayName;
    if (!parseNpy(raw.data(), raw.size(), what + ": " + name, na.array, error))
      return false;
    out.push_back(std::move(na));
  }
  return true;
}

bool writeNpz(const std::string &path, const std::vector<NamedArray> &arrays,
              std::string &error) {
  std::vector<uint8_t> zip, central;
  // DOS date 1980-01-01 00:00: a fixed time keeps output reproducible.
  const uint16_t kTime = 0, kDate = (1 << 5) | 1;
  for (const NamedArray &na : arrays) {
    std::vector<uint8_t> npy = serializeNpy(na.array);
    std::string name = na.name + ".npy";
    if (npy.size() >= 0xFFFFFFFFu || zip.size() >= 0xFFFFFFFFu) {
      error = path + ": array '" + na.name +
              "' too large for a non-zip64 archive";
      return false;
    }
    uint32_t crc = static_cast<uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), npy.data(), static_cast<uInt>(npy.size())));
    uint32_t offset = static_cast<uint32_t>(zip.size());
    uint32_t sz = static_cast<uint32_t>(npy.size());
    wr32(zip, kLocalSig);
    wr16(zip, 20); // version needed
    wr16(zip, 0);  // flags
    wr16(zip, 0);  // stored
    wr16(zip, kTime);
    wr16(zip, kDate);
    wr32(zip, crc);
    wr32(zip, sz);
    wr32(zip, sz);
    wr16(zip, static_cast<uint16_t>(name.size()));
    wr16(zip, 0);
    zip.insert(zip.end(), name.begin(), name.end());
    zip.insert(zip.end(), npy.begin(), npy.end());

    wr32(central, kCentralSig);
    wr16(central, 20); // version made by
    wr16(central, 20); // version needed
    wr16(central, 0);
    wr16(central, 0);
    wr16(central, kTime);
    wr16(central, kDate);
    wr32(central, crc);
    wr32(central, sz);
    wr32(central, sz);
    wr16(central, static_cast<uint16_t>(name.size()));
    wr16(central, 0); // extra
    wr16(central, 0); // comment
    wr16(central, 0); // disk
    wr16(central, 0); // internal attrs
    wr32(central, 0); // external attrs
    wr32(central, offset);
    central.insert(central.end(), name.begin(), name.end());
  }
  uint32_t cdOffset = static_cast<uint32_t>(zip.size());
  zip.insert(zip.end(), central.begin(), central.end());
  wr32(zip, kEndSig);
  wr16(zip, 0);
  wr16(zip, 0);
  wr16(zip, static_cast<uint16_t>(arrays.size()));
  wr16(zip, static_cast<uint16_t>(arrays.size()));
  wr32(zip, static_cast<uint32_t>(central.size()));
  wr32(zip, cdOffset);
  wr16(zip, 0);
  return writeFileBytes(path, zip.data(), zip.size(), error);
}

} // namespace dlrt::data
