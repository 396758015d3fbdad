//===- NvrtcTest.cpp - tests of the stand-in NVRTC, modules and launches --===//
#include "DriverTestSupport.h"
#include "dlc_cuda_emulation_abi.h"

#include <gmock/gmock.h>

#include <cstring>
#include <elf.h>
#include <thread>

#include <dlfcn.h>
#include <unistd.h>

using namespace dlc::standin::test;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const char *kAxpy = R"(
#define SCALE_DEFAULT 1
extern "C" __global__ void __launch_bounds__(256)
axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i] * SCALE;
}
extern "C" __global__ void fill(int *out, int value) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}
)";

// -- NVRTC
// ----------------------------------------------------------------------

TEST(StandinNvrtc, CompilesToAHostSharedObject) {
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(minor, 0);
  std::string image = compile(kAxpy, {"--gpu-architecture=sm_90", "--std=c++17",
                                      "-DSCALE=2", "-default-device"});
  ASSERT_GT(image.size(), sizeof(Elf64_Ehdr));
  const auto *header = reinterpret_cast<const Elf64_Ehdr *>(image.data());
  EXPECT_EQ(std::memcmp(header->e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(header->e_machine, EM_X86_64);
  EXPECT_EQ(header->e_type, ET_DYN);
}

TEST(StandinNvrtc, ExportsTheAbiAndCollectivesFlag) {
  std::string plain =
      compile("extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }");
  std::string barrier = compile(
      "extern \"C\" __global__ void k(int *p) { __syncthreads(); p[0] = 1; }");
  auto flag = [](const std::string &image, int *version) {
    char path[] = "/tmp/dlrt-standin-test-XXXXXX";
    int fd = mkstemp(path);
    EXPECT_EQ(write(fd, image.data(), image.size()), ssize_t(image.size()));
    close(fd);
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    EXPECT_NE(library, nullptr) << dlerror();
    if (!library)
      return -1;
    *version = *static_cast<const int *>(dlsym(library, "dlc_emu_abi_version"));
    int value =
        *static_cast<const int *>(dlsym(library, "dlc_emu_uses_collectives"));
    EXPECT_NE(dlsym(library, "dlc_emu_entry_k"), nullptr);
    EXPECT_EQ(
        *static_cast<const int *>(dlsym(library, "dlc_emu_param_count_k")), 1);
    dlclose(library);
    return value;
  };
  int version = 0;
  EXPECT_EQ(flag(plain, &version), 0);
  EXPECT_EQ(version, DLC_EMU_ABI_VERSION);
  EXPECT_EQ(flag(barrier, &version), 1);
}

TEST(StandinNvrtc, CompileErrorsAreLoggedUnderTheProgramName) {
  std::string log;
  nvrtcResult result = NVRTC_SUCCESS;
  std::string image = compile("extern \"C\" __global__ void broken(int *p) {\n "
                              " p[0] = undefined_name;\n}\n",
                              {"--gpu-architecture=sm_90"}, &log, &result);
  EXPECT_EQ(result, NVRTC_ERROR_COMPILATION);
  EXPECT_TRUE(image.empty());
  EXPECT_THAT(log, HasSubstr("test_kernels.cu:2"));
  EXPECT_THAT(log, HasSubstr("undefined_name"));
  EXPECT_THAT(log, Not(HasSubstr("dlrt-nvrtc-"))); // no temporary paths
}

TEST(StandinNvrtc, OnlyExternCKernels) {
  std::string log;
  nvrtcResult result = NVRTC_SUCCESS;
  compile("\n__global__ void mangled(int *p) { p[0] = 1; }\n", {}, &log,
          &result);
  EXPECT_EQ(result, NVRTC_ERROR_COMPILATION);
  EXPECT_THAT(log, HasSubstr("test_kernels.cu(2): error: __global__ function "
                             "\"mangled\" is not extern \"C\""));
}

TEST(StandinNvrtc, UnknownOptionsFailAsInNvrtc) {
  std::string log;
  nvrtcResult result = NVRTC_SUCCESS;
  compile(kAxpy, {"--gpu-architecture=sm_90", "--frobnicate"}, &log, &result);
  EXPECT_EQ(result, NVRTC_ERROR_INVALID_OPTION);
  EXPECT_THAT(log, HasSubstr("unrecognized option \"--frobnicate\""));
  compile(kAxpy, {"-arch=sm_nine"}, &log, &result);
  EXPECT_EQ(result, NVRTC_ERROR_INVALID_OPTION);
  EXPECT_THAT(log, HasSubstr("invalid value for --gpu-architecture"));
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_INVALID_OPTION),
               "NVRTC_ERROR_INVALID_OPTION");
  // Accepted with a note: the stand-in has no fast-math path.
  compile(kAxpy, {"--use_fast_math", "-DSCALE=1"}, &log, &result);
  EXPECT_EQ(result, NVRTC_SUCCESS) << log;
  EXPECT_THAT(log, HasSubstr("--use_fast_math accepted and ignored"));
}

