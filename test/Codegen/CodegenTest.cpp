//===- CodegenTest.cpp - host runs, NVRTC compiles, package round trip ----===//
//
// Every kernel is emitted as host C++, compiled into a shared object with the
// system compiler, loaded with dlopen and run on real data; results are
// compared with straightforward reference loops written here. Tolerances:
// elementwise ops that map to the same libm call are compared with 1e-6
// relative (the reference may be compiled with different contraction);
// reductions and softmax with 1e-5 relative (summation order may differ).
//
//===----------------------------------------------------------------------===//
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

using namespace mlir;
using namespace dlc::codegen;

namespace {

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

std::vector<float> randomVector(size_t n, unsigned seed, float lo = -2.0f,
                                float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 float rel, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0f, std::fabs(want[i])))
        << what << " element " << i;
}

//===----------------------------------------------------------------------===//
// Generated kernels
//===----------------------------------------------------------------------===//

const char *kElementwise = R"mlir(
dlexec.func @f attributes {arena_bytes = 160 : i64} {
  %a = dlexec.input "a" : memref<4x5xf32>
  %b = dlexec.input "b" : memref<5xf32>
  %c = dlexec.alloc {offset = 0 : i64} : memref<4x5xf32>
  %d = dlexec.alloc {offset = 80 : i64} : memref<4x5xf32>
  dlexec.kernel @add_relu ins(%a, %b : memref<4x5xf32>, memref<5xf32>)
      outs(%c : memref<4x5xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    dlexec.yield %r : f32
  }
  // d[i, j] = (a > 0.5 ? exp(a) * tanh(b) : erf(a) - rsqrt(b*b + 1)) + i * 10 + j
  //           where the transposed read a[3 - i, j] checks constants in maps.
  dlexec.kernel @mixed ins(%a, %b : memref<4x5xf32>, memref<5xf32>)
      outs(%d : memref<4x5xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (3 - i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %gt = arith.cmpf ogt, %x, %half : f32
    %e = math.exp %x : f32
    %t = math.tanh %y : f32
    %p = arith.mulf %e, %t : f32
    %er = math.erf %x : f32
    %y2 = arith.mulf %y, %y : f32
    %y21 = arith.addf %y2, %one : f32
    %rs = math.rsqrt %y21 : f32
    %q = arith.subf %er, %rs : f32
    %sel = arith.select %gt, %p, %q : f32
    %i = dlexec.index 0 : index
    %j = dlexec.index 1 : index
    %ten = arith.constant 10 : i64
    %ii = arith.index_cast %i : index to i64
    %ji = arith.index_cast %j : index to i64
    %i10 = arith.muli %ii, %ten : i64
    %ij = arith.addi %i10, %ji : i64
    %f = arith.sitofp %ij : i64 to f32
    %r = arith.addf %sel, %f : f32
    dlexec.yield %r : f32
  }
  dlexec.output "c", %c : memref<4x5xf32>
}
)mlir";

TEST_F(CodegenTest, ElementwiseBroadcastOnHost) {
  auto module = parse(kElementwise);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel addRelu = lib.get("add_relu"), mixed = lib.get("mixed");
  ASSERT_TRUE(addRelu && mixed);
  std::vector<float> a = randomVector(20, 1), b = randomVector(5, 2);
  std::vector<float> c(20, -99), d(20, -99);
  void *args1[] = {a.data(), b.data(), c.data()};
  addRelu(args1);
  void *args2[] = {a.data(), b.data(), d.data()};
  mixed(args2);
  std::vector<float> wantC(20), wantD(20);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      wantC[i * 5 + j] = std::max(a[i * 5 + j] + b[j], 0.0f);
      float x = a[(3 - i) * 5 + j], y = b[j];
      float v = x > 0.5f ? std::exp(x) * std::tanh(y)
                         : std::erf(x) - 1.0f / std::sqrt(y * y + 1.0f);
      wantD[i * 5 + j] = v + float(i * 10 + j);
    }
  expectClose(c, wantC, 1e-6f, "add_relu");
  expectClose(d, wantD, 1e-6f, "mixed");
}

TEST_F(CodegenTest, ElementwiseCompilesWithNVRTC) {
  auto module = parse(kElementwise);
  ASSERT_TRUE(module);
  checkCuda(*module, 2);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  EXPECT_EQ((*kernels)[0].numThreads, 20);
  EXPECT_NE((*kernels)[0].cudaSource.find(
                "add_relu(float* __restrict__ a0, float* __restrict__ a1, "
                "float* __restrict__ a2)"),
            std::string::npos)
      << (*kernels)[0].cudaSource;
  // A grid-stride loop over the 20 elements with 32-bit indices.
  EXPECT_NE((*kernels)[0].cudaSource.find(
                "for (unsigned dlc_e = dlc_first; dlc_e < 20u; dlc_e += "
                "dlc_stride) {"),
            std::string::npos)
      << (*kernels)[0].cudaSource;
}

/// The PTX NVRTC makes of |source| for compute_90 with |extra| options.
static std::string nvrtcPtx(const char *source,
                            const std::vector<const char *> &extra) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source, "fma.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    return "";
  std::vector<const char *> options = {"--gpu-architecture=compute_90"};
  options.insert(options.end(), extra.begin(), extra.end());
  std::string ptx;
  if (nvrtcCompileProgram(prog, int(options.size()), options.data()) ==
      NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetPTXSize(prog, &size);
    ptx.resize(size);
    nvrtcGetPTX(prog, ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  return ptx;
}

// dlc's kernels compile without fused multiply-add (NvrtcOptions.h), so the
// GPU rounds a * b + c as the host does. The same kernel compiled with
// NVRTC's default options does contract it: the option is what keeps it out.
TEST(NvrtcOptions, NoFusedMultiplyAdd) {
  const char *source = R"cuda(
extern "C" __global__ void axpy(const float *a, const float *b, const float *c,
                                float *y) {
  const int i = threadIdx.x;
  y[i] = a[i] * b[i] + c[i];
})cuda";
  std::vector<const char *> dlcOptions(
      std::begin(dlrt::cuda::kNvrtcArithmeticOptions),
      std::end(dlrt::cuda::kNvrtcArithmeticOptions));
  const std::string contracted = nvrtcPtx(source, {});
  const std::string separate = nvrtcPtx(source, dlcOptions);
  ASSERT_FALSE(contracted.empty());
  ASSERT_FALSE(separate.empty());
  EXPECT_NE(contracted.find("fma.rn.f32"), std::string::npos) << contracted;
  EXPECT_EQ(separate.find("fma."), std::string::npos) << separate;
  // mul.rn / add.rn: the .rn rounding also keeps ptxas from fusing them.
  EXPECT_NE(separate.find("mul.rn.f32"), std::string::npos) << separate;
  EXPECT_NE(separate.find("add.rn.f32"), std::string::npos) << separate;
}

