//===- dlc_cuda_emulation.h - CUDA C++ kernels on the host -----*- C++ -*-===//
//
// Lets the host C++ compiler (g++, -std=c++17) compile the CUDA C++ that dlc
// generates and run it with a given grid and block, for tests: CUDA's own
// <cuda_fp16.h>/<cuda_bf16.h> give __half and __nv_bfloat16 with CUDA's
// rounding; the parts below give the keywords, the built-in variables, the
// device math, warp intrinsics, tensor-core mma.sync, atomics and the scheduler that runs a grid
// (dlc_emu::run, DLC_EMU_EXPORT_KERNEL). Test-only; never shipped. What it
// does not model is listed in test/cuda-emulation/README.md.
//
// Include this header before the kernel source. __CUDA_ARCH__ must not be
// defined while it is included (CUDA's half headers would switch to inline
// PTX); the stand-in NVRTC defines it afterwards. The C++ launch helper for
// tests is in dlc_cuda_emulation/Launch.h.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_H
#define DLC_CUDA_EMULATION_H

#ifdef __CUDA_ARCH__
#error "dlc_cuda_emulation.h must be included before __CUDA_ARCH__ is defined"
#endif

// CUDA's half types first: they bring vector_types.h (dim3, uint3) and
// crt/host_defines.h (__device__, __host__, __forceinline__, __align__ as
// host macros).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if !defined(__x86_64__) || defined(DLC_EMU_UCONTEXT)
#include <ucontext.h>
#define DLC_EMU_USE_UCONTEXT 1
#endif

#include <limits>
#include <type_traits>
#include <utility>

#include "dlc_cuda_emulation_abi.h"

// Everything the header defines is hidden, so the kernel modules the
// stand-in NVRTC builds (each with its own copy of the scheduler state) never
// bind to one another's definitions.
#pragma GCC visibility push(hidden)
// In this order: each part uses the ones before it.
// clang-format off
#include "dlc_cuda_emulation/Builtins.h"
#include "dlc_cuda_emulation/Scheduler.h"
#include "dlc_cuda_emulation/Collectives.h"
#include "dlc_cuda_emulation/TensorCores.h"
#include "dlc_cuda_emulation/Atomics.h"
// clang-format on
#pragma GCC visibility pop

#endif // DLC_CUDA_EMULATION_H
