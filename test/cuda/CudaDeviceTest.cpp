//===- CudaDeviceTest.cpp - tests of the CUDA device of libdlrt -----------===//
// Runs everywhere: driver detection, SHA-256, NVRTC compilation and the
// on-disk cubin cache (NVRTC needs no GPU). With a GPU: kernel launches,
// the memory pool, cuBLASLt GEMM and cuDNN convolutions against naive CPU
// loops; without one those tests are skipped.
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelCompiler.h"

#include "runtime/cuda/CudaApi.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

using namespace dlrt;

namespace {

bool driverLoadable() {
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return false;
  dlclose(handle);
  return true;
}

bool nvrtcLoadable(std::string *why) {
  const cuda::NvrtcApi *api = nullptr;
  Status status = cuda::loadNvrtc(&api);
  *why = status.message;
  return status.ok();
}

/// A fresh empty folder under $TMPDIR (or /tmp), removed by the destructor.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/dlrt-cuda-test-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()))
      path = buf.data();
  }
  ~TempDir() {
    for (const std::string &f : files())
      unlink((path + "/" + f).c_str());
    rmdir(path.c_str());
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    if (DIR *dir = opendir(path.c_str())) {
      while (dirent *e = readdir(dir))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          names.push_back(e->d_name);
      closedir(dir);
    }
    return names;
  }
  std::string path;
};

bool isElf(const std::vector<uint8_t> &image) {
  return image.size() > 4 && image[0] == 0x7f && image[1] == 'E' &&
         image[2] == 'L' && image[3] == 'F';
}

const char *kVecAddSource = R"(
extern "C" __global__ void vec_add(float* a0, float* a1, float* a2) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) a2[i] = a0[i] + a1[i];
}
)";

// ------------------------------------------------------------ no GPU needed

TEST(CudaDevice, CreateReportsWhyItIsUnavailable) {
  std::unique_ptr<Device> device;
  Status status = createCudaDevice(0, &device);
  if (cuda::cudaStandinPath()) {
    // DLRT_CUDA_STANDIN: the host stand-in must come up and say what it is.
    ASSERT_TRUE(status.ok()) << status.message;
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->name(),
              "cuda:0 dlrt CUDA stand-in (host emulation) (sm_90)");
  } else if (!driverLoadable()) {
    EXPECT_EQ(status.code, DLRT_UNAVAILABLE);
    EXPECT_NE(status.message.find("no CUDA driver: cannot load libcuda.so.1 ("),
              std::string::npos)
        << status.message;
    EXPECT_EQ(device, nullptr);
  } else if (const char *fake = std::getenv("DLRT_TEST_FAKE_DRIVER")) {
    // test/cuda/FakeDriver.c builds.
    EXPECT_EQ(status.code, DLRT_UNAVAILABLE);
    std::string expected =
        std::string(fake) == "zero-devices"
            ? "no CUDA device found"
            : "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device "
              "is detected)";
    EXPECT_NE(status.message.find(expected), std::string::npos)
        << status.message;
    EXPECT_EQ(device, nullptr);
  } else if (status.ok()) {
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->kind(), DLRT_DEVICE_CUDA);
    EXPECT_EQ(device->name().rfind("cuda:0 ", 0), 0u) << device->name();
    EXPECT_NE(device->name().find("(sm_"), std::string::npos);
  } else {
    // A driver but no usable GPU: the message names the failing call.
    EXPECT_EQ(status.code, DLRT_UNAVAILABLE);
    EXPECT_FALSE(status.message.empty());
    EXPECT_EQ(status.message.find("cannot load libcuda.so.1"),
              std::string::npos)
        << status.message;
    EXPECT_EQ(device, nullptr);
  }
}

TEST(CudaDevice, MissingOrdinalIsUnavailable) {
  std::unique_ptr<Device> device;
  Status status = createCudaDevice(1000, &device);
  EXPECT_EQ(status.code, DLRT_UNAVAILABLE) << status.message;
  EXPECT_EQ(device, nullptr);
}

