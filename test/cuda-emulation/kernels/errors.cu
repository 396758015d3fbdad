// Kernels that must fail the launch with an error instead of hanging or
// aborting.

// Threads past n return before the barrier the others wait at.
extern "C" __global__ void early_exit_barrier(int *out, int n) {
  if ((int)threadIdx.x >= n)
    return;
  out[threadIdx.x] = 1;
  __syncthreads();
}

// Lane 0 waits for lane 1 in __syncwarp while lane 1 waits at
// __syncthreads for lane 0: neither can go on.
extern "C" __global__ void syncwarp_vs_barrier(int *out) {
  if (threadIdx.x == 0)
    __syncwarp(0x3u);
  else
    __syncthreads();
  out[threadIdx.x] = 1;
}

// Lane 0 shuffles with a mask that leaves itself out.
extern "C" __global__ void mask_excludes_caller(int *out) {
  out[threadIdx.x] = __shfl_sync(0x2u, (int)threadIdx.x, 1);
}

// Lane 1 returns; lane 0 then shuffles with a mask naming it.
extern "C" __global__ void mask_names_exited_lane(int *out) {
  if (threadIdx.x == 1)
    return;
  out[threadIdx.x] = __shfl_sync(0x3u, (int)threadIdx.x, 0);
}

// assert() fails in the thread whose value is negative.
extern "C" __global__ void assert_nonnegative(const int *a) {
  assert(a[threadIdx.x] >= 0);
}

// Thread 3 executes a trap.
extern "C" __global__ void trap_in_thread3(int *out) {
  if (threadIdx.x == 3)
    __trap();
  out[threadIdx.x] = 1;
}

// Lanes 0 and 1 meet in different intrinsics with the same mask.
extern "C" __global__ void lanes_disagree(int *out) {
  if (threadIdx.x == 0)
    out[0] = __shfl_sync(0x3u, 5, 1);
  else
    out[1] = (int)__ballot_sync(0x3u, 1);
}
