/*===- Philox.h - Philox-4x32-10 uniform draws for dropout --------*- C -*-===*
 *
 * dlgraph.dropout's random stream, written once: the reference interpreter
 * includes this header, and codegen embeds its text (codegen/CMakeLists.txt
 * turns it into a string) in every CUDA and host kernel source that draws
 * dropout masks, so the compiled kernels and the float64 reference draw the
 * same numbers. Hence plain C with no includes and no std types: NVRTC
 * compiles it without a standard library. Functions are declared with
 * DLC_HELPER, which the kernel preludes define (`static __device__
 * __forceinline__` for CUDA); C++ callers get `static inline`.
 *
 *===----------------------------------------------------------------------===*/
#ifndef DLC_DIALECTS_SEMANTICS_PHILOX_H
#define DLC_DIALECTS_SEMANTICS_PHILOX_H

#ifndef DLC_HELPER
#define DLC_HELPER static inline
#endif

/* The uniform draw of element |i| of a dropout with key |seed| at training
 * step |step|: Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011) with counter (i low, i high,
 * step, 0) and key (seed low, seed high); the result is the top 24 bits of
 * output word 0 over 2^24, a float in [0, 1) with 24 bits of resolution. */
DLC_HELPER float dlc_philox_uniform24(unsigned long long seed,
                                      unsigned long long i,
                                      unsigned int step) {
  unsigned int c0 = (unsigned int)i, c1 = (unsigned int)(i >> 32);
  unsigned int c2 = step, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * 5.9604644775390625e-08f;
}

#endif /* DLC_DIALECTS_SEMANTICS_PHILOX_H */
