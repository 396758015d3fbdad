//===- MemoryReport.cpp - `--memory-report`: predicted vs measured memory -===//
// Writes a session's memory figures (dlrt_session_memory) as JSON, the way
// `dlrt train --memory-report` and `dlrt run --memory-report` report them.
#include "Common.h"

#include "runtime/schema/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace dlrt::cli {

void checkReportPath(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    fail("--memory-report: cannot write '" + path + "': directory '" + dir +
         "': " + std::strerror(errno));
}

/// The process's peak resident memory in bytes (VmHWM of /proc/self/status:
/// this program's own high-water mark, not its parent's before exec, which
/// getrusage's ru_maxrss includes), or -1 where the file is missing.
static long long hostPeakResidentBytes() {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1)
      break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

void reportMemory(dlrt_context_t context, dlrt_session_t session,
                  const std::string &path, bool quiet) {
  dlrt_memory_info_t m;
  check(dlrt_session_memory(session, &m));
  std::string device = dlrt_context_device(context) == DLRT_DEVICE_CUDA
                           ? dlrt_context_device_name(context)
                           : "host";
  nlohmann::ordered_json j = {{"predicted_peak_bytes", m.predicted_peak_bytes},
                              {"measured_peak_bytes", m.measured_peak_bytes},
                              {"persistent_bytes", m.persistent_bytes},
                              {"input_bytes", m.input_bytes},
                              {"arena_bytes", m.arena_bytes},
                              {"workspace_bytes", m.workspace_bytes},
                              {"used_peak_bytes", m.used_peak_bytes},
                              {"plan_from_package", m.plan_from_package != 0},
                              {"device", device}};
  if (long long rss = hostPeakResidentBytes(); rss >= 0)
    j["host_peak_resident_bytes"] = rss;
  std::string text = j.dump(2) + "\n";
  std::string error;
  if (!safetensors::writeFileAtomic(
          path, reinterpret_cast<const uint8_t *>(text.data()), text.size(),
          &error))
    fail("--memory-report: " + error);
  if (!quiet) {
    std::printf("memory: predicted %lld, measured %lld bytes (persistent "
                "%lld, inputs %lld, arena %lld, workspace %lld)\n",
                static_cast<long long>(m.predicted_peak_bytes),
                static_cast<long long>(m.measured_peak_bytes),
                static_cast<long long>(m.persistent_bytes),
                static_cast<long long>(m.input_bytes),
                static_cast<long long>(m.arena_bytes),
                static_cast<long long>(m.workspace_bytes));
    std::fflush(stdout);
  }
}

} // namespace dlrt::cli
