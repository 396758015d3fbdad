//===- Compile.cpp - host shared objects and NVRTC cubins -----------------===//
#include "codegen/Codegen.h"
#include "codegen/CompileCache.h"
#include "codegen/KernelCode.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#include "runtime/cuda/NvrtcBuiltins.h"
#include "runtime/schema/NvrtcOptions.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

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
    // Whatever else a failed compile left there (sources, logs).
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
  std::string file(StringRef name) {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    files.push_back(std::string(p));
    return std::string(p);
  }
};
} // namespace

namespace {
/// Writes |text| to |path|; returns an error message or "".
std::string writeFile(const std::string &path, StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return "cannot write " + path + ": " + ec.message();
  os << text;
  os.close();
  if (os.has_error()) {
    os.clear_error();
    return "cannot write " + path;
  }
  return "";
}

std::string readLog(const std::string &path) {
  if (auto buf = llvm::MemoryBuffer::getFile(path))
    return (*buf)->getBuffer().str();
  return "";
}

/// The identity of the C++ compiler at |program| for cache keys: its
/// resolved path, size and modification time, and what `--version` prints.
/// Computed once per program and process.
std::string compilerIdentity(const std::string &program) {
  static std::mutex mutex;
  static llvm::StringMap<std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(program);
  if (it != known.end())
    return it->second;
  std::string id = program;
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(program, real)) {
    llvm::sys::fs::file_status st;
    if (!llvm::sys::fs::status(real, st))
      id += "\n" + std::string(real) + " " + std::to_string(st.getSize()) +
            " " +
            std::to_string(st.getLastModificationTime().time_since_epoch()
                               .count());
  }
  llvm::SmallString<128> out;
  if (!llvm::sys::fs::createTemporaryFile("dlc-cxx-version", "txt", out)) {
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out),
                                            StringRef(out)};
    StringRef args[] = {program, "--version"};
    llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects);
    id += "\n" + readLog(std::string(out));
    llvm::sys::fs::remove(out);
  }
  known[program] = id;
  return id;
}

/// Runs |work(i)| for i in [0, n) on up to |jobs| threads.
void parallelFor(size_t n, unsigned jobs,
                 const std::function<void(size_t)> &work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < n;)
      work(i);
  };
  size_t threads = std::min<size_t>(jobs, n);
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back(worker);
  for (std::thread &t : pool)
    t.join();
}

void addReport(CacheReport *report, unsigned hits, unsigned misses,
               unsigned corrupt) {
  if (!report)
    return;
  report->hits += hits;
  report->misses += misses;
  report->corrupt += corrupt;
}
} // namespace

std::string hostCompilerIdentity(const std::string &compiler) {
  std::string program = compiler;
  if (!llvm::sys::path::is_absolute(compiler)) {
    auto found = llvm::sys::findProgramByName(compiler);
    if (!found)
      return "";
    program = *found;
  }
  return compilerIdentity(program);
}

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "";
  return "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
}

unsigned compileJobs(unsigned jobs) {
  return jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
}

void PhaseTimes::add(StringRef phase, double seconds) {
  for (auto &[name, total] : phases)
    if (name == phase) {
      total += seconds;
      return;
    }
  phases.push_back({phase.str(), seconds});
}

static double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

PhaseTimer::PhaseTimer(PhaseTimes *times, StringRef phase)
    : times(times), phase(phase.str()), start(nowSeconds()) {}

void PhaseTimer::stop() {
  if (!times)
    return;
  times->add(phase, nowSeconds() - start);
  times = nullptr;
}

FailureOr<std::vector<uint8_t>>
compileHostLibrary(Location loc, const std::string &source,
                   const std::string &compiler) {
  return compileHostLibrary(loc, ArrayRef<std::string>(source), compiler,
                            /*cache=*/nullptr, /*jobs=*/1);
}

/// Estimated work of one launch of |k| on the host: loop iterations x
/// serial reduction steps.
static int64_t hostWork(const detail::KernelCode &k) {
  int64_t iterations = k.loopNest || k.cudaBody.empty() ? k.numThreads
                                                        : k.hostThreads;
  return std::max<int64_t>(iterations, 1) *
         std::max<int64_t>(k.serialReductionSteps, 1);
}

