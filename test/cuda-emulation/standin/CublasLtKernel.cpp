//===- CublasLtKernel.cpp - the stand-in cuBLASLt's host GEMM and epilogues
//===//
// The arithmetic of cublasLtMatmul on the host: op(A) and op(B) are packed
// into f32 panels once per batch, D is cut into 64 x 64 tiles run on the
// worker pool, each tile accumulates in f32 as rank-1 updates over k (the
// inner loop runs down a packed column, so it vectorizes without
// reassociating sums), and the epilogue is applied as a tile is stored.
#include "CublasLtKernel.h"
#include "Standin.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace dlc::standin::lt {
namespace {

constexpr int64_t kTileM = 64, kTileN = 64, kColumnGroup = 4;

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: value = mantissa * 2^-24
    float value = std::ldexp(float(mantissa), -24);
    return sign ? -value : value;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // inf or NaN (kept quiet)
    return sign | 0x7c00 | (magnitude > 0x7f800000u ? 0x200 : 0);
  if (magnitude >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (magnitude < 0x38800000u) { // below the smallest normal half, 2^-14
    float a;
    std::memcpy(&a, &magnitude, 4);
    // Round to a multiple of 2^-24 with ties to even (nearbyint).
    return sign | uint16_t(std::nearbyint(a * 16777216.0f));
  }
  uint32_t rounded = magnitude + 0xfff + ((magnitude >> 13) & 1);
  return sign | uint16_t(((rounded >> 13) - (112u << 10)) & 0x7fff);
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float load(const void *base, cudaDataType type, int64_t index) {
  switch (type) {
  case CUDA_R_16F:
    return halfToFloat(static_cast<const uint16_t *>(base)[index]);
  case CUDA_R_16BF:
    return bf16ToFloat(static_cast<const uint16_t *>(base)[index]);
  default:
    return static_cast<const float *>(base)[index];
  }
}

void store(void *base, cudaDataType type, int64_t index, float value) {
  switch (type) {
  case CUDA_R_16F:
    static_cast<uint16_t *>(base)[index] = floatToHalf(value);
    break;
  case CUDA_R_16BF:
    static_cast<uint16_t *>(base)[index] = floatToBf16(value);
    break;
  default:
    static_cast<float *>(base)[index] = value;
  }
}

/// Rounds an input to what the compute type multiplies: tf32 keeps 10
/// mantissa bits (round to nearest), FAST_16F/16BF the 16-bit types.
float roundInput(float x, cublasComputeType_t computeType) {
  switch (computeType) {
  case CUBLAS_COMPUTE_32F_FAST_TF32: {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    if ((bits & 0x7f800000u) != 0x7f800000u)
      bits = (bits + 0xfff + ((bits >> 13) & 1)) & ~0x1fffu;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  case CUBLAS_COMPUTE_32F_FAST_16F:
    return halfToFloat(floatToHalf(x));
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    return bf16ToFloat(floatToBf16(x));
  default:
    return x;
  }
}

/// Element strides of a stored matrix: (row step, column step).
std::pair<int64_t, int64_t> strides(const Operand &op) {
  return op.order == CUBLASLT_ORDER_ROW ? std::make_pair(op.ld, int64_t(1))
                                        : std::make_pair(int64_t(1), op.ld);
}

/// Packs op(X) of batch |batch| (|outer| x |inner| after the op) so that
/// element (o, i) lands at panel[o * inner + i].
void pack(const Operand &x, bool trans, int64_t outer, int64_t inner,
          bool innerIsRows, int32_t batch, cublasComputeType_t computeType,
          float *panel) {
  auto [rowStep, colStep] = strides(x);
  // op(X)(r, c) = trans ? X(c, r) : X(r, c)
  int64_t opRowStep = trans ? colStep : rowStep;
  int64_t opColStep = trans ? rowStep : colStep;
  int64_t innerStep = innerIsRows ? opRowStep : opColStep;
  int64_t outerStep = innerIsRows ? opColStep : opRowStep;
  int64_t base = int64_t(batch) * x.stride;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      panel[o * inner + i] =
          roundInput(load(x.data, x.type, base + o * outerStep + i * innerStep),
                     computeType);
}

bool hasFlag(uint32_t epilogue, uint32_t flag) {
  return (epilogue & flag) == flag;
}

} // namespace

size_t elementSize(cudaDataType type) {
  switch (type) {
  case CUDA_R_32F:
    return 4;
  case CUDA_R_16F:
  case CUDA_R_16BF:
    return 2;
  default:
    return 0;
  }
}

float gelu(float x) {
  const float c = 0.7978845608028654f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
}

float geluGrad(float x) {
  const float c = 0.7978845608028654f;
  float t = std::tanh(c * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

void runMatmul(const MatmulPlan &p) {
  const int64_t m = p.m, n = p.n, k = p.k;
  // A stride of 0 repeats one matrix: pack it once.
  const int32_t panelsA = p.a.stride == 0 ? 1 : p.batch;
  const int32_t panelsB = p.b.stride == 0 ? 1 : p.batch;
  std::vector<float> packedA(size_t(panelsA) * m * k),
      packedB(size_t(panelsB) * n * k);
  parallelFor(panelsA + panelsB, [&](int64_t t) {
    if (t < panelsA) // column p of op(A) contiguous: [k][m]
      pack(p.a, p.transA, k, m, /*innerIsRows=*/true, int32_t(t), p.computeType,
           packedA.data() + t * m * k);
    else // column j of op(B) contiguous: [n][k]
      pack(p.b, p.transB, n, k, /*innerIsRows=*/true, int32_t(t - panelsA),
           p.computeType, packedB.data() + (t - panelsA) * n * k);
  });

  const uint32_t epilogue = p.epilogue;
  const bool bgradA = epilogue == CUBLASLT_EPILOGUE_BGRADA;
  const bool bgradB = epilogue == CUBLASLT_EPILOGUE_BGRADB;
  const bool backward = hasFlag(epilogue, CUBLASLT_EPILOGUE_DRELU) ||
                        hasFlag(epilogue, CUBLASLT_EPILOGUE_DGELU);
  const bool addBias = !backward && !bgradA && !bgradB &&
                       hasFlag(epilogue, CUBLASLT_EPILOGUE_BIAS);
  const bool relu = !backward && hasFlag(epilogue, CUBLASLT_EPILOGUE_RELU);
  const bool geluOut = !backward && hasFlag(epilogue, CUBLASLT_EPILOGUE_GELU);
  const bool dRelu = epilogue == CUBLASLT_EPILOGUE_DRELU ||
                     epilogue == CUBLASLT_EPILOGUE_DRELU_BGRAD;
  const bool dGelu = epilogue == CUBLASLT_EPILOGUE_DGELU ||
                     epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  const bool bgradD = backward && hasFlag(epilogue, 16);
  const bool auxOut = !backward && hasFlag(epilogue, 128);

  const int64_t tilesM = (m + kTileM - 1) / kTileM;
  const int64_t tilesN = (n + kTileN - 1) / kTileN;
  // bgradD sums every column of a row: computed per row after the tiles,
  // from f32 copies of the epilogue's output.
  std::vector<float> dValues(bgradD ? size_t(p.batch) * m * n : 0);
  auto [cRowStep, cColStep] = strides(p.c);
  auto [dRowStep, dColStep] = strides(p.d);
  parallelFor(int64_t(p.batch) * tilesM * tilesN, [&](int64_t t) {
    const int32_t batch = int32_t(t / (tilesM * tilesN));
    const int64_t i0 = (t / tilesN) % tilesM * kTileM;
    const int64_t j0 = t % tilesN * kTileN;
    const int64_t mt = std::min(kTileM, m - i0), nt = std::min(kTileN, n - j0);
    const float *a = packedA.data() + (panelsA == 1 ? 0 : batch) * m * k;
    const float *b = packedB.data() + (panelsB == 1 ? 0 : batch) * n * k;
    alignas(64) float acc[kTileN][kTileM];
    for (int64_t j = 0; j < nt; ++j)
      std::fill_n(acc[j], kTileM, 0.0f);
    for (int64_t jg = 0; jg < nt; jg += kColumnGroup) {
      if (nt - jg >= kColumnGroup) {
        const float *b0 = b + (j0 + jg) * k, *b1 = b0 + k, *b2 = b1 + k,
                    *b3 = b2 + k;
        float *acc0 = acc[jg], *acc1 = acc[jg + 1], *acc2 = acc[jg + 2],
              *acc3 = acc[jg + 3];
        for (int64_t q = 0; q < k; ++q) {
          const float *column = a + q * m + i0;
          const float v0 = b0[q], v1 = b1[q], v2 = b2[q], v3 = b3[q];
          for (int64_t i = 0; i < mt; ++i) {
            const float x = column[i];
            acc0[i] += x * v0;
            acc1[i] += x * v1;
            acc2[i] += x * v2;
            acc3[i] += x * v3;
          }
        }
      } else {
        for (int64_t j = jg; j < nt; ++j) {
          const float *bj = b + (j0 + j) * k;
          for (int64_t q = 0; q < k; ++q) {
            const float *column = a + q * m + i0;
            const float v = bj[q];
            for (int64_t i = 0; i < mt; ++i)
              acc[j][i] += column[i] * v;
          }
        }
      }
    }
    const int64_t cBase = int64_t(batch) * p.c.stride;
    const int64_t dBase = int64_t(batch) * p.d.stride;
    const int64_t biasBase = int64_t(batch) * p.biasStride;
    const int64_t auxBase = int64_t(batch) * p.auxStride;
    for (int64_t j = 0; j < nt; ++j) {
      const int64_t col = j0 + j;
      uint8_t maskByte = 0;
      for (int64_t i = 0; i < mt; ++i) {
        const int64_t row = i0 + i;
        float v = p.alpha * acc[j][i];
        // BLAS convention: beta == 0 means C is not read (NaN stays out).
        if (p.beta != 0.0f)
          v += p.beta * load(p.c.data, p.c.type,
                             cBase + row * cRowStep + col * cColStep);
        if (addBias)
          v += load(p.bias, p.biasType, biasBase + row);
        const int64_t auxIndex = auxBase + col * p.auxLd + row;
        if (auxOut && geluOut)
          store(p.aux, p.auxType, auxIndex, v);
        if (auxOut && relu && v > 0.0f)
          maskByte |= uint8_t(1u << (auxIndex & 7));
        if (relu)
          v = v > 0.0f ? v : 0.0f;
        else if (geluOut)
          v = gelu(v);
        if (dGelu)
          v *= geluGrad(load(p.aux, p.auxType, auxIndex));
        if (dRelu) {
          const uint8_t byte =
              static_cast<const uint8_t *>(p.aux)[auxIndex >> 3];
          if (!((byte >> (auxIndex & 7)) & 1))
            v = 0.0f;
        }
        store(const_cast<void *>(p.d.data), p.d.type,
              dBase + row * dRowStep + col * dColStep, v);
        if (bgradD)
          dValues[(size_t(batch) * n + col) * m + row] = v;
        // Tiles start at multiples of 64 rows and the mask's ld is a
        // multiple of 128 bits, so each mask byte belongs to one tile.
        if (auxOut && relu && ((auxIndex & 7) == 7 || i == mt - 1)) {
          static_cast<uint8_t *>(p.aux)[auxIndex >> 3] = maskByte;
          maskByte = 0;
        }
      }
    }
  });

  if (bgradD || bgradA || bgradB) {
    // Bias gradient: one sum per row of D (DRELU/DGELU_BGRAD, BGRADA, the
    // sum over k of op(A)'s row) or per column of D (BGRADB).
    const int64_t length = bgradB ? n : m;
    parallelFor(p.batch, [&](int64_t batch) {
      const float *a = packedA.data() + (panelsA == 1 ? 0 : batch) * m * k;
      const float *b = packedB.data() + (panelsB == 1 ? 0 : batch) * n * k;
      for (int64_t r = 0; r < length; ++r) {
        double sum = 0.0;
        if (bgradD)
          for (int64_t col = 0; col < n; ++col)
            sum += dValues[(size_t(batch) * n + col) * m + r];
        else if (bgradA)
          for (int64_t q = 0; q < k; ++q)
            sum += a[q * m + r];
        else
          for (int64_t q = 0; q < k; ++q)
            sum += b[r * k + q];
        store(p.bias, p.biasType, batch * p.biasStride + r, float(sum));
      }
    });
  }
}

} // namespace dlc::standin::lt
