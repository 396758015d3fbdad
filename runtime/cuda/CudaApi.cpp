//===- CudaApi.cpp - opening the CUDA libraries with dlopen ---------------===//
#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/NvrtcBuiltins.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

namespace dlrt::cuda {
namespace {

// The libraries' sonames follow the headers we were built with (CUDA 13:
// libnvrtc.so.13, libcublasLt.so.13; cuDNN 9: libcudnn.so.9), so the ABI
// of every call matches the declarations used here.
std::string cudaMajor() { return std::to_string(CUDA_VERSION / 1000); }

#define DLRT_CUDA_STR(x) #x
#define DLRT_CUDA_XSTR(x) DLRT_CUDA_STR(x)

/// dlopens the first of |names| that loads, trying each bare name (the
/// loader's search path) and then under $CUDA_HOME/lib64 and
/// /usr/local/cuda/lib64. Returns nullptr and sets |*error| to the first
/// dlerror() otherwise.
void *openLibrary(const std::vector<std::string> &names, std::string *error) {
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  error->clear();
  for (const std::string &name : names) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    if (error->empty())
      if (const char *e = dlerror())
        *error = e;
    for (const std::string &dir : dirs)
      if (void *handle = dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL))
        return handle;
  }
  if (error->empty())
    *error = "not found";
  return nullptr;
}

/// The library named by $DLRT_CUDA_STANDIN, opened once: a test-only stand-in
/// (test/cuda-emulation/standin) that provides the driver, NVRTC, cuBLASLt
/// and cuDNN on the host. Null with |*error| set when the variable names
/// something that is not loadable or not the stand-in; never falls back to
/// the real libraries.
void *openStandin(std::string *error) {
  static std::mutex mutex;
  static void *handle = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (handle)
    return handle;
  const char *path = cudaStandinPath();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    *error = std::string("DLRT_CUDA_STANDIN=") + path +
             " cannot be loaded (" + (e ? e : "unknown error") + ")";
    return nullptr;
  }
  if (!dlsym(h, "dlrtCudaStandin")) {
    dlclose(h);
    *error = std::string("DLRT_CUDA_STANDIN=") + path +
             " is not the dlrt CUDA stand-in (it lacks the symbol "
             "dlrtCudaStandin); unset DLRT_CUDA_STANDIN to use the real CUDA "
             "libraries";
    return nullptr;
  }
  handle = h;
  return handle;
}

/// Opens |names| as openLibrary does, or the stand-in when
/// $DLRT_CUDA_STANDIN is set; |*standinError| is set when the stand-in
/// was asked for and failed (the message is then complete by itself).
void *openCudaLibrary(const std::vector<std::string> &names, std::string *error,
                      bool *standinFailed) {
  *standinFailed = false;
  if (cudaStandinPath()) {
    void *handle = openStandin(error);
    *standinFailed = handle == nullptr;
    return handle;
  }
  return openLibrary(names, error);
}

/// Resolves |symbol| in |handle| into |*slot|; false if it is missing.
template <typename Fn>
bool resolve(void *handle, const char *symbol, Fn *slot) {
  *slot = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return *slot != nullptr;
}

Status missingSymbol(const char *library, const char *symbol) {
  return Status::error(DLRT_UNAVAILABLE, std::string(library) + " lacks " +
                                             symbol +
                                             " (the library is too old?)");
}

/// Loads a library once per process and keeps its table; a failure is not
/// cached, so a later call tries again.
template <typename Api, typename LoadFn>
Status loadOnce(std::mutex &mutex, Api *&table, const Api **out, LoadFn load) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!table) {
    auto api = std::make_unique<Api>();
    Status status = load(*api);
    if (!status.ok())
      return status;
    table = api.release(); // lives until the process exits
  }
  *out = table;
  return Status::OK();
}

Status loadDriverImpl(DriverApi &api) {
  static const char *kLib = "libcuda.so.1";
  std::string error;
  bool standinFailed = false;
  void *handle = openCudaLibrary({kLib}, &error, &standinFailed);
  if (standinFailed)
    return Status::error(DLRT_UNAVAILABLE, error);
  if (!handle)
    return Status::error(DLRT_UNAVAILABLE, "no CUDA driver: cannot load " +
                                               std::string(kLib) + " (" +
                                               error + ")");
  if (!resolve(handle, "cuInit", &api.cuInit))
    return missingSymbol(kLib, "cuInit");
  if (!resolve(handle, "cuGetErrorName", &api.cuGetErrorName))
    return missingSymbol(kLib, "cuGetErrorName");
  if (!resolve(handle, "cuGetErrorString", &api.cuGetErrorString))
    return missingSymbol(kLib, "cuGetErrorString");
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS)
    return Status::error(DLRT_UNAVAILABLE,
                         "no usable CUDA device: " +
                             describeCuResult(api, r, "cuInit"));

  // cuGetProcAddress returns the variant of each entry point that matches
  // the API version of the header we were compiled with.
  decltype(&::cuGetProcAddress) getProc = nullptr;
  resolve(handle, DLRT_CUDA_XSTR(cuGetProcAddress), &getProc);
  auto lookup = [&](const char *base, const char *versioned,
                    auto *slot) -> bool {
    if (getProc) {
      void *fn = nullptr;
      CUdriverProcAddressQueryResult found;
      if (getProc(base, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                  &found) == CUDA_SUCCESS &&
          found == CU_GET_PROC_ADDRESS_SUCCESS && fn) {
        *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(fn);
        return true;
      }
    }
    return resolve(handle, versioned, slot);
  };
