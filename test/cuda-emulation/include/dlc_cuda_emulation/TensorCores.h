//===- TensorCores.h - mma.sync on the emulated warp -----------*- C++ -*-===//
//
// Part of dlc_cuda_emulation.h. CUDA C++ reaches the tensor cores only
// through inline PTX, which the host compiler cannot run, so a kernel gives
// each PTX instruction a __device__ wrapper whose body, when
// DLC_CUDA_EMULATION_H is defined, calls the function here instead of the
// asm. The instruction is a warp collective (Collectives.h): every lane
// passes its fragments, and the last lane to arrive computes the whole
// 16 x 8 tile from all 32 lanes' registers with the PTX ISA's fragment
// layouts, so a kernel that puts an element in the wrong register gets a
// wrong result here as it would on a GPU.
//
// Layouts: PTX ISA, "Warp-level Matrix Fragments for mma.m16n8k16 with
// floating point type" (section 9.7.14.5.8 of PTX ISA 8.x), for .f16 and
// .bf16 multiplicands with .f32 accumulators. With groupID = lane / 4 and
// tig = lane % 4 (threadID_in_group), a 32-bit register holding two
// 16-bit elements keeps the lower-indexed one in its low half:
//   A (16 x 16, row): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
//                     a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
//   B (16 x 8, col):  b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
//   C, D (16 x 8):    c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
// The products are exact and summed in double, then rounded once to
// float: a GPU sums in float in an unspecified order, so results agree to
// f32 rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_TENSORCORES_H
#define DLC_CUDA_EMULATION_TENSORCORES_H

namespace dlc_emu {
namespace detail {

/// One lane's operands and result of an mma.sync.m16n8k16 (registers as
/// the PTX instruction names them).
struct MmaFragments {
  unsigned a[4], b[2];
  float c[4], d[4];
  bool bf16; // the multiplicands' type: bf16, else f16
};

/// The float value of a 16-bit float's bits |h| (exact).
inline double mmaElement(unsigned h, bool bf16) {
  h &= 0xffffu;
  if (bf16) {
    unsigned bits = h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  __half_raw raw;
  raw.x = (unsigned short)h;
  return __half2float(__half(raw));
}

inline void completeMma(Worker &w, unsigned base, unsigned mask) {
  Thread *lanes = w.threads + base;
  if (mask != 0xffffffffu)
    fail(DLC_EMU_ERROR_LAUNCH_FAILED,
         "%s in a warp of %u lanes: mma.sync.aligned needs all 32",
         lanes[0].what, (unsigned)__builtin_popcount(mask));
  const MmaFragments *f0 = (const MmaFragments *)lanes[0].value;
  double a[16][16], b[16][8], c[16][8];
  for (unsigned l = 0; l < 32; ++l) {
    const MmaFragments &f = *(const MmaFragments *)lanes[l].value;
    if (f.bf16 != f0->bf16)
      fail(DLC_EMU_ERROR_LAUNCH_FAILED,
           "mma.sync: lanes 0 and %u disagree on the multiplicand type", l);
    const unsigned g = l >> 2, t = l & 3;
    for (unsigned r = 0; r < 4; ++r) {
      const unsigned row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
      a[row][col] = mmaElement(f.a[r], f.bf16);
      a[row][col + 1] = mmaElement(f.a[r] >> 16, f.bf16);
    }
    for (unsigned r = 0; r < 2; ++r) {
      b[2 * t + 8 * r][g] = mmaElement(f.b[r], f.bf16);
      b[2 * t + 8 * r + 1][g] = mmaElement(f.b[r] >> 16, f.bf16);
    }
    for (unsigned i = 0; i < 4; ++i)
      c[g + 8 * (i >> 1)][2 * t + (i & 1)] = f.c[i];
  }
  for (unsigned l = 0; l < 32; ++l) {
    MmaFragments &f = *(MmaFragments *)lanes[l].value;
    const unsigned g = l >> 2, t = l & 3;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
      double s = c[row][col];
      for (unsigned k = 0; k < 16; ++k)
        s += a[row][k] * b[k][col];
      f.d[i] = (float)s;
    }
  }
  for (unsigned l = 0; l < 32; ++l)
    makeRunnable(w, base + l);
}

} // namespace detail
} // namespace dlc_emu

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 for the
/// calling lane: d = A * B + c over the warp, with this lane's fragments
/// |a| (4 registers), |b| (2) and |c|, |d| (4 floats) in the layouts above;
/// |bf16| picks the multiplicands' type. |d| may be |c|. Every lane of a
/// full warp must call it.
inline void dlc_emu_mma_m16n8k16(bool bf16, float d[4], const unsigned a[4],
                                 const unsigned b[2], const float c[4]) {
  using namespace dlc_emu::detail;
  MmaFragments f;
  memcpy(f.a, a, sizeof f.a);
  memcpy(f.b, b, sizeof f.b);
  memcpy(f.c, c, sizeof f.c);
  f.bf16 = bf16;
  collective(Op::Mma, bf16 ? "mma.sync.m16n8k16.bf16" : "mma.sync.m16n8k16.f16",
             0xffffffffu, (unsigned long long)(uintptr_t)&f);
  memcpy(d, f.d, sizeof f.d);
}

#endif // DLC_CUDA_EMULATION_TENSORCORES_H