/// Compile time per byte of source at -O3 relative to -O2 (DenseNet-121's
/// kernels with GCC 12: 54 s against 22 s of user time).
static constexpr double kHotCostFactor = 2.5;

FailureOr<std::vector<HostUnit>> emitHostUnits(ModuleOp module, unsigned units,
                                               int64_t hotWork) {
  auto kernels = detail::collectKernels(module);
  if (failed(kernels))
    return failure();
  // Every unit starts with the same prelude (its helpers are static).
  std::string prelude = detail::hostPrelude(*kernels);
  // Per level: the kernels' code in program order and its estimated cost.
  std::vector<std::string> bodies[2];
  double levelCost[2] = {0, 0};
  for (const detail::KernelCode &k : *kernels) {
    bool hot = hostWork(k) >= hotWork;
    bodies[hot].push_back(detail::wrapHost(k));
    levelCost[hot] += bodies[hot].back().size() * (hot ? kHotCostFactor : 1);
  }
  units = std::max(1u, units);
  std::vector<HostUnit> out;
  for (bool hot : {true, false}) {
    if (bodies[hot].empty())
      continue;
    double factor = hot ? kHotCostFactor : 1;
    // This level's share of the units, at least one.
    size_t n = std::max<size_t>(
        1, size_t(units * levelCost[hot] / (levelCost[0] + levelCost[1]) + 0.5));
    n = std::min(n, bodies[hot].size());
    // Contiguous runs of about levelCost / n each.
    size_t first = out.size();
    out.push_back({prelude, hot, 0});
    double done = 0;
    for (std::string &body : bodies[hot]) {
      if (out.back().source.size() > prelude.size() && out.size() - first < n &&
          done * n >= levelCost[hot] * (out.size() - first))
        out.push_back({prelude, hot, 0});
      done += body.size() * factor;
      out.back().source += body;
    }
    for (size_t i = first; i < out.size(); ++i)
      out[i].cost = out[i].source.size() * factor;
  }
  // A module without kernels still links a (prelude-only) library.
  if (out.empty())
    out.push_back({prelude, /*hot=*/false, double(prelude.size())});
  std::stable_sort(out.begin(), out.end(), [](auto &a, auto &b) {
    return a.cost > b.cost;
  });
  return out;
}

FailureOr<std::vector<uint8_t>>
compileHostLibrary(Location loc, ArrayRef<std::string> units,
                   const std::string &compiler, CompileCache *cache,
                   unsigned jobs, CacheReport *report) {
  std::vector<HostUnit> hostUnits;
  for (const std::string &u : units)
    hostUnits.push_back({u, /*hot=*/true, 0});
  return compileHostLibrary(loc, ArrayRef<HostUnit>(hostUnits), compiler,
                            cache, jobs, report);
}

