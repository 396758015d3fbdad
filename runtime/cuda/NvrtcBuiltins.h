//===- NvrtcBuiltins.h - letting NVRTC find its builtins library ---------===//
//
// Shared by the compiler (codegen links NVRTC) and the runtime (which opens
// it with dlopen); header-only, no MLIR.
//
// NVRTC opens libnvrtc-builtins.so.<major>.<minor> by its bare name when it
// compiles, so only the loader's search path finds it. With a toolkit that is
// not in that path -- /usr/local/cuda without an ld.so.conf.d entry, e.g. a
// toolkit unpacked or bind-mounted into a container -- libnvrtc itself loads
// (through RUNPATH or an absolute path) but every compile then fails with
// NVRTC_ERROR_BUILTIN_OPERATION_FAILURE. Loading the builtins library from
// the folder libnvrtc was loaded from, RTLD_GLOBAL, before the first compile
// makes NVRTC's own dlopen of that soname return the library already loaded.
//
//===----------------------------------------------------------------------===//
#ifndef DLRT_CUDA_NVRTCBUILTINS_H
#define DLRT_CUDA_NVRTCBUILTINS_H

#include <dlfcn.h>

#include <string>

namespace dlrt::cuda {

/// Makes libnvrtc-builtins.so.|major|.|minor| loadable for NVRTC: nothing to
/// do when the loader's search path finds it, else it is loaded from the
/// folder of the library that holds |nvrtcSymbol| (any NVRTC function, e.g.
/// `nvrtcVersion`, as returned by dlsym or taken by address). |major| and
/// |minor| are NVRTC's version (`nvrtcVersion`). Returns false and sets
/// |*error| (naming the paths tried) when neither finds it.
inline bool preloadNvrtcBuiltins(const void *nvrtcSymbol, int major, int minor,
                                 std::string *error) {
  const std::string soname = "libnvrtc-builtins.so." + std::to_string(major) +
                             "." + std::to_string(minor);
  if (dlopen(soname.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return true; // the handle is kept: NVRTC needs the library loaded
  Dl_info info{};
  if (!dladdr(nvrtcSymbol, &info) || !info.dli_fname) {
    *error = soname + " is not in the loader's search path, and the folder of "
                      "libnvrtc is unknown (dladdr failed)";
    return false;
  }
  std::string dir(info.dli_fname);
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  const std::string path = dir + soname;
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return true;
  const char *why = dlerror();
  *error = soname + " is neither in the loader's search path nor at " + path +
           (why ? std::string(" (") + why + ")" : std::string());
  return false;
}

} // namespace dlrt::cuda

#endif // DLRT_CUDA_NVRTCBUILTINS_H
