//===- Trace.h - a session's step timeline as Chrome trace events -*- C++ -*-===//
// What a session did, step by step, on the steady clock: kernels, library
// calls, the waits for collectives (lane "compute", in issue order) and the
// collectives themselves (lane "communication", from when the communicator
// started moving the data to when it finished). Written as a Chrome trace
// event file (the JSON object format of the "Trace Event Format" document,
// opened by Perfetto and chrome://tracing); docs/dlrt.md, "Traces".
#ifndef DLRT_SRC_TRACE_H
#define DLRT_SRC_TRACE_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device/Device.h"

namespace dlrt {

class Trace {
public:
  /// The lanes ("threads" of the trace file).
  enum Lane : int { Compute = 0, Communication = 1 };
  struct Event {
    std::string name;
    std::string category; ///< "kernel", "library", "all_reduce", "wait", "step"
    int64_t beginNs = 0;  ///< steady clock, nanoseconds
    int64_t endNs = 0;
    Lane lane = Compute;
    int64_t bytes = -1; ///< moved or computed into, when known
  };

  /// Nanoseconds of |t| on the steady clock (CLOCK_MONOTONIC on Linux: one
  /// clock for every process of the machine, so the ranks line up).
  static int64_t ns(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               t.time_since_epoch())
        .count();
  }
  static int64_t now() { return ns(std::chrono::steady_clock::now()); }

  bool enabled() const { return enabled_; }
  void setEnabled(bool on) { enabled_ = on; }
  void add(Event e) {
    if (enabled_)
      events_.push_back(std::move(e));
  }
  const std::vector<Event> &events() const { return events_; }
  void clear() { events_.clear(); }

  /// Writes the events as a Chrome trace file at |path| (atomically: a
  /// temporary file renamed over it), as process |pid| named |process| (a
  /// rank: "rank 0"). Errors: DLRT_IO_ERROR naming the path.
  Status write(const std::string &path, int pid,
               const std::string &process) const;

private:
  bool enabled_ = false;
  std::vector<Event> events_;
};

} // namespace dlrt

#endif // DLRT_SRC_TRACE_H
