//===- CompileCache.h - on-disk cache of compiled kernels -------*- C++ -*-===//
#ifndef DLC_CODEGEN_COMPILECACHE_H
#define DLC_CODEGEN_COMPILECACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlc::codegen {

/// A hex BLAKE3 digest (64 characters) of |parts|, each one length-prefixed
/// so that no two different lists of parts hash the same way by
/// concatenation. The content key of a cache entry.
std::string contentKey(llvm::ArrayRef<llvm::StringRef> parts);

/// A persistent cache of compiled artifacts (host objects, host shared
/// objects, cubins) keyed by a content key of everything the artifact
/// depends on: the source, the compiler's identity, its flags and the
/// target. Thread-safe; several dlc processes may share one folder.
///
/// Layout: `<dir>/<kind>/<key[0:2]>/<key>`; an entry is a header (magic
/// "DLCCACHE1", payload size in bytes, BLAKE3 of the payload) followed by the
/// payload. Entries are written to a temporary file in the same folder and
/// renamed into place, so a reader sees a whole entry or none. An entry whose
/// header, size or digest does not match (truncated, corrupt) is a miss
/// (counted in `corrupt`) and is overwritten by the next store. Failing to
/// store (read-only folder, full disk) only costs the next compile; it is
/// never an error.
class CompileCache {
public:
  /// A disabled cache: every lookup misses and nothing is stored.
  CompileCache() = default;
  /// A cache in |dir| (created on first store); "" disables it.
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string &dir() const { return dir_; }

  /// The entry of |kind| ("host-so", "cubin", ...) and |key| (contentKey),
  /// or nullopt when there is none or it is corrupt. Counts a hit or miss.
  std::optional<std::vector<uint8_t>> lookup(llvm::StringRef kind,
                                             llvm::StringRef key);
  /// Stores |data| as the entry of |kind| and |key| atomically.
  void store(llvm::StringRef kind, llvm::StringRef key,
             llvm::ArrayRef<uint8_t> data);

  /// Writes the payload of the entry of |kind| and |key| to |path|
  /// atomically (a temporary file beside it, renamed into place) and
  /// returns true; false (nothing written) when there is no such entry or it
  /// is corrupt, or |path| cannot be written. Counts a hit or miss. For large
  /// entries (whole packages): the payload is mapped, not read into memory.
  bool lookupToFile(llvm::StringRef kind, llvm::StringRef key,
                    llvm::StringRef path);
  /// Stores the bytes of the file at |path| as the entry of |kind| and |key|
  /// (mapped, not read into memory); does nothing when it cannot be read.
  void storeFile(llvm::StringRef kind, llvm::StringRef key,
                 llvm::StringRef path);

  /// Evicts least-recently-used entries (oldest modification time first; a
  /// hit refreshes it) until the folder holds at most 90% of |maxBytes|,
  /// when it holds more than |maxBytes| — as ccache's size limit does. Also
  /// removes temporary files a crashed writer left, once they are an hour
  /// old. |maxBytes| 0: no limit. Best effort: entries that cannot be
  /// listed or removed are skipped; a reader holding an evicted entry mapped
  /// keeps its bytes (POSIX unlink). Returns the bytes removed.
  uint64_t trim(uint64_t maxBytes);

  /// The size limit dlc applies after each compile: $DLC_CACHE_MAX_SIZE
  /// when set (bytes, or a number with the suffix K, M or G for KiB, MiB,
  /// GiB; 0: no limit), else kDefaultMaxBytes (5 GiB, ccache's default).
  /// Sets |*error| (and returns the default) when the variable is malformed.
  static uint64_t maxBytesFromEnvironment(std::string *error);
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(5) << 30;

  /// The folder dlc uses when no --cache-dir is given: $DLC_CACHE_DIR when
  /// set and not empty, else $XDG_CACHE_HOME/dlc, else $HOME/.cache/dlc;
  /// "" (no cache) when $DLC_NO_CACHE is set to anything but "" or "0", or
  /// when no folder can be determined.
  static std::string defaultDir();

  std::atomic<unsigned> hits{0}, misses{0}, corrupt{0}, stores{0};

private:
  std::string entryPath(llvm::StringRef kind, llvm::StringRef key) const;
  std::string dir_;
};

} // namespace dlc::codegen

#endif
