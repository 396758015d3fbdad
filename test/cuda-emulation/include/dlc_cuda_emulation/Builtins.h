//===- Builtins.h - CUDA keywords, built-ins and device math ---*- C++ -*-===//
//
// Part of dlc_cuda_emulation.h (included from there, after CUDA's half
// headers). The CUDA names that device code uses and libm lacks, with the
// semantics of the CUDA C++ Programming Guide and the CUDA Math API.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_BUILTINS_H
#define DLC_CUDA_EMULATION_BUILTINS_H

//===-- Keywords ---------------------------------------------------------===//
// host_defines.h already maps __device__, __host__, __global__, __constant__
// to nothing and __align__(n) to the aligned attribute. __shared__ becomes
// per-OS-thread storage: all threads of a block run on one OS thread (as
// fibers or one after another), and blocks on other OS threads get their own
// copy. `extern __shared__ T name[];` does not compile; the stand-in NVRTC
// rewrites it to `T *name = (T *)::dlc_emu::dynamic_shared();`.
#undef __shared__
#define __shared__ static thread_local
// libstdc++ writes __attribute__((__noinline__)), so standard headers must
// be included before this one.
#undef __noinline__
#define __noinline__ __attribute__((noinline))
#undef __launch_bounds__
#define __launch_bounds__(...)
#ifndef __grid_constant__
#define __grid_constant__
#endif

//===-- Built-in variables ------------------------------------------------===//
// Per OS thread; the scheduler sets them before it runs or resumes a thread.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

namespace dlc_emu {
namespace detail {
template <class To, class From> inline To bitCast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast between sizes");
  To to;
  memcpy((void *)&to, (const void *)&from, sizeof(To));
  return to;
}
// Keeps the host compiler from contracting a rounded operation into an FMA
// with its neighbours, as CUDA's __fmul_rn & co. promise.
template <class T> inline T opaque(T value) {
#if defined(__x86_64__)
  __asm__("" : "+x"(value));
#else
  volatile T v = value;
  value = v;
#endif
  return value;
}
} // namespace detail
} // namespace dlc_emu

