//===- DriverTest.cpp - tests of the stand-in CUDA driver and memory ------===//
#include "DriverTestSupport.h"
#include "Standin.h"

#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include <dlfcn.h>
#include <unistd.h>

extern "C" const char dlrtCudaStandin[];

using namespace dlc::standin::test;
using ::testing::HasSubstr;

namespace {

// -- init, device, context --------------------------------------------------

TEST(StandinInit, CallsBeforeCuInitFail) {
  useThreadsafeDeathTests();
  // A child process: this one may have called cuInit already.
  EXPECT_EXIT(
      {
        int count = -1;
        CUdeviceptr p = 0;
        int driver = 0;
        bool ok = cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED &&
                  cuMemAlloc(&p, 16) == CUDA_ERROR_NOT_INITIALIZED &&
                  // Works without cuInit, as the real one does.
                  cuDriverGetVersion(&driver) == CUDA_SUCCESS &&
                  driver == 13000 && cuInit(1) == CUDA_ERROR_INVALID_VALUE &&
                  cuInit(0) == CUDA_SUCCESS &&
                  cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 1;
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StandinInit, DeviceAttributesAreAnH100s) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice device = -1;
  ASSERT_EQ(cuDeviceGet(&device, 0), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cuDeviceGet(&device, 1), CUDA_ERROR_INVALID_DEVICE);
  char name[128];
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "dlrt CUDA stand-in (host emulation)");
  char shortName[5];
  ASSERT_EQ(cuDeviceGetName(shortName, sizeof shortName, 0), CUDA_SUCCESS);
  EXPECT_STREQ(shortName, "dlrt");
  struct Expected {
    CUdevice_attribute attribute;
    int value;
  } expected[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
  };
  for (const Expected &e : expected) {
    int value = -1;
    ASSERT_EQ(cuDeviceGetAttribute(&value, e.attribute, 0), CUDA_SUCCESS);
    EXPECT_EQ(value, e.value) << "attribute " << int(e.attribute);
  }
  int value = 0;
  EXPECT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0),
            CUDA_ERROR_INVALID_VALUE);
  size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_GT(total, size_t(1) << 30);
  EXPECT_THAT(std::string(dlrtCudaStandin), HasSubstr("dlrt CUDA stand-in 1"));
  EXPECT_TRUE(dlc::standin::driverInitialized());
}

