//===- DriverTestSupport.h - stand-in driver test fixtures ------*- C++ -*-===//
// A context per test (released afterwards, which resets the stand-in: a
// sticky error of one test cannot leak into the next) and kernels compiled
// with the stand-in NVRTC.
#ifndef DLC_TEST_CUDA_STANDIN_DRIVERTESTSUPPORT_H
#define DLC_TEST_CUDA_STANDIN_DRIVERTESTSUPPORT_H

#include <cuda.h>
#include <nvrtc.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace dlc::standin::test {

/// Points the stand-in NVRTC at testdata/mini_emulation.h while the real
/// dlc_cuda_emulation.h does not exist yet (unless the variable is set).
inline void useEmulationHeader() {
  if (!std::ifstream(DLC_EMU_HEADER_PATH))
    setenv("DLRT_CUDA_STANDIN_EMULATION_HEADER",
           DLC_STANDIN_TESTDATA "/mini_emulation.h", 0);
}

/// Death tests must re-run the binary: a forked child would lack the
/// stand-in's stream worker threads. Set in each death test (a static
/// initializer may run before gtest's flags are constructed).
inline void useThreadsafeDeathTests() {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
}

/// Compiles |source| with the stand-in NVRTC; the image, or empty with the
/// log in |*log| and the result in |*result|.
inline std::string
compile(const std::string &source,
        std::vector<const char *> options = {"--gpu-architecture=sm_90",
                                             "--std=c++17"},
        std::string *log = nullptr, nvrtcResult *result = nullptr) {
  useEmulationHeader();
  nvrtcProgram program = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&program, source.c_str(), "test_kernels.cu", 0,
                               nullptr, nullptr),
            NVRTC_SUCCESS);
  nvrtcResult r =
      nvrtcCompileProgram(program, int(options.size()), options.data());
  size_t logSize = 0;
  EXPECT_EQ(nvrtcGetProgramLogSize(program, &logSize), NVRTC_SUCCESS);
  std::string text(logSize, '\0');
  EXPECT_EQ(nvrtcGetProgramLog(program, text.data()), NVRTC_SUCCESS);
  text.resize(logSize ? logSize - 1 : 0);
  if (log)
    *log = text;
  if (result)
    *result = r;
  std::string image;
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    EXPECT_EQ(nvrtcGetCUBINSize(program, &size), NVRTC_SUCCESS);
    image.resize(size);
    EXPECT_EQ(nvrtcGetCUBIN(program, image.data()), NVRTC_SUCCESS);
  } else if (!result) {
    ADD_FAILURE() << "compilation failed: " << nvrtcGetErrorString(r) << "\n"
                  << text;
  }
  nvrtcDestroyProgram(&program);
  return image;
}

/// Every test runs in a fresh primary context, current on the test thread.
class StandinTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUmodule m : modules_)
      cuModuleUnload(m);
    cuDevicePrimaryCtxRelease(0);
  }

  /// Loads |source|'s module and returns kernel |name|.
  CUfunction kernel(const std::string &source, const char *name) {
    std::string image = compile(source);
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    EXPECT_EQ(cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    if (!module)
      return nullptr;
    modules_.push_back(module);
    EXPECT_EQ(cuModuleGetFunction(&function, module, name), CUDA_SUCCESS);
    return function;
  }

  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
  }

  template <typename T> std::vector<T> read(CUdeviceptr p, size_t count) {
    std::vector<T> out(count);
    EXPECT_EQ(cuMemcpyDtoH(out.data(), p, count * sizeof(T)), CUDA_SUCCESS);
    return out;
  }

  CUcontext context_ = nullptr;
  std::vector<CUmodule> modules_;
};

/// A kernel that keeps its thread busy for about |ms| milliseconds and then
/// writes out[i] = i * 2 + 1 (so that work queued behind it is observably
/// ordered after it).
inline const char *slowKernelSource() {
  return R"(
#include <chrono>
#include <thread>
extern "C" __global__ void slow_fill(int *out, int n, int ms) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (i < n)
    out[i] = i * 2 + 1;
}
)";
}

} // namespace dlc::standin::test

#endif
