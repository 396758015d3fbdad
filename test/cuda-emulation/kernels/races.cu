// Races the emulator's order variation must expose, next to their
// barrier-correct forms.

// Planted race: x[i] = x[i + 1] in place across the threads of one block;
// thread i may run after thread i + 1 has already overwritten x[i + 1].
extern "C" __global__ void shift_left_racy(int *x, int n) {
  const int i = threadIdx.x;
  if (i + 1 < n)
    x[i] = x[i + 1];
}

// The same shift, correct: every thread reads before any writes.
extern "C" __global__ void shift_left(int *x, int n) {
  const int i = threadIdx.x;
  const int next = i + 1 < n ? x[i + 1] : x[i];
  __syncthreads();
  x[i] = next;
}

// Planted race: thread 0 writes a shared slot that thread 1 reads in the
// same phase (out[0] is 7 only if the writer ran first).
extern "C" __global__ void shared_slot_racy(int *out) {
  __shared__ int slot;
  if (threadIdx.x == 0)
    slot = 0;
  __syncthreads();
  if (threadIdx.x == 0)
    slot = 7;
  if (threadIdx.x == 1)
    out[0] = slot;
}

// The same with the barrier between the write and the read.
extern "C" __global__ void shared_slot(int *out) {
  __shared__ int slot;
  if (threadIdx.x == 0)
    slot = 0;
  __syncthreads();
  if (threadIdx.x == 0)
    slot = 7;
  __syncthreads();
  if (threadIdx.x == 1)
    out[0] = slot;
}