#define DLRT_CUDA_LOAD(name)                                                   \
  if (!lookup(#name, DLRT_CUDA_XSTR(name), &api.name))                         \
    return missingSymbol(kLib, DLRT_CUDA_XSTR(name));
  DLRT_CUDA_DRIVER_FUNCTIONS(DLRT_CUDA_LOAD)
#undef DLRT_CUDA_LOAD
  api.has_graphs = true;
#define DLRT_CUDA_LOAD_OPTIONAL(name)                                          \
  api.has_graphs &= lookup(#name, DLRT_CUDA_XSTR(name), &api.name);
  DLRT_CUDA_GRAPH_FUNCTIONS(DLRT_CUDA_LOAD_OPTIONAL)
#undef DLRT_CUDA_LOAD_OPTIONAL
#define DLRT_CUDA_LOAD_OPTIONAL(name)                                          \
  if (!lookup(#name, DLRT_CUDA_XSTR(name), &api.name))                         \
    api.name = nullptr;
  DLRT_CUDA_OCCUPANCY_FUNCTIONS(DLRT_CUDA_LOAD_OPTIONAL)
#undef DLRT_CUDA_LOAD_OPTIONAL
  if (CUresult r = api.cuDriverGetVersion(&api.driver_version);
      r != CUDA_SUCCESS)
    return Status::error(DLRT_UNAVAILABLE,
                         describeCuResult(api, r, "cuDriverGetVersion"));
  return Status::OK();
}

/// Opens one of |names| and resolves every entry of a function list.
#define DLRT_CUDA_LOAD_PLAIN(name)                                             \
  if (!resolve(handle, #name, &api.name))                                      \
    return missingSymbol(loaded, #name);

std::string unavailable(const std::vector<std::string> &names,
                        const std::string &error) {
  std::string joined;
  for (const std::string &n : names)
    joined += (joined.empty() ? "" : " or ") + n;
  return "cannot load " + joined + " (" + error + ")";
}

} // namespace

const char *cudaStandinPath() {
  const char *path = std::getenv("DLRT_CUDA_STANDIN");
  return path && *path ? path : nullptr;
}

std::string describeCuResult(const DriverApi &api, CUresult result,
                             const char *call) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  std::string message = std::string(call) + " failed: ";
  message += name ? name : "CUresult " + std::to_string(int(result));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}

Status loadDriver(const DriverApi **out) {
  static std::mutex mutex;
  static DriverApi *table = nullptr;
  return loadOnce(mutex, table, out, loadDriverImpl);
}

Status loadNvrtc(const NvrtcApi **out) {
  static std::mutex mutex;
  static NvrtcApi *table = nullptr;
  return loadOnce(mutex, table, out, [](NvrtcApi &api) -> Status {
    const std::vector<std::string> names = {"libnvrtc.so." + cudaMajor(),
                                            "libnvrtc.so"};
    std::string error;
    bool standinFailed = false;
    void *handle = openCudaLibrary(names, &error, &standinFailed);
    if (standinFailed)
      return Status::error(DLRT_UNAVAILABLE, error);
    if (!handle)
      return Status::error(DLRT_UNAVAILABLE,
                           "no NVRTC: " + unavailable(names, error));
    const char *loaded = "libnvrtc";
    DLRT_NVRTC_FUNCTIONS(DLRT_CUDA_LOAD_PLAIN)
    if (nvrtcResult r = api.nvrtcVersion(&api.major, &api.minor);
        r != NVRTC_SUCCESS)
      return Status::error(DLRT_UNAVAILABLE,
                           std::string("nvrtcVersion failed: ") +
                               api.nvrtcGetErrorString(r));
    // NVRTC opens its builtins by bare name; a toolkit outside the loader's
    // search path needs them loaded from libnvrtc's folder first. The
    // stand-in compiles with the host compiler and has no builtins.
    std::string builtinsError;
    if (!cudaStandinPath() &&
        !preloadNvrtcBuiltins(reinterpret_cast<const void *>(api.nvrtcVersion),
                              api.major, api.minor, &builtinsError))
      return Status::error(DLRT_UNAVAILABLE,
                           "NVRTC cannot compile: " + builtinsError);
    return Status::OK();
  });
}

Status loadCublasLt(const CublasLtApi **out) {
  static std::mutex mutex;
  static CublasLtApi *table = nullptr;
  return loadOnce(mutex, table, out, [](CublasLtApi &api) -> Status {
    const std::vector<std::string> names = {"libcublasLt.so." + cudaMajor()};
    std::string error;
    bool standinFailed = false;
    void *handle = openCudaLibrary(names, &error, &standinFailed);
    if (standinFailed)
      return Status::error(DLRT_UNAVAILABLE, error);
    if (!handle)
      return Status::error(DLRT_UNAVAILABLE,
                           "no cuBLASLt: " + unavailable(names, error));
    const char *loaded = "libcublasLt";
    DLRT_CUBLASLT_FUNCTIONS(DLRT_CUDA_LOAD_PLAIN)
    return Status::OK();
  });
}

Status loadCudnn(const CudnnApi **out) {
  static std::mutex mutex;
  static CudnnApi *table = nullptr;
  return loadOnce(mutex, table, out, [](CudnnApi &api) -> Status {
    const std::vector<std::string> names = {"libcudnn.so." +
                                            std::to_string(CUDNN_MAJOR)};
    std::string error;
    bool standinFailed = false;
    void *handle = openCudaLibrary(names, &error, &standinFailed);
    if (standinFailed)
      return Status::error(DLRT_UNAVAILABLE, error);
    if (!handle)
      return Status::error(DLRT_UNAVAILABLE,
                           "no cuDNN: " + unavailable(names, error));
    const char *loaded = "libcudnn";
    DLRT_CUDNN_FUNCTIONS(DLRT_CUDA_LOAD_PLAIN)
    return Status::OK();
  });
}

} // namespace dlrt::cuda
