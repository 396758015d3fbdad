// Tensor cores: one mma.sync.m16n8k16 (f32 accumulators) a warp, through the
// same wrapper form dlc's attention kernels use (codegen/
// BuiltinAttentionMma.cpp): inline PTX under NVRTC, the emulation's
// warp collective under dlc_cuda_emulation.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ void mma_16816(bool bf16, float d[4],
                                          const unsigned a[4],
                                          const unsigned b[2]) {
#ifdef DLC_CUDA_EMULATION_H
  dlc_emu_mma_m16n8k16(bf16, d, a, b, d);
#else
  if (bf16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                   "r"(b[1]));
#endif
}

__device__ unsigned pack(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

// d[16][8] = a[16][16] * b[16][8] + c[16][8] for each warp (the tile at
// warp * 16 x 16 in a, ...), every matrix row-major 16-bit bits (a, b) or
// floats (c, d); the fragments are gathered in the PTX ISA's layouts.
extern "C" __global__ void mma_tile(const unsigned short *a,
                                    const unsigned short *b, const float *c,
                                    float *d, int bf16) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned g = lane >> 2, t = lane & 3;
  a += warp * 256;
  b += warp * 128;
  c += warp * 128;
  d += warp * 128;
  unsigned fa[4], fb[2];
  float acc[4];
  for (unsigned r = 0; r < 4; ++r) {
    const unsigned row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    fa[r] = pack(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (unsigned r = 0; r < 2; ++r) {
    const unsigned k = 2 * t + 8 * r;
    fb[r] = pack(b[k * 8 + g], b[(k + 1) * 8 + g]);
  }
  for (unsigned i = 0; i < 4; ++i)
    acc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  mma_16816(bf16 != 0, acc, fa, fb);
  for (unsigned i = 0; i < 4; ++i)
    d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[i];
}