// Row sum and row max of x [3, 7] (two outputs, reductions with init), and
// column sums of x through a reduction over the outer loop.
const char *kReduction = R"mlir(
dlexec.func @f attributes {arena_bytes = 96 : i64} {
  %x = dlexec.input "x" : memref<3x7xf32>
  %s = dlexec.alloc {offset = 0 : i64} : memref<3xf32>
  %m = dlexec.alloc {offset = 16 : i64} : memref<3x1xf32>
  %c = dlexec.alloc {offset = 32 : i64} : memref<7xf32>
  dlexec.kernel @row_sum_max ins(%x : memref<3x7xf32>)
      outs(%s, %m : memref<3xf32>, memref<3x1xf32>) attributes {
        indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>,
                         affine_map<(i, k) -> (i, 0)>],
        iterator_types = ["parallel", "reduction"],
        init = [0.0 : f32, 0xFF800000 : f32]} {
  ^bb0(%v: f32, %acc: f32, %mx: f32):
    %n = arith.addf %acc, %v : f32
    %mm = arith.maximumf %mx, %v : f32
    dlexec.yield %n, %mm : f32, f32
  }
  dlexec.kernel @col_sum ins(%x : memref<3x7xf32>) outs(%c : memref<7xf32>)
      attributes {
        indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
        iterator_types = ["reduction", "parallel"], init = [1.0 : f32]} {
  ^bb0(%v: f32, %acc: f32):
    %n = arith.addf %acc, %v : f32
    dlexec.yield %n : f32
  }
}
)mlir";

TEST_F(CodegenTest, ReductionOnHost) {
  auto module = parse(kReduction);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel rowSumMax = lib.get("row_sum_max"), colSum = lib.get("col_sum");
  ASSERT_TRUE(rowSumMax && colSum);
  std::vector<float> x = randomVector(21, 3);
  // Stale output contents must be overwritten by init, not accumulated into.
  std::vector<float> s(3, 123.0f), m(3, 456.0f), c(7, 789.0f);
  void *args1[] = {x.data(), s.data(), m.data()};
  rowSumMax(args1);
  void *args2[] = {x.data(), c.data()};
  colSum(args2);
  std::vector<float> wantS(3, 0), wantM(3, -INFINITY), wantC(7, 1.0f);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 7; ++k) {
      wantS[i] += x[i * 7 + k];
      wantM[i] = std::max(wantM[i], x[i * 7 + k]);
      wantC[k] += x[i * 7 + k];
    }
  expectClose(s, wantS, 1e-5f, "row sum");
  expectClose(m, wantM, 0.0f, "row max");
  expectClose(c, wantC, 1e-5f, "column sum");
}

TEST_F(CodegenTest, ReductionCompilesWithNVRTC) {
  auto module = parse(kReduction);
  ASSERT_TRUE(module);
  checkCuda(*module, 2);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  EXPECT_EQ((*kernels)[0].numThreads, 3);
  EXPECT_EQ((*kernels)[1].numThreads, 7);
}

// A sum of 2^24 followed by 100 ones: accumulated in f32 every +1 rounds
// away (2^24 + 1 is not representable), in double the sum is exact
// (2^24 + 100 is representable in f32).
TEST_F(CodegenTest, LongSumsAccumulateInDouble) {
  auto module = parse(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<1x101xf32>
  %s = dlexec.alloc : memref<1xf32>
  dlexec.kernel @sum ins(%x : memref<1x101xf32>) outs(%s : memref<1xf32>)
      attributes {
        indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
        iterator_types = ["parallel", "reduction"], init = [0.0 : f32]} {
  ^bb0(%v: f32, %acc: f32):
    %n = arith.addf %v, %acc : f32
    dlexec.yield %n : f32
  }
}
)mlir");
  ASSERT_TRUE(module);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  EXPECT_NE((*kernels)[0].cudaSource.find("double acc0"), std::string::npos)
      << (*kernels)[0].cudaSource;
  checkCuda(*module, 1);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel sum = lib.get("sum");
  ASSERT_TRUE(sum);
  std::vector<float> x(101, 1.0f);
  x[0] = 16777216.0f;
  float s = 0;
  void *args[] = {x.data(), &s};
  sum(args);
  EXPECT_EQ(s, 16777316.0f);
}

// A bf16 reduction accumulates in float and rounds once at the store:
// 16^2 = 256 and then 100 ones sum to 356 (exact in bf16); an accumulator
// rounded to bf16 after every step would stay at 256 (257 ties to even).
// The fused producer (the square) still rounds, as the unfused graph does.
TEST_F(CodegenTest, HalfReductionAccumulatesInFloat) {
  auto module = parse(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<1x101xbf16>
  %s = dlexec.alloc : memref<1xbf16>
  dlexec.kernel @sum_sq ins(%x : memref<1x101xbf16>) outs(%s : memref<1xbf16>)
      attributes {
        indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
        iterator_types = ["parallel", "reduction"], init = [0.0 : bf16]} {
  ^bb0(%v: bf16, %acc: bf16):
    %p = arith.mulf %v, %v : bf16
    %n = arith.addf %p, %acc : bf16
    dlexec.yield %n : bf16
  }
}
)mlir");
  ASSERT_TRUE(module);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  const std::string &src = (*kernels)[0].cudaSource;
  EXPECT_NE(src.find("float acc0 = "), std::string::npos) << src;
  EXPECT_NE(src.find("dlc_round_bf16((float)(x0 * x0))"), std::string::npos)
      << src;
  // The update is not rounded.
  EXPECT_NE(src.find("const float v1 = (float)(v0 + acc0);"), std::string::npos)
      << src;
  EXPECT_NE(src.find("dlc_f32_to_bf16(acc0)"), std::string::npos) << src;
  checkCuda(*module, 1);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel sum = lib.get("sum_sq");
  ASSERT_TRUE(sum);
  std::vector<uint16_t> x(101, 0x3F80); // 1.0
  x[0] = 0x4180;                        // 16.0
  uint16_t s = 0xFFFF;
  void *args[] = {x.data(), &s};
  sum(args);
  EXPECT_EQ(s, 0x43B2) << "356 in bf16"; // 256 would be 0x4380
}

