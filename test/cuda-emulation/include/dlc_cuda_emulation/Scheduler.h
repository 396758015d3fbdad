//===- Scheduler.h - runs a CUDA grid on the host --------------*- C++ -*-===//
//
// Part of dlc_cuda_emulation.h. dlc_emu::run executes a kernel for every
// thread of a grid: blocks in a seeded permutation (on the caller's worker
// threads when the launch gives a parallel_for), and inside a block either
// every thread as a fiber (barriers and warp collectives work; between two
// barriers the runnable threads run in a seeded random order) or, without
// fibers, one thread after another to completion (a function call each).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CUDA_EMULATION_SCHEDULER_H
#define DLC_CUDA_EMULATION_SCHEDULER_H

// Its system headers are included by dlc_cuda_emulation.h, outside the
// hidden-visibility region.

namespace dlc_emu {
namespace detail {

//===-- Seeded randomness -------------------------------------------------===//
inline unsigned long long mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL; // splitmix64 (Steele, Lea, Flood 2014)
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
struct Rng {
  unsigned long long state;
  unsigned long long next() { return mix64(state += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n), n >= 1 (Lemire's multiply-shift; the bias for
  /// n <= 2^16 is far below what matters for an order).
  unsigned below(unsigned n) {
    return (unsigned)(((next() >> 32) * (unsigned long long)n) >> 32);
  }
};

/// A seeded permutation of [0, n) without memory: a 4-round Feistel network
/// over the smallest even number of bits that holds n, cycle-walked back
/// into range (Black & Rogaway 2002), so grids of any size cost nothing.
struct Permutation {
  unsigned long long n, seed;
  unsigned halfBits;
  unsigned long long halfMask;
  Permutation(unsigned long long n, unsigned long long seed)
      : n(n), seed(seed) {
    unsigned bits = 2;
    while (bits < 64 && (1ULL << bits) < n)
      bits += 2;
    halfBits = bits / 2;
    halfMask = (1ULL << halfBits) - 1;
  }
  unsigned long long operator()(unsigned long long i) const {
    do {
      unsigned long long l = i >> halfBits, r = i & halfMask;
      for (unsigned round = 0; round < 4; ++round) {
        unsigned long long f = mix64(r ^ mix64(seed + round)) & halfMask;
        unsigned long long t = l ^ f;
        l = r;
        r = t;
      }
      i = l << halfBits | r;
    } while (i >= n);
    return i;
  }
};

//===-- Execution contexts ------------------------------------------------===//
// One fiber per CUDA thread. On x86-64 a switch saves the callee-saved
// registers and the FP control words and swaps stack pointers (no system
// call); elsewhere, or with DLC_EMU_UCONTEXT, glibc's swapcontext (which
// also saves the signal mask: a system call per switch).
/// A fiber left for good keeps its frames' redzones poisoned; the next
/// fiber on that stack starts clean.
inline void unpoisonStack(char *stack, size_t size) {
#ifdef __SANITIZE_ADDRESS__
  __asan_unpoison_memory_region(stack, size);
#else
  (void)stack;
  (void)size;
#endif
}

#ifndef DLC_EMU_USE_UCONTEXT
struct Context {
  void *sp = nullptr;
  const void *stackBottom = nullptr; // for AddressSanitizer's fiber API
  size_t stackSize = 0;
};
__attribute__((naked, noinline)) static void contextSwitch(void ** /*save*/,
                                                           void * /*load*/) {
  __asm__ volatile("pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\t"
                   "pushq %r14\n\tpushq %r15\n\tsubq $8, %rsp\n\t"
                   "stmxcsr (%rsp)\n\tfnstcw 4(%rsp)\n\t"
                   "movq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n\t"
                   "ldmxcsr (%rsp)\n\tfldcw 4(%rsp)\n\taddq $8, %rsp\n\t"
                   "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\t"
                   "popq %rbx\n\tpopq %rbp\n\tret\n\t");
}
// First code a new fiber runs: entry(arg) from r13/r12, with the stack
// aligned as a call expects. The entry never returns.
__attribute__((naked, noinline)) static void contextTrampoline() {
  __asm__ volatile("movq %r12, %rdi\n\tcallq *%r13\n\tud2\n\t");
}
inline void contextInit(Context *c, char *stack, size_t size,
                        void (*entry)(void *), void *arg) {
  unsigned long long *top =
      (unsigned long long *)((uintptr_t)(stack + size) & ~(uintptr_t)15);
  top[-1] = (unsigned long long)(uintptr_t)&contextTrampoline;
  top[-2] = 0;                                    // rbp
  top[-3] = 0;                                    // rbx
  top[-4] = (unsigned long long)(uintptr_t)arg;   // r12
  top[-5] = (unsigned long long)(uintptr_t)entry; // r13
  top[-6] = 0;                                    // r14
  top[-7] = 0;                                    // r15
  top[-8] = 0x1f80ULL | 0x037fULL << 32;          // default MXCSR, x87 control
  c->sp = &top[-8];
  c->stackBottom = stack;
  c->stackSize = size;
  unpoisonStack(stack, size);
}
inline void rawSwap(Context *from, Context *to) {
  contextSwitch(&from->sp, to->sp);
}
#else
struct Context {
  ucontext_t uc;
  const void *stackBottom = nullptr; // for AddressSanitizer's fiber API
  size_t stackSize = 0;
};
inline void contextInit(Context *c, char *stack, size_t size,
                        void (*entry)(void *), void *arg) {
  static thread_local ucontext_t base;
  static thread_local bool haveBase = false;
  if (!haveBase) {
    getcontext(&base); // once per OS thread: getcontext is a system call
    haveBase = true;
  }
  c->uc = base;
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = nullptr;
  // The entries here ignore their argument (the worker is thread-local).
  (void)arg;
  makecontext(&c->uc, (void (*)())entry, 0);
  c->stackBottom = stack;
  c->stackSize = size;
  unpoisonStack(stack, size);
}
inline void rawSwap(Context *from, Context *to) {
  swapcontext(&from->uc, &to->uc);
}
#endif

/// Switches from |from| to |to|. |final|: |from| is never resumed (its
/// thread exited or failed). Under AddressSanitizer the switch is announced
/// (its fiber API), so it does not take a fiber's stack for an overflow.
inline void contextSwap(Context *from, Context *to, bool final = false) {
#ifdef __SANITIZE_ADDRESS__
  void *fakeStack = nullptr;
  __sanitizer_start_switch_fiber(final ? nullptr : &fakeStack, to->stackBottom,
                                 to->stackSize);
  rawSwap(from, to);
  __sanitizer_finish_switch_fiber(fakeStack, nullptr, nullptr);
#else
  (void) final;
  rawSwap(from, to);
#endif
}

constexpr size_t kStackBytes = 256 << 10;
constexpr unsigned long long kStackCanary = 0xdc1ca7a5dc1ca7a5ULL;

//===-- Per-thread and per-launch state -----------------------------------===//
enum class State : unsigned char {
  Runnable,
  Running,
  Barrier,
  Collective,
  Exited
};

/// The warp-level operations; one rendezvous implements them all.
enum class Op : unsigned char {
  SyncWarp,
  Shfl,
  ShflUp,
  ShflDown,
  ShflXor,
  Ballot,
  Any,
  All,
  ReduceAdd,
  ReduceMinS,
  ReduceMinU,
  ReduceMaxS,
  ReduceMaxU,
  ReduceAnd,
  ReduceOr,
  ReduceXor,
  MatchAny,
  MatchAll,
  Mma // tensor cores: `value` points at the lane's MmaFragments
};

struct Thread {
  State state;
  Op op;
  unsigned mask;
  int arg, width;
  const char *what; // the intrinsic's name, for messages
  unsigned long long value, result;
};

/// What every OS thread of one launch shares.
struct LaunchState {
  dlc_emu_launch *launch;
  const char *kernel;
  int failed; // first error code, set once (atomically)
  Permutation blocks;
  void (*call)(LaunchState *); // runs the kernel for the current thread
  LaunchState(dlc_emu_launch *l, const char *k, unsigned long long numBlocks)
      : launch(l), kernel(k), failed(0),
        blocks(numBlocks, mix64(l->seed ^ 0xb10c)) {}
};

/// Thrown, without fibers, to leave a thread that failed the launch. With
/// -fno-exceptions a longjmp to the block's start does it instead (kernel
/// frames hold nothing that needs destroying).
struct Abort {};

/// The OS thread's state: the block it runs and buffers reused for every
/// block (no allocation per thread or per block once warmed up).
struct Worker {
  LaunchState *launch = nullptr;
  bool fibers = false, failed = false;
  int code = 0;
  char message[640];
  unsigned n = 0, bx = 1, by = 1, current = 0;
  unsigned numRunnable = 0, atBarrier = 0, predCount = 0, barrierResult = 0,
           exited = 0;
  Rng rng{0};
  uint3 block{0, 0, 0};
#ifndef __cpp_exceptions
  jmp_buf abortJump;
#endif
  Thread *threads = nullptr;
  unsigned *order = nullptr; // runnable ids (fibers) or the permutation
  unsigned capacity = 0;
  Context scheduler;
  Context *contexts = nullptr;
  char *stacks = nullptr;
  unsigned numStacks = 0;
  void *dynamicShared = nullptr;
  size_t dynamicCapacity = 0;

  ~Worker() {
    free(threads);
    free(order);
    free(contexts);
    free(dynamicShared);
    if (stacks)
      munmap(stacks, (size_t)numStacks * kStackBytes);
  }
  void reserve(unsigned count) {
    if (count <= capacity)
      return;
    free(threads);
    free(order);
    threads = (Thread *)calloc(count, sizeof(Thread));
    order = (unsigned *)malloc(count * sizeof(unsigned));
    capacity = count;
  }
  /// Stacks for |count| fibers: one mapping for all (pages cost nothing until
  /// touched), kept for the OS thread's lifetime.
  bool reserveStacks(unsigned count) {
    if (count <= numStacks)
      return true;
    count = count < 256 ? 256 : 1024;
    if (stacks)
      munmap(stacks, (size_t)numStacks * kStackBytes);
    free(contexts);
    stacks = (char *)mmap(nullptr, (size_t)count * kStackBytes,
                          PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    contexts = (Context *)calloc(count, sizeof(Context));
    if (stacks == MAP_FAILED || !contexts) {
      if (stacks != MAP_FAILED)
        munmap(stacks, (size_t)count * kStackBytes);
      free(contexts);
      contexts = nullptr;
      stacks = nullptr;
      numStacks = 0;
      return false;
    }
    numStacks = count;
    for (unsigned i = 0; i < count; ++i)
      memcpy(stacks + (size_t)i * kStackBytes, &kStackCanary, 8);
    return true;
  }
};

inline thread_local Worker worker;

inline uint3 threadIndex(const Worker &w, unsigned t) {
  if (w.by == 1 && t < w.bx) // one-dimensional blocks; also z = y = 0
    return uint3{t, 0, 0};
  return uint3{t % w.bx, t / w.bx % w.by, t / (w.bx * w.by)};
}

inline void formatV(char *buf, size_t size, const char *fmt, va_list ap) {
  vsnprintf(buf, size, fmt, ap);
}

/// Records the launch's failure, naming the kernel, block and thread, and
/// leaves the thread for good: back to the scheduler with fibers, by an
/// exception without.
[[noreturn]] inline void fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
inline void fail(int code, const char *fmt, ...) {
  Worker &w = worker;
  uint3 t = threadIndex(w, w.current);
  int len = snprintf(
      w.message, sizeof(w.message),
      "kernel %s block (%u,%u,%u) thread (%u,%u,%u): ", w.launch->kernel,
      w.block.x, w.block.y, w.block.z, t.x, t.y, t.z);
  va_list ap;
  va_start(ap, fmt);
  formatV(w.message + len, sizeof(w.message) - len, fmt, ap);
  va_end(ap);
  w.failed = true;
  w.code = code;
  if (!w.fibers) {
#ifdef __cpp_exceptions
    throw Abort();
#else
    longjmp(w.abortJump, 1);
#endif
  }
  contextSwap(&w.contexts[w.current], &w.scheduler, /*final=*/true);
  __builtin_trap(); // never resumed
}

/// Appends "(x,y,z), (x,y,z) and 5 more" for the threads whose state is
/// |s| (and whose op is |op| when |anyOp| is false).
inline void appendThreads(const Worker &w, char *buf, size_t size, State s) {
  size_t len = strlen(buf);
  unsigned shown = 0, more = 0;
  for (unsigned t = 0; t < w.n; ++t) {
    if (w.threads[t].state != s)
      continue;
    if (shown == 4) {
      ++more;
      continue;
    }
    uint3 i = threadIndex(w, t);
    len += snprintf(buf + len, len < size ? size - len : 0, "%s(%u,%u,%u)",
                    shown ? ", " : "", i.x, i.y, i.z);
    ++shown;
  }
  if (more && len < size)
    snprintf(buf + len, size - len, " and %u more", more);
}

/// Gives the OS thread back to the scheduler until this fiber is runnable.
inline void yield() {
  Worker &w = worker;
  contextSwap(&w.contexts[w.current], &w.scheduler);
}

inline void makeRunnable(Worker &w, unsigned t) {
  w.threads[t].state = State::Runnable;
  w.order[w.numRunnable++] = t;
}

[[noreturn]] inline void needFibers(const char *what) {
  fail(DLC_EMU_ERROR_LAUNCH_FAILED,
       "%s needs the threads of a block to run as fibers, but the launch "
       "has fibers = 0",
       what);
}

/// __syncthreads and its _count/_and/_or forms: returns the number of
/// threads of the block whose |predicate| was nonzero.
inline unsigned barrier(int predicate, const char *what) {
  Worker &w = worker;
  if (!w.fibers)
    needFibers(what);
  if (w.exited) {
    char list[256] = "";
    appendThreads(w, list, sizeof(list), State::Exited);
    fail(DLC_EMU_ERROR_LAUNCH_FAILED,
         "divergent %s: this thread reached it after threads %s of the block "
         "exited",
         what, list);
  }
  w.threads[w.current].state = State::Barrier;
  w.predCount += predicate != 0;
  if (++w.atBarrier == w.n) {
    w.barrierResult = w.predCount;
    w.predCount = w.atBarrier = 0;
    for (unsigned t = 0; t < w.n; ++t)
      makeRunnable(w, t);
  }
  yield();
  return w.barrierResult;
}

/// Where a fiber ends: the thread has returned from the kernel.
inline void threadExited(Worker &w);

inline void fiberEntry(void *) {
  Worker &w = worker;
#ifdef __SANITIZE_ADDRESS__
  // The first switch into a fiber ends here, not in contextSwap: finish it,
  // learning the scheduler's stack for the switches back.
  __sanitizer_finish_switch_fiber(nullptr, &w.scheduler.stackBottom,
                                  &w.scheduler.stackSize);
#endif
  w.launch->call(w.launch);
  threadExited(w);
}

/// Runs block |linear| of the grid on this OS thread; false when it failed.
template <class Call>
bool runBlock(Worker &w, unsigned long long linear, const Call &call) {
  dlc_emu_launch *l = w.launch->launch;
  w.block =
      uint3{(unsigned)(linear % l->grid[0]),
            (unsigned)(linear / l->grid[0] % l->grid[1]),
            (unsigned)(linear / ((unsigned long long)l->grid[0] * l->grid[1]))};
  blockIdx = w.block;
  w.rng.state = mix64(l->seed) ^ mix64(linear * 0x632be59bd9b4e019ULL + 1);
  w.failed = false;
  if (l->dynamic_shared_bytes) // unwritten shared memory reads as NaN
    memset(w.dynamicShared, 0xff, l->dynamic_shared_bytes);
  unsigned n = w.n;
  if (!w.fibers) {
    for (unsigned i = 0; i < n; ++i)
      w.order[i] = i;
    for (unsigned i = n; i > 1; --i) { // Fisher-Yates
      unsigned j = w.rng.below(i), t = w.order[i - 1];
      w.order[i - 1] = w.order[j];
      w.order[j] = t;
    }
#ifdef __cpp_exceptions
    try {
#else
    if (setjmp(w.abortJump))
      return false;
#endif
      for (unsigned i = 0; i < n; ++i) {
        w.current = w.order[i];
        threadIdx = threadIndex(w, w.current);
        call();
      }
#ifdef __cpp_exceptions
    } catch (Abort &) {
      return false;
    }
#endif
    return true;
  }
  w.numRunnable = 0;
  w.atBarrier = w.predCount = w.exited = 0;
  for (unsigned t = 0; t < n; ++t) {
    contextInit(&w.contexts[t], w.stacks + (size_t)t * kStackBytes, kStackBytes,
                &fiberEntry, nullptr);
    makeRunnable(w, t);
  }
  while (!w.failed) {
    if (!w.numRunnable) {
      if (w.exited == n)
        break;
      char atBarrier[200] = "", inCollective[200] = "";
      appendThreads(w, atBarrier, sizeof(atBarrier), State::Barrier);
      appendThreads(w, inCollective, sizeof(inCollective), State::Collective);
      int len = snprintf(w.message, sizeof(w.message),
                         "kernel %s block (%u,%u,%u): deadlock: no thread can "
                         "go on;",
                         w.launch->kernel, w.block.x, w.block.y, w.block.z);
      if (*atBarrier)
        len += snprintf(w.message + len, sizeof(w.message) - len,
                        " threads %s wait at __syncthreads;", atBarrier);
      if (*inCollective)
        len += snprintf(w.message + len, sizeof(w.message) - len,
                        " threads %s wait in a warp collective;", inCollective);
      snprintf(w.message + len, sizeof(w.message) - len,
               " %u of %u threads have exited", w.exited, n);
      w.failed = true;
      w.code = DLC_EMU_ERROR_LAUNCH_FAILED;
      break;
    }
    unsigned r = w.rng.below(w.numRunnable);
    w.current = w.order[r];
    w.order[r] = w.order[--w.numRunnable];
    w.threads[w.current].state = State::Running;
    threadIdx = threadIndex(w, w.current);
    contextSwap(&w.scheduler, &w.contexts[w.current]);
  }
  if (!w.failed) {
    for (unsigned t = 0; t < n; ++t) {
      unsigned long long canary;
      memcpy(&canary, w.stacks + (size_t)t * kStackBytes, 8);
      if (canary != kStackCanary) {
        snprintf(w.message, sizeof(w.message),
                 "kernel %s block (%u,%u,%u): a thread overflowed its %zu-byte "
                 "fiber stack",
                 w.launch->kernel, w.block.x, w.block.y, w.block.z,
                 kStackBytes);
        memcpy(w.stacks + (size_t)t * kStackBytes, &kStackCanary, 8);
        w.code = DLC_EMU_ERROR_LAUNCH_FAILED;
        w.failed = true;
      }
    }
  }
  return !w.failed;
}

template <class Call> struct Launch : LaunchState {
  const Call &call;
  Launch(dlc_emu_launch *l, const char *k, unsigned long long numBlocks,
         const Call &c)
      : LaunchState(l, k, numBlocks), call(c) {
    LaunchState::call = [](LaunchState *s) {
      static_cast<Launch *>(s)->call();
    };
  }
};

inline void setError(dlc_emu_launch *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
inline void setError(dlc_emu_launch *l, const char *fmt, ...) {
  if (!l->error || !l->error_size)
    return;
  va_list ap;
  va_start(ap, fmt);
  formatV(l->error, l->error_size, fmt, ap);
  va_end(ap);
}

/// Runs block |i| of the permutation; parallel_for's body.
template <class Call> void blockBody(void *ctx, long long i) {
  auto *L = static_cast<Launch<Call> *>(ctx);
  if (__atomic_load_n(&L->failed, __ATOMIC_RELAXED))
    return; // another block failed: the launch is over
  dlc_emu_launch *l = L->launch;
  Worker &w = worker;
  unsigned n = l->block[0] * l->block[1] * l->block[2];
  w.launch = L;
  w.fibers = l->fibers != 0;
  w.n = n;
  w.bx = l->block[0];
  w.by = l->block[1];
  blockDim = dim3(l->block[0], l->block[1], l->block[2]);
  gridDim = dim3(l->grid[0], l->grid[1], l->grid[2]);
  w.reserve(n);
  bool ready = true;
  if (w.fibers && !w.reserveStacks(n))
    ready = false;
  if (l->dynamic_shared_bytes > w.dynamicCapacity) {
    free(w.dynamicShared);
    size_t bytes = (l->dynamic_shared_bytes + 15) & ~(size_t)15;
    w.dynamicShared = aligned_alloc(16, bytes);
    w.dynamicCapacity = w.dynamicShared ? bytes : 0;
    ready = ready && w.dynamicShared;
  }
  if (!ready) {
    snprintf(w.message, sizeof(w.message),
             "kernel %s: out of host memory for %u fiber stacks or %zu bytes "
             "of dynamic shared memory",
             L->kernel, n, l->dynamic_shared_bytes);
    w.code = DLC_EMU_ERROR_LAUNCH_FAILED;
  } else if (runBlock(w, L->blocks((unsigned long long)i), L->call)) {
    return;
  }
  int expected = 0;
  if (__atomic_compare_exchange_n(&L->failed, &expected, w.code, false,
                                  __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    setError(l, "%s", w.message);
}

template <class... A, size_t... I>
inline void callKernel(void (*kernel)(A...), void **params,
                       std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_reference_t<A> *>(params[I])...);
}

/// Checks what cuLaunchKernel checks of the configuration.
inline bool checkLaunch(dlc_emu_launch *l, int numParams, const char *kernel) {
  if (l->error && l->error_size)
    l->error[0] = 0;
  unsigned long long threads =
      (unsigned long long)l->block[0] * l->block[1] * l->block[2];
  if (!l->grid[0] || !l->grid[1] || !l->grid[2] || !l->block[0] ||
      !l->block[1] || !l->block[2] || threads > 1024) {
    setError(
        l,
        "kernel %s: grid (%u,%u,%u) block (%u,%u,%u): every dimension must "
        "be >= 1 and a block at most 1024 threads",
        kernel, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
        l->block[2]);
    return false;
  }
  if (numParams && !l->params) {
    setError(l, "kernel %s takes %d parameters but params is null", kernel,
             numParams);
    return false;
  }
  return true;
}

template <class Call>
int runGrid(dlc_emu_launch *l, const char *kernel, const Call &call) {
  unsigned long long numBlocks =
      (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
  Launch<Call> L(l, kernel, numBlocks, call);
  if (l->parallel_for)
    l->parallel_for(l->pool, (long long)numBlocks, &blockBody<Call>, &L);
  else
    for (unsigned long long i = 0; i < numBlocks && !L.failed; ++i)
      blockBody<Call>(&L, (long long)i);
  return L.failed;
}

} // namespace detail

/// Runs |kernel| over the grid and block of |launch| with the arguments
/// launch->params points at (as cuLaunchKernel's kernelParams). Returns
/// DLC_EMU_OK or a DLC_EMU_ERROR_* code with launch->error set to one line
/// naming the kernel (|name|), the block and the threads: INVALID_VALUE for
/// a configuration cuLaunchKernel rejects, ASSERT for a failed assert(),
/// ILLEGAL_INSTR for __trap(), LAUNCH_FAILED for a divergent barrier, a
/// deadlock, a bad warp-collective mask or a collective with fibers = 0.
/// The first failing block ends the launch; blocks already running finish.
template <class... A>
int run(void (*kernel)(A...), dlc_emu_launch *launch,
        const char *name = "kernel") {
  if (!detail::checkLaunch(launch, (int)sizeof...(A), name))
    return DLC_EMU_ERROR_INVALID_VALUE;
  void **params = launch->params;
  auto call = [kernel, params] {
    detail::callKernel(kernel, params, std::index_sequence_for<A...>());
  };
  return detail::runGrid(launch, name, call);
}

/// As above, with the kernel known at compile time, so the per-thread call
/// is inlined (what DLC_EMU_EXPORT_KERNEL uses).
template <auto Kernel> int run(dlc_emu_launch *launch, const char *name) {
  return run(Kernel, launch, name);
}

/// The block's `extern __shared__` memory: launch->dynamic_shared_bytes
/// bytes, 16-byte aligned, all bytes 0xFF when the block starts (so a float
/// read before it was written is a NaN).
inline void *dynamic_shared() { return detail::worker.dynamicShared; }

namespace detail {
template <class F> struct Signature;
template <class... A> struct Signature<void(A...)> {
  static constexpr int count = (int)sizeof...(A);
  static constexpr unsigned long long sizes[sizeof...(A) + 1] = {sizeof(A)...,
                                                                 0};
  static constexpr unsigned char pointers[sizeof...(A) + 1] = {
      (unsigned char)std::is_pointer<A>::value..., 0};
};
template <size_t N> struct SizeArray { unsigned long long v[N]; };
template <size_t N> struct FlagArray { unsigned char v[N]; };
template <class S, size_t... I>
constexpr SizeArray<sizeof...(I)> sizesOf(std::index_sequence<I...>) {
  return {{S::sizes[I]...}};
}
template <class S, size_t... I>
constexpr FlagArray<sizeof...(I)> pointersOf(std::index_sequence<I...>) {
  return {{S::pointers[I]...}};
}
template <class F> using SigOf = Signature<F>;
} // namespace detail
} // namespace dlc_emu

//===-- assert and __trap fail the launch ---------------------------------===//
namespace dlc_emu {
namespace detail {
[[noreturn]] inline void assertFailed(const char *expr, const char *file,
                                      int line) {
  fail(DLC_EMU_ERROR_ASSERT, "%s:%d: assertion `%s' failed", file, line, expr);
}
} // namespace detail
} // namespace dlc_emu
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e)                                                              \
  ((e) ? (void)0 : ::dlc_emu::detail::assertFailed(#e, __FILE__, __LINE__))
#endif
#define __trap()                                                               \
  ::dlc_emu::detail::fail(DLC_EMU_ERROR_ILLEGAL_INSTR, "%s:%d: __trap()",      \
                          __FILE__, __LINE__)
#define __brkpt() __trap()

//===-- Barriers ----------------------------------------------------------===//
inline void __syncthreads() { dlc_emu::detail::barrier(0, "__syncthreads"); }
inline int __syncthreads_count(int p) {
  return (int)dlc_emu::detail::barrier(p, "__syncthreads_count");
}
inline int __syncthreads_and(int p) {
  return dlc_emu::detail::worker.n ==
         dlc_emu::detail::barrier(p, "__syncthreads_and");
}
inline int __syncthreads_or(int p) {
  return dlc_emu::detail::barrier(p, "__syncthreads_or") != 0;
}
// Memory is the host's; a sequentially consistent fence is at least as
// strong as each of CUDA's.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/// Exports kernel NAME for the stand-in driver (dlc_cuda_emulation_abi.h):
/// dlc_emu_entry_NAME, dlc_emu_param_count_NAME, dlc_emu_param_sizes_NAME
/// and dlc_emu_param_is_pointer_NAME (1 for each pointer parameter), all
/// deduced from NAME's type.
#define DLC_EMU_EXPORT_KERNEL(NAME)                                            \
  extern "C" __attribute__((visibility("default"))) int dlc_emu_entry_##NAME(  \
      dlc_emu_launch *launch) {                                                \
    return ::dlc_emu::run<&NAME>(launch, #NAME);                               \
  }                                                                            \
  extern "C" __attribute__((visibility("default")))                            \
  const int dlc_emu_param_count_##NAME =                                       \
      ::dlc_emu::detail::SigOf<decltype(NAME)>::count;                         \
  extern "C" __attribute__((visibility("default")))                            \
  const auto dlc_emu_param_sizes_##NAME =                                      \
      ::dlc_emu::detail::sizesOf<::dlc_emu::detail::SigOf<decltype(NAME)>>(    \
          std::make_index_sequence<                                            \
              ::dlc_emu::detail::SigOf<decltype(NAME)>::count + 1>());         \
  extern "C" __attribute__((visibility("default")))                            \
  const auto dlc_emu_param_is_pointer_##NAME =                                 \
      ::dlc_emu::detail::pointersOf<::dlc_emu::detail::SigOf<decltype(NAME)>>( \
          std::make_index_sequence<                                            \
              ::dlc_emu::detail::SigOf<decltype(NAME)>::count + 1>());

#endif // DLC_CUDA_EMULATION_SCHEDULER_H
