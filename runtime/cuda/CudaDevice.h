//===- CudaDevice.h - CUDA-specific queries on a CUDA device ----*- C++ -*-===//
// The CUDA device itself is created with dlrt::createCudaDevice (Device.h);
// this header adds what only tests and tools need.
#ifndef DLRT_CUDA_CUDADEVICE_H
#define DLRT_CUDA_CUDADEVICE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device/Device.h"

namespace dlrt {

/// How the kernels loaded by a CUDA device so far got their cubins.
struct CudaKernelStats {
  int64_t embedded = 0;   ///< a package cubin for the device's arch
  int64_t cache_hits = 0; ///< read from the on-disk cubin cache
  int64_t compiled = 0;   ///< compiled by NVRTC
};

/// Fills |*out| when |device| is a CUDA device; false otherwise.
bool getCudaKernelStats(const Device &device, CudaKernelStats *out);

/// The CUDA C++ kernels a CUDA device compiles with NVRTC for itself (the
/// gemm epilogues' fallbacks: ReLU, ReLU bit-mask write and apply), as
/// (kernel name, source) pairs, so that tests can compile each for every
/// supported arch (the stand-in's NVRTC builds them for the host instead).
std::vector<std::pair<std::string, std::string>> cudaRuntimeKernelSources();

} // namespace dlrt

#endif