// An in-place update (SGD-like: w -= lr * g) must drop __restrict__ on the
// aliased operands; integer and boolean element types map to C types.
TEST_F(CodegenTest, InPlaceUpdateAndIntegerTypes) {
  auto module = parse(R"mlir(
dlexec.variable @w : memref<6xf32> {kind = "parameter"}
dlexec.func @f attributes {arena_bytes = 0 : i64} {
  %g = dlexec.input "g" : memref<6xf32>
  %n = dlexec.input "n" : memref<6xi64>
  %k = dlexec.input "k" : memref<6xi32>
  %b = dlexec.input "b" : memref<6xi1>
  %w = dlexec.variable_ref @w : memref<6xf32>
  dlexec.kernel @sgd ins(%w, %g, %n, %k, %b : memref<6xf32>, memref<6xf32>, memref<6xi64>, memref<6xi32>, memref<6xi1>)
      outs(%w : memref<6xf32>) attributes {
        indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                         affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
        iterator_types = ["parallel"]} {
  ^bb0(%wv: f32, %gv: f32, %nv: i64, %kv: i32, %bv: i1, %out: f32):
    %lr = arith.constant 0.25 : f32
    %step = arith.mulf %lr, %gv : f32
    %upd = arith.subf %wv, %step : f32
    %three = arith.constant 3 : i64
    %r = arith.remsi %nv, %three : i64
    %kk = arith.extsi %kv : i32 to i64
    %sum = arith.addi %r, %kk : i64
    %sf = arith.sitofp %sum : i64 to f32
    %plus = arith.addf %upd, %sf : f32
    %res = arith.select %bv, %plus, %upd : f32
    dlexec.yield %res : f32
  }
}
)mlir");
  ASSERT_TRUE(module);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  const std::string &src = (*kernels)[0].cudaSource;
  EXPECT_NE(src.find("sgd(float* a0, float* __restrict__ a1, long long* "
                     "__restrict__ a2, int* __restrict__ a3, bool* "
                     "__restrict__ a4, float* a5)"),
            std::string::npos)
      << src;
  checkCuda(*module, 1);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel sgd = lib.get("sgd");
  ASSERT_TRUE(sgd);
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, g = {4, 4, 8, -4, 0, 1};
  std::vector<int64_t> n = {0, 1, 2, 3, 4, 5};
  std::vector<int32_t> k = {10, 20, 30, 40, 50, 60};
  bool b[6] = {true, false, true, false, true, false};
  std::vector<float> want(6);
  for (int i = 0; i < 6; ++i) {
    float upd = w[i] - 0.25f * g[i];
    want[i] = b[i] ? upd + float(n[i] % 3 + k[i]) : upd;
  }
  void *args[] = {w.data(), g.data(), n.data(), k.data(), b, w.data()};
  sgd(args);
  expectClose(w, want, 0.0f, "sgd");
}

// An Adam-like in-place update over a 3-D space with a rank-0 step counter,
// a broadcast row and an input read at a constant position. The host runs a
// loop nest (no flat index recovered with % and /), OpenMP splits the first
// loop with at least 8 trips (the leading one has 4), and the ops that read
// no loop index (powf of the step, ...) run once before the loops; on CUDA
// before the thread's own work. A rank-0 kernel increments the counter in
// place. Results must equal a reference loop bit for bit.
const char *kLoopNest = R"mlir(
dlexec.variable @w : memref<4x8x1024xf32> {kind = "parameter"}
dlexec.variable @t : memref<f32> {kind = "buffer"}
dlexec.func @f attributes {arena_bytes = 0 : i64} {
  %b = dlexec.input "b" : memref<8xf32>
  %c = dlexec.input "c" : memref<3xf32>
  %w = dlexec.variable_ref @w : memref<4x8x1024xf32>
  %t = dlexec.variable_ref @t : memref<f32>
  dlexec.kernel @scale_shift ins(%w, %t, %b, %c : memref<4x8x1024xf32>, memref<f32>, memref<8xf32>, memref<3xf32>)
      outs(%w : memref<4x8x1024xf32>) attributes {
        indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> ()>,
                         affine_map<(i, j, k) -> (j)>, affine_map<(i, j, k) -> (2)>,
                         affine_map<(i, j, k) -> (i, j, k)>],
        iterator_types = ["parallel", "parallel", "parallel"]} {
  ^bb0(%wv: f32, %tv: f32, %bv: f32, %cv: f32, %out: f32):
    %beta = arith.constant 0.999 : f32
    %one = arith.constant 1.0 : f32
    %p = math.powf %beta, %tv : f32
    %q = arith.subf %one, %p : f32
    %s = math.sqrt %q : f32
    %sc = arith.divf %cv, %s : f32
    %m = arith.mulf %wv, %sc : f32
    %r = arith.addf %m, %bv : f32
    %k = dlexec.index 2 : index
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %eps = arith.constant 1.0e-3 : f32
    %ke = arith.mulf %kf, %eps : f32
    %res = arith.subf %r, %ke : f32
    dlexec.yield %res : f32
  }
  dlexec.kernel @bump ins(%t : memref<f32>) outs(%t : memref<f32>) attributes {
        indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
        iterator_types = []} {
  ^bb0(%tv: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.addf %tv, %one : f32
    dlexec.yield %n : f32
  }
}
)mlir";

/// The text of host kernel |name| in |src| (up to the next kernel).
std::string hostKernelText(const std::string &src, const std::string &name) {
  size_t begin = src.find("extern \"C\" void " + name + "(");
  if (begin == std::string::npos)
    return "";
  size_t end = src.find("extern \"C\"", begin + 1);
  return src.substr(begin, end == std::string::npos ? end : end - begin);
}

