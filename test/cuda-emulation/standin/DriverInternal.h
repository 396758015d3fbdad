//===- DriverInternal.h - shared by the stand-in driver's files -*- C++ -*-===//
// Driver.cpp (init, device, context, modules, launches), Streams.cpp
// (streams, events, the worker pool) and Memory.cpp (allocations, pools,
// copies, the fault handler) share these. Not used by the cuBLASLt and cuDNN
// parts, which only see Standin.h. Test-only.
#ifndef DLC_TEST_CUDA_STANDIN_DRIVERINTERNAL_H
#define DLC_TEST_CUDA_STANDIN_DRIVERINTERNAL_H

#include "Standin.h"

#include <cstdint>
#include <string>

namespace dlc::standin {

/// The first asynchronous error of the context (CUDA_SUCCESS while none):
/// a failed kernel or library call poisons the context as on a GPU.
CUresult stickyError();
/// Records |error| as the context's sticky error unless one is set already.
void setStickyError(CUresult error);

/// CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_INVALID_CONTEXT
/// when the calling thread has no current (live) context, else the sticky
/// error (CUDA_SUCCESS when none).
CUresult checkContext();

/// CUDA_ERROR_NOT_INITIALIZED before cuInit, else the sticky error.
CUresult checkInitialized();

/// True when |stream| is the legacy/per-thread default stream or a live
/// stream created by cuStreamCreate.
bool isLiveStream(CUstream stream);

/// Waits until all work issued on |stream| so far has run; returns the
/// sticky error (or CUDA_ERROR_INVALID_HANDLE for a dead stream).
CUresult synchronizeStream(CUstream stream);

/// Waits until every stream is idle (cuCtxSynchronize); returns the sticky
/// error.
CUresult synchronizeAll();

/// Destroys every stream and event (the primary context's last release).
void resetStreams();

/// Releases memory that pools keep beyond their release threshold; called
/// when the host synchronizes, as the real driver does.
void trimPools();

/// Frees every allocation, pool and cached block (the primary context's
/// last release).
void resetMemory();

/// Total bytes the stand-in lets be allocated at once
/// ($DLRT_CUDA_STANDIN_MEMORY_BYTES, default 80 GiB capped at half the
/// host's memory); also what cuDeviceTotalMem reports.
size_t deviceMemoryLimit();

/// The work (a kernel or library call) the calling thread runs now, or null;
/// the fault handler names it.
const char *currentOperation();
/// Sets the calling thread's operation; returns the previous one.
const char *setCurrentOperation(const char *label);

/// True on stream worker threads and pool threads running stream work:
/// there, memory whose free was issued later is still live.
bool onStreamWorker();

/// Installs the SIGSEGV/SIGBUS handler (once) and an alternate signal stack
/// for the calling thread (once per thread).
void installFaultHandler();
void ensureAltStack();

/// $NAME parsed as a non-negative integer, or |fallback| when unset or not a
/// number.
uint64_t envUnsigned(const char *name, uint64_t fallback);

} // namespace dlc::standin

#endif
