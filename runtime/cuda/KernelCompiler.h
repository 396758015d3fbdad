//===- KernelCompiler.h - NVRTC compilation with an on-disk cache -*- C++
//-*-===//
// Compiles generated CUDA C++ kernels to cubins with NVRTC and caches the
// cubins on disk by content hash. Needs NVRTC only, not a GPU or driver.
#ifndef DLRT_CUDA_KERNELCOMPILER_H
#define DLRT_CUDA_KERNELCOMPILER_H

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device/Device.h"

namespace dlrt::cuda {

/// Lowercase hex SHA-256 (FIPS 180-4) of |data|.
std::string sha256Hex(const std::string &data);

/// The cubin cache folder: $DLRT_CACHE_DIR if set and not empty, else
/// $HOME/.cache/dlrt; "" when neither can be determined (no caching).
std::string kernelCacheDir();

/// The CUDA header folder passed to NVRTC with -I: $CUDA_HOME/include, else
/// /usr/local/cuda/include; "" if neither exists.
std::string cudaIncludeDir();

/// Result of compileKernel.
struct CompiledKernel {
  std::vector<uint8_t> cubin; ///< ELF image for cuModuleLoadData
  bool cache_hit = false;     ///< read from the cache, NVRTC not run
  std::string cache_path;     ///< the cache file ("" if uncached)
};

/// Compiles |source| (one kernel's CUDA C++; |name| is used in messages)
/// for |arch| (e.g. "sm_90") with NVRTC: --gpu-architecture=<arch>
/// --std=c++17 -I<cudaIncludeDir()> and kNvrtcArithmeticOptions
/// (NvrtcOptions.h: --fmad=false, as dlc compiles embedded cubins). When |cache_dir| is not empty the cubin
/// is looked up there first under the SHA-256 of (source, arch, NVRTC
/// version, options) and stored there after a compilation (written to a
/// temporary file and renamed, so readers never see a partial cubin; a
/// cache that cannot be written is skipped silently). Thread-safe.
/// Errors: DLRT_UNAVAILABLE (NVRTC cannot be loaded), DLRT_INTERNAL
/// (compilation failed; the message holds the NVRTC log).
Status compileKernel(const std::string &name, const std::string &source,
                     const std::string &arch, const std::string &cache_dir,
                     CompiledKernel *out);

} // namespace dlrt::cuda

#endif