TEST(StandinNvrtc, HeadersAndNoPtx) {
  const char *headers[] = {"#define VALUE 17\n"};
  const char *names[] = {"sub/value.h"};
  useEmulationHeader();
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program,
                               "#include \"sub/value.h\"\n"
                               "extern \"C\" __global__ void k(int *p) { "
                               "p[0] = VALUE; }\n",
                               "with_header.cu", 1, headers, names),
            NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcCompileProgram(program, 0, nullptr), NVRTC_SUCCESS);
  size_t size = 0;
  EXPECT_EQ(nvrtcGetPTXSize(program, &size), NVRTC_ERROR_INVALID_INPUT);
  size_t logSize = 0;
  ASSERT_EQ(nvrtcGetProgramLogSize(program, &logSize), NVRTC_SUCCESS);
  std::string log(logSize, '\0');
  ASSERT_EQ(nvrtcGetProgramLog(program, log.data()), NVRTC_SUCCESS);
  EXPECT_THAT(log, HasSubstr("produces no PTX"));
  EXPECT_EQ(nvrtcDestroyProgram(&program), NVRTC_SUCCESS);
  EXPECT_EQ(program, nullptr);
  EXPECT_EQ(nvrtcCompileProgram(program, 0, nullptr),
            NVRTC_ERROR_INVALID_PROGRAM);
}

TEST(StandinNvrtc, CompilesConcurrently) {
  // The runtime compiles several kernels at once.
  std::vector<std::string> images(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&images, t] {
      images[t] =
          compile("extern \"C\" __global__ void k" + std::to_string(t) +
                  "(int *p) { p[threadIdx.x] = " + std::to_string(t) + "; }");
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t) {
    std::string symbol = "dlc_emu_entry_k" + std::to_string(t);
    EXPECT_NE(images[t].find(symbol), std::string::npos) << t;
  }
}

// -- modules and launches -----------------------------------------------------

TEST_F(StandinTest, RunsKernelsWithDefinesAndDynamicSharedMemory) {
  std::string image =
      compile(std::string(kAxpy) + R"(
extern "C" __global__ void reverse_block(const int *in, int *out) {
  extern __shared__ int tile[];
  int t = threadIdx.x;
  tile[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tile[t] * 10;
}
)",
              {"--gpu-architecture=sm_90", "--std=c++17", "-DSCALE=2"});
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  modules_.push_back(module);
  CUfunction axpy = nullptr, reverse = nullptr, missing = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&axpy, module, "axpy"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&reverse, module, "reverse_block"),
            CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&missing, module, "nope"),
            CUDA_ERROR_NOT_FOUND);

  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i), y[i] = 1.0f;
  CUdeviceptr dx = alloc(n * 4), dy = alloc(n * 4);
  ASSERT_EQ(cuMemcpyHtoD(dx, x.data(), n * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(dy, y.data(), n * 4), CUDA_SUCCESS);
  float a = 3.0f;
  int count = n;
  void *args[] = {&dy, &dx, &a, &count};
  ASSERT_EQ(cuLaunchKernel(axpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr,
                           args, nullptr),
            CUDA_SUCCESS);
  std::vector<float> got = read<float>(dy, n);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(got[i], 3.0f * i + 2.0f) << i; // SCALE=2 from -D
  // __launch_bounds__(256) lowers the kernel's limit below the device's.
  int bound = 0;
  ASSERT_EQ(
      cuFuncGetAttribute(&bound, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, axpy),
      CUDA_SUCCESS);
  EXPECT_EQ(bound, 256);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cuLaunchKernel(axpy, 2, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("axpy: block 512x1x1 has 512 threads; the kernel's "
                        "__launch_bounds__ allow 256"));

  CUdeviceptr in = alloc(64 * 4), out = alloc(64 * 4);
  std::vector<int> values(64);
  for (int i = 0; i < 64; ++i)
    values[i] = i;
  ASSERT_EQ(cuMemcpyHtoD(in, values.data(), 64 * 4), CUDA_SUCCESS);
  void *rargs[] = {&in, &out};
  ASSERT_EQ(cuLaunchKernel(reverse, 2, 1, 1, 32, 1, 1, 32 * 4, nullptr, rargs,
                           nullptr),
            CUDA_SUCCESS);
  std::vector<int> r = read<int>(out, 64);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(r[i], 10 * i) << i;
}

