//===- CodegenTestUtils.h - the fixture of the codegen tests -----*- C++
//-*-===//
//
// Shared by CodegenTest.cpp and CodegenBuiltinTest.cpp: a host library
// compiled with the system compiler and loaded with dlopen, the fixture that
// parses, emits and compiles modules, and data helpers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TEST_CODEGEN_CODEGENTESTUTILS_H
#define DLC_TEST_CODEGEN_CODEGENTESTUTILS_H

#include "codegen/Codegen.h"
#include "compiler/InitAll/InitAll.h"
#include "dlc_schema/package_generated.h"
#include "runtime/schema/NvrtcOptions.h"
#include "runtime/schema/Safetensors.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <tuple>

namespace dlc::codegen::test {

using namespace mlir;

using HostKernel = void (*)(void **);

/// A compiled-and-loaded host library.
class HostLib {
public:
  ~HostLib() {
    if (handle)
      dlclose(handle);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  bool load(const std::vector<uint8_t> &bytes) {
    llvm::SmallString<128> p;
    int fd;
    if (llvm::sys::fs::createTemporaryFile("dlc-codegen-test", "so", fd, p))
      return false;
    ::close(fd);
    path = std::string(p);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    // NODELETE: a kernel that ran in parallel started OpenMP worker threads
    // in libgomp, which this test does not link otherwise; unloading it with
    // the library would pull their code out from under them.
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle)
      ADD_FAILURE() << dlerror();
    return handle != nullptr;
  }
  HostKernel get(const char *name) {
    return reinterpret_cast<HostKernel>(dlsym(handle, name));
  }

private:
  void *handle = nullptr;
  std::string path;
};

class CodegenTest : public ::testing::Test {
protected:
  CodegenTest() {
    DialectRegistry registry;
    dlc::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(const std::string &src) {
    auto module = parseSourceString<ModuleOp>(src, &ctx);
    EXPECT_TRUE(module) << "cannot parse:\n" << src;
    return module;
  }

  /// Emits, compiles and loads the host kernels of |module|.
  bool buildHost(ModuleOp module, HostLib &lib) {
    auto src = emitHostSource(module);
    if (failed(src))
      return false;
    auto so = compileHostLibrary(module.getLoc(), *src);
    if (failed(so))
      return false;
    return lib.load(*so);
  }

  /// NVRTC-compiles every CUDA kernel of |module| for sm_80 and sm_90 and
  /// checks each cubin is an ELF image.
  void checkCuda(ModuleOp module, size_t expectedKernels) {
    auto kernels = emitCudaKernels(module);
    ASSERT_TRUE(succeeded(kernels));
    ASSERT_EQ(kernels->size(), expectedKernels);
    for (const KernelSource &k : *kernels) {
      EXPECT_NE(
          k.cudaSource.find("extern \"C\" __global__ void " + k.name + "("),
          std::string::npos)
          << k.cudaSource;
      for (const char *arch : {"sm_80", "sm_90"}) {
        auto cubin = compileWithNVRTC(module.getLoc(), k, arch);
        ASSERT_TRUE(succeeded(cubin)) << k.name << " " << arch << "\n"
                                      << k.cudaSource;
        ASSERT_GT(cubin->size(), 4u);
        EXPECT_EQ(std::memcmp(cubin->data(),
                              "\x7f"
                              "ELF",
                              4),
                  0);
      }
    }
  }

  /// Collects error diagnostics.
  std::string captureErrors(const std::function<void()> &fn) {
    std::string text;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      text += d.str() + "\n";
      return success();
    });
    fn();
    return text;
  }

  MLIRContext ctx;
};

inline std::vector<float> randomVector(size_t n, unsigned seed,
                                       float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &want, float rel,
                        const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0f, std::fabs(want[i])))
        << what << " element " << i;
}

} // namespace dlc::codegen::test

#endif // DLC_TEST_CODEGEN_CODEGENTESTUTILS_H