TEST_F(CodegenTest, HostLoopNestWithHoistedInvariants) {
  auto module = parse(kLoopNest);
  ASSERT_TRUE(module);
  auto src = emitHostSource(*module);
  ASSERT_TRUE(succeeded(src));
  std::string k = hostKernelText(*src, "scale_shift");
  ASSERT_FALSE(k.empty()) << *src;
  EXPECT_EQ(k.find("tid"), std::string::npos) << k;
  EXPECT_EQ(k.find("rem"), std::string::npos) << k;
  // Loops outermost first, the parallel pragma on the first loop with at
  // least 8 trips, the innermost loop marked free of carried dependences.
  size_t l0 = k.find("for (long long i0 = 0; i0 < 4LL; ++i0)\n");
  size_t l1 = k.find("#pragma omp parallel for\n"
                     "    for (long long i1 = 0; i1 < 8LL; ++i1)\n");
  size_t l2 = k.find("#pragma GCC ivdep\n"
                     "      for (long long i2 = 0; i2 < 1024LL; ++i2)\n");
  ASSERT_NE(l0, std::string::npos) << k;
  EXPECT_TRUE(l1 != std::string::npos && l1 > l0) << k;
  EXPECT_TRUE(l2 != std::string::npos && l2 > l1) << k;
  // Invariant reads and ops come before the loops; per-element ones after.
  for (const char *invariant : {"= a1[0];", "= a3[2LL];", "powf(", "sqrtf("})
    EXPECT_LT(k.find(invariant), l0) << invariant << "\n" << k;
  EXPECT_GT(k.find("= a2[i1];"), l0) << k;
  EXPECT_GT(k.find("(float)i2"), l0) << k;
  // The rank-0 kernel has no loop at all.
  std::string bump = hostKernelText(*src, "bump");
  EXPECT_EQ(bump.find("for ("), std::string::npos) << bump;

  // CUDA: the invariant ops precede the thread's index recovery.
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  const std::string &cuda = (*kernels)[0].cudaSource;
  EXPECT_LT(cuda.find("powf("), cuda.find("unsigned dlc_rem")) << cuda;
  EXPECT_GT(cuda.find("powf("), cuda.find("const unsigned dlc_stride"))
      << cuda;
  checkCuda(*module, 2);

  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel scaleShift = lib.get("scale_shift"), bumpFn = lib.get("bump");
  ASSERT_TRUE(scaleShift && bumpFn);
  const int n0 = 4, n1 = 8, n2 = 1024;
  std::vector<float> w = randomVector(n0 * n1 * n2, 11),
                     b = randomVector(8, 12);
  std::vector<float> c = {5.0f, 6.0f, 0.125f};
  float t = 0.0f;
  std::vector<float> want(w.size());
  for (int step = 0; step < 3; ++step) {
    void *bumpArgs[] = {&t, &t};
    bumpFn(bumpArgs);
    ASSERT_EQ(t, float(step + 1));
    // Reference: the same float operations in the same order.
    volatile float beta = 0.999f; // keep the compiler from folding powf
    const float s = std::sqrt(1.0f - std::pow(beta, t));
    const float sc = c[2] / s;
    for (int i = 0; i < n0; ++i)
      for (int j = 0; j < n1; ++j)
        for (int kk = 0; kk < n2; ++kk) {
          size_t at = (size_t(i) * n1 + j) * n2 + kk;
          float m = w[at] * sc;
          float r = m + b[j];
          want[at] = r - float(kk) * 1.0e-3f;
        }
    void *args[] = {w.data(), &t, b.data(), c.data(), w.data()};
    scaleShift(args);
    ASSERT_EQ(std::memcmp(w.data(), want.data(), w.size() * sizeof(float)), 0)
        << "step " << step;
  }
}

// An op that reads no loop index leaves the reduction loop on both targets:
// out[i] = sum_k x[i, k] * sqrt(1 + s[]).
TEST_F(CodegenTest, InvariantsLeaveTheReductionLoop) {
  auto module = parse(R"mlir(
dlexec.func @f attributes {arena_bytes = 128 : i64} {
  %x = dlexec.input "x" : memref<5x9xf32>
  %s = dlexec.input "s" : memref<f32>
  %o = dlexec.alloc {offset = 0 : i64} : memref<5xf32>
  dlexec.kernel @scaled_sum ins(%x, %s : memref<5x9xf32>, memref<f32>)
      outs(%o : memref<5xf32>) attributes {
        indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> ()>,
                         affine_map<(i, k) -> (i)>],
        iterator_types = ["parallel", "reduction"], init = [0.0 : f32]} {
  ^bb0(%xv: f32, %sv: f32, %acc: f32):
    %one = arith.constant 1.0 : f32
    %a = arith.addf %sv, %one : f32
    %r = math.sqrt %a : f32
    %p = arith.mulf %xv, %r : f32
    %n = arith.addf %acc, %p : f32
    dlexec.yield %n : f32
  }
}
)mlir");
  ASSERT_TRUE(module);
  auto kernels = emitCudaKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  const std::string &cuda = (*kernels)[0].cudaSource;
  size_t loop = cuda.find("for (long long i1 = 0; i1 < 9LL; ++i1)");
  ASSERT_NE(loop, std::string::npos) << cuda;
  EXPECT_LT(cuda.find("sqrtf("), loop) << cuda;
  EXPECT_GT(cuda.find("= a0[i0 * 9LL + i1];"), loop) << cuda;
  checkCuda(*module, 1);
  auto src = emitHostSource(*module);
  ASSERT_TRUE(succeeded(src));
  std::string k = hostKernelText(*src, "scaled_sum");
  EXPECT_LT(k.find("sqrtf("), k.find("for (long long i0")) << k;

  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel fn = lib.get("scaled_sum");
  ASSERT_TRUE(fn);
  std::vector<float> x = randomVector(45, 21), o(5, -7.0f);
  float s = 2.5f;
  void *args[] = {x.data(), &s, o.data()};
  fn(args);
  std::vector<float> want(5);
  const float r = std::sqrt(s + 1.0f);
  for (int i = 0; i < 5; ++i) {
    double acc = 0;
    for (int k = 0; k < 9; ++k)
      acc += double(x[i * 9 + k] * r);
    want[i] = float(acc);
  }
  expectClose(o, want, 0.0f, "scaled_sum");
}

