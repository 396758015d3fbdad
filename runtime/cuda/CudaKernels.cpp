//===- CudaKernels.cpp - kernel load and launch on the CUDA device --------===//
// A package kernel's cubin for the device's arch, else its CUDA source
// compiled by NVRTC (several at once, cached on disk), loaded as a module of
// its own; launches size grid-stride kernels to one wave of the device.
#include "runtime/cuda/CudaDeviceImpl.h"
#include "runtime/cuda/KernelCompiler.h"

#include <algorithm>
#include <climits>
#include <thread>

namespace dlrt::cuda {
namespace {

/// The line codegen puts in the CUDA source of a kernel that walks its
/// elements in a grid-stride loop (codegen/Emitters.cpp, wrapCuda).
constexpr const char *kGridStrideMarker = "\n// dlc: grid-stride loop\n";

} // namespace

Status CudaDevice::loadModule(const std::string &name,
                              const std::vector<uint8_t> &image,
                              CUmodule *module, CUfunction *function) {
  *module = nullptr;
  *function = nullptr;
  if (CUresult r = cu_->cuModuleLoadData(module, image.data());
      r != CUDA_SUCCESS) {
    *module = nullptr;
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + name + "': " +
                             describeCuResult(*cu_, r, "cuModuleLoadData"));
  }
  if (CUresult r = cu_->cuModuleGetFunction(function, *module, name.c_str());
      r != CUDA_SUCCESS) {
    cu_->cuModuleUnload(*module);
    *module = nullptr;
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + name + "': " +
                             describeCuResult(*cu_, r, "cuModuleGetFunction"));
  }
  return Status::OK();
}

Status
CudaDevice::loadKernels(const std::vector<uint8_t> &,
                        const std::vector<KernelSpec> &kernels,
                        std::vector<std::unique_ptr<DeviceKernel>> *out) {
  out->clear();
  DLRT_TRY(makeCurrent());
  const size_t count = kernels.size();
  const std::string digits =
      std::to_string(ccMajor_) + std::to_string(ccMinor_);
  std::vector<std::vector<uint8_t>> images(count);
  std::vector<Status> errors(count);
  std::vector<char> embedded(count, 0), cacheHit(count, 0);
  std::vector<size_t> toCompile;
  for (size_t i = 0; i < count; ++i) {
    const KernelSpec &spec = kernels[i];
    auto it = std::find_if(
        spec.cubins.begin(), spec.cubins.end(),
        [&](const auto &c) { return c.first == arch_ || c.first == digits; });
    if (it != spec.cubins.end() && !it->second.empty()) {
      images[i] = it->second;
      embedded[i] = 1;
    } else if (spec.cuda_source.empty()) {
      return Status::error(DLRT_INTERNAL, "kernel '" + spec.name +
                                              "' has no cubin for " + arch_ +
                                              " and no CUDA source");
    } else {
      toCompile.push_back(i);
    }
  }

  // NVRTC compilations are independent: run them on several threads.
  const std::string cacheDir = kernelCacheDir();
  auto compile = [&](size_t i) {
    CompiledKernel compiled;
    errors[i] = compileKernel(kernels[i].name, kernels[i].cuda_source, arch_,
                              cacheDir, &compiled);
    images[i] = std::move(compiled.cubin);
    cacheHit[i] = compiled.cache_hit;
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next++) < toCompile.size();)
      compile(toCompile[j]);
  };
  // At most 16 threads: every NVRTC compilation needs its own memory.
  size_t threads = std::min<size_t>(
      {toCompile.size(), size_t(16),
       size_t(std::max(1u, std::thread::hardware_concurrency()))});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();

  std::vector<std::unique_ptr<DeviceKernel>> loaded;
  for (size_t i = 0; i < count; ++i) {
    DLRT_TRY(errors[i]);
    const KernelSpec &spec = kernels[i];
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    Status status = loadModule(spec.name, images[i], &module, &function);
    if (!status.ok() && embedded[i] && !spec.cuda_source.empty()) {
      // A package cubin the driver rejects (e.g. built by a newer
      // toolkit): fall back to compiling the source here.
      CompiledKernel compiled;
      DLRT_TRY(compileKernel(spec.name, spec.cuda_source, arch_, cacheDir,
                             &compiled));
      embedded[i] = 0;
      cacheHit[i] = compiled.cache_hit;
      status = loadModule(spec.name, compiled.cubin, &module, &function);
    }
    DLRT_TRY(status);
    if (embedded[i])
      ++embedded_;
    else if (cacheHit[i])
      ++cacheHits_;
    else
      ++compiled_;
    auto kernel = std::make_unique<CudaKernel>(
        ctx_, module, function, spec.name, spec.num_threads, spec.block_size);
    if (spec.cuda_source.find(kGridStrideMarker) != std::string::npos)
      kernel->max_blocks = oneWave(function, spec.block_size);
    loaded.push_back(std::move(kernel));
  }
  *out = std::move(loaded);
  return Status::OK();
}

int64_t CudaDevice::oneWave(CUfunction function, int32_t blockSize) const {
  const int block = blockSize > 0 ? blockSize : 256;
  if (smCount_ <= 0)
    return 0;
  // Blocks of this kernel one multiprocessor holds at once (registers,
  // shared memory and the thread limit; the driver's occupancy calculator
  // where it has one, else the thread limit alone).
  int perSm = 0;
  if (!cu_->cuOccupancyMaxActiveBlocksPerMultiprocessor ||
      cu_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, function, block,
                                                       0) != CUDA_SUCCESS ||
      perSm <= 0)
    perSm = threadsPerSm_ > 0 ? std::max(1, threadsPerSm_ / block) : 0;
  return int64_t(perSm) * smCount_;
}

Status CudaDevice::launch(DeviceKernel &kernel,
                          const std::vector<void *> &args) {
  auto *k = dynamic_cast<CudaKernel *>(&kernel);
  if (!k || k->ctx != ctx_)
    return Status::error(DLRT_INTERNAL,
                         "launch: the kernel was not loaded by this device");
  if (k->num_threads <= 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  const int64_t block = k->block_size > 0 ? k->block_size : 256;
  int64_t grid = (k->num_threads + block - 1) / block;
  // A grid-stride kernel needs no more blocks than the device runs at once:
  // each thread takes several elements (or vectors) instead.
  if (k->max_blocks > 0)
    grid = std::min(grid, k->max_blocks);
  if (grid > INT_MAX)
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + k->name +
                             "': " + std::to_string(k->num_threads) +
                             " threads need more blocks than a grid holds");
  // cuLaunchKernel takes a pointer to each argument value.
  std::vector<void *> values(args);
  std::vector<void *> params(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    params[i] = &values[i];
  if (CUresult r = cu_->cuLaunchKernel(
          k->function, unsigned(grid), 1, 1, unsigned(block), 1, 1, 0,
          ctx_->stream, params.empty() ? nullptr : params.data(), nullptr);
      r != CUDA_SUCCESS)
    return Status::error(DLRT_INTERNAL,
                         "kernel '" + k->name + "' (" + std::to_string(grid) +
                             " x " + std::to_string(block) + " threads): " +
                             describeCuResult(*cu_, r, "cuLaunchKernel"));
  return Status::OK();
}

} // namespace dlrt::cuda
