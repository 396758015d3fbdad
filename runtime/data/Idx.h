//===- Idx.h - the IDX format of the MNIST family ---------------*- C++ -*-===//
// IDX files (http://yann.lecun.com/exdb/mnist/): a big-endian magic
// 0x0000TTDD (TT = element type: 0x08 u8, 0x0C i32, 0x0D f32, 0x0E f64;
// DD = number of dimensions), DD big-endian u32 sizes, then the data in
// row-major order (multi-byte elements big-endian). Files may be gzipped.
#ifndef DLRT_DATA_IDX_H
#define DLRT_DATA_IDX_H

#include "runtime/data/Array.h"

#include <string>

namespace dlrt::data {

/// Reads the IDX file |path|, gzip-compressed or plain (zlib gzread reads
/// both). Supported element types: u8 (-> DType::U8), i32, f32, f64; 1 to 4
/// dimensions. Errors name the file: bad magic, unsupported type, truncated
/// data, trailing bytes, a file that cannot be opened.
bool readIdx(const std::string &path, Array &out, std::string &error);

/// Parses the IDX bytes |data| of |size| bytes, gzip-compressed (one or more
/// gzip members, as gzread reads them) or plain, as readIdx does; errors
/// start with |what| (the file name). Memory use is bounded by the data the
/// bytes actually hold, whatever sizes the header claims.
bool parseIdx(const uint8_t *data, size_t size, const std::string &what,
              Array &out, std::string &error);

/// Writes |array| (U8, I32, F32 or F64; rank 1 to 4) as IDX to |path|,
/// gzip-compressed when |gzip| is set. Used by tests and tools.
bool writeIdx(const std::string &path, const Array &array, bool gzip,
              std::string &error);

} // namespace dlrt::data

#endif // DLRT_DATA_IDX_H
