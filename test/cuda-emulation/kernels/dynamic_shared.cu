// Dynamic shared memory (extern __shared__): unwritten reads and a per-block
// sum.

// first[i] = what thread i reads from its slot before anything was written
// (a NaN on the emulator); out[block] = the sum of the block's inputs.
extern "C" __global__ void dynamic_shared_sum(const float *in, float *first,
                                              float *out,
                                              unsigned long long *address) {
  extern __shared__ float buffer[];
  const unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  first[i] = buffer[t];
  __syncthreads();
  buffer[t] = in[i];
  __syncthreads();
  if (t == 0) {
    float sum = 0;
    for (unsigned k = 0; k < blockDim.x; ++k)
      sum += buffer[k];
    out[blockIdx.x] = sum;
    address[blockIdx.x] = (unsigned long long)buffer;
  }
}
