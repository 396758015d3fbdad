// Warp collectives: shuffle reductions and scans, votes, and shuffles of half
// types.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define FULL_MASK 0xffffffffu

__device__ unsigned linearThread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// out[warp] = the sum over the warp's lanes, by __shfl_down_sync; all[t] =
// the same sum in every lane, by __shfl_xor_sync (butterfly).
extern "C" __global__ void warp_sums(const int *in, int *out, int *all) {
  const unsigned t = linearThread();
  int down = in[t], butterfly = in[t];
  for (int offset = 16; offset > 0; offset /= 2) {
    down += __shfl_down_sync(FULL_MASK, down, offset);
    butterfly += __shfl_xor_sync(FULL_MASK, butterfly, offset);
  }
  if (t % 32 == 0)
    out[t / 32] = down;
  all[t] = butterfly;
}

// Per warp: the ballot of in[t] > 0, whether any lane has in[t] < -100,
// whether all have in[t] != 0, and lane 5's value broadcast by __shfl_sync.
extern "C" __global__ void warp_votes(const int *in, unsigned *ballot, int *any,
                                      int *all, int *lane5) {
  const unsigned t = linearThread();
  const unsigned b = __ballot_sync(FULL_MASK, in[t] > 0);
  const int a = __any_sync(FULL_MASK, in[t] < -100);
  const int l = __all_sync(FULL_MASK, in[t] != 0);
  const int v = __shfl_sync(FULL_MASK, in[t], 5);
  if (t % 32 == 0) {
    ballot[t / 32] = b;
    any[t / 32] = a;
    all[t / 32] = l;
  }
  lane5[t] = v;
}

// Inclusive prefix sums within each group of 8 lanes (__shfl_up_sync, width 8).
extern "C" __global__ void segment_scan8(const int *in, int *out) {
  const unsigned t = linearThread();
  int v = in[t];
  for (unsigned d = 1; d < 8; d *= 2) {
    const int y = __shfl_up_sync(FULL_MASK, v, d, 8);
    if ((t & 7) >= d)
      v += y;
  }
  out[t] = v;
}

// Shuffles of 2-byte and 4-byte half types: h[t] gets lane t ^ 1's value,
// h2[t] lane t + 1's pair (the last lane keeps its own), b[t] lane 0's.
extern "C" __global__ void shuffle_halves(__half *h, __half2 *h2,
                                          __nv_bfloat16 *b) {
  const unsigned t = threadIdx.x;
  const __half x = __shfl_xor_sync(FULL_MASK, h[t], 1);
  const __half2 y = __shfl_down_sync(FULL_MASK, h2[t], 1);
  const __nv_bfloat16 z = __shfl_sync(FULL_MASK, b[t], 0);
  __syncwarp();
  h[t] = x;
  h2[t] = y;
  b[t] = z;
}

// Edges of the shuffle rules, one row of 32 results each (block of 32):
// width-16 xor into a later group (own value) and an earlier one, an index
// past the width, a down shift past the segment, the sm_80 reductions, a
// match, and a shuffle from lanes outside the mask (undefined in CUDA; the
// emulator gives all-ones bits).
extern "C" __global__ void warp_edges(int *out) {
  const int t = threadIdx.x;
  out[0 * 32 + t] = __shfl_xor_sync(FULL_MASK, t, 16, 16);
  out[1 * 32 + t] = __shfl_sync(FULL_MASK, t, 37, 8);
  out[2 * 32 + t] = __shfl_down_sync(FULL_MASK, t, 3, 8);
  out[3 * 32 + t] = (int)__reduce_add_sync(FULL_MASK, (unsigned)t);
  out[4 * 32 + t] = __reduce_max_sync(FULL_MASK, t - 10);
  out[5 * 32 + t] = (int)__match_any_sync(FULL_MASK, t / 8);
  if (t < 16)
    out[6 * 32 + t] = __shfl_sync(0x0000ffffu, t * 2, t + 16);
}
