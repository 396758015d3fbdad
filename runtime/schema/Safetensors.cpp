//===- Safetensors.cpp - read and write the safetensors format ------------===//
#include "runtime/schema/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace dlrt::safetensors {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// numel * elementSize of |shape|, or false on a negative dimension or
/// overflow.
bool byteSize(const std::vector<int64_t> &shape, size_t elementSize,
              uint64_t *out) {
  uint64_t total = elementSize;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 &&
        total > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      return false;
    total *= static_cast<uint64_t>(d);
  }
  *out = total;
  return true;
}

} // namespace

size_t dtypeSize(const std::string &dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U64", 8},  {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::vector<uint8_t>
serializeHeader(const std::vector<TensorInfo> &tensors,
                const std::map<std::string, std::string> &metadata) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const TensorInfo &t : tensors) {
    nlohmann::json entry;
    entry["dtype"] = t.dtype;
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + t.bytes};
    header[t.name] = std::move(entry);
    offset += t.bytes;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  while (text.size() % 8 != 0)
    text.push_back(' ');

  std::vector<uint8_t> out;
  out.reserve(8 + text.size());
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

std::vector<uint8_t>
serialize(const std::vector<Tensor> &tensors,
          const std::map<std::string, std::string> &metadata) {
  std::vector<TensorInfo> infos;
  uint64_t dataBytes = 0;
  for (const Tensor &t : tensors) {
    infos.push_back({t.name, t.dtype, t.shape, t.data.size()});
    dataBytes += t.data.size();
  }
  std::vector<uint8_t> out = serializeHeader(infos, metadata);
  out.reserve(out.size() + dataBytes);
  for (const Tensor &t : tensors)
    out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

bool parse(const uint8_t *data, size_t size, std::vector<Tensor> *out,
           std::map<std::string, std::string> *metadata, std::string *error) {
  if (size < 8) {
    setError(error, "file of " + std::to_string(size) +
                        " bytes is too small for a safetensors header");
    return false;
  }
  uint64_t headerLen = 0;
  for (int i = 0; i < 8; ++i)
    headerLen |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (headerLen > size - 8) {
    setError(error, "header length " + std::to_string(headerLen) +
                        " exceeds the file size " + std::to_string(size));
    return false;
  }
  const char *headerBegin = reinterpret_cast<const char *>(data + 8);
  nlohmann::json header =
      nlohmann::json::parse(headerBegin, headerBegin + headerLen, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    setError(error, "header is not a JSON object");
    return false;
  }
  const uint8_t *payload = data + 8 + headerLen;
  uint64_t payloadSize = size - 8 - headerLen;

  std::vector<std::pair<uint64_t, Tensor>> tensors;
  std::map<std::string, std::string> meta;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) {
        setError(error, "__metadata__ is not a JSON object");
        return false;
      }
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          setError(error,
                   "__metadata__ value '" + m.key() + "' is not a string");
          return false;
        }
        meta[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string where = "tensor '" + name + "': ";
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() ||
        !v.contains("shape") || !v["shape"].is_array() ||
        !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2) {
      setError(error, where + "expected {dtype, shape, data_offsets[2]}");
      return false;
    }
    Tensor t;
    t.name = name;
    t.dtype = v["dtype"].get<std::string>();
    size_t elementSize = dtypeSize(t.dtype);
    if (elementSize == 0) {
      setError(error, where + "unknown dtype '" + t.dtype + "'");
      return false;
    }
    for (const nlohmann::json &d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        setError(error,
                 where + "shape has a non-integer or negative dimension");
        return false;
      }
      t.shape.push_back(d.get<int64_t>());
    }
    const nlohmann::json &offs = v["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned()) {
      setError(error, where + "data_offsets are not non-negative integers");
      return false;
    }
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > payloadSize) {
      setError(error, where + "data_offsets [" + std::to_string(begin) + ", " +
                          std::to_string(end) + "] lie outside the " +
                          std::to_string(payloadSize) + " data bytes");
      return false;
    }
    uint64_t expected = 0;
    if (!byteSize(t.shape, elementSize, &expected) || expected != end - begin) {
      setError(error, where + "shape and dtype need " +
                          std::to_string(expected) +
                          " bytes but data_offsets "
                          "give " +
                          std::to_string(end - begin));
      return false;
    }
    t.data.assign(payload + begin, payload + end);
    tensors.emplace_back(begin, std::move(t));
  }
  std::stable_sort(
      tensors.begin(), tensors.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  if (out) {
    out->clear();
    for (auto &p : tensors)
      out->push_back(std::move(p.second));
  }
  if (metadata)
    *metadata = std::move(meta);
  return true;
}

bool writeFileAtomic(const std::string &path, const uint8_t *data, size_t size,
                     std::string *error, Durability durability) {
  const bool sync = durability == Durability::Synced;
  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> tmp(tmpl.begin(), tmpl.end());
  tmp.push_back('\0');
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    setError(error, "cannot create a temporary file beside '" + path +
                        "': " + std::strerror(errno));
    return false;
  }
  auto fail = [&](const std::string &what) {
    int saved = errno;
    if (fd >= 0)
      close(fd);
    unlink(tmp.data());
    setError(error, what + " '" + path + "': " + std::strerror(saved));
    return false;
  };
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (sync && fsync(fd) != 0)
    return fail("cannot fsync");
  int rc = close(fd);
  fd = -1;
  if (rc != 0)
    return fail("cannot close");
  if (rename(tmp.data(), path.c_str()) != 0)
    return fail("cannot rename the temporary file to");
  // Make the rename itself durable; failure here leaves a complete file.
  if (!sync)
    return true;
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

} // namespace dlrt::safetensors
