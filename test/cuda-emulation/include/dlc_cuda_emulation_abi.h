/* dlc_cuda_emulation_abi.h - the C interface between the CUDA stand-in's
 * driver (standin/Driver.cpp) and the kernel modules its NVRTC
 * (standin/Nvrtc.cpp) builds from CUDA C++ with the host compiler and
 * dlc_cuda_emulation.h. Test-only; never shipped.
 *
 * A module is a host shared object. For every `extern "C" __global__`
 * kernel NAME of the source, the stand-in NVRTC appends
 * `DLC_EMU_EXPORT_KERNEL(NAME)` (defined by dlc_cuda_emulation.h), which
 * exports:
 *   int dlc_emu_entry_NAME(dlc_emu_launch *launch);
 *       Runs the whole grid; returns DLC_EMU_OK or one of the error codes
 *       below (CUresult values) with launch->error set to one line.
 *   const int dlc_emu_param_count_NAME;       number of kernel parameters
 *   const unsigned long long dlc_emu_param_sizes_NAME[]; their sizes in
 *       bytes (at least one entry; only the first count are meaningful)
 *   const unsigned char dlc_emu_param_is_pointer_NAME[]; 1 for each
 *       pointer parameter, else 0 (same length as the sizes): the driver
 *       checks that those arguments point into device memory
 * and, once per module (appended by the stand-in NVRTC):
 *   const int dlc_emu_abi_version = DLC_EMU_ABI_VERSION;
 *   const int dlc_emu_uses_collectives;  1 when the source names a barrier
 *       or warp intrinsic (the driver then launches with fibers = 1).
 *   const int dlc_emu_standin_max_threads_NAME;  optional, for a kernel
 *       with __launch_bounds__(N): N (the driver reports it as
 *       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK and refuses larger blocks
 *       with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, as a real driver does).
 */
#ifndef DLC_CUDA_EMULATION_ABI_H
#define DLC_CUDA_EMULATION_ABI_H

#include <stddef.h>

#define DLC_EMU_ABI_VERSION 1

/* Results of an entry; the values are the CUresult codes a real driver
 * reports for the same failure. */
#define DLC_EMU_OK 0
#define DLC_EMU_ERROR_INVALID_VALUE 1    /* CUDA_ERROR_INVALID_VALUE */
#define DLC_EMU_ERROR_ASSERT 710         /* CUDA_ERROR_ASSERT: assert() */
#define DLC_EMU_ERROR_ILLEGAL_INSTR 715  /* CUDA_ERROR_ILLEGAL_INSTRUCTION: __trap() */
#define DLC_EMU_ERROR_LAUNCH_FAILED 719  /* CUDA_ERROR_LAUNCH_FAILED: barrier
                                            deadlock/divergence, collective
                                            without fibers, other faults */

#ifdef __cplusplus
extern "C" {
#endif

/* Runs body(body_ctx, i) for every i in [0, n), possibly on several threads
 * at once; returns when all have finished. */
typedef void (*dlc_emu_parallel_for_fn)(void *pool, long long n,
                                        void (*body)(void *, long long),
                                        void *body_ctx);

/* One launch, as cuLaunchKernel describes it. */
typedef struct dlc_emu_launch {
  unsigned grid[3];  /* gridDim.x/y/z, each >= 1 */
  unsigned block[3]; /* blockDim.x/y/z, each >= 1, product <= 1024 */
  size_t dynamic_shared_bytes; /* `extern __shared__` bytes per block */
  /* Seeds the order in which blocks and, between barriers, the threads of a
   * block run; the same seed gives the same order. */
  unsigned long long seed;
  /* 1: each thread of a block runs as a fiber, so __syncthreads and warp
   * intrinsics work. 0: threads run one after another to completion (much
   * faster); a collective then fails the launch with
   * DLC_EMU_ERROR_LAUNCH_FAILED. */
  int fibers;
  /* As cuLaunchKernel's kernelParams: params[i] points at argument i. */
  void **params;
  /* Optional: runs blocks on the caller's worker threads; null = serially
   * on the calling thread. */
  dlc_emu_parallel_for_fn parallel_for;
  void *pool;
  char *error;       /* out: one line ("" when the launch succeeded) */
  size_t error_size; /* bytes at |error| */
} dlc_emu_launch;

#ifdef __cplusplus
}
#endif

#endif
