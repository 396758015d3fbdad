//===- Launch.h - a C++ launch helper for emulator tests -------*- C++ -*-===//
//
// dlc_emu::launch(kernel, grid, block, options, args...): what a test needs
// to run a kernel compiled with dlc_cuda_emulation.h, on std::threads when
// options.threads > 1. Test-only; kept out of dlc_cuda_emulation.h so the
// kernel modules the stand-in NVRTC compiles do not pay for <thread>.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_LAUNCH_H
#define DLC_CUDA_EMULATION_LAUNCH_H

// Standard headers first: after dlc_cuda_emulation.h, __noinline__ is a
// macro and libstdc++'s __attribute__((__noinline__)) would not compile.
#include <atomic>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dlc_cuda_emulation.h"

namespace dlc_emu {

/// How to run a launch (see dlc_emu_launch).
struct options {
  unsigned long long seed = 0;
  int fibers = 1;                  ///< 0: threads one after another
  size_t dynamic_shared_bytes = 0; ///< `extern __shared__` bytes per block
  unsigned threads = 1;            ///< OS threads that run blocks
  const char *name = "kernel";     ///< the kernel's name in messages
};

/// A launch's outcome: DLC_EMU_OK or an error code, and its message.
struct result {
  int code = DLC_EMU_OK;
  std::string message;
  bool ok() const { return code == DLC_EMU_OK; }
};

/// A parallel_for on |pool| = the number of std::threads to start; indices
/// are handed out one at a time from a shared counter.
inline void threadParallelFor(void *pool, long long n,
                              void (*body)(void *, long long), void *ctx) {
  unsigned count = (unsigned)(uintptr_t)pool;
  std::atomic<long long> next{0};
  auto work = [&] {
    for (long long i; (i = next.fetch_add(1)) < n;)
      body(ctx, i);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < count; ++t)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
}

namespace detail {
template <class... A, class Tuple, size_t... I>
result launchTuple(void (*kernel)(A...), dim3 grid, dim3 block,
                   const options &o, Tuple &values, std::index_sequence<I...>) {
  void *params[sizeof...(A) + 1] = {(void *)&std::get<I>(values)..., nullptr};
  char error[1024] = "";
  dlc_emu_launch l{};
  l.grid[0] = grid.x;
  l.grid[1] = grid.y;
  l.grid[2] = grid.z;
  l.block[0] = block.x;
  l.block[1] = block.y;
  l.block[2] = block.z;
  l.dynamic_shared_bytes = o.dynamic_shared_bytes;
  l.seed = o.seed;
  l.fibers = o.fibers;
  l.params = params;
  if (o.threads > 1) {
    l.parallel_for = &threadParallelFor;
    l.pool = (void *)(uintptr_t)o.threads;
  }
  l.error = error;
  l.error_size = sizeof(error);
  result r;
  r.code = run(kernel, &l, o.name);
  r.message = error;
  return r;
}
} // namespace detail

/// Runs |kernel| on |grid| x |block| with |args| (converted to the kernel's
/// parameter types).
template <class... A, class... Args>
result launch(void (*kernel)(A...), dim3 grid, dim3 block, const options &o,
              Args &&...args) {
  static_assert(sizeof...(A) == sizeof...(Args),
                "launch: one argument per kernel parameter");
  std::tuple<std::decay_t<A>...> values(static_cast<A>(args)...);
  return detail::launchTuple(kernel, grid, block, o, values,
                             std::index_sequence_for<A...>());
}

} // namespace dlc_emu

#endif // DLC_CUDA_EMULATION_LAUNCH_H