TEST(Sha256, KnownVectors) {
  // Expected values from FIPS 180-4 examples and Python's hashlib; the
  // 55/56/64/119-byte inputs cover every padding case.
  EXPECT_EQ(cuda::sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(cuda::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(cuda::sha256Hex(
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(cuda::sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(cuda::sha256Hex(std::string(55, 'x')),
            "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  EXPECT_EQ(cuda::sha256Hex(std::string(56, 'x')),
            "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  EXPECT_EQ(cuda::sha256Hex(std::string(64, 'x')),
            "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
  EXPECT_EQ(cuda::sha256Hex(std::string(119, 'x')),
            "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c");
}

TEST(KernelCompiler, CompilesAndCachesCubinsOnDisk) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());

  cuda::CompiledKernel first;
  Status status =
      cuda::compileKernel("vec_add", kVecAddSource, "sm_80", dir.path, &first);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(isElf(first.cubin));
  ASSERT_FALSE(first.cache_path.empty());
  EXPECT_EQ(first.cache_path.rfind(dir.path + "/", 0), 0u);
  ASSERT_EQ(dir.files().size(), 1u); // no temporary file left behind

  cuda::CompiledKernel second;
  status =
      cuda::compileKernel("vec_add", kVecAddSource, "sm_80", dir.path, &second);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.cache_path, first.cache_path);

  // The arch and the source are part of the key.
  cuda::CompiledKernel other;
  ASSERT_TRUE(
      cuda::compileKernel("vec_add", kVecAddSource, "sm_90", dir.path, &other)
          .ok());
  EXPECT_FALSE(other.cache_hit);
  EXPECT_NE(other.cache_path, first.cache_path);
  ASSERT_TRUE(cuda::compileKernel("vec_add", std::string(kVecAddSource) + "\n",
                                  "sm_80", dir.path, &other)
                  .ok());
  EXPECT_FALSE(other.cache_hit);
  EXPECT_EQ(dir.files().size(), 3u);
}

// The device's own kernels (gemm epilogue fallbacks) compile with the real
// NVRTC for both archs dlc targets; elsewhere they run only on the
// stand-in's host build.
TEST(KernelCompiler, RuntimeKernelsCompileForSm80AndSm90) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  auto kernels = cudaRuntimeKernelSources();
  ASSERT_EQ(kernels.size(), 3u);
  for (const auto &[name, source] : kernels) {
    EXPECT_NE(source.find("extern \"C\" __global__ void " + name + "("),
              std::string::npos)
        << name;
    for (const char *arch : {"sm_80", "sm_90"}) {
      cuda::CompiledKernel compiled;
      Status status = cuda::compileKernel(name, source, arch, "", &compiled);
      ASSERT_TRUE(status.ok()) << name << " " << arch << ": " << status.message;
      EXPECT_TRUE(isElf(compiled.cubin)) << name << " " << arch;
    }
  }
}

TEST(KernelCompiler, CorruptCacheEntryIsRecompiled) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  TempDir dir;
  cuda::CompiledKernel first;
  ASSERT_TRUE(
      cuda::compileKernel("vec_add", kVecAddSource, "sm_90", dir.path, &first)
          .ok());
  { std::ofstream(first.cache_path, std::ios::trunc) << "not a cubin"; }
  cuda::CompiledKernel again;
  ASSERT_TRUE(
      cuda::compileKernel("vec_add", kVecAddSource, "sm_90", dir.path, &again)
          .ok());
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(again.cubin, first.cubin);
  cuda::CompiledKernel hit;
  ASSERT_TRUE(
      cuda::compileKernel("vec_add", kVecAddSource, "sm_90", dir.path, &hit)
          .ok());
  EXPECT_TRUE(hit.cache_hit);
}

TEST(KernelCompiler, NoCacheDirMeansNoCaching) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  cuda::CompiledKernel out;
  ASSERT_TRUE(
      cuda::compileKernel("vec_add", kVecAddSource, "sm_80", "", &out).ok());
  EXPECT_FALSE(out.cache_hit);
  EXPECT_TRUE(out.cache_path.empty());
  EXPECT_TRUE(isElf(out.cubin));
}