//===-- Reinterpretation and bit operations -------------------------------===//
inline float __int_as_float(int x) {
  return dlc_emu::detail::bitCast<float>(x);
}
inline int __float_as_int(float x) { return dlc_emu::detail::bitCast<int>(x); }
inline float __uint_as_float(unsigned x) {
  return dlc_emu::detail::bitCast<float>(x);
}
inline unsigned __float_as_uint(float x) {
  return dlc_emu::detail::bitCast<unsigned>(x);
}
inline double __longlong_as_double(long long x) {
  return dlc_emu::detail::bitCast<double>(x);
}
inline long long __double_as_longlong(double x) {
  return dlc_emu::detail::bitCast<long long>(x);
}
inline int __double2hiint(double x) {
  return (int)(__double_as_longlong(x) >> 32);
}
inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double(
      (long long)((unsigned long long)(unsigned)hi << 32 | (unsigned)lo));
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
// CUDA defines the count for 0 (32/64), which the GCC builtins leave undefined.
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) {
  return x ? __builtin_clzll((unsigned long long)x) : 64;
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
  x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
  x = (x >> 4 & 0x0f0f0f0fu) | (x & 0x0f0f0f0fu) << 4;
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (unsigned long long)__brev((unsigned)x) << 32 |
         __brev((unsigned)(x >> 32));
}
// __mul24: the low 24 bits of each operand, sign-extended, multiplied; the
// low 32 bits of the product.
inline int __mul24(int a, int b) {
  long long x = (long long)((int)((unsigned)a << 8) >> 8);
  long long y = (long long)((int)((unsigned)b << 8) >> 8);
  return (int)(unsigned)(x * y);
}
inline unsigned __umul24(unsigned a, unsigned b) {
  return (a & 0xffffffu) * (b & 0xffffffu);
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
  return (long long)(((__int128)a * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a,
                                     unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long bytes = (unsigned long long)y << 32 | x, r = 0;
  for (int i = 0; i < 4; ++i)
    r |= ((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return (unsigned)r;
}

//===-- Loads through the read-only and streaming caches: plain loads -----===//
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
template <class T> inline void __stwt(T *p, T v) { *p = v; }

//===-- min/max: the overloads of CUDA's crt/math_functions.hpp -----------===//
#define DLC_EMU_MINMAX(R, A, B)                                                \
  inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                 \
  inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
DLC_EMU_MINMAX(int, int, int)
DLC_EMU_MINMAX(unsigned, unsigned, unsigned)
DLC_EMU_MINMAX(unsigned, int, unsigned)
DLC_EMU_MINMAX(unsigned, unsigned, int)
DLC_EMU_MINMAX(long, long, long)
DLC_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
DLC_EMU_MINMAX(unsigned long, long, unsigned long)
DLC_EMU_MINMAX(unsigned long, unsigned long, long)
DLC_EMU_MINMAX(long long, long long, long long)
DLC_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
DLC_EMU_MINMAX(unsigned long long, long long, unsigned long long)
DLC_EMU_MINMAX(unsigned long long, unsigned long long, long long)
#undef DLC_EMU_MINMAX
// The floating-point ones are fminf/fmaxf: a NaN operand yields the other.
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }

//===-- Device math libm lacks --------------------------------------------===//
// The intrinsics (__expf, __logf, ...) are approximations on a GPU with
// documented error bounds; here they are the accurate libm functions, so a
// test with a tolerance that holds for the GPU holds here too.
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) {
  *s = sinf(x);
  *c = cosf(x);
}
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float sinpif(float x) { return (float)sin(M_PI * (double)x); }
inline float cospif(float x) { return (float)cos(M_PI * (double)x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
// __saturatef clamps to [0, 1]; NaN gives 0 (CUDA Math API).
inline float __saturatef(float x) {
  return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f);
}
// Correctly rounded operations (round to nearest even; the host's default
// rounding mode), never contracted into an FMA.
inline float __fadd_rn(float a, float b) {
  return dlc_emu::detail::opaque(a + b);
}
inline float __fsub_rn(float a, float b) {
  return dlc_emu::detail::opaque(a - b);
}
inline float __fmul_rn(float a, float b) {
  return dlc_emu::detail::opaque(a * b);
}
inline float __fdiv_rn(float a, float b) {
  return dlc_emu::detail::opaque(a / b);
}
inline float __frcp_rn(float a) { return dlc_emu::detail::opaque(1.0f / a); }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __frsqrt_rn(float a) { return (float)(1.0 / sqrt((double)a)); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) {
  return dlc_emu::detail::opaque(a + b);
}
inline double __dsub_rn(double a, double b) {
  return dlc_emu::detail::opaque(a - b);
}
inline double __dmul_rn(double a, double b) {
  return dlc_emu::detail::opaque(a * b);
}
inline double __ddiv_rn(double a, double b) {
  return dlc_emu::detail::opaque(a / b);
}
inline double __drcp_rn(double a) { return dlc_emu::detail::opaque(1.0 / a); }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float normcdff(float x) {
  return (float)(0.5 * erfc(-(double)x * M_SQRT1_2));
}
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }

namespace dlc_emu {
namespace detail {
// erfc^-1(y) for y in (0, 2): a Newton iteration on erfc in double from
// the usual rational start; erfcinv(0) = +inf, erfcinv(2) = -inf, outside
// [0, 2] NaN (CUDA Math API).
inline double erfcinv(double y) {
  if (!(y >= 0.0 && y <= 2.0))
    return __builtin_nan("");
  if (y == 0.0)
    return __builtin_inf();
  if (y == 2.0)
    return -__builtin_inf();
  // Start: Giles' approximation of erfinv(1 - y), good to a few digits.
  double x = 1.0 - y, w = -log(y * (2.0 - y)), p; // (1 - x)(1 + x)
  const bool tail = w > 30.0;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double r = p * x;
  if (tail) // past the fit's range: erfc(r) ~ exp(-r^2) starts closer
    r = y < 1.0 ? sqrt(-log(y)) : -sqrt(-log(2.0 - y));
  // Newton on log(erfc(r)) = log(y), which converges for y down to the
  // smallest doubles (on erfc(r) = y itself the step overshoots for tiny y):
  // d/dr log(erfc(r)) = -2/sqrt(pi) exp(-r^2) / erfc(r).
  for (int i = 0; i < 6; ++i) {
    double e = erfc(r);
    double d = -2.0 / sqrt(M_PI) * exp(-r * r) / e;
    if (!(e > 0.0) || d == 0.0)
      break;
    r -= (log(e) - log(y)) / d;
  }
  return r;
}
} // namespace detail
} // namespace dlc_emu

inline float erfcinvf(float y) { return (float)dlc_emu::detail::erfcinv(y); }
inline double erfcinv(double y) { return dlc_emu::detail::erfcinv(y); }
inline float erfinvf(float y) {
  return (float)dlc_emu::detail::erfcinv(1.0 - (double)y);
}
inline double erfinv(double y) { return dlc_emu::detail::erfcinv(1.0 - y); }
inline float normcdfinvf(float y) {
  return (float)(-M_SQRT2 * dlc_emu::detail::erfcinv(2.0 * (double)y));
}
inline double normcdfinv(double y) {
  return -M_SQRT2 * dlc_emu::detail::erfcinv(2.0 * y);
}

//===-- Float to integer with CUDA's rounding and saturation --------------===//
// cvt.rni/rzi/rmi/rpi: NaN gives 0, out-of-range values saturate (PTX ISA,
// cvt).
namespace dlc_emu {
namespace detail {
template <class I> inline I saturatingConvert(double r) {
  if (r != r)
    return 0;
  if (r <= (double)std::numeric_limits<I>::min())
    return std::numeric_limits<I>::min();
  if (r >= (double)std::numeric_limits<I>::max())
    return std::numeric_limits<I>::max();
  return (I)r;
}
} // namespace detail
} // namespace dlc_emu
#define DLC_EMU_F2I(SUFFIX, ROUND)                                             \
  inline int __float2int_##SUFFIX(float x) {                                   \
    return dlc_emu::detail::saturatingConvert<int>(ROUND((double)x));          \
  }                                                                            \
  inline unsigned __float2uint_##SUFFIX(float x) {                             \
    return dlc_emu::detail::saturatingConvert<unsigned>(ROUND((double)x));     \
  }                                                                            \
  inline long long __float2ll_##SUFFIX(float x) {                              \
    return dlc_emu::detail::saturatingConvert<long long>(ROUND((double)x));    \
  }                                                                            \
  inline int __double2int_##SUFFIX(double x) {                                 \
    return dlc_emu::detail::saturatingConvert<int>(ROUND(x));                  \
  }