FailureOr<std::vector<uint8_t>>
compileHostLibrary(Location loc, ArrayRef<HostUnit> units,
                   const std::string &compiler, CompileCache *cache,
                   unsigned jobs, CacheReport *report) {
  std::string program = compiler;
  if (!llvm::sys::path::is_absolute(compiler)) {
    auto found = llvm::sys::findProgramByName(compiler);
    if (!found)
      return emitError(loc)
             << "host C++ compiler '" << compiler << "' not found on PATH";
    program = *found;
  }
  jobs = compileJobs(jobs);
  CompileCache none;
  if (!cache)
    cache = &none;
  const unsigned hits0 = cache->hits, misses0 = cache->misses,
                 corrupt0 = cache->corrupt;
  auto reportCache = [&] {
    addReport(report, cache->hits - hits0, cache->misses - misses0,
              cache->corrupt - corrupt0);
  };
  ScratchDir dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("dlc-host", dir.path))
    return emitError(loc) << "cannot create a temporary folder: "
                          << ec.message();
  const std::string prefixMap = "-ffile-prefix-map=" + std::string(dir.path) +
                                "=.";
  std::string identity =
      cache->enabled() ? compilerIdentity(program) : std::string();

  // OpenMP parallelizes the outer loop of large kernels; a compiler without
  // it (clang without libomp, which fails at the link) still builds the
  // kernels serially.
  std::string lastError;
  for (bool openmp : {true, false}) {
    // No -ffast-math / -Ofast: results must not depend on the compiler's
    // reassociation. -fno-math-errno (after -fno-fast-math, which would
    // reset it) lets sqrtf become one instruction and vectorize; IEEE
    // results are unchanged. No -march: packages run on any x86-64.
    // -ffp-contract=off: no fused multiply-add, as the CUDA kernels
    // (runtime/schema/NvrtcOptions.h), also with a host compiler or flags that would
    // target FMA hardware.
    // Without the OpenMP runtime `omp simd` still marks loops vectorizable.
    // -O3 for the units of kernels with much work (HostUnit::hot): on the
    // others it costs 2.5 times -O2's compile time for no measurable gain.
    std::vector<std::string> flags = {
        "-std=c++17",      "-fPIC", "-fno-fast-math",
        "-fno-math-errno", "-ffp-contract=off",
        "-w",              openmp ? "-fopenmp" : "-fopenmp-simd"};
    std::string flagText = llvm::join(flags, " ");
    auto level = [&](size_t i) -> StringRef {
      return units[i].hot ? "-O3" : "-O2";
    };

    std::string libKey;
    if (cache->enabled()) {
      std::vector<StringRef> parts = {"host-so", identity, flagText};
      for (size_t i = 0; i < units.size(); ++i) {
        parts.push_back(level(i));
        parts.push_back(units[i].source);
      }
      libKey = contentKey(parts);
      if (auto hit = cache->lookup("host-so", libKey)) {
        reportCache();
        return std::move(*hit);
      }
    }

    // Objects: from the cache, else compiled in parallel.
    size_t n = units.size();
    std::vector<std::string> objects(n), objKeys(n), errors(n);
    std::vector<std::vector<uint8_t>> cached(n);
    std::vector<bool> fromCache(n, false);
    for (size_t i = 0; i < n; ++i)
      objects[i] = dir.file("unit" + std::to_string(i) +
                            (openmp ? "-omp" : "") + ".o");
    parallelFor(n, jobs, [&](size_t i) {
      if (cache->enabled()) {
        objKeys[i] = contentKey(
            {"host-obj", identity, level(i), flagText, units[i].source});
        if (auto hit = cache->lookup("host-obj", objKeys[i])) {
          cached[i] = std::move(*hit);
          fromCache[i] = true;
          return;
        }
      }
      std::string src = (llvm::Twine(dir.path) + "/unit" + llvm::Twine(i) +
                         ".cpp")
                            .str();
      std::string log = objects[i] + ".log";
      if (std::string e = writeFile(src, units[i].source); !e.empty()) {
        errors[i] = e;
        return;
      }
      std::vector<StringRef> args = {program, level(i)};
      for (const std::string &f : flags)
        args.push_back(f);
      args.insert(args.end(), {StringRef(prefixMap), StringRef("-c"),
                               StringRef("-o"), StringRef(objects[i]),
                               StringRef(src)});
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                              StringRef(log)};
      std::string errMsg;
      int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt,
                                         redirects, 0, 0, &errMsg);
      std::string output = readLog(log);
      llvm::sys::fs::remove(src);
      llvm::sys::fs::remove(log);
      if (rc != 0) {
        errors[i] = "host kernel compilation with '" + program +
                    "' failed (exit " + std::to_string(rc) + ")" +
                    (errMsg.empty() ? "" : ": " + errMsg) + "\n" + output;
        return;
      }
      if (cache->enabled())
        if (auto buf =
                llvm::MemoryBuffer::getFile(objects[i], /*IsText=*/false)) {
          StringRef b = (*buf)->getBuffer();
          cache->store("host-obj", objKeys[i],
                       ArrayRef<uint8_t>(
                           reinterpret_cast<const uint8_t *>(b.data()),
                           b.size()));
        }
    });
    for (size_t i = 0; i < n; ++i)
      dir.files.push_back(objects[i]);
    // As before the split: any failure with OpenMP is retried without it.
    if (llvm::any_of(errors, [](auto &e) { return !e.empty(); })) {
      for (const std::string &e : errors)
        if (!e.empty()) {
          lastError = e;
          break;
        }
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      if (fromCache[i]) {
        StringRef bytes(reinterpret_cast<const char *>(cached[i].data()),
                        cached[i].size());
        if (std::string e = writeFile(objects[i], bytes); !e.empty()) {
          reportCache();
          return emitError(loc) << e;
        }
      }

    // Link.
    std::string so = dir.file(openmp ? "kernels-omp.so" : "kernels.so");
    std::string log = dir.file("link.log");
    std::vector<StringRef> args = {program, "-shared", "-fPIC",
                                   openmp ? "-fopenmp" : "-fopenmp-simd", "-o",
                                   so};
    for (const std::string &o : objects)
      args.push_back(o);
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                            StringRef(log)};
    std::string errMsg;
    int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects,
                                       0, 0, &errMsg);
    if (rc != 0) {
      lastError = "host kernel compilation with '" + program +
                  "' failed (exit " + std::to_string(rc) + ")" +
                  (errMsg.empty() ? "" : ": " + errMsg) + "\n" + readLog(log);
      continue;
    }
    auto buf = llvm::MemoryBuffer::getFile(so, /*IsText=*/false);
    if (!buf) {
      reportCache();
      return emitError(loc) << "cannot read " << so << ": "
                            << buf.getError().message();
    }
    StringRef bytes = (*buf)->getBuffer();
    std::vector<uint8_t> lib(bytes.begin(), bytes.end());
    cache->store("host-so", libKey, lib);
    reportCache();
    return lib;
  }
  reportCache();
  return emitError(loc) << lastError;
}

