// Atomics from many blocks: exact integer and float sums, atomicInc's wrap, an
// atomicCAS loop.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Sums of in[0..n) by every kind of atomicAdd, and its min and max.
extern "C" __global__ void atomic_sums(const int *in, int n, int *isum,
                                       unsigned long long *usum, float *fsum,
                                       double *dsum, __half *hsum,
                                       __nv_bfloat16 *bsum, int *imin,
                                       int *imax) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  atomicAdd(isum, in[i]);
  atomicAdd(usum, (unsigned long long)(in[i] + 100));
  atomicAdd(fsum, (float)in[i]);
  atomicAdd(dsum, (double)in[i]);
  if (i < 1024) // halves count exactly to 2048, bfloat16 to 256
    atomicAdd(hsum, __float2half(1.0f));
  if (i < 256)
    atomicAdd(bsum, __float2bfloat16(1.0f));
  atomicMin(imin, in[i]);
  atomicMax(imax, in[i]);
}

// Every thread takes a ticket with atomicInc(counter, limit) (wrapping to 0
// after limit) and counts it in histogram[ticket].
extern "C" __global__ void atomic_inc_wrap(unsigned *counter, unsigned limit,
                                           unsigned *histogram) {
  const unsigned ticket = atomicInc(counter, limit);
  atomicAdd(&histogram[ticket], 1u);
}

// A float maximum built from atomicCAS on the bits (the CUDA Programming
// Guide's pattern for atomics the hardware lacks).
__device__ float atomicMaxFloat(float *address, float value) {
  int *bits = (int *)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value)
      break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}

extern "C" __global__ void atomic_cas_max(const float *in, int n, float *max) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicMaxFloat(max, in[i]);
}

// One thread walks through the other atomics; results[k] are the old values.
extern "C" __global__ void atomic_sequence(unsigned *u, int *s,
                                           unsigned *results) {
  results[0] = atomicDec(u, 2u);           // 0 -> 2 (wraps at 0)
  results[1] = atomicDec(u, 2u);           // 2 -> 1
  results[2] = atomicExch(u, 40u);         // 1 -> 40
  results[3] = atomicDec(u, 2u);           // 40 > 2 -> 2
  results[4] = atomicSub(u, 1u);           // 2 -> 1
  results[5] = atomicAnd(u, 3u);           // 1 -> 1
  results[6] = atomicOr(u, 12u);           // 1 -> 13
  results[7] = atomicXor(u, 5u);           // 13 -> 8
  results[8] = atomicCAS(u, 7u, 99u);      // 8 != 7: unchanged
  results[9] = atomicCAS(u, 8u, 99u);      // 8 -> 99
  results[10] = (unsigned)atomicSub(s, 5); // 0 -> -5
  results[11] = atomicInc(u, 98u);         // 99 >= 98 -> 0
}
