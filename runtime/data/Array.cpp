//===- Array.cpp - host arrays: sizes, descriptions, conversion -----------===//
#include "runtime/data/Array.h"

#include "runtime/device/HalfConversions.h"

#include <cstring>

namespace dlrt::data {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 1;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::U8:
    return "uint8";
  case DType::Bool:
    return "bool";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  }
  return "?";
}

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Array::sampleNumel() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

std::string Array::describe() const {
  return shapeString(shape) + " " + dtypeName(dtype);
}

namespace {
template <typename T> T loadAs(const uint8_t *p, DType from) {
  switch (from) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return static_cast<T>(v);
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return static_cast<T>(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<T>(v);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return static_cast<T>(v);
  }
  case DType::U8:
  case DType::Bool:
    return static_cast<T>(*p);
  case DType::F16:
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return static_cast<T>(from == DType::F16 ? halfBitsToFloat(v)
                                             : bfloat16BitsToFloat(v));
  }
  }
  return T();
}

/// Converts to f16 / bf16 bits, rounding once from f64 (every other source
/// type converts to f64 exactly, except i64 beyond 2^53).
void convertToHalf(const uint8_t *src, DType from, uint8_t *dst, size_t count,
                   bool bf16) {
  size_t in = dtypeSize(from);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t *p = src + i * in;
    uint16_t bits;
    if (from == DType::F32) {
      float v;
      std::memcpy(&v, p, 4);
      bits = bf16 ? floatToBFloat16Bits(v) : floatToHalfBits(v);
    } else {
      double v = loadAs<double>(p, from);
      bits = bf16 ? doubleToBFloat16Bits(v) : doubleToHalfBits(v);
    }
    std::memcpy(dst + i * 2, &bits, 2);
  }
}

template <typename T>
void convertTo(const uint8_t *src, DType from, uint8_t *dst, size_t count) {
  size_t in = dtypeSize(from);
  for (size_t i = 0; i < count; ++i) {
    T v = loadAs<T>(src + i * in, from);
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}
} // namespace

void convertElements(const void *srcV, DType from, void *dstV, DType to,
                     size_t count) {
  auto *src = static_cast<const uint8_t *>(srcV);
  auto *dst = static_cast<uint8_t *>(dstV);
  if (from == to) {
    std::memcpy(dst, src, count * dtypeSize(to));
    return;
  }
  switch (to) {
  case DType::F32:
    return convertTo<float>(src, from, dst, count);
  case DType::F64:
    return convertTo<double>(src, from, dst, count);
  case DType::I64:
    return convertTo<int64_t>(src, from, dst, count);
  case DType::I32:
    return convertTo<int32_t>(src, from, dst, count);
  case DType::U8:
    return convertTo<uint8_t>(src, from, dst, count);
  case DType::F16:
    return convertToHalf(src, from, dst, count, /*bf16=*/false);
  case DType::BF16:
    return convertToHalf(src, from, dst, count, /*bf16=*/true);
  case DType::Bool: {
    size_t in = dtypeSize(from);
    for (size_t i = 0; i < count; ++i)
      dst[i] = loadAs<double>(src + i * in, from) != 0.0 ? 1 : 0;
    return;
  }
  }
}

void gatherSamples(const Array &src, const int64_t *indices, size_t count,
                   DType to, void *dstV) {
  auto *dst = static_cast<uint8_t *>(dstV);
  size_t per = static_cast<size_t>(src.sampleNumel());
  size_t inBytes = per * dtypeSize(src.dtype);
  size_t outBytes = per * dtypeSize(to);
  for (size_t i = 0; i < count; ++i) {
    uint8_t *out = dst + i * outBytes;
    if (indices[i] < 0) {
      std::memset(out, 0, outBytes);
      continue;
    }
    const uint8_t *in = src.data.data() + indices[i] * inBytes;
    convertElements(in, src.dtype, out, to, per);
  }
}

} // namespace dlrt::data
