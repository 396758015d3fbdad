//===- Driver.cpp - stand-in CUDA driver: device, context, modules -------===//
// The CUDA driver API on the host: one sm_90 device with H100-like limits,
// its primary context, modules that are host shared objects built by the
// stand-in NVRTC, and kernel launches checked as a real driver checks them
// and run in stream order by the emulation header's scheduler.
#include "DriverInternal.h"

#include "dlc_cuda_emulation_abi.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

/// What the runtime checks before it trusts $DLRT_CUDA_STANDIN.
extern "C" const char dlrtCudaStandin[] =
    "dlrt CUDA stand-in 1 (host emulation of CUDA driver 13000, NVRTC 13.0, "
    "cuBLASLt and cuDNN for sm_90; test-only)";

namespace dlc::standin {
namespace {

constexpr int kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlock[3] = {1024, 1024, 64};
constexpr unsigned kMaxGrid[3] = {2147483647u, 65535u, 65535u};
constexpr int kDefaultSharedPerBlock = 48 * 1024;
constexpr int kOptinSharedPerBlock = 227 * 1024;
const char kDeviceName[] = "dlrt CUDA stand-in (host emulation)";

std::atomic<bool> gInitialized{false};

struct Context {
  std::mutex mutex;
  int references = 0; // cuDevicePrimaryCtxRetain - Release
};
Context gPrimary;
thread_local CUcontext tlsCurrent = nullptr;

CUcontext primaryHandle() { return reinterpret_cast<CUcontext>(&gPrimary); }

bool primaryActive() {
  std::lock_guard<std::mutex> lock(gPrimary.mutex);
  return gPrimary.references > 0;
}

using Entry = int (*)(dlc_emu_launch *);

struct Module;

struct Function {
  std::string name;
  Module *module = nullptr;
  Entry entry = nullptr;
  int paramCount = 0;
  const unsigned long long *paramSizes = nullptr;
  const unsigned char *paramIsPointer = nullptr; // may be null
  int maxDynamicShared = kDefaultSharedPerBlock;
  int maxThreads = kMaxThreadsPerBlock; // lowered by __launch_bounds__
};

struct Module {
  void *library = nullptr;
  int usesCollectives = 0;
  std::map<std::string, std::unique_ptr<Function>> functions;
  ~Module() {
    if (library)
      dlclose(library);
  }
};

// Never destroyed: queued launches may run while the process exits.
std::mutex &gModulesMutex = *new std::mutex;
auto &gModules = *new std::map<CUmodule, std::shared_ptr<Module>>;
auto &gFunctions =
    *new std::map<CUfunction, std::pair<Function *, std::shared_ptr<Module>>>;
std::atomic<uint64_t> gLaunchCounter{0};

void resetModules() {
  std::lock_guard<std::mutex> lock(gModulesMutex);
  gFunctions.clear();
  gModules.clear();
}

/// Bytes an ELF64 image spans (section headers normally come last).
size_t elfImageSize(const unsigned char *image) {
  const auto *header = reinterpret_cast<const Elf64_Ehdr *>(image);
  size_t end = header->e_shoff + size_t(header->e_shnum) * header->e_shentsize;
  end = std::max(end, size_t(header->e_phoff) +
                          size_t(header->e_phnum) * header->e_phentsize);
  return end;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void poolParallelFor(void *, long long n, void (*body)(void *, long long),
                     void *context) {
  parallelFor(n, [&](int64_t i) { body(context, i); });
}

CUresult launchError(CUresult code, const std::string &message) {
  log("cuLaunchKernel: " + message, true);
  return code;
}

} // namespace

bool driverInitialized() { return gInitialized.load(); }

CUresult checkInitialized() {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  return stickyError();
}

CUresult checkContext() {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (tlsCurrent != primaryHandle() || !primaryActive())
    return CUDA_ERROR_INVALID_CONTEXT;
  return stickyError();
}

} // namespace dlc::standin

using namespace dlc::standin;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  installFaultHandler();
  gInitialized.store(true);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion)
    return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, size_t(len), "%s", kDeviceName);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = deviceMemoryLimit();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                              CUdevice dev) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  // An H100 SXM's values (deviceQuery on CUDA 12/13); attributes not listed
  // report 0 (feature absent).
  static const std::pair<CUdevice_attribute, int> kAttributes[] = {
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, kDefaultSharedPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       kOptinSharedPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 * 1024},
      {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000}, // kHz
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 * 1024 * 1024},
      {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
      {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
      {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
  };
  int value = 0;
  for (const auto &[attribute, v] : kAttributes)
    if (attribute == attrib)
      value = v;
  *pi = value;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(gPrimary.mutex);
  ++gPrimary.references;
  *pctx = primaryHandle();
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  {
    std::lock_guard<std::mutex> lock(gPrimary.mutex);
    if (gPrimary.references == 0)
      return CUDA_ERROR_INVALID_CONTEXT;
    if (--gPrimary.references > 0)
      return CUDA_SUCCESS;
  }
  // The last release destroys the context: its streams, events, modules and
  // memory go, and so does a sticky error (the documented way to recover).
  resetStreams();
  resetModules();
  resetMemory();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && (ctx != primaryHandle() || !primaryActive()))
    return CUDA_ERROR_INVALID_CONTEXT;
  tlsCurrent = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!gInitialized.load())
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx =
      tlsCurrent == primaryHandle() && primaryActive() ? tlsCurrent : nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (std::memcmp(bytes, ELFMAG, SELFMAG) != 0) {
    // A fatbinary (magic 0xBA55ED50) holds GPU code; anything else (PTX
    // text) is not an image the stand-in can run either.
    uint32_t magic;
    std::memcpy(&magic, bytes, sizeof magic);
    log(std::string("cuModuleLoadData: not a stand-in module (") +
            (magic == 0xBA55ED50u ? "a CUDA fatbinary" : "not an ELF image") +
            "); compile with the stand-in NVRTC",
        true);
    return magic == 0xBA55ED50u ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                : CUDA_ERROR_INVALID_IMAGE;
  }
  const auto *header = reinterpret_cast<const Elf64_Ehdr *>(image);
  if (header->e_machine == 190 /* EM_CUDA */) {
    log("cuModuleLoadData: the image is a real cubin (ELF e_machine EM_CUDA); "
        "the stand-in runs only modules built by its own NVRTC",
        true);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (header->e_ident[EI_CLASS] != ELFCLASS64 ||
      header->e_machine != EM_X86_64 || header->e_type != ET_DYN)
    return CUDA_ERROR_INVALID_IMAGE;
  size_t size = elfImageSize(bytes);
  // A file of its own for each module: dlopen returns an already loaded
  // object when the path matches one, so /proc/self/fd/N (N reused) won't do.
  const char *tmp = std::getenv("TMPDIR");
  std::string path =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/dlrt-standin-module-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  bool written = write(fd, image, size) == ssize_t(size);
  close(fd);
  void *library =
      written ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  unlink(path.c_str());
  if (!library) {
    const char *error = dlerror();
    log(std::string("cuModuleLoadData: dlopen failed: ") +
            (error ? error : "short write"),
        true);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto *version =
      static_cast<const int *>(dlsym(library, "dlc_emu_abi_version"));
  auto *collectives =
      static_cast<const int *>(dlsym(library, "dlc_emu_uses_collectives"));
  if (!version || *version != DLC_EMU_ABI_VERSION || !collectives) {
    log("cuModuleLoadData: the module's dlc_emu_abi_version is " +
            (version ? std::to_string(*version) : std::string("missing")) +
            ", the stand-in's is " + std::to_string(DLC_EMU_ABI_VERSION),
        true);
    dlclose(library);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto m = std::make_shared<Module>();
  m->library = library;
  m->usesCollectives = *collectives;
  CUmodule handle = reinterpret_cast<CUmodule>(m.get());
  std::lock_guard<std::mutex> lock(gModulesMutex);
  gModules[handle] = std::move(m);
  *module = handle;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto it = gModules.find(hmod);
  if (it == gModules.end())
    return CUDA_ERROR_INVALID_HANDLE;
  for (auto f = gFunctions.begin(); f != gFunctions.end();)
    f = f->second.second == it->second ? gFunctions.erase(f) : std::next(f);
  // Launches still queued hold the module; dlclose waits for them.
  gModules.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                             const char *name) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!hfunc || !name)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto it = gModules.find(hmod);
  if (it == gModules.end())
    return CUDA_ERROR_INVALID_HANDLE;
  Module &m = *it->second;
  auto known = m.functions.find(name);
  if (known != m.functions.end()) {
    *hfunc = reinterpret_cast<CUfunction>(known->second.get());
    return CUDA_SUCCESS;
  }
  std::string n = name;
  auto entry =
      reinterpret_cast<Entry>(dlsym(m.library, ("dlc_emu_entry_" + n).c_str()));
  auto *count = static_cast<const int *>(
      dlsym(m.library, ("dlc_emu_param_count_" + n).c_str()));
  auto *sizes = static_cast<const unsigned long long *>(
      dlsym(m.library, ("dlc_emu_param_sizes_" + n).c_str()));
  if (!entry || !count || !sizes)
    return CUDA_ERROR_NOT_FOUND;
  auto f = std::make_unique<Function>();
  f->name = n;
  f->module = &m;
  f->entry = entry;
  f->paramCount = *count;
  f->paramSizes = sizes;
  f->paramIsPointer = static_cast<const unsigned char *>(
      dlsym(m.library, ("dlc_emu_param_is_pointer_" + n).c_str()));
  if (auto *bound = static_cast<const int *>(
          dlsym(m.library, ("dlc_emu_standin_max_threads_" + n).c_str())))
    if (*bound > 0 && *bound < kMaxThreadsPerBlock)
      f->maxThreads = *bound;
  CUfunction handle = reinterpret_cast<CUfunction>(f.get());
  gFunctions[handle] = {f.get(), it->second};
  m.functions[n] = std::move(f);
  *hfunc = handle;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                            CUfunction hfunc) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!pi)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto it = gFunctions.find(hfunc);
  if (it == gFunctions.end())
    return CUDA_ERROR_INVALID_HANDLE;
  const Function &f = *it->second.first;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = f.maxThreads;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = f.maxDynamicShared;
    break;
  // Host code has no registers or static shared memory the driver could
  // count; a modest register count keeps occupancy math sane.
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *pi = 32;
    break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    *pi = 0;
    break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *pi = 90;
    break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    *pi = -1;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// An H100's limits (2048 threads, 32 blocks, 64K registers and 228 KiB of