TEST_F(CodegenTest, UnsupportedBodyOpIsAVerifierErrorNamingIt) {
  // The verifier accepts exactly the body ops codegen prints
  // (dialects/Exec/KernelBodyOps.h), so the module does not parse.
  std::string errors = captureErrors([&] {
    auto module = parseSourceString<ModuleOp>(R"mlir(
dlexec.func @f {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  dlexec.kernel @bad ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
      attributes {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %out: f32):
    %r = math.atan2 %x, %x : f32
    dlexec.yield %r : f32
  }
}
)mlir",
                                              &ctx);
    EXPECT_FALSE(module);
  });
  EXPECT_NE(errors.find("'math.atan2' op is not supported"), std::string::npos)
      << errors;
}

TEST_F(CodegenTest, BadHostSourceReportsCompilerOutput) {
  std::string errors = captureErrors([&] {
    auto so = compileHostLibrary(UnknownLoc::get(&ctx),
                                 "extern \"C\" void f() { undeclared(); }");
    EXPECT_TRUE(failed(so));
  });
  EXPECT_NE(errors.find("undeclared"), std::string::npos) << errors;
}

TEST_F(CodegenTest, NVRTCErrorCarriesTheLog) {
  KernelSource k{"broken", "extern \"C\" __global__ void broken() { nope; }",
                 1};
  std::string errors = captureErrors([&] {
    EXPECT_TRUE(failed(compileWithNVRTC(UnknownLoc::get(&ctx), k, "sm_90")));
  });
  EXPECT_NE(errors.find("nope"), std::string::npos) << errors;
}

//===----------------------------------------------------------------------===//
// Built-in templates
//===----------------------------------------------------------------------===//

// x [2, 3, 5, 6] pooled by 3x2 windows, strides (2, 2), pads
// [top 1, left 0, bottom 1, right 1]: OH = (5 + 2 - 3) / 2 + 1 = 3,
// OW = (6 + 1 - 2) / 2 + 1 = 3.
const int N = 2, C = 3, H = 5, W = 6, OH = 3, OW = 3, KH = 3, KW = 2, SH = 2,
          SW = 2, PT = 1, PL = 0, PB = 1, PR = 1;

const char *kPooling = R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<2x3x5x6xf32>
  %dy = dlexec.input "dy" : memref<2x3x3x3xf32>
  %y = dlexec.alloc : memref<2x3x3x3xf32>
  %dx = dlexec.alloc : memref<2x3x5x6xf32>
  %ay = dlexec.alloc : memref<2x3x3x3xf32>
  %adx = dlexec.alloc : memref<2x3x5x6xf32>
  %ay2 = dlexec.alloc : memref<2x3x3x3xf32>
  %adx2 = dlexec.alloc : memref<2x3x5x6xf32>
  %idx = dlexec.alloc : memref<2x3x3x3xi32>
  %dxi = dlexec.alloc : memref<2x3x5x6xf32>
  dlexec.builtin_kernel @mp "max_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%y : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       dilations = array<i64: 1, 1>, ceil_mode = 0 : i64}
  dlexec.builtin_kernel @mp_grad "max_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%dx : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @mp_idx "max_pool2d_indices" ins(%x : memref<2x3x5x6xf32>) outs(%idx : memref<2x3x3x3xi32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @mp_idx_grad "max_pool2d_indices_grad" ins(%idx, %dy : memref<2x3x3x3xi32>, memref<2x3x3x3xf32>)
      outs(%dxi : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>}
  dlexec.builtin_kernel @ap "average_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%ay : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 0 : i64}
  dlexec.builtin_kernel @ap_grad "average_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%adx : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 0 : i64}
  dlexec.builtin_kernel @ap_pad "average_pool2d" ins(%x : memref<2x3x5x6xf32>) outs(%ay2 : memref<2x3x3x3xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 1 : i64}
  dlexec.builtin_kernel @ap_pad_grad "average_pool2d_grad" ins(%x, %dy : memref<2x3x5x6xf32>, memref<2x3x3x3xf32>)
      outs(%adx2 : memref<2x3x5x6xf32>)
      {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>,
       count_include_pad = 1 : i64}
}
)mlir";

/// Reference pooling by scatter (the opposite formulation of the kernels).
struct PoolReference {
  std::vector<float> maxY, maxDx, avgY, avgDx, avgPadY, avgPadDx;
  /// Per output: the flat index ih * W + iw of its first maximum.
  std::vector<int32_t> argmax;
  PoolReference(const std::vector<float> &x, const std::vector<float> &dy) {
    maxY.assign(N * C * OH * OW, 0);
    avgY = avgPadY = maxY;
    maxDx.assign(N * C * H * W, 0);
    avgDx = avgPadDx = maxDx;
    for (int nc = 0; nc < N * C; ++nc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          int o = (nc * OH + oh) * OW + ow;
          float best = -INFINITY, sum = 0;
          int bestIdx = -1, count = 0;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              int ih = oh * SH - PT + kh, iw = ow * SW - PL + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              int idx = (nc * H + ih) * W + iw;
              if (bestIdx < 0 || x[idx] > best) {
                best = x[idx];
                bestIdx = idx;
              }
              sum += x[idx];
              ++count;
            }
          // Padded window size, clipped to the padded input (PyTorch).
          int hs = oh * SH - PT, ws = ow * SW - PL;
          int he = std::min(hs + KH, H + PB), we = std::min(ws + KW, W + PR);
          int padCount = (he - hs) * (we - ws);
          maxY[o] = best;
          maxDx[bestIdx] += dy[o];
          argmax.push_back(bestIdx - nc * H * W);
          avgY[o] = sum / count;
          avgPadY[o] = sum / padCount;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              int ih = oh * SH - PT + kh, iw = ow * SW - PL + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              int idx = (nc * H + ih) * W + iw;
              avgDx[idx] += dy[o] / count;
              avgPadDx[idx] += dy[o] / padCount;
            }
        }
  }
};

