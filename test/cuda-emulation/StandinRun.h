//===- StandinRun.h - dlexec kernels on the stand-in and the host -*- C++ -*-===//
//
// Test helpers shared by the cuda-emulation tests of dlc's kernels: a dlexec
// function's kernels run in order on the host library (emitHostSource) and
// on the CUDA stand-in (its NVRTC and driver, loaded with dlopen since its
// NVRTC would clash with the real one codegen links), every buffer where
// the runtime puts it (inputs and variables in allocations of their own,
// activations at their planned arena offsets).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TEST_CUDA_EMULATION_STANDINRUN_H
#define DLC_TEST_CUDA_EMULATION_STANDINRUN_H

#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "compiler/InitAll/InitAll.h"
#include "dialects/Exec/ExecOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace dlc::codegen::test {
using namespace mlir;

/// A host library compiled from |source| and loaded with dlopen.
class HostLib {
public:
  explicit HostLib(const std::string &source) {
    MLIRContext ctx;
    auto so = compileHostLibrary(UnknownLoc::get(&ctx), source);
    if (failed(so))
      return;
    llvm::SmallString<128> p;
    int fd;
    if (llvm::sys::fs::createTemporaryFile("dlc-kernel-test", "so", fd, p))
      return;
    ::close(fd);
    path = std::string(p);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(so->data()), so->size());
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
  ~HostLib() {
    if (handle)
      dlclose(handle);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  template <typename Fn> Fn get(const char *name) {
    return handle ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
  }

private:
  void *handle = nullptr;
  std::string path;
};

/// The stand-in's driver and NVRTC entry points, from dlopen (its NVRTC
/// would clash with the real one codegen links).
struct Standin {
  void *handle = nullptr;
#define DLC_STANDIN_FN(name, symbol) decltype(&::name) name = nullptr;
#define DLC_STANDIN_FNS(X)                                                     \
  X(cuInit, "cuInit")                                                          \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                      \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                                        \
  X(cuCtxSynchronize, "cuCtxSynchronize")                                      \
  X(cuModuleLoadData, "cuModuleLoadData")                                      \
  X(cuModuleGetFunction, "cuModuleGetFunction")                                \
  X(cuMemAlloc, "cuMemAlloc_v2")                                               \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                                           \
  X(cuLaunchKernel, "cuLaunchKernel")                                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor")                             \
  X(nvrtcCreateProgram, "nvrtcCreateProgram")                                  \
  X(nvrtcCompileProgram, "nvrtcCompileProgram")                                \
  X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize")                          \
  X(nvrtcGetProgramLog, "nvrtcGetProgramLog")                                  \
  X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize")                                    \
  X(nvrtcGetCUBIN, "nvrtcGetCUBIN")                                            \
  X(nvrtcDestroyProgram, "nvrtcDestroyProgram")
  DLC_STANDIN_FNS(DLC_STANDIN_FN)
#undef DLC_STANDIN_FN

  bool load() {
    handle = dlopen(DLC_STANDIN_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle)
      return false;
#define DLC_STANDIN_SYM(name, symbol)                                          \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, symbol));              \
  if (!name)                                                                   \
    return false;
    DLC_STANDIN_FNS(DLC_STANDIN_SYM)
#undef DLC_STANDIN_SYM
    return true;
  }

  /// Loads the stand-in and makes its device's primary context current.
  ::testing::AssertionResult start() {
    if (!load())
      return ::testing::AssertionFailure()
             << DLC_STANDIN_PATH << ": " << dlerror();
    CUcontext context = nullptr;
    if (cuInit(0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&context, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(context) != CUDA_SUCCESS)
      return ::testing::AssertionFailure()
             << "the stand-in's primary context cannot be made current";
    return ::testing::AssertionSuccess();
  }

  /// Compiles |k| with the stand-in NVRTC for sm_90 and loads it.
  CUfunction compile(const KernelSource &k) {
    nvrtcProgram prog = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&prog, k.cudaSource.c_str(), "k.cu", 0,
                                 nullptr, nullptr),
              NVRTC_SUCCESS);
    const char *opts[] = {"--gpu-architecture=sm_90", "--std=c++17"};
    nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
    size_t logSize = 0;
    nvrtcGetProgramLogSize(prog, &logSize);
    std::string log(logSize, '\0');
    nvrtcGetProgramLog(prog, log.data());
    EXPECT_EQ(r, NVRTC_SUCCESS) << log << "\n" << k.cudaSource;
    size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    std::string image(size, '\0');
    nvrtcGetCUBIN(prog, image.data());
    nvrtcDestroyProgram(&prog);
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    if (r != NVRTC_SUCCESS ||
        cuModuleLoadData(&module, image.data()) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fn, module, k.name.c_str()) != CUDA_SUCCESS)
      return nullptr;
    return fn;
  }
};

