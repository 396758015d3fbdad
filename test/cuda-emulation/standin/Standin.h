//===- Standin.h - shared internals of libdlrt-cuda-standin.so --*- C++ -*-===//
// The stand-in for the CUDA driver, NVRTC, cuBLASLt and cuDNN is one shared
// library built from Driver.cpp/Memory.cpp (driver), Nvrtc.cpp, CublasLt.cpp
// and Cudnn.cpp. This header is what the parts share: device memory
// checks, stream-ordered execution, and the log. Test-only; never shipped.
#ifndef DLC_TEST_CUDA_STANDIN_STANDIN_H
#define DLC_TEST_CUDA_STANDIN_STANDIN_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace dlc::standin {

/// True once cuInit(0) has succeeded in this process. cuBLASLt and cuDNN
/// handles can only be created after it (a real library needs a context).
bool driverInitialized();

/// Checks that the |bytes| bytes at |pointer| lie inside one live device
/// allocation (cuMemAlloc*/cuMemAllocFromPoolAsync, not yet freed in stream
/// order). |bytes| == 0 checks only that |pointer| is inside or one past
/// the end of an allocation. On failure returns false and sets |*why| to
/// one line naming |what|, the address, the size and the nearest
/// allocation ("B: 4096 bytes at 0x... end 48 bytes past the allocation
/// 0x...+4048").
bool checkDeviceRange(const void *pointer, size_t bytes, const char *what,
                      std::string *why);

/// Runs |work| on |stream|'s worker thread after all work issued on it
/// before, in issue order (stream == nullptr: the legacy default stream).
/// |label| names the work in error messages ("cublasLtMatmul",
/// "kernel forward_k1_relu"). |work| returns CUDA_SUCCESS or an error code
/// and message; the first error is sticky: it fails the next
/// cuStreamSynchronize/cuCtxSynchronize and every later call, as a real
/// asynchronous error does. Returns CUDA_ERROR_INVALID_HANDLE when
/// |stream| is not a live stream, CUDA_ERROR_NOT_INITIALIZED before cuInit.
CUresult enqueue(CUstream stream, std::string label,
                 std::function<CUresult(std::string *message)> work);

/// Runs body(i) for i in [0, n) on the stand-in's worker pool
/// ($DLRT_CUDA_STANDIN_THREADS threads, default the hardware's) and
/// returns when all are done. Safe to call from stream workers.
void parallelFor(int64_t n, const std::function<void(int64_t)> &body);

/// Writes "dlrt-cuda-standin: <message>" to stderr when
/// $DLRT_CUDA_STANDIN_VERBOSE is set (always for |always|).
void log(const std::string &message, bool always = false);

} // namespace dlc::standin

#endif