TEST_F(CodegenTest, PoolingTemplatesOnHost) {
  auto module = parse(kPooling);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  std::vector<float> x = randomVector(N * C * H * W, 4);
  // Ties: the gradient must go to the first maximum in scan order only.
  for (int i = 0; i < W; ++i)
    x[W + i] = x[i] = 5.0f;
  std::vector<float> dy = randomVector(N * C * OH * OW, 5);
  PoolReference ref(x, dy);
  auto run = [&](const char *name, std::vector<float> out, bool grad) {
    HostKernel k = lib.get(name);
    EXPECT_TRUE(k) << name;
    if (!k)
      return out;
    std::vector<void *> args = {x.data()};
    if (grad)
      args.push_back(dy.data());
    args.push_back(out.data());
    k(args.data());
    return out;
  };
  std::vector<float> ySize(N * C * OH * OW, -7), xSize(N * C * H * W, -7);
  expectClose(run("mp", ySize, false), ref.maxY, 0.0f, "max_pool2d");
  expectClose(run("mp_grad", xSize, true), ref.maxDx, 1e-6f, "max_pool2d_grad");
  // The argmax form: the indices of the first maxima, and a gradient
  // bit-identical to max_pool2d_grad's.
  std::vector<int32_t> idx(N * C * OH * OW, -7);
  if (HostKernel k = lib.get("mp_idx")) {
    std::vector<void *> args = {x.data(), idx.data()};
    k(args.data());
  }
  EXPECT_EQ(idx, ref.argmax) << "max_pool2d_indices";
  std::vector<float> dxi(N * C * H * W, -7);
  if (HostKernel k = lib.get("mp_idx_grad")) {
    std::vector<void *> args = {idx.data(), dy.data(), dxi.data()};
    k(args.data());
  }
  std::vector<float> dx = run("mp_grad", xSize, true);
  EXPECT_EQ(0, std::memcmp(dxi.data(), dx.data(), dx.size() * sizeof(float)))
      << "max_pool2d_indices_grad differs from max_pool2d_grad";
  expectClose(run("ap", ySize, false), ref.avgY, 1e-6f, "average_pool2d");
  expectClose(run("ap_grad", xSize, true), ref.avgDx, 1e-6f,
              "average_pool2d_grad");
  expectClose(run("ap_pad", ySize, false), ref.avgPadY, 1e-6f,
              "average_pool2d count_include_pad");
  expectClose(run("ap_pad_grad", xSize, true), ref.avgPadDx, 1e-6f,
              "average_pool2d_grad count_include_pad");
}

TEST_F(CodegenTest, PoolingTemplatesCompileWithNVRTC) {
  auto module = parse(kPooling);
  ASSERT_TRUE(module);
  checkCuda(*module, 8);
}

// softmax / log_softmax over the middle axis of [2, 3, 4]; cross entropy of
// logits [2, 2, 3] with labels [2, 2].
const char *kSoftmax = R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<2x3x4xf32>
  %y = dlexec.alloc : memref<2x3x4xf32>
  %ly = dlexec.alloc : memref<2x3x4xf32>
  %logits = dlexec.input "logits" : memref<2x2x3xf32>
  %labels = dlexec.input "labels" : memref<2x2xi64>
  %g = dlexec.input "g" : memref<f32>
  %loss = dlexec.alloc : memref<f32>
  %dl = dlexec.alloc : memref<2x2x3xf32>
  dlexec.builtin_kernel @sm "softmax" ins(%x : memref<2x3x4xf32>) outs(%y : memref<2x3x4xf32>) {axis = 1 : i64}
  dlexec.builtin_kernel @lsm "log_softmax" ins(%x : memref<2x3x4xf32>) outs(%ly : memref<2x3x4xf32>) {axis = -2 : i64}
  dlexec.builtin_kernel @ce "softmax_cross_entropy" ins(%logits, %labels : memref<2x2x3xf32>, memref<2x2xi64>)
      outs(%loss : memref<f32>)
  dlexec.builtin_kernel @ce_grad "softmax_cross_entropy_grad"
      ins(%logits, %labels, %g : memref<2x2x3xf32>, memref<2x2xi64>, memref<f32>) outs(%dl : memref<2x2x3xf32>)
}
)mlir";

TEST_F(CodegenTest, SoftmaxTemplatesOnHost) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel sm = lib.get("sm"), lsm = lib.get("lsm");
  ASSERT_TRUE(sm && lsm);
  std::vector<float> x = randomVector(24, 6, -30.0f, 30.0f);
  std::vector<float> y(24, -1), ly(24, -1), wantY(24), wantLy(24);
  void *args1[] = {x.data(), y.data()};
  sm(args1);
  void *args2[] = {x.data(), ly.data()};
  lsm(args2);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) {
      double sum = 0;
      for (int k = 0; k < 3; ++k)
        sum += std::exp((double)x[(a * 3 + k) * 4 + c]);
      for (int k = 0; k < 3; ++k) {
        int i = (a * 3 + k) * 4 + c;
        wantY[i] = float(std::exp((double)x[i]) / sum);
        wantLy[i] = float((double)x[i] - std::log(sum));
      }
    }
  expectClose(y, wantY, 1e-5f, "softmax");
  expectClose(ly, wantLy, 1e-5f, "log_softmax");
}

TEST_F(CodegenTest, CrossEntropyMatchesHandComputation) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  HostLib lib;
  ASSERT_TRUE(buildHost(*module, lib));
  HostKernel ce = lib.get("ce"), ceGrad = lib.get("ce_grad");
  ASSERT_TRUE(ce && ceGrad);
  // Rows: [0,0,0] label 1; [1,2,3] label 2; [ln 1, ln 2, ln 5] label 0
  // (probabilities 1/8, 2/8, 5/8); [100, 0, 0] label 0.
  std::vector<float> logits = {
      0, 0, 0, 1, 2, 3, 0, std::log(2.0f), std::log(5.0f), 100, 0, 0};
  std::vector<int64_t> labels = {1, 2, 0, 0};
  float g = 2.0f, loss = -1;
  double l0 = std::log(3.0);
  double l1 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  double l2 = std::log(8.0);
  double l3 = std::log1p(2 * std::exp(-100.0));
  float want = float((l0 + l1 + l2 + l3) / 4);
  void *args[] = {logits.data(), labels.data(), &loss};
  ce(args);
  EXPECT_NEAR(loss, want, 1e-6f * want);
  EXPECT_NEAR(loss, 0.8964149f, 1e-6f); // (ln 3 + 0.4076060 + ln 8 + 0) / 4

  std::vector<float> dl(12, -5);
  void *gargs[] = {logits.data(), labels.data(), &g, dl.data()};
  ceGrad(gargs);
  // d/dlogit = (softmax - onehot) * g / 4
  std::vector<float> wantDl = {1.0f / 3 * 0.5f,
                               (1.0f / 3 - 1) * 0.5f,
                               1.0f / 3 * 0.5f,
                               0,
                               0,
                               0, // filled below
                               (1.0f / 8 - 1) * 0.5f,
                               2.0f / 8 * 0.5f,
                               5.0f / 8 * 0.5f,
                               0,
                               0,
                               0};
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  wantDl[3] = float(std::exp(1.0) / s * 0.5);
  wantDl[4] = float(std::exp(2.0) / s * 0.5);
  wantDl[5] = float((std::exp(3.0) / s - 1) * 0.5);
  wantDl[10] = float(std::exp(-100.0) * 0.5);
  wantDl[11] = wantDl[10];
  expectClose(dl, wantDl, 1e-6f, "softmax_cross_entropy_grad");
}