DLC_EMU_F2I(rn, nearbyint)
DLC_EMU_F2I(rz, trunc)
DLC_EMU_F2I(rd, floor)
DLC_EMU_F2I(ru, ceil)
#undef DLC_EMU_F2I
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }

//===-- Half-precision math that CUDA declares only for device code -------===//
// Computed in float and rounded once to the half type (CUDA's versions are
// approximations too; tests compare with a tolerance).
#define DLC_EMU_HALF_MATH(T, TO_F, FROM_F, FROM_D)                             \
  inline T hexp(T x) { return FROM_F(expf(TO_F(x))); }                         \
  inline T hexp2(T x) { return FROM_F(exp2f(TO_F(x))); }                       \
  inline T hexp10(T x) { return FROM_F(powf(10.0f, TO_F(x))); }                \
  inline T hlog(T x) { return FROM_F(logf(TO_F(x))); }                         \
  inline T hlog2(T x) { return FROM_F(log2f(TO_F(x))); }                       \
  inline T hlog10(T x) { return FROM_F(log10f(TO_F(x))); }                     \
  inline T hsqrt(T x) { return FROM_F(sqrtf(TO_F(x))); }                       \
  inline T hrsqrt(T x) { return FROM_F(1.0f / sqrtf(TO_F(x))); }               \
  inline T hrcp(T x) { return FROM_F(1.0f / TO_F(x)); }                        \
  inline T hsin(T x) { return FROM_F(sinf(TO_F(x))); }                         \
  inline T hcos(T x) { return FROM_F(cosf(TO_F(x))); }                         \
  inline T htanh(T x) { return FROM_F(tanhf(TO_F(x))); }                       \
  inline T hfloor(T x) { return FROM_F(floorf(TO_F(x))); }                     \
  inline T hceil(T x) { return FROM_F(ceilf(TO_F(x))); }                       \
  inline T htrunc(T x) { return FROM_F(truncf(TO_F(x))); }                     \
  inline T hrint(T x) { return FROM_F(nearbyintf(TO_F(x))); }                  \
  inline T __hfma(T a, T b, T c) {                                             \
    return FROM_D(fma((double)TO_F(a), (double)TO_F(b), (double)TO_F(c)));     \
  }
DLC_EMU_HALF_MATH(__half, __half2float, __float2half_rn, __double2half)
DLC_EMU_HALF_MATH(__nv_bfloat16, __bfloat162float, __float2bfloat16_rn,
                  __double2bfloat16)
#undef DLC_EMU_HALF_MATH

//===-- Timers -----------------------------------------------------------===//
// clock() is libc's (process CPU time, increasing); clock64() counts
// nanoseconds of a monotonic clock.
inline long long clock64() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif // DLC_CUDA_EMULATION_BUILTINS_H
