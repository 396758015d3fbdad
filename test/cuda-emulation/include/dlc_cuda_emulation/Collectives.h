//===- Collectives.h - warp intrinsics on the emulated block ---*- C++ -*-===//
//
// Part of dlc_cuda_emulation.h. A warp collective (__shfl*_sync,
// __ballot_sync, __any/__all_sync, __syncwarp, __reduce_*_sync,
// __match_*_sync) waits until every lane its mask names has called one;
// lanes are the block's linear thread ids / 32, as CUDA numbers them. The
// semantics follow the CUDA C++ Programming Guide, "Warp Shuffle Functions"
// and PTX's shfl.sync (a source lane outside the caller's width-segment
// gives the caller its own value).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_COLLECTIVES_H
#define DLC_CUDA_EMULATION_COLLECTIVES_H

namespace dlc_emu {
namespace detail {

/// What a lane reads from a lane that does not take part (undefined in
/// CUDA): all bits set, a NaN for floats, so that using it shows.
constexpr unsigned long long kPoison = ~0ULL;

/// Op::Mma's completion (TensorCores.h).
inline void completeMma(Worker &w, unsigned base, unsigned mask);

/// Computes the results of the collective lanes |mask| of the warp at
/// |base| have all joined.
inline void completeCollective(Worker &w, unsigned base, unsigned mask) {
  Thread *lanes = w.threads + base;
  const Thread &first = lanes[__builtin_ctz(mask)];
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    if (lanes[l].op != first.op || lanes[l].mask != mask)
      fail(DLC_EMU_ERROR_LAUNCH_FAILED,
           "lanes disagree: lane %u calls %s with mask 0x%08x but lane %u "
           "calls %s with mask 0x%08x",
           __builtin_ctz(mask), first.what, mask, l, lanes[l].what,
           lanes[l].mask);
  }
  if (first.op == Op::Mma) {
    completeMma(w, base, mask);
    return;
  }
  unsigned long long all = 0, sum = 0, andv = ~0ULL, orv = 0, xorv = 0;
  long long mins = LLONG_MAX, maxs = LLONG_MIN;
  unsigned long long minu = ~0ULL, maxu = 0;
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    unsigned long long v = lanes[l].value;
    all |= (unsigned long long)(v != 0) << l;
    sum += v;
    andv &= v;
    orv |= v;
    xorv ^= v;
    long long s = (long long)(int)(unsigned)v;
    mins = s < mins ? s : mins;
    maxs = s > maxs ? s : maxs;
    unsigned long long u = (unsigned)v;
    minu = u < minu ? u : minu;
    maxu = u > maxu ? u : maxu;
  }
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    Thread &t = lanes[l];
    unsigned width = (unsigned)t.width, segment = l & ~(width - 1),
             last = segment + width - 1;
    long long src = -1;
    switch (t.op) {
    case Op::Shfl:
      src = segment | ((unsigned)t.arg & (width - 1));
      break;
    case Op::ShflUp:
      src = (long long)l - (unsigned)t.arg;
      if (src < (long long)segment)
        src = l;
      break;
    case Op::ShflDown:
      src = (long long)l + (unsigned)t.arg;
      if (src > (long long)last)
        src = l;
      break;
    case Op::ShflXor:
      src = l ^ ((unsigned)t.arg & 31);
      if (src > (long long)last)
        src = l;
      break;
    case Op::SyncWarp:
      t.result = 0;
      break;
    case Op::Ballot:
      t.result = all;
      break;
    case Op::Any:
      t.result = all != 0;
      break;
    case Op::All:
      t.result = all == mask;
      break;
    case Op::ReduceAdd:
      t.result = (unsigned)sum;
      break;
    case Op::ReduceMinS:
      t.result = (unsigned)(int)mins;
      break;
    case Op::ReduceMaxS:
      t.result = (unsigned)(int)maxs;
      break;
    case Op::ReduceMinU:
      t.result = minu;
      break;
    case Op::ReduceMaxU:
      t.result = maxu;
      break;
    case Op::ReduceAnd:
      t.result = (unsigned)andv;
      break;
    case Op::ReduceOr:
      t.result = (unsigned)orv;
      break;
    case Op::ReduceXor:
      t.result = (unsigned)xorv;
      break;
    case Op::Mma: // completed above
      break;
    case Op::MatchAny:
    case Op::MatchAll: {
      unsigned same = 0;
      for (unsigned k = mask; k; k &= k - 1)
        if (lanes[__builtin_ctz(k)].value == t.value)
          same |= 1u << __builtin_ctz(k);
      t.result = t.op == Op::MatchAny ? same : (same == mask ? mask : 0);
      break;
    }
    }
    if (src >= 0)
      t.result = (mask >> src & 1) ? lanes[src].value : kPoison;
  }
  for (unsigned m = mask; m; m &= m - 1)
    makeRunnable(w, base + __builtin_ctz(m));
}