TEST_F(CodegenTest, SoftmaxTemplatesCompileWithNVRTC) {
  auto module = parse(kSoftmax);
  ASSERT_TRUE(module);
  checkCuda(*module, 4);
}

TEST_F(CodegenTest, UnknownTemplateIsAVerifierError) {
  // The template table (runtime/schema/BuiltinTemplates.def) is checked when
  // the op is verified, before codegen sees it.
  std::string errors = captureErrors([&] {
    auto module = parseSourceString<ModuleOp>(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<4xf32>
  %y = dlexec.alloc : memref<4xf32>
  dlexec.builtin_kernel @k "lp_pool" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
}
)mlir",
                                              &ctx);
    EXPECT_FALSE(module);
  });
  EXPECT_NE(errors.find("unknown kernel template 'lp_pool'"), std::string::npos)
      << errors;
}

//===----------------------------------------------------------------------===//
// Package writer
//===----------------------------------------------------------------------===//

// A tiny training step: y = x W^T (gemm), h = relu(y + b) (kernel), loss =
// cross entropy(h, labels) (builtin); logits go through a reshape alias.
const char *kPlanned = R"mlir(
dlexec.variable @fc.weight : memref<3x4xf32> {kind = "parameter"} = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
dlexec.variable @fc.bias : memref<3xf32> {kind = "parameter"} = dense<0.5> : tensor<3xf32>
dlexec.variable @m : memref<3xf32> {kind = "optimizer_state"}
dlexec.variable @__step : memref<f32> {kind = "buffer"}
dlexec.func @train_step attributes {arena_bytes = 128 : i64} {
  %x = dlexec.input "x" : memref<2x4xf32>
  %labels = dlexec.input "labels" : memref<2xi64>
  %w = dlexec.variable_ref @fc.weight : memref<3x4xf32>
  %b = dlexec.variable_ref @fc.bias : memref<3xf32>
  %y = dlexec.alloc {offset = 0 : i64} : memref<2x3xf32>
  %h = dlexec.alloc {offset = 32 : i64} : memref<2x3xf32>
  %loss = dlexec.alloc {offset = 64 : i64} : memref<f32>
  dlexec.library_call "gemm" ins(%x, %w : memref<2x4xf32>, memref<3x4xf32>)
      outs(%y : memref<2x3xf32>) {trans_b = true, alpha = 1.0 : f32, beta = 0.0 : f32}
  dlexec.kernel @bias_relu ins(%y, %b : memref<2x3xf32>, memref<3xf32>)
      outs(%h : memref<2x3xf32>) attributes {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    dlexec.yield %r : f32
  }
  %h3 = dlexec.reshape %h : memref<2x3xf32> to memref<2x1x3xf32>
  %l2 = dlexec.reshape %labels : memref<2xi64> to memref<2x1xi64>
  dlexec.builtin_kernel @loss "softmax_cross_entropy" ins(%h3, %l2 : memref<2x1x3xf32>, memref<2x1xi64>)
      outs(%loss : memref<f32>)
  dlexec.output "loss", %loss : memref<f32>
}
)mlir";

