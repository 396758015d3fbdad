//===- TokenStream.h - language-model training data from token files -*- C++ -*-===//
// A language model trains on one long stream of token ids: nanoGPT's
// train.bin (a flat array of uint16 ids), llm.c's .bin shards (a header of
// 256 int32 words, then uint16 ids), or a 1-D NumPy array. A sample is a
// window of T + 1 consecutive tokens: the model reads the first T and
// predicts the last T (nanoGPT's get_batch). The file is memory-mapped and
// never read whole into memory: each window is copied out of the mapping and
// its pages released again, so a run's resident memory holds the windows in
// use, not the file.
#ifndef DLRT_DATA_TOKENSTREAM_H
#define DLRT_DATA_TOKENSTREAM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace dlrt::data {

/// The stored type of a token file's ids.
enum class TokenType { U16, U32, I32, I64 };

/// "uint16", "uint32", "int32" or "int64".
const char *tokenTypeName(TokenType type);

/// A read-only, memory-mapped file of token ids. Formats, told apart by
/// their first bytes:
///   - .npy (magic "\x93NUMPY"): a 1-D C-order array of <u2, <u4, <i4 or
///     <i8 ids;
///   - llm.c (first int32 word 20240520, second 1): 1024 header bytes whose
///     third word is the token count, then that many uint16 ids
///     (llm.c's dev/data/data_common.py, write_datafile);
///   - anything else: raw ids of |rawType| (uint16 as nanoGPT writes them,
///     or uint32 for vocabularies over 65536), native little-endian.
class TokenFile {
public:
  TokenFile() = default;
  ~TokenFile();
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  /// Maps |path|. Errors (false, |error| one line naming the file): it
  /// cannot be opened or mapped; it holds no token; a raw file whose size
  /// is not a multiple of the id size ("odd length for uint16"); a .npy that
  /// is not 1-D, not C order or not of an integer type above; an llm.c
  /// header of another version or whose count disagrees with the size.
  bool open(const std::string &path, TokenType rawType, std::string &error);

  /// Tokens in the file.
  int64_t size() const { return count; }
  TokenType type() const { return idType; }
  const std::string &path() const { return name; }
  /// How the file was read, for messages: "raw uint16", "llm.c uint16",
  /// ".npy uint32".
  std::string format() const;

  /// Copies ids [start, start + n) (within [0, size())) to |dst| as int64
  /// and releases the pages it read from the process's memory.
  void copy(int64_t start, int64_t n, int64_t *dst) const;

  /// Reads the whole file in chunks (releasing each) and returns its largest
  /// id, or -1 with |error| set (naming the position) when an id is
  /// negative.
  int64_t maxId(std::string &error) const;

private:
  std::string name;
  std::string kind; // "raw", "llm.c", ".npy"
  TokenType idType = TokenType::U16;
  int64_t count = 0;
  int fd = -1;
  void *map = nullptr;
  size_t mapBytes = 0;
  size_t dataOffset = 0;

  int64_t id(const uint8_t *p) const;
  /// Tells the kernel the process is done with bytes [from, to) of the map.
  void release(size_t from, size_t to) const;
};

/// How a run takes its windows of T + 1 tokens from a TokenFile: sample k
/// of an epoch is the window at offset(epoch, k), its inputs the tokens
/// [o, o + T), its labels [o + 1, o + T + 1).
struct TokenWindows {
  const TokenFile *file = nullptr;
  int64_t seqLen = 0; ///< T
  /// false: window k starts at k * T (every token predicted once an epoch;
  /// the run's epoch permutation, or file order with --no-shuffle, picks
  /// the order); true: at a seeded uniform draw from [0, size - T - 1] per
  /// (epoch, k) (nanoGPT's random offsets), the same draw on every rank and
  /// after a resume.
  bool random = false;
  uint64_t seed = 0;

  /// Samples an epoch has: floor((size - 1) / T).
  int64_t count() const;
  /// The first token of sample |k| of epoch |epoch|. The random draw hashes
  /// (seed, epoch, k) with SplitMix64's finalizer (Steele, Lea and Flood,
  /// "Fast splittable pseudorandom number generators", OOPSLA 2014).
  int64_t offset(int64_t epoch, int64_t k) const;
};

} // namespace dlrt::data

#endif // DLRT_DATA_TOKENSTREAM_H
