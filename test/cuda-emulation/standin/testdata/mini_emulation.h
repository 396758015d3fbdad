// mini_emulation.h - a minimal stand-in for dlc_cuda_emulation.h, used by
// DriverTest.cpp's NVRTC and launch tests only while the real header does
// not exist. Threads of a block run one after another; __syncthreads is a
// no-op that fails the launch when it is not run with fibers (as the real
// header fails collectives without fibers); __trap() fails the launch.
#ifndef DLC_STANDIN_MINI_EMULATION_H
#define DLC_STANDIN_MINI_EMULATION_H

#include "dlc_cuda_emulation_abi.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace dlc_emu {
struct State {
  int fibers = 0;
  std::atomic<int> *failure = nullptr;
  char *error = nullptr;
  size_t errorSize = 0;
  std::vector<unsigned char> shared;
};
inline thread_local State state;

inline void *dynamic_shared() { return state.shared.data(); }

inline void fail(int code, const char *what) {
  int expected = DLC_EMU_OK;
  if (state.failure->compare_exchange_strong(expected, code))
    std::snprintf(state.error, state.errorSize, "%s", what);
}

template <typename F> struct Signature;
template <typename... A> struct Signature<void(A...)> {
  static constexpr int count = int(sizeof...(A));
  static constexpr std::array<unsigned long long, sizeof...(A) + 1> sizes = {
      sizeof(A)..., 0};
  static constexpr std::array<unsigned char, sizeof...(A) + 1> pointers = {
      std::is_pointer<A>::value..., 0};
  template <size_t... I>
  static void call(void (*k)(A...), void **p, std::index_sequence<I...>) {
    k(*static_cast<std::remove_reference_t<A> *>(p[I])...);
  }
};

template <typename... A> int run(void (*kernel)(A...), dlc_emu_launch *l) {
  std::atomic<int> failure{DLC_EMU_OK};
  l->error[0] = 0;
  struct Context {
    void (*kernel)(A...);
    dlc_emu_launch *l;
    std::atomic<int> *failure;
  } ctx{kernel, l, &failure};
  auto block = [](void *c, long long b) {
    auto &x = *static_cast<Context *>(c);
    state.fibers = x.l->fibers;
    state.failure = x.failure;
    state.error = x.l->error;
    state.errorSize = x.l->error_size;
    state.shared.assign(x.l->dynamic_shared_bytes + 16, 0xFF);
    gridDim = {x.l->grid[0], x.l->grid[1], x.l->grid[2]};
    blockDim = {x.l->block[0], x.l->block[1], x.l->block[2]};
    blockIdx = {unsigned(b % gridDim.x), unsigned(b / gridDim.x % gridDim.y),
                unsigned(b / gridDim.x / gridDim.y)};
    for (unsigned z = 0; z < blockDim.z; ++z)
      for (unsigned y = 0; y < blockDim.y; ++y)
        for (unsigned t = 0; t < blockDim.x; ++t) {
          threadIdx = {t, y, z};
          Signature<void(A...)>::call(x.kernel, x.l->params,
                                      std::index_sequence_for<A...>());
        }
  };
  long long blocks = (long long)l->grid[0] * l->grid[1] * l->grid[2];
  if (l->parallel_for)
    l->parallel_for(l->pool, blocks, block, &ctx);
  else
    for (long long b = 0; b < blocks; ++b)
      block(&ctx, b);
  return failure.load();
}
} // namespace dlc_emu

inline void __syncthreads() {
  if (!dlc_emu::state.fibers)
    dlc_emu::fail(DLC_EMU_ERROR_LAUNCH_FAILED,
                  "__syncthreads needs fibers = 1");
}
inline void __trap() { dlc_emu::fail(DLC_EMU_ERROR_ILLEGAL_INSTR, "__trap()"); }

#define DLC_EMU_EXPORT_KERNEL(NAME)                                            \
  extern "C" const int dlc_emu_param_count_##NAME =                            \
      dlc_emu::Signature<decltype(NAME)>::count;                               \
  extern "C" const auto dlc_emu_param_sizes_##NAME =                           \
      dlc_emu::Signature<decltype(NAME)>::sizes;                               \
  extern "C" const auto dlc_emu_param_is_pointer_##NAME =                      \
      dlc_emu::Signature<decltype(NAME)>::pointers;                            \
  extern "C" int dlc_emu_entry_##NAME(dlc_emu_launch *launch) {                \
    return dlc_emu::run(NAME, launch);                                         \
  }

#endif