TEST(KernelCompiler, CompileErrorCarriesTheLog) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  TempDir dir;
  cuda::CompiledKernel out;
  Status status = cuda::compileKernel(
      "broken_kernel",
      "extern \"C\" __global__ void broken_kernel(float* a0) { a0[0] = "
      "undefined_name; }",
      "sm_80", dir.path, &out);
  EXPECT_EQ(status.code, DLRT_INTERNAL);
  EXPECT_NE(status.message.find("broken_kernel"), std::string::npos)
      << status.message;
  EXPECT_NE(status.message.find("undefined_name"), std::string::npos)
      << status.message;
  EXPECT_TRUE(out.cubin.empty());
  EXPECT_TRUE(dir.files().empty());
}

TEST(KernelCompiler, ConcurrentCompilationsShareTheCache) {
  std::string why;
  if (!nvrtcLoadable(&why))
    GTEST_SKIP() << why;
  TempDir dir;
  std::vector<Status> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      cuda::CompiledKernel out;
      // Two threads per source: both may compile, and the rename keeps the
      // cache file whole.
      std::string source =
          std::string(kVecAddSource) + "// " + std::to_string(t % 2) + "\n";
      results[t] =
          cuda::compileKernel("vec_add", source, "sm_80", dir.path, &out);
      if (results[t].ok() && !isElf(out.cubin))
        results[t] = Status::error(DLRT_INTERNAL, "not ELF");
    });
  for (std::thread &t : threads)
    t.join();
  for (const Status &s : results)
    EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(dir.files().size(), 2u);
}

// ---------------------------------------------------------------- GPU tests

class CudaGpuTest : public ::testing::Test {
public:
  void SetUp() override {
    Status status = createCudaDevice(0, &device);
    if (status.ok())
      return;
    // Skip only when there is no GPU; with one, any other failure (a
    // missing library, a failing pool or stream) fails the test.
    if (!driverLoadable() ||
        status.message.find("no usable CUDA device") != std::string::npos ||
        status.message.find("no CUDA device found") != std::string::npos ||
        std::getenv("DLRT_TEST_FAKE_DRIVER"))
      GTEST_SKIP() << "no GPU: " << status.message;
    FAIL() << "a CUDA driver is installed but createCudaDevice failed: "
           << status.message;
  }
  void TearDown() override {
    if (device) {
      for (DeviceBuffer &b : buffers)
        device->release(b);
      EXPECT_TRUE(device->synchronize().ok());
    }
  }

  /// Device copy of |host| (plus |pad_floats| leading floats, returned
  /// pointer skips them, to test unaligned operands).
  float *upload(const std::vector<float> &host, size_t pad_floats = 0) {
    DeviceBuffer b;
    Status status =
        device->allocate((host.size() + pad_floats) * sizeof(float), &b);
    EXPECT_TRUE(status.ok()) << status.message;
    buffers.push_back(b);
    float *ptr = static_cast<float *>(b.data) + pad_floats;
    status =
        device->copyToDevice(ptr, host.data(), host.size() * sizeof(float));
    EXPECT_TRUE(status.ok()) << status.message;
    return ptr;
  }
  std::vector<float> download(const float *ptr, size_t count) {
    std::vector<float> host(count, -12345.0f);
    Status status = device->copyToHost(host.data(), ptr, count * sizeof(float));
    EXPECT_TRUE(status.ok()) << status.message;
    return host;
  }
  std::string arch() const {
    std::string name = device->name();
    size_t open = name.rfind("(sm_");
    return name.substr(open + 1, name.size() - open - 2);
  }

  std::unique_ptr<Device> device;
  std::vector<DeviceBuffer> buffers;
};

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