TEST(StandinInit, ProcAddressServesVersionedEntries) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  void *fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &found),
            CUDA_SUCCESS);
  EXPECT_EQ(found, CU_GET_PROC_ADDRESS_SUCCESS);
  // cuda.h maps cuMemAlloc to cuMemAlloc_v2: the served entry is that one.
  EXPECT_EQ(fn, reinterpret_cast<void *>(&cuMemAlloc_v2));
  ASSERT_EQ(cuGetProcAddress("cuStreamDestroy", &fn, 13000, 0, &found),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void *>(&cuStreamDestroy_v2));
  for (const char *name :
       {"cuLaunchKernel", "cuMemPoolGetAttribute", "cuEventElapsedTime",
        "cuFuncSetAttribute", "cuMemcpyDtoHAsync", "cuCtxSynchronize"}) {
    fn = nullptr;
    EXPECT_EQ(cuGetProcAddress(name, &fn, 13000, 0, &found), CUDA_SUCCESS)
        << name;
    EXPECT_NE(fn, nullptr) << name;
  }
  EXPECT_EQ(cuGetProcAddress("cuGraphAddKernelNode", &fn, 13000, 0, &found),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(found, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
}

/// The names in the runtime's |list| macro (runtime/cuda/CudaApi.h), read
/// from the header so that entries the runtime adds are checked here too.
std::vector<std::string> runtimeEntries(const std::string &list) {
  std::ifstream in(DLC_RUNTIME_CUDA_API_H);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  size_t begin = text.find("#define " + list + "(X)");
  size_t end = text.find("\n\n", begin);
  std::vector<std::string> names;
  std::regex entry(R"(X\((\w+)\))");
  if (begin == std::string::npos)
    return names;
  std::string body = text.substr(begin, end - begin);
  for (std::sregex_iterator it(body.begin(), body.end(), entry), last;
       it != last; ++it)
    names.push_back((*it)[1].str());
  return names;
}

TEST(StandinInit, ServesEveryEntryTheRuntimeLoads) {
  // As runtime/cuda/CudaApi.cpp opens $DLRT_CUDA_STANDIN.
  void *library = dlopen(DLC_STANDIN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_NE(dlsym(library, "dlrtCudaStandin"), nullptr);
  auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(library, "cuInit"));
  auto getProc = reinterpret_cast<decltype(&cuGetProcAddress)>(
      dlsym(library, "cuGetProcAddress_v2"));
  ASSERT_TRUE(init && getProc);
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  std::vector<std::string> driver =
      runtimeEntries("DLRT_CUDA_DRIVER_FUNCTIONS");
  EXPECT_GE(driver.size(), 24u);
  // The graph entries are optional for a driver, but the stand-in has them,
  // so that the runtime's step graphs run in CI.
  std::vector<std::string> graphs = runtimeEntries("DLRT_CUDA_GRAPH_FUNCTIONS");
  EXPECT_EQ(graphs.size(), 6u);
  driver.insert(driver.end(), graphs.begin(), graphs.end());
  for (const std::string &name : driver) {
    void *fn = nullptr;
    CUdriverProcAddressQueryResult found{};
    EXPECT_EQ(getProc(name.c_str(), &fn, CUDA_VERSION,
                      CU_GET_PROC_ADDRESS_DEFAULT, &found),
              CUDA_SUCCESS)
        << name;
    EXPECT_EQ(found, CU_GET_PROC_ADDRESS_SUCCESS) << name;
    EXPECT_NE(fn, nullptr) << name;
  }
  for (const char *name : {"cuGetErrorName", "cuGetErrorString"})
    EXPECT_NE(dlsym(library, name), nullptr) << name;
  std::vector<std::string> nvrtc = runtimeEntries("DLRT_NVRTC_FUNCTIONS");
  EXPECT_GE(nvrtc.size(), 9u);
  for (const std::string &name : nvrtc)
    EXPECT_NE(dlsym(library, name.c_str()), nullptr) << name;
}

TEST(StandinInit, ErrorNamesAndTexts) {
  const char *text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_NO_BINARY_FOR_GPU, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_NO_BINARY_FOR_GPU");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "invalid argument");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_ILLEGAL_INSTRUCTION, &text),
            CUDA_SUCCESS);
  EXPECT_STREQ(text, "an illegal instruction was encountered");
  EXPECT_EQ(cuGetErrorName(CUresult(12345), &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
}

TEST_F(StandinTest, NoCurrentContextOnAnotherThread) {
  CUresult alloc = CUDA_SUCCESS, stream = CUDA_SUCCESS;
  CUcontext current = context_;
  std::thread([&] {
    CUdeviceptr p = 0;
    CUstream s = nullptr;
    alloc = cuMemAlloc(&p, 64);
    stream = cuStreamCreate(&s, 0);
    cuCtxGetCurrent(&current);
  }).join();
  EXPECT_EQ(alloc, CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(stream, CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(current, nullptr);
  EXPECT_EQ(cuCtxSetCurrent(reinterpret_cast<CUcontext>(0x1234)),
            CUDA_ERROR_INVALID_CONTEXT);
}

TEST(StandinInit, ExitWithWorkInFlightIsClean) {
  useThreadsafeDeathTests();
  // A runtime need not destroy its streams or release its context before
  // the process exits; the stand-in's workers must not crash it then.
  EXPECT_EXIT(
      {
        CUcontext context = nullptr;
        CUstream stream = nullptr;
        CUdeviceptr p = 0;
        if (cuInit(0) || cuDevicePrimaryCtxRetain(&context, 0) ||
            cuCtxSetCurrent(context) || cuStreamCreate(&stream, 0) ||
            cuMemAlloc(&p, 1 << 20))
          _exit(2);
        for (int i = 0; i < 50; ++i)
          cuMemsetD8Async(p, i, 1 << 20, i % 2 ? stream : nullptr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// -- memory -------------------------------------------------------------------

TEST_F(StandinTest, AllocationsAreAlignedAndFilledWithFF) {
  for (size_t bytes :
       {size_t(1), size_t(100), size_t(256), size_t(4097), size_t(1) << 20}) {
    CUdeviceptr p = alloc(bytes);
    EXPECT_EQ(p % 256, 0u) << bytes;
    std::vector<unsigned char> host = read<unsigned char>(p, bytes);
    EXPECT_EQ(std::count(host.begin(), host.end(), 0xFF), long(bytes)) << bytes;
    EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  }
  // Floats read from new memory are NaN.
  CUdeviceptr f = alloc(16 * sizeof(float));
  for (float v : read<float>(f, 16))
    EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(cuMemAlloc(&f, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, FreedMemoryIsRefilledAndReused) {
  CUdeviceptr p = alloc(1000);
  ASSERT_EQ(cuMemsetD8Async(p, 0, 1000, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(read<unsigned char>(p, 1000), std::vector<unsigned char>(1000, 0));
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); // double free
  // Same size class (1000 and 1024 both round to 1024): the block comes back,
  // holding 0xFF again.
  CUdeviceptr q = alloc(1024);
  EXPECT_EQ(q, p);
  std::vector<unsigned char> host = read<unsigned char>(q, 1024);
  EXPECT_EQ(std::count(host.begin(), host.end(), 0xFF), 1024);
}

TEST_F(StandinTest, CheckDeviceRangeNamesTheMistake) {
  CUdeviceptr p = alloc(4048);
  std::string why;
  auto *base = reinterpret_cast<char *>(p);
  EXPECT_TRUE(dlc::standin::checkDeviceRange(base, 4048, "A", &why)) << why;
  EXPECT_TRUE(dlc::standin::checkDeviceRange(base + 4048, 0, "A", &why));
  EXPECT_FALSE(dlc::standin::checkDeviceRange(base + 48, 4048, "B", &why));
  char expected[128];
  std::snprintf(expected, sizeof expected,
                "B: 4048 bytes at %p end 48 bytes past the allocation %p+4048",
                static_cast<void *>(base + 48), static_cast<void *>(base));
  EXPECT_EQ(why, expected);
  int onHost[4];
  EXPECT_FALSE(dlc::standin::checkDeviceRange(onHost, 16, "C", &why));
  EXPECT_THAT(why, HasSubstr("C: 16 bytes at "));
  EXPECT_THAT(why, HasSubstr("are not device memory"));
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_FALSE(dlc::standin::checkDeviceRange(base, 4, "D", &why));
  EXPECT_THAT(why, HasSubstr("lie in the freed allocation"));
}

TEST_F(StandinTest, CopiesOutsideAllocationsFail) {
  CUdeviceptr p = alloc(64);
  std::vector<char> host(128, 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cuMemcpyHtoD(p, host.data(), 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoH(host.data(), p + 32, 64), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32Async(p + 2, 0, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32Async(p, 0, 17, nullptr), CUDA_ERROR_INVALID_VALUE);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("cuMemcpyHtoDAsync dst: 128 bytes at"));
  EXPECT_THAT(err, HasSubstr("end 64 bytes past the allocation"));
  EXPECT_THAT(err, HasSubstr("cuMemsetD32Async dst: 68 bytes"));
  ASSERT_EQ(cuMemcpyHtoD(p, host.data(), 64), CUDA_SUCCESS);
  EXPECT_EQ(read<char>(p, 64), std::vector<char>(64, 1));
}

TEST_F(StandinTest, WritePastTheRoundedEndHitsTheGuardPage) {
  useThreadsafeDeathTests();
  CUdeviceptr p = alloc(1000); // rounded to 1024
  auto *bytes = reinterpret_cast<unsigned char *>(p);
  bytes[1023] = 7; // inside the rounding: legal memory
  EXPECT_DEATH(
      {
        dlc::standin::enqueue(nullptr, "overflow-test", [&](std::string *) {
          bytes[1024] = 1;
          return CUDA_SUCCESS;
        });
        cuStreamSynchronize(nullptr);
      },
      "dlrt-cuda-standin: overflow-test: invalid memory access at 0x[0-9a-f]+ "
      "\\(24 bytes past the end of the allocation 0x[0-9a-f]+\\+1000\\)");
}

TEST_F(StandinTest, UseAfterFreeFaults) {
  useThreadsafeDeathTests();
  CUdeviceptr p = alloc(256);
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  auto *bytes = reinterpret_cast<unsigned char *>(p);
  EXPECT_DEATH(
      {
        dlc::standin::enqueue(nullptr, "stale-read", [&](std::string *) {
          return bytes[0] == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
        });
        cuStreamSynchronize(nullptr);
      },
      "stale-read: invalid memory access .*inside the freed allocation");
}

// -- pools --------------------------------------------------------------------

TEST_F(StandinTest, PoolsTrackUsedAndReservedHighWaterMarks) {
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto get = [&](CUmemPool_attribute attribute) {
    cuuint64_t value = ~cuuint64_t(0);
    EXPECT_EQ(cuMemPoolGetAttribute(pool, attribute, &value), CUDA_SUCCESS);
    return value;
  };
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 1000, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&b, 3000, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1024u + 3072u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 1024u + 3072u);
  ASSERT_EQ(cuMemFreeAsync(b, stream), CUDA_SUCCESS);
  // Used bytes drop when the free is issued (deterministic, as the driver
  // accounts them), not when a worker gets to it.
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1024u);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cuMemFreeAsync(b, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("was already freed"));
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1024u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4096u);
  // Release threshold 0 (the default): synchronizing gives memory back.
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 1024u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 4096u);

  cuuint64_t keep = ~cuuint64_t(0);
  ASSERT_EQ(
      cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
      CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&b, 3000, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(b, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4096u);
  CUdeviceptr again = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&again, 3072, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(again, b); // cached block of the same size class

  // Freed and allocated again on the same stream: the block comes back at
  // once, whether or not the free has run yet, and holds 0xFF again.
  CUfunction slow = kernel(slowKernelSource(), "slow_fill");
  ASSERT_NE(slow, nullptr);
  int count = 1, ms = 100;
  void *args[] = {&again, &count, &ms};
  ASSERT_EQ(cuLaunchKernel(slow, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(again, stream), CUDA_SUCCESS);
  CUdeviceptr retaken = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&retaken, 3000, pool, stream),
            CUDA_SUCCESS);
  EXPECT_EQ(retaken, again);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4096u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096u);
  std::vector<unsigned> words(750);
  ASSERT_EQ(cuMemcpyDtoHAsync(words.data(), retaken, 3000, stream),
            CUDA_SUCCESS);
  EXPECT_EQ(words, std::vector<unsigned>(750, 0xFFFFFFFFu));
  // Another stream cannot take it while the free is pending.
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(slow, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(again, stream), CUDA_SUCCESS);
  CUdeviceptr elsewhere = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&elsewhere, 3000, pool, other),
            CUDA_SUCCESS);
  EXPECT_NE(elsewhere, again);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 1024u + 2 * 3072u);
  ASSERT_EQ(cuMemFreeAsync(elsewhere, other), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&again, 3072, pool, stream), CUDA_SUCCESS);

  cuuint64_t zero = 0, nonzero = 5;
  EXPECT_EQ(
      cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &nonzero),
      CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemFreeAsync(again, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero),
            CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1024u);
  EXPECT_EQ(
      cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, StreamOrderedAllocationFromTheDefaultPool) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, 512, stream), CUDA_SUCCESS);
  EXPECT_EQ(p % 256, 0u);
  ASSERT_EQ(cuMemsetD32Async(p, 0x01020304u, 128, stream), CUDA_SUCCESS);
  std::vector<unsigned> host(128);
  ASSERT_EQ(cuMemcpyDtoHAsync(host.data(), p, 512, stream), CUDA_SUCCESS);
  EXPECT_EQ(host, std::vector<unsigned>(128, 0x01020304u));
  ASSERT_EQ(cuMemFreeAsync(p, stream), CUDA_SUCCESS);
  // Issued work after the free may no longer name the memory.
  std::string why;
  EXPECT_FALSE(dlc::standin::checkDeviceRange(reinterpret_cast<void *>(p), 4,
                                              "late", &why));
  EXPECT_THAT(why, ::testing::AnyOf(HasSubstr("cuMemFreeAsync was already "
                                              "issued"),
                                    HasSubstr("lie in the freed allocation")));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cuMemsetD8Async(p, 0, 4, stream), CUDA_ERROR_INVALID_VALUE);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocAsync(&p, 16, reinterpret_cast<CUstream>(0x10)),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StandinTest, OutOfMemory) {
  size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
  size_t free = 0, total2 = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total2), CUDA_SUCCESS);
  EXPECT_EQ(total2, total);
  ASSERT_EQ(cuMemAlloc(&p, 1 << 20), CUDA_SUCCESS);
  size_t after = 0;
  ASSERT_EQ(cuMemGetInfo(&after, &total2), CUDA_SUCCESS);
  EXPECT_EQ(free - after, (size_t(1) << 20) + size_t(sysconf(_SC_PAGESIZE)))
      << "the allocation and its guard page";
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
}

