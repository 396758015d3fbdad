//===- ByteSize.h - sizes in bytes as flags write them ----------*- C++ -*-===//
//
// The one reading of a size flag (`--memory-budget 512MiB`,
// `--bucket-size 4KiB`) and the one way messages print a size.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_SUPPORT_BYTESIZE_H
#define DLC_COMPILER_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace dlc {

/// Parses a size in bytes: a non-negative number with an optional binary
/// suffix, "B", "KiB", "MiB" or "GiB" (so "1048576", "512KiB", "1.5MiB").
/// Returns nullopt for anything else (including "MB": decimal suffixes are
/// ambiguous and not accepted) and for sizes of 2^63 bytes or more.
inline std::optional<int64_t> parseByteSize(llvm::StringRef text) {
  text = text.trim();
  size_t split = 0;
  while (split < text.size() &&
         (llvm::isDigit(text[split]) || text[split] == '.'))
    ++split;
  llvm::StringRef number = text.take_front(split),
                  suffix = text.drop_front(split).trim();
  double scale;
  if (suffix.empty() || suffix == "B")
    scale = 1;
  else if (suffix == "KiB")
    scale = 1024.0;
  else if (suffix == "MiB")
    scale = 1024.0 * 1024;
  else if (suffix == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else
    return std::nullopt;
  double value;
  if (number.empty() || number.getAsDouble(value) || !std::isfinite(value) ||
      value < 0)
    return std::nullopt;
  double bytes = std::floor(value * scale);
  if (bytes >= 9.2e18)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}

/// "3145728 bytes (3.00 MiB)": exact bytes and a binary-prefixed figure.
inline std::string formatBytes(int64_t bytes) {
  std::string s = std::to_string(bytes) + " bytes";
  const char *unit = "KiB";
  double v = bytes / 1024.0;
  if (v >= 1024) {
    v /= 1024;
    unit = "MiB";
  }
  if (v >= 1024) {
    v /= 1024;
    unit = "GiB";
  }
  if (bytes >= 1024) {
    std::string buf;
    llvm::raw_string_ostream os(buf);
    os << llvm::format(" (%.2f ", v) << unit << ")";
    s += buf;
  }
  return s;
}

} // namespace dlc

#endif // DLC_COMPILER_SUPPORT_BYTESIZE_H
