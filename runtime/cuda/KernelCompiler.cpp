//===- KernelCompiler.cpp - NVRTC compilation with an on-disk cache -------===//
#include "runtime/cuda/KernelCompiler.h"

#include "runtime/cuda/CudaApi.h"
#include "runtime/schema/NvrtcOptions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace dlrt::cuda {
namespace {

// SHA-256 round constants and initial hash (FIPS 180-4, section 4.2.2/5.3.3).
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
constexpr uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                  0xa54ff53a, 0x510e527f, 0x9b05688c,
                                  0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compressBlock(uint32_t h[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
           uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6],
           k = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
                  ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
                  ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d;
  h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// mkdir -p; false if |path| is not a folder afterwards.
bool makeDirectories(const std::string &path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/')
      mkdir(path.substr(0, i).c_str(), 0755); // EEXIST is fine
  return isDirectory(path);
}

bool readFile(const std::string &path, std::vector<uint8_t> *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out->assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return !in.bad();
}

/// Writes |data| to |path| atomically: a unique temporary file in the same
/// folder, fsync, rename. Best effort: returns false on any failure.
bool writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &data) {
  static std::atomic<unsigned> counter{0};
  std::ostringstream tmp;
  tmp << path << ".tmp." << getpid() << "." << counter++;
  const std::string tmpPath = tmp.str();
  int fd = open(tmpPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += size_t(n);
  }
  bool ok = done == data.size() && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (ok && rename(tmpPath.c_str(), path.c_str()) == 0)
    return true;
  unlink(tmpPath.c_str());
  return false;
}

bool looksLikeElf(const std::vector<uint8_t> &image) {
  return image.size() > 4 && image[0] == 0x7f && image[1] == 'E' &&
         image[2] == 'L' && image[3] == 'F';
}

} // namespace

std::string sha256Hex(const std::string &data) {
  uint32_t h[8];
  std::memcpy(h, kInitial, sizeof h);
  const auto *bytes = reinterpret_cast<const uint8_t *>(data.data());
  size_t full = data.size() / 64 * 64;
  for (size_t i = 0; i < full; i += 64)
    compressBlock(h, bytes + i);
  // Padding: 0x80, zeros, then the message length in bits (big-endian).
  uint8_t tail[128] = {};
  size_t rest = data.size() - full;
  std::memcpy(tail, bytes + full, rest);
  tail[rest] = 0x80;
  size_t tailSize = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i)
    tail[tailSize - 1 - i] = uint8_t(bits >> (8 * i));
  for (size_t i = 0; i < tailSize; i += 64)
    compressBlock(h, tail + i);
  static const char *kHex = "0123456789abcdef";
  std::string out;
  for (uint32_t word : h)
    for (int shift = 28; shift >= 0; shift -= 4)
      out += kHex[(word >> shift) & 0xf];
  return out;
}

std::string kernelCacheDir() {
  if (const char *dir = std::getenv("DLRT_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/dlrt";
  return "";
}

std::string cudaIncludeDir() {
  if (const char *home = std::getenv("CUDA_HOME"); home && *home) {
    std::string dir = std::string(home) + "/include";
    if (isDirectory(dir))
      return dir;
  }
  if (isDirectory("/usr/local/cuda/include"))
    return "/usr/local/cuda/include";
  return "";
}

Status compileKernel(const std::string &name, const std::string &source,
                     const std::string &arch, const std::string &cache_dir,
                     CompiledKernel *out) {
  *out = CompiledKernel();
  const NvrtcApi *nvrtc = nullptr;
  if (Status status = loadNvrtc(&nvrtc); !status.ok())
    return status;

  std::vector<std::string> options = {"--gpu-architecture=" + arch,
                                      "--std=c++17"};
  for (const char *o : kNvrtcArithmeticOptions)
    options.push_back(o);
  if (std::string include = cudaIncludeDir(); !include.empty())
    options.push_back("-I" + include);

  std::string cachePath;
  if (!cache_dir.empty()) {
    // Everything that changes the cubin goes into the key.
    std::string key = "dlrt-cubin-1\n" + std::to_string(nvrtc->major) + "." +
                      std::to_string(nvrtc->minor) + "\n" + arch + "\n";
    for (const std::string &o : options)
      key += o + "\n";
    // The stand-in's "cubins" are host shared objects: never let one be
    // mistaken for a real cubin of the same source, or the reverse.
    if (const char *standin = cudaStandinPath())
      key += std::string("standin ") + standin + "\n";
    key += source;
    cachePath = cache_dir + "/" + sha256Hex(key) + ".cubin";
    if (readFile(cachePath, &out->cubin) && looksLikeElf(out->cubin)) {
      out->cache_hit = true;
      out->cache_path = cachePath;
      return Status::OK();
    }
    out->cubin.clear();
  }

  auto fail = [&](const char *call, nvrtcResult r, const std::string &log) {
    std::string message = "NVRTC: " + std::string(call) +
                          " failed for kernel '" + name + "' (" + arch +
                          "): " + nvrtc->nvrtcGetErrorString(r);
    if (!log.empty())
      message += "\n" + log;
    return Status::error(DLRT_INTERNAL, message);
  };
  nvrtcProgram program = nullptr;
  if (nvrtcResult r = nvrtc->nvrtcCreateProgram(&program, source.c_str(),
                                                (name + ".cu").c_str(), 0,
                                                nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return fail("nvrtcCreateProgram", r, "");
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  nvrtcResult compiled =
      nvrtc->nvrtcCompileProgram(program, int(argv.size()), argv.data());
  std::string log;
  size_t logSize = 0;
  if (nvrtc->nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    nvrtc->nvrtcGetProgramLog(program, log.data());
    log.resize(std::strlen(log.c_str()));
  }
  Status status;
  size_t size = 0;
  if (compiled != NVRTC_SUCCESS) {
    status = fail("nvrtcCompileProgram", compiled, log);
  } else if (nvrtcResult r = nvrtc->nvrtcGetCUBINSize(program, &size);
             r != NVRTC_SUCCESS) {
    status = fail("nvrtcGetCUBINSize", r, log);
  } else {
    out->cubin.resize(size);
    if (nvrtcResult got = nvrtc->nvrtcGetCUBIN(
            program, reinterpret_cast<char *>(out->cubin.data()));
        got != NVRTC_SUCCESS)
      status = fail("nvrtcGetCUBIN", got, log);
  }
  nvrtc->nvrtcDestroyProgram(&program);
  if (!status.ok()) {
    out->cubin.clear();
    return status;
  }
  if (!cachePath.empty() && makeDirectories(cache_dir) &&
      writeFileAtomically(cachePath, out->cubin))
    out->cache_path = cachePath;
  return Status::OK();
}

} // namespace dlrt::cuda
