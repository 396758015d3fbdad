//===- Atomics.h - CUDA atomic functions as host atomics -------*- C++ -*-===//
//
// Part of dlc_cuda_emulation.h. Blocks may run on several OS threads at
// once, so every atomic is a real host atomic (relaxed, as CUDA's are),
// with the semantics of the CUDA C++ Programming Guide, "Atomic Functions"
// (atomicInc/atomicDec wrap at |val|; floating-point adds are a
// compare-and-swap loop over the bits).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_ATOMICS_H
#define DLC_CUDA_EMULATION_ATOMICS_H

namespace dlc_emu {
namespace detail {
/// Replaces *address by f(old) atomically; returns old. |Bits| is the
/// unsigned integer of T's size.
template <class T, class Bits, class F> inline T atomicUpdate(T *address, F f) {
  static_assert(sizeof(T) == sizeof(Bits), "atomicUpdate bits");
  Bits *p = reinterpret_cast<Bits *>(address);
  Bits old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T value = bitCast<T>(old);
    Bits next = bitCast<Bits>(f(value));
    if (__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return value;
  }
}
} // namespace detail
} // namespace dlc_emu

#define DLC_EMU_INT_ATOMICS(T)                                                 \
  inline T atomicAdd(T *a, T v) {                                              \
    return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  inline T atomicExch(T *a, T v) {                                             \
    return __atomic_exchange_n(a, v, __ATOMIC_RELAXED);                        \
  }                                                                            \
  inline T atomicMin(T *a, T v) {                                              \
    return dlc_emu::detail::atomicUpdate<T, T>(                                \
        a, [v](T o) { return v < o ? v : o; });                                \
  }                                                                            \
  inline T atomicMax(T *a, T v) {                                              \
    return dlc_emu::detail::atomicUpdate<T, T>(                                \
        a, [v](T o) { return v > o ? v : o; });                                \
  }                                                                            \
  inline T atomicCAS(T *a, T compare, T v) {                                   \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED,       \
                                __ATOMIC_RELAXED);                             \
    return compare;                                                            \
  }                                                                            \
  inline T atomicAnd(T *a, T v) {                                              \
    return __atomic_fetch_and(a, v, __ATOMIC_RELAXED);                         \
  }                                                                            \
  inline T atomicOr(T *a, T v) {                                               \
    return __atomic_fetch_or(a, v, __ATOMIC_RELAXED);                          \
  }                                                                            \
  inline T atomicXor(T *a, T v) {                                              \
    return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED);                         \
  }
DLC_EMU_INT_ATOMICS(int)
DLC_EMU_INT_ATOMICS(unsigned)
DLC_EMU_INT_ATOMICS(unsigned long long)
DLC_EMU_INT_ATOMICS(long long) // atomicMin/Max/And/Or/Xor exist for it (sm_35+)
#undef DLC_EMU_INT_ATOMICS

inline int atomicSub(int *a, int v) {
  return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);
}
inline unsigned atomicSub(unsigned *a, unsigned v) {
  return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);
}
/// ((old >= val) ? 0 : (old + 1)), as CUDA defines it.
inline unsigned atomicInc(unsigned *a, unsigned val) {
  return dlc_emu::detail::atomicUpdate<unsigned, unsigned>(
      a, [val](unsigned o) { return o >= val ? 0u : o + 1; });
}
/// (((old == 0) || (old > val)) ? val : (old - 1)), as CUDA defines it.
inline unsigned atomicDec(unsigned *a, unsigned val) {
  return dlc_emu::detail::atomicUpdate<unsigned, unsigned>(
      a, [val](unsigned o) { return (o == 0 || o > val) ? val : o - 1; });
}
inline unsigned short atomicCAS(unsigned short *a, unsigned short compare,
                                unsigned short v) {
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return compare;
}
inline float atomicExch(float *a, float v) {
  return __int_as_float(__atomic_exchange_n(
      reinterpret_cast<int *>(a), __float_as_int(v), __ATOMIC_RELAXED));
}
inline float atomicAdd(float *a, float v) {
  return dlc_emu::detail::atomicUpdate<float, unsigned>(
      a, [v](float o) { return o + v; });
}
inline double atomicAdd(double *a, double v) {
  return dlc_emu::detail::atomicUpdate<double, unsigned long long>(
      a, [v](double o) { return o + v; });
}
// The sum of two halves is exact in float's 24 bits or rounds only once to
// the half type (24 >= 2 * 11 + 2), so this is CUDA's correctly rounded add.
inline __half atomicAdd(__half *a, __half v) {
  return dlc_emu::detail::atomicUpdate<__half, unsigned short>(
      a, [v](__half o) { return __hadd(o, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *a, __nv_bfloat16 v) {
  return dlc_emu::detail::atomicUpdate<__nv_bfloat16, unsigned short>(
      a, [v](__nv_bfloat16 o) { return __hadd(o, v); });
}
inline __half2 atomicAdd(__half2 *a, __half2 v) {
  return dlc_emu::detail::atomicUpdate<__half2, unsigned>(
      a, [v](__half2 o) { return __hadd2(o, v); });
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162 *a, __nv_bfloat162 v) {
  return dlc_emu::detail::atomicUpdate<__nv_bfloat162, unsigned>(
      a, [v](__nv_bfloat162 o) { return __hadd2(o, v); });
}

// The _block and _system scopes are the same host atomics.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin

#endif // DLC_CUDA_EMULATION_ATOMICS_H
