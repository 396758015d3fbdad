// Block-wide tree reductions with __syncthreads, and the same with one barrier
// planted missing.

// Sums in[] per block into out[blockIdx.x]: any block size up to 1024
// (the active half rounds up, so sizes that are not powers of 2 work).
extern "C" __global__ void block_sum(const int *in, int *out, int n) {
  __shared__ int partial[1024];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned active = blockDim.x; active > 1;) {
    const unsigned half = (active + 1) / 2;
    if (t < active - half)
      partial[t] += partial[t + half];
    __syncthreads();
    active = half;
  }
  if (t == 0)
    out[blockIdx.x] = partial[0];
}

// Planted bug: the barrier inside the loop is missing, so a thread may read
// partial[t + half] before its owner has added into it.
extern "C" __global__ void block_sum_missing_barrier(const int *in, int *out,
                                                     int n) {
  __shared__ int partial[1024];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned active = blockDim.x; active > 1;) {
    const unsigned half = (active + 1) / 2;
    if (t < active - half)
      partial[t] += partial[t + half];
    active = half;
  }
  if (t == 0)
    out[blockIdx.x] = partial[0];
}

// __syncthreads_count/_and/_or: counts[0..2] of threads with pred[t] != 0.
extern "C" __global__ void barrier_predicates(const int *pred, int *counts) {
  const unsigned t = threadIdx.x;
  const int c = __syncthreads_count(pred[t]);
  const int a = __syncthreads_and(pred[t]);
  const int o = __syncthreads_or(pred[t]);
  if (t == 0) {
    counts[0] = c;
    counts[1] = a;
    counts[2] = o;
  }
}