/// The NVRTC options of detail::nvrtcCompile for |arch| (the runtime's
/// KernelCompiler uses the same arithmetic options).
static std::vector<std::string> nvrtcOptions(StringRef arch) {
  std::vector<std::string> options = {("--gpu-architecture=" + arch).str(),
                                      std::string("-I") + DLC_CUDA_INCLUDE_DIR,
                                      "--std=c++17"};
  for (const char *o : dlrt::cuda::kNvrtcArithmeticOptions)
    options.push_back(o);
  return options;
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
  std::vector<std::string> options = nvrtcOptions(arch);
  std::vector<const char *> opts;
  for (const std::string &o : options)
    opts.push_back(o.c_str());
  res = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
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

FailureOr<std::vector<std::vector<std::vector<uint8_t>>>>
compileCubins(Location loc, ArrayRef<KernelSource> kernels,
              ArrayRef<std::string> archs, CompileCache *cache, unsigned jobs,
              CacheReport *report) {
  CompileCache none;
  if (!cache)
    cache = &none;
  const unsigned hits0 = cache->hits, misses0 = cache->misses,
                 corrupt0 = cache->corrupt;
  std::string version = nvrtcVersionString();
  size_t n = kernels.size();
  std::vector<std::vector<std::vector<uint8_t>>> cubins(
      archs.size(), std::vector<std::vector<uint8_t>>(n));
  std::vector<std::string> errors(archs.size() * n);
  parallelFor(archs.size() * n, compileJobs(jobs), [&](size_t job) {
    size_t a = job / n, k = job % n;
    std::string key;
    if (cache->enabled()) {
      std::vector<std::string> options = nvrtcOptions(archs[a]);
      std::vector<StringRef> parts = {"cubin", version};
      parts.insert(parts.end(), options.begin(), options.end());
      parts.push_back(kernels[k].cudaSource);
      key = contentKey(parts);
      if (auto hit = cache->lookup("cubin", key)) {
        cubins[a][k] = std::move(*hit);
        return;
      }
    }
    if (detail::nvrtcCompile(kernels[k], archs[a], &cubins[a][k],
                             &errors[job]))
      cache->store("cubin", key, cubins[a][k]);
  });
  addReport(report, cache->hits - hits0, cache->misses - misses0,
            cache->corrupt - corrupt0);
  for (const std::string &e : errors)
    if (!e.empty())
      return emitError(loc) << e;
  return cubins;
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