TEST_F(CudaGpuTest, MemoryPoolAllocFreeAndCopies) {
  std::vector<DeviceBuffer> blocks;
  for (size_t bytes :
       {size_t(1), size_t(1000), size_t(1) << 20, size_t(64) << 20}) {
    DeviceBuffer b;
    Status status = device->allocate(bytes, &b);
    ASSERT_TRUE(status.ok()) << status.message;
    ASSERT_NE(b.data, nullptr);
    EXPECT_EQ(b.bytes, bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 256, 0u);
    blocks.push_back(b);
  }
  // Round trip through the largest block, then zero it.
  const size_t count = (size_t(64) << 20) / sizeof(float);
  std::vector<float> pattern(count);
  for (size_t i = 0; i < count; ++i)
    pattern[i] = float(i % 9973) - 17.0f;
  float *big = static_cast<float *>(blocks.back().data);
  ASSERT_TRUE(device->copyToDevice(big, pattern.data(), count * 4).ok());
  EXPECT_EQ(download(big, count), pattern);
  ASSERT_TRUE(device->fillZero(big + 1, 4 * 1000).ok());
  std::vector<float> back = download(big, 1002);
  EXPECT_EQ(back[0], pattern[0]);
  for (size_t i = 1; i <= 1000; ++i)
    ASSERT_EQ(back[i], 0.0f) << i;
  EXPECT_EQ(back[1001], pattern[1001]);
  for (DeviceBuffer &b : blocks) {
    device->release(b);
    EXPECT_EQ(b.data, nullptr);
  }
  ASSERT_TRUE(device->synchronize().ok());
  // Freed memory is reused by the pool; a zero-byte allocation is empty.
  for (int i = 0; i < 100; ++i) {
    DeviceBuffer b;
    ASSERT_TRUE(device->allocate(size_t(16) << 20, &b).ok());
    device->release(b);
  }
  DeviceBuffer empty;
  ASSERT_TRUE(device->allocate(0, &empty).ok());
  EXPECT_EQ(empty.data, nullptr);
  DeviceBuffer huge;
  Status status = device->allocate(size_t(1) << 50, &huge);
  EXPECT_EQ(status.code, DLRT_OUT_OF_MEMORY) << status.message;
  EXPECT_EQ(huge.data, nullptr);
  EXPECT_TRUE(device->synchronize().ok());
}

Device::KernelSpec vecAddSpec() {
  Device::KernelSpec spec;
  spec.name = "vec_add";
  spec.cuda_source = kVecAddSource;
  spec.num_threads = 1000;
  spec.block_size = 128;
  return spec;
}

void expectVecAdd(CudaGpuTest &t, Device &device, DeviceKernel &kernel) {
  std::vector<float> a = randomVector(1000, 1), b = randomVector(1000, 2);
  float *da = t.upload(a), *db = t.upload(b);
  float *dc = t.upload(std::vector<float>(1024, 7.0f));
  Status status = device.launch(kernel, {da, db, dc});
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_TRUE(device.synchronize().ok());
  std::vector<float> c = t.download(dc, 1024);
  for (size_t i = 0; i < 1000; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << i;
  for (size_t i = 1000; i < 1024; ++i)
    ASSERT_EQ(c[i], 7.0f) << "kernel wrote past num_threads at " << i;
}

TEST_F(CudaGpuTest, NvrtcKernelLaunchAndCubinCacheHit) {
  TempDir cache;
  ASSERT_EQ(setenv("DLRT_CACHE_DIR", cache.path.c_str(), 1), 0);
  std::vector<std::unique_ptr<DeviceKernel>> kernels;
  Status status = device->loadKernels({}, {vecAddSpec()}, &kernels);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_EQ(kernels.size(), 1u);
  CudaKernelStats stats;
  ASSERT_TRUE(getCudaKernelStats(*device, &stats));
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.cache_hits, 0);
  EXPECT_EQ(cache.files().size(), 1u);
  expectVecAdd(*this, *device, *kernels[0]);

  // Second load: served from the on-disk cache, NVRTC not run.
  std::vector<std::unique_ptr<DeviceKernel>> again;
  status = device->loadKernels({}, {vecAddSpec()}, &again);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_TRUE(getCudaKernelStats(*device, &stats));
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.cache_hits, 1);
  expectVecAdd(*this, *device, *again[0]);
  unsetenv("DLRT_CACHE_DIR");
}

