//===- PackageChecks.h - what the package loader's files share --*- C++ -*-===//
// The checker that collects the first DLRT_CORRUPT error of a package being
// loaded, the overflow-safe size helpers and the FlatBuffer accessors shared
// by Package.cpp (tables, buffers, weights, functions, pipeline) and
// PackageCalls.cpp (library calls). Private to runtime/src.
#ifndef DLRT_SRC_PACKAGECHECKS_H
#define DLRT_SRC_PACKAGECHECKS_H

#include "runtime/src/Package.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "dlc_schema/package_generated.h"

namespace dlrt {
namespace fb = dlc::package;

namespace loader {

inline bool mulOk(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/// numel of |dims| times |scale|, or -1 on a negative dimension / overflow.
inline int64_t product(std::initializer_list<int64_t> dims, int64_t scale = 1) {
  int64_t r = scale;
  for (int64_t d : dims)
    if (d < 0 || !mulOk(r, d, &r))
      return -1;
  return r;
}

/// Collects the first validation error as a DLRT_CORRUPT message.
class Checker {
public:
  explicit Checker(const std::string &path) : path(path) {}
  bool fail(const std::string &message) {
    if (status.ok())
      status =
          Status::error(DLRT_CORRUPT, "'" + path + "' is corrupt: " + message);
    return false;
  }
  Status status;
  const std::string &path;
};

/// Whether the elements of |v| (null is fine) are aligned for T. The
/// FlatBuffers 2.0 verifier checks only the 4-byte alignment of a vector's
/// length, so a damaged file can misalign the elements of a [long] vector,
/// and reading those as int64 is undefined behavior. (An empty vector may
/// be misaligned: nothing is read.)
template <typename T> bool elementsAligned(const flatbuffers::Vector<T> *v) {
  return !v || v->size() == 0 ||
         reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

inline std::string str(const flatbuffers::String *s) {
  return s ? std::string(s->c_str(), s->size()) : std::string();
}

/// Checks that every buffer index of |args| is below |numBuffers|.
bool checkArgs(const std::vector<uint32_t> &args, size_t numBuffers,
               const std::string &where, Checker &c);

/// Reads library call |call| of a package of format |version| into |step|:
/// the callee against the shared table, then its parameters (positional in
/// version 1, typed in version 2), then the parameters against the buffers.
bool convertLibraryCall(const fb::LibraryCall *call, uint32_t version,
                        const Package &pkg, StepInfo *step,
                        const std::string &where, Checker &c);

} // namespace loader
} // namespace dlrt

#endif // DLRT_SRC_PACKAGECHECKS_H
