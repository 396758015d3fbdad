//===- PackageCache.cpp - `dlc`: check, or compile through the package cache ===//
#include "compiler/Driver/Driver.h"

#include "codegen/CompileCache.h"
#include "compiler/Import/ONNXImporter.h"
#include "compiler/Pipeline/MemoryBudget.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace dlc;

/// The key of this compile in the package cache (docs/dlc.md, "Compile
/// time"): a package compiled before from the same input bytes and path,
/// arguments, dlc executable and host/NVRTC toolchain is copied from the
/// cache instead of compiled again, as ccache's direct mode reuses objects.
/// "" where the cache does not apply: no cache, output other than a package
/// file (--emit, --compile-to), --stats or --simulate (they print what a
/// compile finds), or options that read files the key cannot cover (a
/// device model, measured stage times). The files of --trainable and
/// --input-value are hashed into the key.
static std::string packageCacheKey(const CompileOptions &options, int argc,
                                   char **argv,
                                   const codegen::CompileCache &cache) {
  const PipelineOptions defaults;
  if (!cache.enabled() || options.emit != EmitKind::Package ||
      !options.compileTo.empty() || options.stats ||
      options.simulate ||
      options.pipeline.deviceModel != defaults.deviceModel ||
      !options.stageTimes.empty() || !options.simulateTrace.empty() ||
      options.outputPath.empty() || options.outputPath == "-")
    return "";
  auto input = llvm::MemoryBuffer::getFile(options.inputPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  std::string self = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&packageCacheKey));
  llvm::sys::fs::file_status st;
  if (!input || self.empty() || llvm::sys::fs::status(self, st))
    return "";
  std::vector<std::string> parts = {
      "package",
      self + " " + std::to_string(st.getSize()) + " " +
          std::to_string(
              st.getLastModificationTime().time_since_epoch().count()) +
          " MLIR " LLVM_VERSION_STRING,
      codegen::hostCompilerIdentity(options.hostCompiler),
      options.cudaArchs.empty() ? std::string()
                                : codegen::nvrtcVersionString(),
      "jobs " + std::to_string(codegen::compileJobs(options.jobs)),
      // Where the weights go (runCompiler rejects a malformed value).
      "weights section " +
          std::string(std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD")
                          ? std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD")
                          : "")};
  // Every argument but those that cannot change the package's bytes.
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a == "-o" || a == "--o" || a == "-cache-dir" || a == "--cache-dir") {
      ++i;
      continue;
    }
    if (a.starts_with("-o=") || a.starts_with("--o=") ||
        a.starts_with("-cache-dir=") || a.starts_with("--cache-dir=") ||
        a == "-time-phases" || a == "--time-phases" || a == "-quiet" ||
        a == "--quiet")
      continue;
    parts.push_back(a.str());
  }
  // Files that options read are part of the compile: --trainable's list
  // and --input-value's tensors (a file edited between two compiles with the
  // same command line must not give the old package).
  std::vector<std::string> read;
  if (!options.pipeline.trainable.empty())
    read.push_back(options.pipeline.trainable);
  for (llvm::StringRef spec : options.inputValues)
    read.push_back(spec.split('=').second.str());
  for (const std::string &path : read) {
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file)
      return ""; // the compile reports it
    parts.push_back("file " + path + " " +
                    codegen::contentKey({(*file)->getBuffer()}));
  }
  // Weights in external data files are part of the model.
  if (std::string data =
          externalDataKey(options.inputPath, (*input)->getBuffer());
      !data.empty())
    parts.push_back(data);
  std::vector<llvm::StringRef> refs(parts.begin(), parts.end());
  refs.push_back((*input)->getBuffer());
  return codegen::contentKey(refs);
}

int dlc::runCompiler(const CompileOptions &parsed, int argc, char **argv) {
  CompileOptions options = parsed;
  // docs/package-format.md, "The weights section".
  if (const char *t = std::getenv("DLC_WEIGHTS_SECTION_THRESHOLD"); t && *t) {
    std::optional<int64_t> bytes = parseByteSize(t);
    if (!bytes) {
      llvm::errs() << "dlc: error: DLC_WEIGHTS_SECTION_THRESHOLD '" << t
                   << "' is not a size in bytes (such as 0, 65536, 1GiB)\n";
      return 2;
    }
    options.weightsSectionThreshold = static_cast<uint64_t>(*bytes);
  }
  if (options.check) {
    mlir::FailureOr<bool> supported = checkModel(options, llvm::outs());
    return succeeded(supported) && *supported ? 0 : 1;
  }

  // The package cache: the same compile as before is a copy.
  auto start = std::chrono::steady_clock::now();
  codegen::CompileCache cache(options.noCache ? std::string()
                              : !options.cacheDir.empty()
                                  ? options.cacheDir
                                  : codegen::CompileCache::defaultDir());
  const std::string &outputPath = options.outputPath;
  std::string packageKey = packageCacheKey(options, argc, argv, cache);
  if (!packageKey.empty() &&
      cache.lookupToFile("package", packageKey, outputPath)) {
    // As writePackage leaves a package: readable by all.
    llvm::sys::fs::setPermissions(outputPath, llvm::sys::fs::all_read |
                                                  llvm::sys::fs::owner_write);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (options.timePhases)
      llvm::errs() << "dlc: phase times (wall seconds):\n"
                   << "  " << llvm::left_justify("package cache", 22)
                   << llvm::format("%8.3f", seconds) << "\n"
                   << "  " << llvm::left_justify("total", 22)
                   << llvm::format("%8.3f", seconds) << "\n"
                   << "dlc: cache: 1 hits, 0 misses (0 corrupt, recompiled) "
                      "in "
                   << cache.dir() << " (the whole package)\n"
                   << "dlc: peak resident memory: "
                   << llvm::format("%.1f", peakResidentBytes() / 1048576.0)
                   << " MiB\n";
    if (!options.quiet)
      llvm::errs() << "dlc: " << llvm::format("[%6.2fs] ", seconds)
                   << "wrote " << outputPath
                   << " (the same compile as before: copied from the package "
                      "cache)\n";
    return 0;
  }
  if (failed(compileModel(options)))
    return 1;
  if (!packageKey.empty())
    cache.storeFile("package", packageKey, outputPath);
  // The compile stored its objects (and package) in the cache folder: keep
  // the folder under its size limit.
  std::string limitError;
  uint64_t limit = codegen::CompileCache::maxBytesFromEnvironment(&limitError);
  if (!limitError.empty())
    llvm::errs() << "dlc: warning: " << limitError << "\n";
  cache.trim(limit);
  return 0;
}