/// Joins the calling lane to a warp collective and returns its result once
/// every lane of |mask| has joined.
inline unsigned long long collective(Op op, const char *what, unsigned mask,
                                     unsigned long long value, int arg = 0,
                                     int width = 32) {
  Worker &w = worker;
  if (!w.fibers)
    needFibers(what);
  unsigned lane = w.current & 31, base = w.current - lane;
  if (!(mask >> lane & 1))
    fail(DLC_EMU_ERROR_LAUNCH_FAILED,
         "%s with mask 0x%08x, which excludes the caller's own lane %u", what,
         mask, lane);
  if (width < 1 || width > 32 || (width & (width - 1)))
    fail(DLC_EMU_ERROR_LAUNCH_FAILED,
         "%s with width %d; it must be a power of 2 in [1, 32]", what, width);
  // Lanes past the end of a partial last warp never run; a mask may name
  // them (CUDA requires only the non-exited lanes of the mask to take
  // part), and reading from one gives the poison value.
  const unsigned requested = mask;
  if (w.n - base < 32)
    mask &= (1u << (w.n - base)) - 1;
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    if (w.threads[base + l].state == State::Exited)
      fail(DLC_EMU_ERROR_LAUNCH_FAILED,
           "%s with mask 0x%08x names lane %u, which has exited", what,
           requested, l);
  }
  Thread &t = w.threads[w.current];
  t.state = State::Collective;
  t.op = op;
  t.what = what;
  t.mask = mask;
  t.value = value;
  t.arg = arg;
  t.width = width;
  bool complete = true;
  for (unsigned m = mask; m && complete; m &= m - 1)
    complete = w.threads[base + __builtin_ctz(m)].state == State::Collective;
  if (complete)
    completeCollective(w, base, mask);
  yield();
  return t.result;
}

inline void threadExited(Worker &w) {
  Thread &self = w.threads[w.current];
  self.state = State::Exited;
  ++w.exited;
  if (w.atBarrier) {
    char list[256] = "";
    appendThreads(w, list, sizeof(list), State::Barrier);
    fail(DLC_EMU_ERROR_LAUNCH_FAILED,
         "divergent __syncthreads: this thread exited while threads %s wait "
         "at the barrier",
         list);
  }
  unsigned lane = w.current & 31, base = w.current - lane;
  for (unsigned l = 0; l < 32 && base + l < w.n; ++l) {
    const Thread &t = w.threads[base + l];
    if (t.state == State::Collective && (t.mask >> lane & 1))
      fail(DLC_EMU_ERROR_LAUNCH_FAILED,
           "exited while lane %u waits in %s with mask 0x%08x, which names "
           "this lane %u",
           l, t.what, t.mask, lane);
  }
  contextSwap(&w.contexts[w.current], &w.scheduler, /*final=*/true);
  __builtin_trap(); // an exited fiber is never resumed
}

template <class T> inline unsigned long long toBits(T v) {
  // __half2 and __nv_bfloat162 have a user-written assignment, so the test
  // is on the destructor rather than std::is_trivially_copyable.
  static_assert(std::is_trivially_destructible<T>::value && sizeof(T) <= 8,
                "warp shuffles move plain values of up to 8 bytes");
  unsigned long long bits = 0;
  memcpy(&bits, (const void *)&v, sizeof(T));
  return bits;
}
template <class T> inline T fromBits(unsigned long long bits) {
  T v;
  memcpy((void *)&v, &bits, sizeof(T));
  return v;
}

} // namespace detail
} // namespace dlc_emu

