//===- Compile.cpp - host shared objects and NVRTC cubins -----------------===//
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#include "cuda/NvrtcBuiltins.h"

#include <dlfcn.h>

#ifndef DLC_CUDA_INCLUDE_DIR
#define DLC_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

using namespace mlir;

namespace dlc::codegen {

namespace {
/// Removes a scratch folder and what it holds when it goes out of scope.
struct ScratchDir {
  llvm::SmallString<128> path;
  std::vector<std::string> files;
  ~ScratchDir() {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  std::string file(StringRef name) {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    files.push_back(std::string(p));
    return std::string(p);
  }
};
} // namespace

FailureOr<std::vector<uint8_t>>
compileHostLibrary(Location loc, const std::string &source,
                   const std::string &compiler) {
  std::string program = compiler;
  if (!llvm::sys::path::is_absolute(compiler)) {
    auto found = llvm::sys::findProgramByName(compiler);
    if (!found)
      return emitError(loc)
             << "host C++ compiler '" << compiler << "' not found on PATH";
    program = *found;
  }
  ScratchDir dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("dlc-host", dir.path))
    return emitError(loc) << "cannot create a temporary folder: "
                          << ec.message();
  std::string src = dir.file("kernels.cpp"), so = dir.file("kernels.so"),
              log = dir.file("compile.log");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(src, ec);
    if (ec)
      return emitError(loc) << "cannot write " << src << ": " << ec.message();
    os << source;
  }
  // No -ffast-math / -Ofast: results must not depend on the compiler's
  // reassociation.
  // OpenMP parallelizes the outer loop of large kernels; a compiler without
  // it (clang without libomp) still builds the kernels serially.
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  int rc = 0;
  std::string errMsg;
  for (bool openmp : {true, false}) {
    // -fno-math-errno (after -fno-fast-math, which would reset it) lets
    // sqrtf become one instruction and vectorize; IEEE results are unchanged.
    // No -march: packages run on any x86-64.
    std::vector<StringRef> args = {program,           "-O3",   "-std=c++17",
                                   "-shared",         "-fPIC", "-fno-fast-math",
                                   "-fno-math-errno", "-w"};
    // Without the OpenMP runtime `omp simd` still marks loops vectorizable.
    args.push_back(openmp ? "-fopenmp" : "-fopenmp-simd");
    args.insert(args.end(), {StringRef("-o"), StringRef(so), StringRef(src)});
    errMsg.clear();
    rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects,
                                   /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                   &errMsg);
    if (rc == 0)
      break;
  }
  if (rc != 0) {
    std::string output;
    if (auto buf = llvm::MemoryBuffer::getFile(log))
      output = (*buf)->getBuffer().str();
    return emitError(loc) << "host kernel compilation with '" << program
                          << "' failed (exit " << rc << ")"
                          << (errMsg.empty() ? "" : ": " + errMsg) << "\n"
                          << output;
  }
  auto buf = llvm::MemoryBuffer::getFile(so, /*IsText=*/false);
  if (!buf)
    return emitError(loc) << "cannot read " << so << ": "
                          << buf.getError().message();
  StringRef bytes = (*buf)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

/// Loads NVRTC's builtins library once per process (see NvrtcBuiltins.h);
/// returns why it could not, or "" when NVRTC will find it.
static const std::string &nvrtcBuiltinsProblem() {
  static const std::string problem = [] {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
      return std::string("nvrtcVersion failed");
    // The definition inside libnvrtc, not a PLT stub of this binary.
    const void *symbol = dlsym(RTLD_DEFAULT, "nvrtcVersion");
    if (!symbol)
      symbol = reinterpret_cast<const void *>(&nvrtcVersion);
    std::string error;
    if (!dlrt::cuda::preloadNvrtcBuiltins(symbol, major, minor, &error))
      return error;
    return std::string();
  }();
  return problem;
}

bool detail::nvrtcCompile(const KernelSource &kernel, StringRef arch,
                          std::vector<uint8_t> *cubin, std::string *error) {
  const std::string &builtinsProblem = nvrtcBuiltinsProblem();
  nvrtcProgram prog;
  std::string file = kernel.name + ".cu";
  nvrtcResult res = nvrtcCreateProgram(&prog, kernel.cudaSource.c_str(),
                                       file.c_str(), 0, nullptr, nullptr);
  if (res != NVRTC_SUCCESS) {
    *error = "nvrtcCreateProgram failed for kernel '" + kernel.name +
             "': " + nvrtcGetErrorString(res);
    return false;
  }
  std::string archOpt = ("--gpu-architecture=" + arch).str();
  std::string includeOpt = std::string("-I") + DLC_CUDA_INCLUDE_DIR;
  const char *opts[] = {archOpt.c_str(), includeOpt.c_str(), "--std=c++17"};
  res = nvrtcCompileProgram(prog, 3, opts);
  std::string log;
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(logSize - 1);
  }
  if (res != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    *error = "NVRTC failed to compile kernel '" + kernel.name + "' for " +
             arch.str() + ": " + nvrtcGetErrorString(res) +
             (builtinsProblem.empty() ? "" : " (" + builtinsProblem + ")") +
             "\n" + log;
    return false;
  }
  size_t size = 0;
  res = nvrtcGetCUBINSize(prog, &size);
  cubin->assign(size, 0);
  if (res == NVRTC_SUCCESS && size > 0)
    res = nvrtcGetCUBIN(prog, reinterpret_cast<char *>(cubin->data()));
  nvrtcDestroyProgram(&prog);
  if (res != NVRTC_SUCCESS || size == 0) {
    *error = "NVRTC produced no cubin for kernel '" + kernel.name + "' (" +
             arch.str() + "): " + nvrtcGetErrorString(res) +
             "; the architecture must be a real one such as sm_90";
    return false;
  }
  return true;
}

FailureOr<std::vector<uint8_t>>
compileWithNVRTC(Location loc, const KernelSource &kernel, StringRef arch) {
  std::vector<uint8_t> cubin;
  std::string error;
  if (!detail::nvrtcCompile(kernel, arch, &cubin, &error))
    return emitError(loc) << error;
  return cubin;
}

} // namespace dlc::codegen
