//===- CudaDevice.h - CUDA-specific queries on a CUDA device ----*- C++ -*-===//
// The CUDA device itself is created with dlrt::createCudaDevice (Device.h);
// this header adds what only tests and tools need.
#ifndef DLRT_CUDA_CUDADEVICE_H
#define DLRT_CUDA_CUDADEVICE_H

#include <cstdint>

#include "../src/Device.h"

namespace dlrt {

/// How the kernels loaded by a CUDA device so far got their cubins.
struct CudaKernelStats {
  int64_t embedded = 0;   ///< a package cubin for the device's arch
  int64_t cache_hits = 0; ///< read from the on-disk cubin cache
  int64_t compiled = 0;   ///< compiled by NVRTC
};

/// Fills |*out| when |device| is a CUDA device; false otherwise.
bool getCudaKernelStats(const Device &device, CudaKernelStats *out);

} // namespace dlrt

#endif
