//===- Npy.h - NumPy .npy and .npz files -------------------------*- C++ -*-===//
// Reads and writes the NumPy array format
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// "\x93NUMPY", version (1.0: u16 header length; 2.0/3.0: u32), a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and the
// raw data. .npz files are zip archives of "<name>.npy" entries; stored and
// deflate entries are read (zlib), entries are written stored.
#ifndef DLRT_DATA_NPY_H
#define DLRT_DATA_NPY_H

#include "runtime/data/Array.h"

#include <string>
#include <vector>

namespace dlrt::data {

/// Parses the .npy bytes |data| of |size| bytes into |out|. Supported descrs:
/// <f4 <f8 <f2 (float16 -> DType::F16) <i8 <i4 |u1 |b1 (also without the
/// byte-order mark for one-byte types); C order only. On failure returns false
/// and sets |error| to a one-line message starting with |what| (the file or
/// entry name), e.g. "x.npy: truncated data: expected 48 bytes, found 20".
bool parseNpy(const uint8_t *data, size_t size, const std::string &what,
              Array &out, std::string &error);

/// A parsed .npy header: the dtype string ('<u2', '<f4', ...), the shape,
/// the order, and where the data starts (bytes from the file's start).
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  bool fortranOrder = false;
  size_t dataOffset = 0;
};

/// Parses the magic, version and header dict at the start of the .npy
/// bytes |data| (|size| bytes: the header may be all of them; the data is
/// not read) into |out|, any descr. Errors as parseNpy's.
bool parseNpyHeader(const uint8_t *data, size_t size, const std::string &what,
                    NpyHeader &out, std::string &error);

/// Serializes |array| as a version 1.0 .npy file (header padded to 64 bytes).
/// NumPy has no bfloat16: a BF16 array is written as float32 ("<f4"),
/// exactly widened.
std::vector<uint8_t> serializeNpy(const Array &array);

/// Reads / writes a .npy file. Errors name |path| and the problem.
bool readNpyFile(const std::string &path, Array &out, std::string &error);
bool writeNpyFile(const std::string &path, const Array &array,
                  std::string &error);

/// Reads every array of the .npz archive |path| (in archive order; names
/// without the ".npy" suffix). Checks the zip structure, entry CRCs and each
/// .npy; errors name the file, the entry and the problem.
bool readNpz(const std::string &path, std::vector<NamedArray> &out,
             std::string &error);

/// Parses the .npz (zip) bytes |data| of |size| bytes as readNpz does;
/// errors start with |what| (the file name). Memory use is bounded by the
/// data the archive actually holds: a deflate entry's buffer grows as it
/// inflates, whatever size its header claims.
bool parseNpz(const uint8_t *data, size_t size, const std::string &what,
              std::vector<NamedArray> &out, std::string &error);

/// Writes |arrays| to |path| as an uncompressed .npz (zip of stored
/// "<name>.npy" entries), readable by numpy.load.
bool writeNpz(const std::string &path, const std::vector<NamedArray> &arrays,
              std::string &error);

/// The array named |name| in |arrays|, or null; when null, |error| says
/// "<what>: no array named '<name>' (the file has: a, b)".
const NamedArray *findArray(const std::vector<NamedArray> &arrays,
                            const std::string &name, const std::string &what,
                            std::string &error);

/// Reads the whole file |path| into |out|. Errors: "<path>: cannot open: ...".
bool readFileBytes(const std::string &path, std::vector<uint8_t> &out,
                   std::string &error);

} // namespace dlrt::data

#endif // DLRT_DATA_NPY_H