// shared memory per multiprocessor) for a kernel of 32 registers a thread
// (cuFuncGetAttribute's NUM_REGS) and |dynamicSMemSize| bytes of shared
// memory a block.
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
                                                     CUfunction func,
                                                     int blockSize,
                                                     size_t dynamicSMemSize) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!numBlocks || blockSize <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto it = gFunctions.find(func);
  if (it == gFunctions.end())
    return CUDA_ERROR_INVALID_HANDLE;
  if (blockSize > it->second.first->maxThreads) {
    *numBlocks = 0;
    return CUDA_SUCCESS;
  }
  int blocks = std::min(2048 / blockSize, 32);
  blocks = std::min(blocks, 65536 / (32 * blockSize));
  if (dynamicSMemSize > 0)
    blocks = std::min<int>(blocks, int(228 * 1024 / (dynamicSMemSize + 1024)));
  *numBlocks = std::max(blocks, 0);
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                            int value) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto it = gFunctions.find(hfunc);
  if (it == gFunctions.end())
    return CUDA_ERROR_INVALID_HANDLE;
  Function &f = *it->second.first;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    // Up to the opt-in limit less the (zero) static shared memory.
    if (value < 0 || value > kOptinSharedPerBlock)
      return CUDA_ERROR_INVALID_VALUE;
    f.maxDynamicShared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    return value >= -1 && value <= 100 ? CUDA_SUCCESS
                                       : CUDA_ERROR_INVALID_VALUE;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                        CUstream hStream, void **kernelParams, void **extra) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  Function *function;
  std::shared_ptr<Module> module;
  int maxShared, maxThreads;
  {
    std::lock_guard<std::mutex> lock(gModulesMutex);
    auto it = gFunctions.find(f);
    if (it == gFunctions.end())
      return CUDA_ERROR_INVALID_HANDLE;
    function = it->second.first;
    module = it->second.second;
    maxShared = function->maxDynamicShared;
    maxThreads = function->maxThreads;
  }
  if (!isLiveStream(hStream))
    return CUDA_ERROR_INVALID_HANDLE;
  const std::string &name = function->name;
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  auto dims = [](const unsigned *d) {
    return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
           std::to_string(d[2]);
  };
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || grid[i] > kMaxGrid[i])
      return launchError(CUDA_ERROR_INVALID_VALUE,
                         name + ": grid " + dims(grid) + " is outside 1.." +
                             dims(kMaxGrid));
    if (block[i] == 0 || block[i] > kMaxBlock[i])
      return launchError(CUDA_ERROR_INVALID_VALUE,
                         name + ": block " + dims(block) + " is outside 1.." +
                             dims(kMaxBlock));
  }
  uint64_t threads = uint64_t(blockDimX) * blockDimY * blockDimZ;
  if (threads > uint64_t(kMaxThreadsPerBlock))
    return launchError(CUDA_ERROR_INVALID_VALUE,
                       name + ": block " + dims(block) + " has " +
                           std::to_string(threads) +
                           " threads; at most 1024 per block");
  // Within the device's limit but beyond the kernel's (__launch_bounds__):
  // the driver's "too many resources requested for launch".
  if (threads > uint64_t(maxThreads))
    return launchError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                       name + ": block " + dims(block) + " has " +
                           std::to_string(threads) +
                           " threads; the kernel's __launch_bounds__ allow " +
                           std::to_string(maxThreads));
  if (int64_t(sharedMemBytes) > maxShared)
    return launchError(
        CUDA_ERROR_INVALID_VALUE,
        name + ": " + std::to_string(sharedMemBytes) +
            " bytes of dynamic shared memory exceed the kernel's limit of " +
            std::to_string(maxShared) +
            " (raise it with cuFuncSetAttribute("
            "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), up to " +
            std::to_string(kOptinSharedPerBlock) + ")");
  if (kernelParams && extra)
    return launchError(CUDA_ERROR_INVALID_VALUE,
                       name + ": both kernelParams and extra are given");
  int count = function->paramCount;
  if (count > 0 && !kernelParams && !extra)
    return launchError(CUDA_ERROR_INVALID_VALUE,
                       name + ": " + std::to_string(count) +
                           " parameters but kernelParams is null");

  // Copy the argument values now: the caller may change them at once.
  auto storage = std::make_shared<std::vector<std::vector<char>>>(count);
  if (kernelParams) {
    for (int i = 0; i < count; ++i) {
      const char *p = static_cast<const char *>(kernelParams[i]);
      (*storage)[i].assign(p, p + function->paramSizes[i]);
    }
  } else if (count > 0) {
    // extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
    // CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END}; arguments sit
    // at their natural alignment (assumed min(size, 8), which holds for scalars
    // and pointers).
    const char *buffer = nullptr;
    size_t bufferSize = 0;
    for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = static_cast<const char *>(e[1]);
      else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        bufferSize = *static_cast<size_t *>(e[1]);
      else
        return launchError(CUDA_ERROR_INVALID_VALUE,
                           name + ": unknown entry in extra");
    }
    size_t offset = 0;
    for (int i = 0; i < count; ++i) {
      size_t size = function->paramSizes[i];
      size_t align = size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
      offset = (offset + align - 1) / align * align;
      if (!buffer || offset + size > bufferSize)
        return launchError(
            CUDA_ERROR_INVALID_VALUE,
            name + ": the extra buffer of " + std::to_string(bufferSize) +
                " bytes is too small for parameter " + std::to_string(i));
      (*storage)[i].assign(buffer + offset, buffer + offset + size);
      offset += size;
    }
  }
  // As compute-sanitizer would: a pointer argument must be null or point
  // into (or one past) a live allocation.
  if (function->paramIsPointer) {
    for (int i = 0; i < count; ++i) {
      if (!function->paramIsPointer[i])
        continue;
      void *p = nullptr;
      std::memcpy(&p, (*storage)[i].data(), sizeof p);
      std::string why;
      std::string what = "kernel " + name + " argument " + std::to_string(i);
      if (p && !checkDeviceRange(p, 0, what.c_str(), &why))
        return launchError(CUDA_ERROR_INVALID_VALUE, why);
    }
  }
  static const uint64_t baseSeed = envUnsigned("DLRT_CUDA_STANDIN_SEED", 1);
  uint64_t seed =
      splitmix64(baseSeed ^ splitmix64(gLaunchCounter.fetch_add(1)));
  Entry entry = function->entry;
  int fibers = module->usesCollectives ? 1 : 0;
  log("launch " + name + " grid " + dims(grid) + " block " + dims(block) +
      " shared " + std::to_string(sharedMemBytes) +
      (fibers ? " (fibers)" : ""));
  return enqueue(hStream, "kernel " + name,
                 [=, module = std::move(module)](std::string *message) {
                   std::vector<void *> params(storage->size());
                   for (size_t i = 0; i < params.size(); ++i)
                     params[i] = (*storage)[i].data();
                   char error[1024] = "";
                   dlc_emu_launch launch{};
                   for (int i = 0; i < 3; ++i) {
                     launch.grid[i] = grid[i];
                     launch.block[i] = block[i];
                   }
                   launch.dynamic_shared_bytes = sharedMemBytes;
                   launch.seed = seed;
                   launch.fibers = fibers;
                   launch.params = params.data();
                   launch.parallel_for = poolParallelFor;
                   launch.pool = nullptr;
                   launch.error = error;
                   launch.error_size = sizeof error;
                   int result = entry(&launch);
                   if (result != DLC_EMU_OK)
                     *message = error;
                   return CUresult(result);
                 });
}

} // extern "C"