TEST_F(CudaGpuTest, ManyKernelsCompileInParallel) {
  TempDir cache;
  ASSERT_EQ(setenv("DLRT_CACHE_DIR", cache.path.c_str(), 1), 0);
  std::vector<Device::KernelSpec> specs;
  for (int i = 0; i < 6; ++i) {
    Device::KernelSpec spec;
    spec.name = "scale_" + std::to_string(i);
    spec.cuda_source = "extern \"C\" __global__ void " + spec.name +
                       "(float* a0, float* a1) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < 300) a1[i] = a0[i] * " +
                       std::to_string(i + 2) + ".0f;\n}\n";
    spec.num_threads = 300;
    spec.block_size = 64;
    specs.push_back(spec);
  }
  std::vector<std::unique_ptr<DeviceKernel>> kernels;
  Status status = device->loadKernels({}, specs, &kernels);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_EQ(kernels.size(), specs.size());
  std::vector<float> x = randomVector(300, 3);
  float *dx = upload(x);
  for (int i = 0; i < 6; ++i) {
    float *dy = upload(std::vector<float>(300, 0.0f));
    ASSERT_TRUE(device->launch(*kernels[i], {dx, dy}).ok());
    std::vector<float> y = download(dy, 300);
    for (int j = 0; j < 300; ++j)
      ASSERT_EQ(y[j], x[j] * float(i + 2)) << "kernel " << i << " at " << j;
  }
  unsetenv("DLRT_CACHE_DIR");
}

TEST_F(CudaGpuTest, EmbeddedCubinIsUsed) {
  cuda::CompiledKernel compiled;
  Status status =
      cuda::compileKernel("vec_add", kVecAddSource, arch(), "", &compiled);
  ASSERT_TRUE(status.ok()) << status.message;
  Device::KernelSpec spec = vecAddSpec();
  spec.cuda_source.clear(); // only the cubin can serve
  spec.cubins = {{"sm_00", {1, 2, 3}}, {arch(), compiled.cubin}};
  std::vector<std::unique_ptr<DeviceKernel>> kernels;
  status = device->loadKernels({}, {spec}, &kernels);
  ASSERT_TRUE(status.ok()) << status.message;
  CudaKernelStats stats;
  ASSERT_TRUE(getCudaKernelStats(*device, &stats));
  EXPECT_EQ(stats.embedded, 1);
  EXPECT_EQ(stats.compiled, 0);
  expectVecAdd(*this, *device, *kernels[0]);

  spec.cubins.clear();
  status = device->loadKernels({}, {spec}, &kernels);
  EXPECT_EQ(status.code, DLRT_INTERNAL);
  EXPECT_NE(status.message.find("vec_add"), std::string::npos);
}

