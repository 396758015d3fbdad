//===- Array.h - host arrays read from data files ---------------*- C++ -*-===//
// The in-memory array type shared by dlrt's data loaders (NumPy, IDX,
// Fashion-MNIST) and the batch assembly of `dlrt train` / `dlrt run`.
#ifndef DLRT_DATA_ARRAY_H
#define DLRT_DATA_ARRAY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlrt::data {

/// Element types a data file may hold. U8 and Bool are one byte each; Bool
/// bytes are 0 or 1. F16 is IEEE binary16 (NumPy float16), BF16 bfloat16
/// (no NumPy dtype: it exists for runtime tensors and is widened to F32 when
/// written to a .npy file).
enum class DType { F32, F64, I64, I32, U8, Bool, F16, BF16 };

/// Bytes per element of |dtype|.
size_t dtypeSize(DType dtype);
/// NumPy-like name of |dtype|: "float32", "float64", "int64", "int32",
/// "uint8", "bool", "float16", "bfloat16".
const char *dtypeName(DType dtype);

/// A dense, row-major (C order), little-endian array on the host.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< empty for a scalar
  std::vector<uint8_t> data;  ///< numel() * dtypeSize(dtype) bytes

  /// Number of elements (1 for a scalar).
  int64_t numel() const;
  /// Elements per sample: numel of shape[1:] (1 for rank <= 1).
  int64_t sampleNumel() const;
  /// "(60000, 28, 28) uint8"-style description for messages.
  std::string describe() const;
};

/// An array with the name it has in its file (npz entry without ".npy").
struct NamedArray {
  std::string name;
  Array array;
};

/// "(2, 3)"-style rendering of |shape|.
std::string shapeString(const std::vector<int64_t> &shape);

/// Converts |count| elements at |src| of type |from| into |dst| of type |to|
/// (as C++ static_cast does; to Bool means != 0). F16 and BF16 widen
/// exactly; narrowing to them rounds to nearest even, as CUDA's
/// __float2half_rn / __float2bfloat16_rn do (f64 sources are rounded once,
/// not through f32; integers go through f64). |dst| must hold
/// count * dtypeSize(to) bytes and must not overlap |src|.
void convertElements(const void *src, DType from, void *dst, DType to,
                     size_t count);

/// Gathers samples |indices[0..count)| of |src| (dim 0 is the sample axis;
/// each sample is src.sampleNumel() elements) converted to |to| into |dst|,
/// which must hold count * src.sampleNumel() * dtypeSize(to) bytes. A
/// negative index writes a zero sample (used to pad a final partial batch).
/// Indices must be < src.shape[0] (checked by the caller).
void gatherSamples(const Array &src, const int64_t *indices, size_t count,
                   DType to, void *dst);

} // namespace dlrt::data

#endif // DLRT_DATA_ARRAY_H
