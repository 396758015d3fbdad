//===- Trace.cpp - a session's step timeline as Chrome trace events -------===//
#include "runtime/src/Trace.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace dlrt {

Status Trace::write(const std::string &path, int pid,
                    const std::string &process) const {
  using nlohmann::json;
  json events = json::array();
  auto meta = [&](const char *what, int tid, const std::string &name) {
    events.push_back({{"name", what},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  meta("process_name", 0, process);
  meta("thread_name", Compute, "compute");
  meta("thread_name", Communication, "communication");
  for (const Event &e : events_) {
    json ev = {{"name", e.name},
               {"cat", e.category},
               {"ph", "X"},
               {"pid", pid},
               {"tid", static_cast<int>(e.lane)},
               // Microseconds, the format's unit, with ns precision.
               {"ts", double(e.beginNs) / 1000.0},
               {"dur", double(e.endNs - e.beginNs) / 1000.0}};
    if (e.bytes >= 0)
      ev["args"] = {{"bytes", e.bytes}};
    events.push_back(std::move(ev));
  }
  json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::error(DLRT_IO_ERROR, "cannot write the trace '" + path +
                                              "': " + std::strerror(errno));
    out << doc.dump() << "\n";
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::error(DLRT_IO_ERROR,
                           "cannot write the trace '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::error(DLRT_IO_ERROR,
                         "cannot write the trace '" + path + "': " + why);
  }
  return Status::OK();
}

} // namespace dlrt