TEST_F(CudaGpuTest, GemmMatchesCpuForAllTransposesAndBiasModes) {
  const int64_t M = 37, N = 29, K = 203;
  enum Mode { NoC, RowBias, RowScaled, FullC, Accumulate };
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (Mode mode : {NoC, RowBias, RowScaled, FullC, Accumulate}) {
        SCOPED_TRACE("trans_a=" + std::to_string(ta) + " trans_b=" +
                     std::to_string(tb) + " mode=" + std::to_string(mode));
        GemmParams p;
        p.m = M;
        p.n = N;
        p.k = K;
        p.trans_a = ta;
        p.trans_b = tb;
        p.alpha = 1.25f;
        p.has_c = mode == RowBias || mode == RowScaled || mode == FullC;
        p.c_is_row_vector = mode == RowBias || mode == RowScaled;
        p.beta = mode == NoC         ? 0.0f
                 : mode == RowBias   ? 1.0f
                 : mode == RowScaled ? 0.5f
                 : mode == FullC     ? 0.75f
                                     : 1.0f;
        std::vector<float> a = randomVector(M * K, 10 + ta),
                           b = randomVector(K * N, 20 + tb),
                           c = randomVector(p.c_is_row_vector ? N : M * N, 30),
                           y0 = randomVector(M * N, 40);
        // Y's old contents must not be read unless accumulating (the
        // arena holds garbage): poison them.
        if (mode != Accumulate)
          y0.assign(M * N, NAN);
        // A unaligned by one float in one case, to exercise the alignment
        // hints given to the cuBLASLt heuristic.
        float *da = upload(a, ta && tb ? 1 : 0), *db = upload(b),
              *dc = upload(c), *dy = upload(y0);
        Status status = device->gemm(p, da, db, p.has_c ? dc : nullptr, dy,
                                     nullptr);
        ASSERT_TRUE(status.ok()) << status.message;
        std::vector<float> y = download(dy, M * N);
        double worst = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t l = 0; l < K; ++l)
              acc += double(ta ? a[l * M + i] : a[i * K + l]) *
                     double(tb ? b[j * K + l] : b[l * N + j]);
            double ref = p.alpha * acc;
            if (mode == RowBias || mode == RowScaled)
              ref += p.beta * c[j];
            else if (mode == FullC)
              ref += p.beta * c[i * N + j];
            else if (mode == Accumulate)
              ref += p.beta * y0[i * N + j];
            worst = std::max(worst, std::fabs(ref - y[i * N + j]));
          }
        // f32 FMA accumulation over K=203 terms of size <= 1 errs by
        // ~1e-5 here; TF32 (10-bit mantissa) would err by ~1e-2.
        EXPECT_LT(worst, 2e-4);
      }
}

ConvParams testConv() {
  ConvParams p;
  p.n = 2;
  p.c = 4;
  p.h = 9;
  p.w = 7;
  p.k = 6;
  p.r = 3;
  p.s = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
  p.group = 2;
  p.p = (p.h + 2 - p.r) / 2 + 1; // 5
  p.q = (p.w + 2 - p.s) / 2 + 1; // 4
  p.has_bias = true;
  return p;
}

/// Calls |fn(n, k, oh, ow, ci, cl, r, s, ih, iw)| for every (output, filter
/// tap) pair of |p| whose input position is inside the image; ci is the
/// input channel, cl its index within the group.
template <typename Fn> void forEachTap(const ConvParams &p, Fn fn) {
  const int64_t cg = p.c / p.group, kg = p.k / p.group;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t oh = 0; oh < p.p; ++oh)
        for (int64_t ow = 0; ow < p.q; ++ow)
          for (int64_t cl = 0; cl < cg; ++cl)
            for (int64_t r = 0; r < p.r; ++r)
              for (int64_t s = 0; s < p.s; ++s) {
                int64_t ih = oh * p.stride_h - p.pad_top + r * p.dilation_h;
                int64_t iw = ow * p.stride_w - p.pad_left + s * p.dilation_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                  continue;
                fn(n, k, oh, ow, (k / kg) * cg + cl, cl, r, s, ih, iw);
              }
}