/// Parses |text| (a dlexec module) into |module| in |ctx|, with every dlc
/// dialect loaded, and emits its CUDA kernels into |kernels| by name.
inline void parseAndEmit(MLIRContext &ctx, const char *text,
                         OwningOpRef<ModuleOp> &module,
                         std::map<std::string, KernelSource> &kernels) {
  DialectRegistry registry;
  dlc::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module);
  auto emitted = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(emitted));
  for (KernelSource &k : *emitted)
    kernels[k.name] = std::move(k);
}

inline size_t bytesOf(Value v) {
  auto t = cast<MemRefType>(v.getType());
  return (size_t)t.getNumElements() *
         std::max<size_t>(1, t.getElementTypeBitWidth() / 8);
}

/// Every buffer of the function after running it: named inputs, variables
/// and the arena.
using Memory = std::map<std::string, std::vector<uint8_t>>;

/// The key of |v|'s memory in a Memory and its byte offset there.
inline std::pair<std::string, size_t> placeOf(Value v) {
  while (auto r = v.getDefiningOp<dlc::exec::ReshapeOp>())
    v = r.getSource();
  if (auto in = v.getDefiningOp<dlc::exec::InputOp>())
    return {"in:" + in.getName().str(), 0};
  if (auto var = v.getDefiningOp<dlc::exec::VariableRefOp>())
    return {"var:" + var.getVariable().str(), 0};
  auto alloc = v.getDefiningOp<dlc::exec::AllocOp>();
  return {"arena", alloc ? (size_t)*alloc.getOffset() : 0};
}

/// The kernels of |module| in order: generated and builtin kernels, each
/// with its C name.
inline std::vector<std::pair<Operation *, std::string>>
kernelsOf(ModuleOp module) {
  std::vector<std::pair<Operation *, std::string>> out;
  module.walk([&](Operation *op) {
    if (auto k = dyn_cast<dlc::exec::KernelOp>(op))
      out.push_back({op, detail::sanitizeName(k.getSymName())});
    else if (auto b = dyn_cast<dlc::exec::BuiltinKernelOp>(op))
      out.push_back({op, detail::sanitizeName(b.getSymName())});
  });
  return out;
}

/// Runs every kernel of |module| in order on the host library, from the
/// buffers |mem| (updated in place).
inline void runHost(ModuleOp module, HostLib &lib, Memory &mem) {
  for (auto &[k, name] : kernelsOf(module)) {
    std::vector<void *> args;
    for (Value v : k->getOperands()) {
      auto [key, offset] = placeOf(v);
      args.push_back(mem[key].data() + offset);
    }
    auto fn = lib.get<void (*)(void **)>(name.c_str());
    ASSERT_NE(fn, nullptr) << name;
    fn(args.data());
  }
}

/// Runs every kernel of |module| in order on the stand-in, from the buffers
/// |mem| (updated in place), each in a device allocation of its own
/// (256-byte aligned, as the runtime's), with |blocks| blocks a launch (0:
/// enough for the kernel's thread count, as the runtime launches
/// cooperative kernels).
inline void runStandin(ModuleOp module, Standin &cu,
                       const std::map<std::string, CUfunction> &functions,
                       const std::map<std::string, KernelSource> &sources,
                       unsigned blocks, Memory &mem) {
  std::map<std::string, CUdeviceptr> device;
  for (auto &[key, bytes] : mem) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu.cuMemAlloc(&p, bytes.size()), CUDA_SUCCESS);
    EXPECT_EQ(p % 256, 0u);
    EXPECT_EQ(cu.cuMemcpyHtoD(p, bytes.data(), bytes.size()), CUDA_SUCCESS);
    device[key] = p;
  }
  for (auto &[k, name] : kernelsOf(module)) {
    CUfunction fn = functions.at(name);
    ASSERT_NE(fn, nullptr) << name;
    const KernelSource &src = sources.at(name);
    std::vector<CUdeviceptr> ptrs;
    for (Value v : k->getOperands()) {
      auto [key, offset] = placeOf(v);
      ptrs.push_back(device[key] + offset);
    }
    std::vector<void *> args;
    for (CUdeviceptr &p : ptrs)
      args.push_back(&p);
    unsigned grid =
        blocks
            ? blocks
            : (unsigned)((src.numThreads + src.blockSize - 1) / src.blockSize);
    ASSERT_EQ(cu.cuLaunchKernel(fn, grid, 1, 1, src.blockSize, 1, 1, 0, nullptr,
                                args.data(), nullptr),
              CUDA_SUCCESS)
        << name;
  }
  EXPECT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  for (auto &[key, bytes] : mem)
    EXPECT_EQ(cu.cuMemcpyDtoH(bytes.data(), device[key], bytes.size()),
              CUDA_SUCCESS);
}

} // namespace dlc::codegen::test

#endif