TEST_F(CodegenTest, WritesAndVerifiesPackage) {
  auto module = parse(kPlanned);
  ASSERT_TRUE(module);
  llvm::SmallString<128> path;
  ASSERT_FALSE(
      llvm::sys::fs::createTemporaryFile("dlc-codegen-test", "dlcp", path));
  PackageOptions options;
  options.modelName = "tiny";
  options.cudaArchs = {"sm_80"};
  options.training = true;
  options.optimizer = "adam";
  options.learningRate = 1e-3f;
  options.batchSize = 2;
  ASSERT_TRUE(succeeded(writePackage(*module, path, options)));

  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  ASSERT_TRUE(bool(file));
  llvm::sys::fs::remove(path);
  const auto *data =
      reinterpret_cast<const uint8_t *>((*file)->getBufferStart());
  flatbuffers::Verifier verifier(data, (*file)->getBufferSize());
  ASSERT_TRUE(dlc::package::VerifyPackageBuffer(verifier));
  const dlc::package::Package *p = dlc::package::GetPackage(data);
  EXPECT_EQ(p->format_version(), 8u);
  EXPECT_EQ(p->model_name()->str(), "tiny");

  // Buffers: 4 variables, x, labels, y, h, loss, h3, l2.
  using BK = dlc::package::BufferKind;
  ASSERT_EQ(p->buffers()->size(), 11u);
  auto buf = [&](unsigned i) { return p->buffers()->Get(i); };
  EXPECT_EQ(buf(0)->name()->str(), "fc.weight");
  EXPECT_EQ(buf(0)->kind(), BK::Parameter);
  EXPECT_EQ(buf(0)->init()->str(), "fc.weight");
  EXPECT_EQ(buf(0)->size_bytes(), 48);
  EXPECT_EQ(buf(2)->kind(), BK::OptimizerState);
  EXPECT_EQ(buf(2)->init()->str(), "");
  EXPECT_EQ(buf(3)->kind(), BK::Buffer);
  EXPECT_EQ(buf(4)->kind(), BK::Input);
  EXPECT_EQ(buf(5)->dtype(), dlc::package::DType::I64);
  EXPECT_EQ(buf(7)->kind(), BK::Arena);
  EXPECT_EQ(buf(7)->arena_offset(), 32);
  EXPECT_EQ(buf(9)->kind(), BK::Alias);
  EXPECT_EQ(buf(9)->alias_of(), 7);
  EXPECT_EQ(buf(9)->shape()->size(), 3u);
  EXPECT_EQ(buf(10)->alias_of(), 5);

  ASSERT_EQ(p->kernels()->size(), 2u);
  EXPECT_EQ(p->kernels()->Get(0)->name()->str(), "bias_relu");
  EXPECT_EQ(p->kernels()->Get(0)->num_threads(), 6);
  EXPECT_EQ(p->kernels()->Get(1)->name()->str(), "loss");
  // The loss over 2 rows: one block of 2 warps, a warp per row.
  EXPECT_EQ(p->kernels()->Get(1)->num_threads(), 64);
  EXPECT_EQ(p->kernels()->Get(1)->block_size(), 64);
  EXPECT_EQ(p->kernels()->Get(0)->block_size(), 256);

  ASSERT_EQ(p->functions()->size(), 1u);
  const auto *fn = p->functions()->Get(0);
  EXPECT_EQ(fn->name()->str(), "train_step");
  EXPECT_EQ(fn->arena_bytes(), 128);
  ASSERT_EQ(fn->inputs()->size(), 2u);
  EXPECT_EQ(fn->inputs()->Get(1)->name()->str(), "labels");
  EXPECT_EQ(fn->inputs()->Get(1)->buffer(), 5u);
  ASSERT_EQ(fn->outputs()->size(), 1u);
  EXPECT_EQ(fn->outputs()->Get(0)->buffer(), 8u);
  ASSERT_EQ(fn->steps()->size(), 3u);
  const auto *gemm = fn->steps()->Get(0)->op_as_LibraryCall();
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->callee()->str(), "gemm");
  // Format version 2: typed parameters, no positional int_attrs.
  EXPECT_EQ(gemm->int_attrs(), nullptr);
  const auto *ga = gemm->attrs_as_GemmAttrs();
  ASSERT_TRUE(ga);
  EXPECT_EQ(std::make_tuple(ga->m(), ga->n(), ga->k(), ga->trans_a(),
                            ga->trans_b(), ga->has_c(), ga->c_is_row_vector()),
            std::make_tuple(int64_t(2), int64_t(3), int64_t(4), false, true,
                            false, false));
  std::vector<uint32_t> gemmArgs(gemm->args()->begin(), gemm->args()->end());
  EXPECT_EQ(gemmArgs, (std::vector<uint32_t>{4, 0, 6}));
  EXPECT_EQ(ga->alpha(), 1.0f);
  EXPECT_EQ(ga->beta(), 0.0f);
  const auto *launch = fn->steps()->Get(1)->op_as_LaunchKernel();
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->kernel(), 0u);
  std::vector<uint32_t> launchArgs(launch->args()->begin(),
                                   launch->args()->end());
  EXPECT_EQ(launchArgs, (std::vector<uint32_t>{6, 1, 7}));
  const auto *ce = fn->steps()->Get(2)->op_as_LaunchKernel();
  ASSERT_TRUE(ce);
  EXPECT_EQ(ce->kernel(), 1u);
  std::vector<uint32_t> ceArgs(ce->args()->begin(), ce->args()->end());
  EXPECT_EQ(ceArgs, (std::vector<uint32_t>{9, 10, 8}));

  ASSERT_TRUE(p->training());
  EXPECT_EQ(p->training()->optimizer()->str(), "adam");
  EXPECT_EQ(p->training()->step_counter()->str(), "__step");
  EXPECT_EQ(p->training()->batch_size(), 2);
  EXPECT_FLOAT_EQ(p->training()->learning_rate(), 1e-3f);

  ASSERT_TRUE(p->host_library());
  ASSERT_GT(p->host_library()->size(), 4u);
  EXPECT_EQ(std::memcmp(p->host_library()->data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
  ASSERT_TRUE(p->cubins());
  ASSERT_EQ(p->cubins()->size(), 2u);
  EXPECT_EQ(p->cubins()->Get(0)->arch()->str(), "sm_80");
  EXPECT_EQ(p->cubins()->Get(1)->kernel()->str(), "loss");
  EXPECT_GT(p->cubins()->Get(1)->image()->size(), 0u);

  std::vector<dlrt::safetensors::Tensor> tensors;
  std::string error;
  ASSERT_TRUE(dlrt::safetensors::parse(
      p->weights()->data(), p->weights()->size(), &tensors, nullptr, &error))
      << error;
  ASSERT_EQ(tensors.size(), 2u);
  for (const auto &t : tensors) {
    EXPECT_EQ(t.dtype, "F32");
    std::vector<float> values(t.data.size() / 4);
    std::memcpy(values.data(), t.data.data(), t.data.size());
    if (t.name == "fc.weight") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 4}));
      EXPECT_EQ(values[0], 1.0f);
      EXPECT_EQ(values[11], 12.0f);
    } else {
      EXPECT_EQ(t.name, "fc.bias");
      EXPECT_EQ(values, (std::vector<float>{0.5f, 0.5f, 0.5f}));
    }
  }
}

TEST_F(CodegenTest, DescribePlanListsStepsAndBuffers) {
  auto module = parse(kPlanned);
  ASSERT_TRUE(module);
  std::string plan = describePlan(*module);
  EXPECT_NE(plan.find("function train_step: arena 128 bytes, 3 steps"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("0: library gemm ins(#4 'x' f32[2x4], #0 'fc.weight' "
                      "f32[3x4]) outs(#6 f32[2x3])"),
            std::string::npos)
      << plan;
  // The call's parameters, named as in package.fbs's GemmAttrs.
  EXPECT_NE(plan.find("outs(#6 f32[2x3]) m=2 n=3 k=4 trans_a=0 trans_b=1 "
                      "has_c=0 c_is_row_vector=0 alpha=1 beta=0\n"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("#7 arena <temp> f32[2x3] 24 bytes @ 32"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("#9 alias <temp> f32[2x1x3] 24 bytes of #7"),
            std::string::npos)
      << plan;
}

TEST_F(CodegenTest, UnplannedModuleIsRejected) {
  auto module = parse(R"mlir(
dlexec.func @f {
  %x = dlexec.input "x" : memref<4xf32>
  %y = dlexec.alloc : memref<4xf32>
  dlexec.builtin_kernel @sm "softmax" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {axis = 0 : i64}
}
)mlir");
  ASSERT_TRUE(module);
  std::string errors = captureErrors([&] {
    EXPECT_TRUE(failed(writePackage(*module, "/nonexistent/x.dlcp", {})));
  });
  EXPECT_NE(errors.find("has no arena_bytes"), std::string::npos) << errors;
}

} // namespace