/// Forward, backward data and backward filter of |p| against naive loops.
void checkConvolutions(CudaGpuTest &t, ConvParams p) {
  std::unique_ptr<Device> &device = t.device;
  auto upload = [&](const std::vector<float> &v) { return t.upload(v); };
  auto download = [&](const float *ptr, size_t n) { return t.download(ptr, n); };
  const int64_t cg = p.c / p.group;
  std::vector<float> x = randomVector(p.n * p.c * p.h * p.w, 50),
                     w = randomVector(p.k * cg * p.r * p.s, 51),
                     bias = randomVector(p.k, 52),
                     dy = randomVector(p.n * p.k * p.p * p.q, 53);
  auto xi = [&](int64_t n, int64_t c, int64_t h, int64_t ww) {
    return ((n * p.c + c) * p.h + h) * p.w + ww;
  };
  auto wi = [&](int64_t k, int64_t c, int64_t r, int64_t s) {
    return ((k * cg + c) * p.r + r) * p.s + s;
  };
  auto yi = [&](int64_t n, int64_t k, int64_t h, int64_t ww) {
    return ((n * p.k + k) * p.p + h) * p.q + ww;
  };
  std::vector<double> yRef(dy.size()), dxRef(x.size(), 0.0),
      dwRef(w.size(), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t i = 0; i < p.p * p.q; ++i)
        yRef[yi(n, k, 0, 0) + i] = bias[k];
  forEachTap(p, [&](int64_t n, int64_t k, int64_t oh, int64_t ow, int64_t ci,
                    int64_t cl, int64_t r, int64_t s, int64_t ih, int64_t iw) {
    yRef[yi(n, k, oh, ow)] += double(x[xi(n, ci, ih, iw)]) * w[wi(k, cl, r, s)];
    dxRef[xi(n, ci, ih, iw)] +=
        double(dy[yi(n, k, oh, ow)]) * w[wi(k, cl, r, s)];
    dwRef[wi(k, cl, r, s)] +=
        double(dy[yi(n, k, oh, ow)]) * x[xi(n, ci, ih, iw)];
  });

  float *dX = upload(x), *dW = upload(w), *dB = upload(bias), *dDy = upload(dy);
  float *dY = upload(std::vector<float>(dy.size(), NAN));
  float *dDx = upload(std::vector<float>(x.size(), NAN));
  float *dDw = upload(std::vector<float>(w.size(), NAN));
  Status status = device->convForward(p, dX, dW, dB, dY);
  ASSERT_TRUE(status.ok()) << status.message;
  status = device->convBackwardData(p, dDy, dW, dDx);
  ASSERT_TRUE(status.ok()) << status.message;
  status = device->convBackwardFilter(p, dX, dDy, dDw);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_TRUE(device->synchronize().ok());

  // Sums of at most 36 (fwd, bwd data) or 40 (bwd filter) products of
  // values in [-1,1]: f32 error ~1e-6, TF32 would be ~1e-3.
  auto expectClose = [](const std::vector<float> &got,
                        const std::vector<double> &want, const char *what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 5e-5) << what << " at " << i;
  };
  expectClose(download(dY, yRef.size()), yRef, "forward");
  expectClose(download(dDx, dxRef.size()), dxRef, "backward data");
  expectClose(download(dDw, dwRef.size()), dwRef, "backward filter");

  // Without bias, forward overwrites y.
  p.has_bias = false;
  status = device->convForward(p, dX, dW, nullptr, dY);
  ASSERT_TRUE(status.ok()) << status.message;
  std::vector<float> noBias = download(dY, yRef.size());
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t i = 0; i < p.p * p.q; ++i)
        ASSERT_NEAR(noBias[yi(n, k, 0, 0) + i],
                    yRef[yi(n, k, 0, 0) + i] - bias[k], 5e-5);
}

TEST_F(CudaGpuTest, ConvolutionsMatchCpu) { checkConvolutions(*this, testConv()); }

// cuDNN's legacy API has one pad per dim: the device pads the input
// explicitly (cudnnTransformTensor into a zeroed buffer) and crops the data
// gradient. ONNX's SAME_UPPER/SAME_LOWER with even kernels needs this.
TEST_F(CudaGpuTest, AsymmetricConvPaddingMatchesCpu) {
  ConvParams p = testConv();
  p.pad_top = 2;
  p.pad_bottom = 0;
  p.pad_left = 0;
  p.pad_right = 1;
  p.p = (p.h + 2 - p.r) / p.stride_h + 1;
  p.q = (p.w + 1 - p.s) / p.stride_w + 1;
  checkConvolutions(*this, p);
}

} // namespace