template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  using namespace dlc_emu::detail;
  return fromBits<T>(
      collective(Op::Shfl, "__shfl_sync", mask, toBits(var), srcLane, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta,
                        int width = warpSize) {
  using namespace dlc_emu::detail;
  return fromBits<T>(collective(Op::ShflUp, "__shfl_up_sync", mask, toBits(var),
                                (int)delta, width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta,
                          int width = warpSize) {
  using namespace dlc_emu::detail;
  return fromBits<T>(collective(Op::ShflDown, "__shfl_down_sync", mask,
                                toBits(var), (int)delta, width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask,
                         int width = warpSize) {
  using namespace dlc_emu::detail;
  return fromBits<T>(collective(Op::ShflXor, "__shfl_xor_sync", mask,
                                toBits(var), laneMask, width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  using namespace dlc_emu::detail;
  return (unsigned)collective(Op::Ballot, "__ballot_sync", mask,
                              predicate != 0);
}
inline int __any_sync(unsigned mask, int predicate) {
  using namespace dlc_emu::detail;
  return (int)collective(Op::Any, "__any_sync", mask, predicate != 0);
}
inline int __all_sync(unsigned mask, int predicate) {
  using namespace dlc_emu::detail;
  return (int)collective(Op::All, "__all_sync", mask, predicate != 0);
}
inline unsigned __uni_sync(unsigned mask, int predicate) {
  using namespace dlc_emu::detail;
  unsigned b =
      (unsigned)collective(Op::Ballot, "__uni_sync", mask, predicate != 0);
  return b == 0 || b == mask;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  using namespace dlc_emu::detail;
  collective(Op::SyncWarp, "__syncwarp", mask, 0);
}
/// The lanes of the caller's warp that have not exited (with fibers, every
/// lane that has not returned counts as active: the emulator has no
/// divergence within a warp).
inline unsigned __activemask() {
  using namespace dlc_emu::detail;
  Worker &w = worker;
  if (!w.fibers)
    needFibers("__activemask");
  unsigned lane = w.current & 31, base = w.current - lane, mask = 0;
  for (unsigned l = 0; l < 32 && base + l < w.n; ++l)
    if (w.threads[base + l].state != State::Exited)
      mask |= 1u << l;
  return mask;
}
#define DLC_EMU_REDUCE(NAME, T, OP)                                            \
  inline T NAME(unsigned mask, T value) {                                      \
    using namespace dlc_emu::detail;                                           \
    return (T)collective(OP, #NAME, mask,                                      \
                         (unsigned long long)(unsigned)value);                 \
  }
DLC_EMU_REDUCE(__reduce_add_sync, unsigned, Op::ReduceAdd)
DLC_EMU_REDUCE(__reduce_add_sync, int, Op::ReduceAdd)
DLC_EMU_REDUCE(__reduce_min_sync, unsigned, Op::ReduceMinU)
DLC_EMU_REDUCE(__reduce_min_sync, int, Op::ReduceMinS)
DLC_EMU_REDUCE(__reduce_max_sync, unsigned, Op::ReduceMaxU)
DLC_EMU_REDUCE(__reduce_max_sync, int, Op::ReduceMaxS)
DLC_EMU_REDUCE(__reduce_and_sync, unsigned, Op::ReduceAnd)
DLC_EMU_REDUCE(__reduce_or_sync, unsigned, Op::ReduceOr)
DLC_EMU_REDUCE(__reduce_xor_sync, unsigned, Op::ReduceXor)
#undef DLC_EMU_REDUCE
template <class T> inline unsigned __match_any_sync(unsigned mask, T value) {
  using namespace dlc_emu::detail;
  return (unsigned)collective(Op::MatchAny, "__match_any_sync", mask,
                              toBits(value));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int *pred) {
  using namespace dlc_emu::detail;
  unsigned r = (unsigned)collective(Op::MatchAll, "__match_all_sync", mask,
                                    toBits(value));
  *pred = r != 0;
  return r;
}

#endif // DLC_CUDA_EMULATION_COLLECTIVES_H