// -- streams and events -------------------------------------------------------

TEST_F(StandinTest, StreamsRunInIssueOrder) {
  CUfunction slow = kernel(slowKernelSource(), "slow_fill");
  ASSERT_NE(slow, nullptr);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const int n = 300;
  CUdeviceptr out = alloc(n * sizeof(int)), copy = alloc(n * sizeof(int));
  int count = n, ms = 200;
  void *args[] = {&out, &count, &ms};
  ASSERT_EQ(cuLaunchKernel(slow, 3, 1, 1, 128, 1, 1, 0, stream, args, nullptr),
            CUDA_SUCCESS);
  // The kernel is still running: a runtime that reads now reads garbage.
  // (Element 0: its thread writes it after the sleep. The others may already
  // be written, since a block's threads run in a seeded random order.)
  EXPECT_EQ(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(reinterpret_cast<unsigned *>(out)[0], 0xFFFFFFFFu);
  ASSERT_EQ(cuMemcpyDtoDAsync(copy, out, n * sizeof(int), stream),
            CUDA_SUCCESS);
  // A pageable staging copy: |host| may change at once; the device gets the
  // values at the time of the call, after the kernel wrote its own.
  std::vector<int> host(10, 42);
  ASSERT_EQ(cuMemcpyHtoDAsync(out, host.data(), 10 * sizeof(int), stream),
            CUDA_SUCCESS);
  std::fill(host.begin(), host.end(), -1);
  // DtoH to pageable memory returns once done: no synchronize needed.
  std::vector<int> result(n), copied(n);
  ASSERT_EQ(cuMemcpyDtoHAsync(result.data(), out, n * sizeof(int), stream),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(copied.data(), copy, n * sizeof(int), stream),
            CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(copied[i], 2 * i + 1) << i;
    EXPECT_EQ(result[i], i < 10 ? 42 : 2 * i + 1) << i;
  }
  EXPECT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StandinTest, LegacyDefaultStreamWaitsForBlockingStreams) {
  CUfunction slow = kernel(slowKernelSource(), "slow_fill");
  ASSERT_NE(slow, nullptr);
  CUstream blocking = nullptr;
  ASSERT_EQ(cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  const int n = 32;
  CUdeviceptr out = alloc(n * sizeof(int)), copy = alloc(n * sizeof(int));
  int count = n, ms = 150;
  void *args[] = {&out, &count, &ms};
  ASSERT_EQ(cuLaunchKernel(slow, 1, 1, 1, n, 1, 1, 0, blocking, args, nullptr),
            CUDA_SUCCESS);
  // CUDA's implicit synchronization: work on the legacy default stream waits
  // for work issued before it on blocking streams.
  ASSERT_EQ(cuMemcpyDtoDAsync(copy, out, n * sizeof(int), nullptr),
            CUDA_SUCCESS);
  std::vector<int> copied = read<int>(copy, n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(copied[i], 2 * i + 1) << i;
}

TEST_F(StandinTest, EventsOrderStreamsAndTime) {
  CUfunction slow = kernel(slowKernelSource(), "slow_fill");
  ASSERT_NE(slow, nullptr);
  CUstream a = nullptr, b = nullptr;
  ASSERT_EQ(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent start = nullptr, done = nullptr, untimed = nullptr, never = nullptr;
  ASSERT_EQ(cuEventCreate(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&done, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&never, 0), CUDA_SUCCESS);
  const int n = 64;
  CUdeviceptr out = alloc(n * sizeof(int)), copy = alloc(n * sizeof(int));
  int count = n, ms = 150;
  void *args[] = {&out, &count, &ms};
  ASSERT_EQ(cuEventRecord(start, a), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(slow, 1, 1, 1, n, 1, 1, 0, a, args, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(done, a), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(untimed, a), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  float ms0 = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms0, start, done), CUDA_ERROR_NOT_READY);
  // b copies the kernel's output only after the event: without the wait it
  // would copy 0xFF bytes.
  ASSERT_EQ(cuStreamWaitEvent(b, done, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync(copy, out, n * sizeof(int), b), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(b), CUDA_SUCCESS);
  std::vector<int> copied = read<int>(copy, n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(copied[i], 2 * i + 1) << i;
  ASSERT_EQ(cuEventSynchronize(done), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(done), CUDA_SUCCESS);
  float elapsed = 0;
  ASSERT_EQ(cuEventElapsedTime(&elapsed, start, done), CUDA_SUCCESS);
  EXPECT_GE(elapsed, 140.0f);
  EXPECT_LT(elapsed, 5000.0f);
  EXPECT_EQ(cuEventElapsedTime(&elapsed, start, untimed),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(&elapsed, start, never),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventQuery(never), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(never), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(never), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// Stream capture records instead of running; a graph replays the recorded
// work, in order, once per launch; synchronizing or recording an event on
// a capturing stream invalidates the capture (as a real driver does).
TEST_F(StandinTest, CapturedWorkReplaysPerGraphLaunch) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::vector<int> order;
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_ERROR_ILLEGAL_STATE);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(dlc::standin::enqueue(stream, "step",
                                    [&order, i](std::string *) {
                                      order.push_back(i);
                                      return CUDA_SUCCESS;
                                    }),
              CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_TRUE(order.empty()); // recorded, not run
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(order, std::vector<int>({0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);

  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(stream, &graph),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuEventRecord(event, stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(stream, &graph),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(stream, &graph), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

TEST_F(StandinTest, EnqueuedLibraryWorkRunsInOrderAndFailsSticky) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::vector<int> order;
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(dlc::standin::enqueue(stream, "step",
                                    [&order, i](std::string *) {
                                      std::this_thread::sleep_for(
                                          std::chrono::milliseconds(5 - i));
                                      order.push_back(i);
                                      return CUDA_SUCCESS;
                                    }),
              CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(order, std::vector<int>({0, 1, 2, 3, 4}));
  // The worker pool runs every index once.
  std::vector<std::atomic<int>> hits(1000);
  dlc::standin::parallelFor(1000, [&](int64_t i) { hits[i]++; });
  for (auto &h : hits)
    ASSERT_EQ(h.load(), 1);

  ::testing::internal::CaptureStderr();
  ASSERT_EQ(dlc::standin::enqueue(stream, "cublasLtMatmul",
                                  [](std::string *message) {
                                    *message = "bad descriptor";
                                    return CUDA_ERROR_INVALID_VALUE;
                                  }),
            CUDA_SUCCESS);
  bool ranAfter = false;
  dlc::standin::enqueue(stream, "after", [&](std::string *) {
    ranAfter = true;
    return CUDA_SUCCESS;
  });
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("dlrt-cuda-standin: cublasLtMatmul failed "
                        "(CUDA_ERROR_INVALID_VALUE): bad descriptor"));
  EXPECT_FALSE(ranAfter); // a poisoned context runs nothing more
  EXPECT_EQ(dlc::standin::enqueue(stream, "later",
                                  [](std::string *) { return CUDA_SUCCESS; }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(dlc::standin::enqueue(reinterpret_cast<CUstream>(0x20), "x",
                                  [](std::string *) { return CUDA_SUCCESS; }),
            CUDA_ERROR_INVALID_VALUE); // the sticky error comes first
}

TEST_F(StandinTest, EnqueueOnAnUnknownStreamFails) {
  EXPECT_EQ(dlc::standin::enqueue(reinterpret_cast<CUstream>(0x20), "x",
                                  [](std::string *) { return CUDA_SUCCESS; }),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StandinTest, FailedKernelIsStickyUntilTheContextIsReset) {
  CUfunction trap = kernel(R"(
extern "C" __global__ void trap_at(int *out, int where) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == where)
    __trap();
  out[i] = i;
})",
                           "trap_at");
  ASSERT_NE(trap, nullptr);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr out = alloc(64 * sizeof(int));
  int where = 5;
  void *args[] = {&out, &where};
  ::testing::internal::CaptureStderr();
  // The launch itself succeeds: the failure is asynchronous.
  ASSERT_EQ(cuLaunchKernel(trap, 2, 1, 1, 32, 1, 1, 0, stream, args, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_INSTRUCTION);
  EXPECT_THAT(
      ::testing::internal::GetCapturedStderr(),
      HasSubstr("kernel trap_at failed (CUDA_ERROR_ILLEGAL_INSTRUCTION)"));
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_ILLEGAL_INSTRUCTION);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
  EXPECT_EQ(cuLaunchKernel(trap, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
            CUDA_ERROR_ILLEGAL_INSTRUCTION);
  // Destroying the primary context (last release) recovers, as on a GPU.
  modules_.clear();
  ASSERT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
}

} // namespace
