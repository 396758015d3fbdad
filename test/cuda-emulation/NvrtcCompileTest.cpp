//===- NvrtcCompileTest.cpp - the test kernels compile with real NVRTC --===//
//
// The emulator's tests run kernels/*.cu with the host compiler; compiling
// the same files with NVRTC for sm_90 proves they are valid CUDA, so what
// passes on the emulator is a kernel a GPU would run. Skipped only where
// NVRTC cannot be loaded.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/KernelCompiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string readKernel(const std::string &file) {
  std::ifstream in(std::string(DLC_EMU_KERNEL_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class NvrtcCompile : public ::testing::TestWithParam<const char *> {};

TEST_P(NvrtcCompile, KernelFileIsValidCuda) {
  std::string source = readKernel(GetParam());
  ASSERT_FALSE(source.empty()) << "cannot read " << GetParam();
  dlrt::cuda::CompiledKernel out;
  dlrt::Status status =
      dlrt::cuda::compileKernel(GetParam(), source, "sm_90", "", &out);
  if (status.code == DLRT_UNAVAILABLE)
    GTEST_SKIP() << status.message;
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_GT(out.cubin.size(), 64u);
  // An ELF image, as cuModuleLoadData expects.
  EXPECT_EQ(std::string(out.cubin.begin(), out.cubin.begin() + 4), "\x7f"
                                                                   "ELF");
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, NvrtcCompile,
    ::testing::Values("block_reduce.cu", "races.cu", "warp.cu", "atomics.cu",
                      "errors.cu", "dynamic_shared.cu", "indexing.cu",
                      "dlc_forward_relu.cu", "dlc_max_pool.cu",
                      "dlc_reduce_mean.cu", "dlc_reduction_epilogue.cu",
                      "dlc_softmax_cross_entropy.cu",
                      "dlc_softmax_cross_entropy_grad.cu",
                      "dlc_layer_norm_warp.cu", "dlc_layer_norm_block.cu",
                      "mma.cu"),
    [](const ::testing::TestParamInfo<const char *> &info) {
      std::string name = info.param;
      for (char &c : name)
        if (!isalnum((unsigned char)c))
          c = '_';
      return name;
    });

} // namespace