TEST_F(StandinTest, LaunchChecksAsTheDriverDoes) {
  CUfunction fill = kernel("#define SCALE 1\n" + std::string(kAxpy), "fill");
  ASSERT_NE(fill, nullptr);
  CUdeviceptr out = alloc(2048 * 4);
  int value = 3;
  void *args[] = {&out, &value};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(
      cuLaunchKernel(fill, 1, 1, 1, 1025, 1, 1, 0, nullptr, args, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(fill, 1, 1, 1, 32, 32, 2, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE); // 2048 threads
  EXPECT_EQ(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 65, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE); // block z > 64
  EXPECT_EQ(cuLaunchKernel(fill, 0, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      cuLaunchKernel(fill, 1, 65536, 1, 32, 1, 1, 0, nullptr, args, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 64 * 1024, nullptr, args,
                           nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  void *extra[] = {CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, args, extra),
            CUDA_ERROR_INVALID_VALUE);
  std::vector<int> onHost(32);
  int *hostPointer = onHost.data();
  void *hostArgs[] = {&hostPointer, &value};
  EXPECT_EQ(
      cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, hostArgs, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err,
              HasSubstr("fill: block 1025x1x1 is outside 1..1024x1024x64"));
  EXPECT_THAT(err, HasSubstr("fill: block 32x32x2 has 2048 threads"));
  EXPECT_THAT(err, HasSubstr("fill: grid 0x1x1 is outside"));
  EXPECT_THAT(err, HasSubstr("65536 bytes of dynamic shared memory exceed the "
                             "kernel's limit of 49152"));
  EXPECT_THAT(err, HasSubstr("2 parameters but kernelParams is null"));
  EXPECT_THAT(err, HasSubstr("both kernelParams and extra are given"));
  char hostLine[160];
  std::snprintf(hostLine, sizeof hostLine,
                "kernel fill argument 0: 0 bytes at %p are not device memory",
                static_cast<void *>(hostPointer));
  EXPECT_THAT(err, HasSubstr(hostLine));

  // Opting in raises the limit, up to 227 KiB.
  int limit = 0;
  ASSERT_EQ(cuFuncGetAttribute(
                &limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fill),
            CUDA_SUCCESS);
  EXPECT_EQ(limit, 48 * 1024);
  EXPECT_EQ(cuFuncSetAttribute(fill,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               228 * 1024),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuFuncSetAttribute(fill,
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               64 * 1024),
            CUDA_SUCCESS);
  int threads = 0;
  ASSERT_EQ(cuFuncGetAttribute(&threads,
                               CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fill),
            CUDA_SUCCESS);
  EXPECT_EQ(threads, 1024);
  ASSERT_EQ(cuLaunchKernel(fill, 2, 1, 1, 1024, 1, 1, 64 * 1024, nullptr, args,
                           nullptr),
            CUDA_SUCCESS);
  value = 4; // arguments were copied at launch
  std::vector<int> got = read<int>(out, 2048);
  EXPECT_EQ(std::count(got.begin(), got.end(), 3), 2048);
  // The extra-buffer form of passing arguments.
  struct {
    CUdeviceptr out;
    int value;
  } packed = {out, 9};
  size_t packedSize = 12;
  void *config[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed,
                    CU_LAUNCH_PARAM_BUFFER_SIZE, &packedSize,
                    CU_LAUNCH_PARAM_END};
  ASSERT_EQ(
      cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, nullptr, nullptr, config),
      CUDA_SUCCESS);
  EXPECT_EQ(read<int>(out, 17), std::vector<int>({9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
                                                  9, 9, 9, 9, 9, 9, 3}));
  CUfunction bogus = reinterpret_cast<CUfunction>(&packed);
  EXPECT_EQ(cuLaunchKernel(bogus, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StandinTest, OutOfBoundsKernelWriteNamesTheKernel) {
  useThreadsafeDeathTests();
  CUfunction oob = kernel(R"(
extern "C" __global__ void write_past_end(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n)  // one element too many
    out[i] = 1.0f;
}
)",
                          "write_past_end");
  ASSERT_NE(oob, nullptr);
  // 256 floats fill the allocation up to its guard page exactly.
  CUdeviceptr out = alloc(256 * sizeof(float));
  int n = 256;
  void *args[] = {&out, &n};
  EXPECT_DEATH(
      {
        cuLaunchKernel(oob, 8, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr);
        cuCtxSynchronize();
      },
      "dlrt-cuda-standin: kernel write_past_end: invalid memory access at "
      "0x[0-9a-f]+ \\(0 bytes past the end of the allocation "
      "0x[0-9a-f]+\\+1024\\)");
}

TEST_F(StandinTest, RejectsRealCubins) {
  // An ELF header as NVCC/NVRTC write for GPU code: e_machine EM_CUDA.
  std::vector<unsigned char> fake(4096, 0);
  auto *header = reinterpret_cast<Elf64_Ehdr *>(fake.data());
  std::memcpy(header->e_ident, ELFMAG, SELFMAG);
  header->e_ident[EI_CLASS] = ELFCLASS64;
  header->e_machine = 190;
  header->e_type = ET_EXEC;
  CUmodule module = nullptr;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cuModuleLoadData(&module, fake.data()),
            CUDA_ERROR_NO_BINARY_FOR_GPU);
  const char text[] =
      "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n";
  EXPECT_EQ(cuModuleLoadData(&module, text), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("the image is a real cubin"));

  // A cubin from the real NVRTC, when it is installed.
  void *nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!nvrtc)
    GTEST_SKIP() << "the real NVRTC is not installed; the crafted ELF passed";
  auto create = reinterpret_cast<decltype(&nvrtcCreateProgram)>(
      dlsym(nvrtc, "nvrtcCreateProgram"));
  auto compileReal = reinterpret_cast<decltype(&nvrtcCompileProgram)>(
      dlsym(nvrtc, "nvrtcCompileProgram"));
  auto size = reinterpret_cast<decltype(&nvrtcGetCUBINSize)>(
      dlsym(nvrtc, "nvrtcGetCUBINSize"));
  auto get =
      reinterpret_cast<decltype(&nvrtcGetCUBIN)>(dlsym(nvrtc, "nvrtcGetCUBIN"));
  ASSERT_TRUE(create && compileReal && size && get);
  nvrtcProgram program = nullptr;
  ASSERT_EQ(create(&program,
                   "extern \"C\" __global__ void k(int *p) { p[0] = 1; }",
                   "real.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const char *options[] = {"--gpu-architecture=sm_90"};
  ASSERT_EQ(compileReal(program, 1, options), NVRTC_SUCCESS);
  size_t bytes = 0;
  ASSERT_EQ(size(program, &bytes), NVRTC_SUCCESS);
  std::vector<char> cubin(bytes);
  ASSERT_EQ(get(program, cubin.data()), NVRTC_SUCCESS);
  EXPECT_EQ(cuModuleLoadData(&module, cubin.data()),
            CUDA_ERROR_NO_BINARY_FOR_GPU);
  auto destroy = reinterpret_cast<decltype(&nvrtcDestroyProgram)>(
      dlsym(nvrtc, "nvrtcDestroyProgram"));
  destroy(&program);
}

TEST_F(StandinTest, ModulesUnloadAndStaleHandlesFail) {
  CUfunction fill = kernel("#define SCALE 1\n" + std::string(kAxpy), "fill");
  ASSERT_NE(fill, nullptr);
  CUmodule module = modules_.back();
  modules_.clear();
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
  CUdeviceptr out = alloc(64);
  int value = 1;
  void *args[] = {&out, &value};
  EXPECT_EQ(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

} // namespace
