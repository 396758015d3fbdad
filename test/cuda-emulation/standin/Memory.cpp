//===- Memory.cpp - stand-in CUDA device memory, pools and copies ---------===//
// Device memory is host memory laid out so that mistakes show: each
// allocation ends (rounded up to 256 bytes) at a PROT_NONE guard page, new
// and freed memory holds 0xFF bytes (NaN as float), freed memory is
// PROT_NONE until reused, and every copy, memset and kernel pointer argument
// is checked against the registry of live allocations.
#include "DriverInternal.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <unistd.h>
#include <vector>

#include <sys/mman.h>

namespace dlc::standin {
namespace {

constexpr size_t kAlignment = 256; // cudaMalloc's guaranteed alignment

struct MemPool;

struct Block {
  char *map = nullptr; // the mapping, guard page included
  size_t mapBytes = 0;
  char *ptr = nullptr;     // what the caller gets; ptr + rounded = guard page
  size_t rounded = 0;      // size rounded up to 256 bytes: the size class
  size_t size = 0;         // bytes asked for
  MemPool *pool = nullptr; // null: cuMemAlloc
  bool freeIssued = false; // cuMemFreeAsync called, not yet run
  CUstream freeStream = nullptr; // the stream of the last cuMemFreeAsync
  int pendingReleases = 0;       // its release tasks not yet run
};

struct MemPool {
  CUmemPoolProps props{};
  cuuint64_t threshold = 0; // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
  cuuint64_t reserved = 0, reservedHigh = 0, used = 0, usedHigh = 0;
  int reuseFlags[3] = {1, 1, 1}; // REUSE_FOLLOW_EVENT/OPPORTUNISTIC/INTERNAL
  bool isDefault = false;
};

// Never destroyed: stream workers may use them while the process exits.
std::shared_mutex &gMutex = *new std::shared_mutex; // guards all below
auto &gLive = *new std::map<uintptr_t, Block *>;    // by ptr
auto &gFreed = *new std::map<uintptr_t, Block *>;   // cached (PROT_NONE) blocks
auto &gCache = *new std::multimap<std::pair<MemPool *, size_t>, Block *>;
auto &gPools = *new std::map<CUmemoryPool, std::unique_ptr<MemPool>>;
// Blocks whose cuMemFreeAsync was issued but has not run, by pool, size
// class and stream: like a real pool, a later allocation on the same
// stream may take them at once (stream order makes that safe), so the
// pools' used and reserved bytes do not depend on how far the workers lag.
auto &gPending =
    *new std::multimap<std::tuple<MemPool *, size_t, CUstream>, Block *>;
MemPool *gDefaultPool = nullptr;
size_t gMapped = 0; // bytes mapped, cached blocks included
size_t gPageSize = 0;

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void unmapBlock(Block *b) {
  gMapped -= b->mapBytes;
  if (b->pool)
    b->pool->reserved -= b->rounded;
  gFreed.erase(uintptr_t(b->ptr));
  munmap(b->map, b->mapBytes);
  delete b;
}

/// Unmaps cached blocks: all of them when |pool| is null (memory is short),
/// else |pool|'s until its reserved bytes are within its release threshold.
/// gMutex held exclusively.
void trimLocked(MemPool *pool) {
  for (auto it = gCache.begin(); it != gCache.end();) {
    if (!pool ||
        (it->first.first == pool && pool->reserved > pool->threshold)) {
      unmapBlock(it->second);
      it = gCache.erase(it);
    } else {
      ++it;
    }
  }
}

void erasePending(Block *b) {
  auto range = gPending.equal_range({b->pool, b->rounded, b->freeStream});
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == b) {
      gPending.erase(it);
      return;
    }
}

/// A new or reused block of |size| bytes; null when the limit is reached.
/// |stream|: a stream-ordered allocation on it (pools only). gMutex held
/// exclusively.
Block *allocateLocked(size_t size, MemPool *pool, CUstream stream = nullptr) {
  if (!gPageSize)
    gPageSize = size_t(sysconf(_SC_PAGESIZE));
  size_t rounded = roundUp(std::max<size_t>(size, 1), kAlignment);
  Block *b = nullptr;
  auto pending = pool ? gPending.find({pool, rounded, stream}) : gPending.end();
  if (pending != gPending.end()) {
    // Still registered and mapped; its queued release refills it with 0xFF
    // before any later work on |stream| runs.
    b = pending->second;
    gPending.erase(pending);
    b->size = size;
    b->freeIssued = false;
    pool->used += rounded;
    pool->usedHigh = std::max(pool->usedHigh, pool->used);
    return b;
  }
  auto it = gCache.find({pool, rounded});
  if (it != gCache.end()) {
    b = it->second;
    gCache.erase(it);
    gFreed.erase(uintptr_t(b->ptr));
    mprotect(b->map, b->mapBytes - gPageSize, PROT_READ | PROT_WRITE);
  } else {
    size_t body = roundUp(rounded, gPageSize);
    size_t mapBytes = body + gPageSize;
    if (gMapped + mapBytes > deviceMemoryLimit()) {
      trimLocked(nullptr);
      if (gMapped + mapBytes > deviceMemoryLimit())
        return nullptr;
    }
    void *map = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
      return nullptr;
    b = new Block;
    b->map = static_cast<char *>(map);
    b->mapBytes = mapBytes;
    b->rounded = rounded;
    b->ptr = b->map + body - rounded;
    mprotect(b->map + body, gPageSize, PROT_NONE);
    // Real device memory starts as garbage; 0xFF bytes read as NaN.
    std::memset(b->ptr, 0xFF, rounded);
    gMapped += mapBytes;
    if (pool) {
      pool->reserved += rounded;
      pool->reservedHigh = std::max(pool->reservedHigh, pool->reserved);
    }
  }
  b->size = size;
  b->pool = pool;
  b->freeIssued = false;
  if (pool) {
    pool->used += rounded;
    pool->usedHigh = std::max(pool->usedHigh, pool->used);
  }
  gLive[uintptr_t(b->ptr)] = b;
  return b;
}

/// Moves a live block to the cache, refilled with 0xFF and PROT_NONE so that
/// a use after free faults. |countUsed|: the pool's used bytes still include
/// it (cuMemFreeAsync subtracts them when issued). gMutex held exclusively.
void releaseLocked(Block *b, bool countUsed) {
  gLive.erase(uintptr_t(b->ptr));
  std::memset(b->ptr, 0xFF, b->rounded);
  mprotect(b->map, b->mapBytes - gPageSize, PROT_NONE);
  if (b->pool && countUsed)
    b->pool->used -= b->rounded;
  gFreed[uintptr_t(b->ptr)] = b;
  gCache.emplace(std::make_pair(b->pool, b->rounded), b);
}

/// The live block that starts at |p|, or null. gMutex held.
Block *blockAt(CUdeviceptr p) {
  auto it = gLive.find(uintptr_t(p));
  return it == gLive.end() ? nullptr : it->second;
}

std::string hex(uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, value);
  return text;
}

std::string describeBlock(const Block *b) {
  return hex(uintptr_t(b->ptr)) + "+" + std::to_string(b->size);
}

MemPool *lookupPool(CUmemoryPool handle) {
  auto it = gPools.find(handle);
  return it == gPools.end() ? nullptr : it->second.get();
}

/// Checks a copy/memset range; logs and returns CUDA_ERROR_INVALID_VALUE
/// when it is not device memory.
CUresult checkRange(CUdeviceptr p, size_t bytes, const char *what) {
  std::string why;
  if (checkDeviceRange(reinterpret_cast<void *>(p), bytes, what, &why))
    return CUDA_SUCCESS;
  log(why, true);
  return CUDA_ERROR_INVALID_VALUE;
}

struct sigaction gOldSegv, gOldBus;

void onFault(int signal, siginfo_t *info, void *) {
  const char *operation = currentOperation();
  if (operation) {
    uintptr_t address = uintptr_t(info->si_addr);
    char where[200] = "";
    // Best effort: naming the allocation needs the registry, which another
    // thread may hold; then only the address is printed.
    if (gMutex.try_lock_shared()) {
      auto it = gLive.upper_bound(address);
      if (it != gLive.begin()) {
        const Block *b = std::prev(it)->second;
        if (address >= uintptr_t(b->ptr) &&
            address < uintptr_t(b->map + b->mapBytes))
          std::snprintf(where, sizeof where,
                        " (%zu bytes past the end of the allocation "
                        "0x%" PRIxPTR "+%zu)",
                        size_t(address - uintptr_t(b->ptr) - b->size),
                        uintptr_t(b->ptr), b->size);
      }
      auto f = gFreed.upper_bound(address);
      if (!*where && f != gFreed.begin()) {
        const Block *b = std::prev(f)->second;
        if (address >= uintptr_t(b->ptr) &&
            address < uintptr_t(b->ptr + b->rounded))
          std::snprintf(where, sizeof where,
                        " (inside the freed allocation 0x%" PRIxPTR "+%zu)",
                        uintptr_t(b->ptr), b->size);
      }
      gMutex.unlock_shared();
    }
    char line[512];
    int n = std::snprintf(line, sizeof line,
                          "dlrt-cuda-standin: %s: invalid %s access at "
                          "0x%" PRIxPTR "%s (an illegal address on a GPU)\n",
                          operation, signal == SIGBUS ? "bus" : "memory",
                          address, where);
    if (n > 0)
      (void)!write(2, line, size_t(std::min<int>(n, sizeof line - 1)));
  }
  // Back to the previous handler; returning re-runs the faulting access.
  sigaction(signal, signal == SIGBUS ? &gOldBus : &gOldSegv, nullptr);
}

} // namespace

size_t deviceMemoryLimit() {
  static const size_t limit = [] {
    size_t physical =
        size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
    size_t fallback = std::min<size_t>(size_t(80) << 30, physical / 2);
    return size_t(envUnsigned("DLRT_CUDA_STANDIN_MEMORY_BYTES", fallback));
  }();
  return limit;
}

bool checkDeviceRange(const void *pointer, size_t bytes, const char *what,
                      std::string *why) {
  uintptr_t p = uintptr_t(pointer);
  std::shared_lock<std::shared_mutex> lock(gMutex);
  // Work that runs on a stream was issued before any later free.
  // (A block that a later allocation took back is live again.)
  bool workerView = onStreamWorker();
  auto it = gLive.upper_bound(p);
  const Block *b = it == gLive.begin() ? nullptr : std::prev(it)->second;
  if (b && p >= uintptr_t(b->ptr) && p <= uintptr_t(b->ptr) + b->size) {
    if (b->freeIssued && !workerView) {
      *why = std::string(what) + ": " + std::to_string(bytes) + " bytes at " +
             hex(p) + " lie in the allocation " + describeBlock(b) +
             " whose cuMemFreeAsync was already issued";
      return false;
    }
    uintptr_t end = p + bytes, limit = uintptr_t(b->ptr) + b->size;
    if (end <= limit)
      return true;
    *why = std::string(what) + ": " + std::to_string(bytes) + " bytes at " +
           hex(p) + " end " + std::to_string(end - limit) +
           " bytes past the allocation " + describeBlock(b);
    return false;
  }
  auto f = gFreed.upper_bound(p);
  if (f != gFreed.begin()) {
    const Block *freed = std::prev(f)->second;
    if (p >= uintptr_t(freed->ptr) &&
        p < uintptr_t(freed->ptr) + freed->rounded) {
      *why = std::string(what) + ": " + std::to_string(bytes) + " bytes at " +
             hex(p) + " lie in the freed allocation " + describeBlock(freed);
      return false;
    }
  }
  *why = std::string(what) + ": " + std::to_string(bytes) + " bytes at " +
         hex(p) + " are not device memory (no live allocation contains " +
         hex(p) + (b ? "; the nearest below is " + describeBlock(b) : "") + ")";
  return false;
}

void trimPools() {
  std::unique_lock<std::shared_mutex> lock(gMutex);
  for (auto &[handle, pool] : gPools)
    if (pool->reserved > pool->threshold)
      trimLocked(pool.get());
}

void resetMemory() {
  std::unique_lock<std::shared_mutex> lock(gMutex);
  std::vector<Block *> live;
  for (auto &entry : gLive)
    live.push_back(entry.second);
  for (Block *b : live)
    releaseLocked(b, !b->freeIssued);
  gPending.clear();
  trimLocked(nullptr);
  gPools.clear();
  gDefaultPool = nullptr;
}

void installFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = onFault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &gOldSegv);
    sigaction(SIGBUS, &action, &gOldBus);
  });
  ensureAltStack();
}

void ensureAltStack() {
  thread_local bool done = false;
  if (done)
    return;
  done = true;
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE))
    return; // someone (a sanitizer) installed one already
  const size_t bytes = 64 * 1024;
  void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return;
  stack_t stack;
  stack.ss_sp = memory;
  stack.ss_size = bytes;
  stack.ss_flags = 0;
  sigaltstack(&stack, nullptr); // kept until the thread exits
}

} // namespace dlc::standin

using namespace dlc::standin;

namespace {

/// The pool for cuMemAllocAsync (the device's default pool). gMutex held
/// exclusively.
MemPool *defaultPoolLocked() {
  if (!gDefaultPool) {
    auto pool = std::make_unique<MemPool>();
    pool->isDefault = true;
    gDefaultPool = pool.get();
    gPools[reinterpret_cast<CUmemoryPool>(pool.get())] = std::move(pool);
  }
  return gDefaultPool;
}

CUresult allocate(CUdeviceptr *dptr, size_t bytes, MemPool *pool) {
  Block *b = allocateLocked(bytes, pool);
  if (!b)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = CUdeviceptr(uintptr_t(b->ptr));
  return CUDA_SUCCESS;
}

CUresult allocAsync(CUdeviceptr *dptr, size_t bytes, MemPool *pool,
                    CUstream stream) {
  if (!isLiveStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock<std::shared_mutex> lock(gMutex);
  // Usable by work issued after it on |stream|: the block is either one
  // whose free already ran or one freed earlier on this very stream.
  Block *b = allocateLocked(bytes, pool, stream);
  if (!b)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = CUdeviceptr(uintptr_t(b->ptr));
  return CUDA_SUCCESS;
}

} // namespace

extern "C" {

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!dptr || bytesize == 0) // cuMemAlloc: 0 bytes -> INVALID_VALUE
    return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock<std::shared_mutex> lock(gMutex);
  return allocate(dptr, bytesize, nullptr);
}

CUresult cuMemFree(CUdeviceptr dptr) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (dptr == 0)
    return CUDA_SUCCESS;
  {
    std::shared_lock<std::shared_mutex> lock(gMutex);
    Block *b = blockAt(dptr);
    if (!b || b->freeIssued)
      return CUDA_ERROR_INVALID_VALUE;
  }
  // cuMemFree waits for work that may still use the memory.
  if (CUresult r = synchronizeAll(); r != CUDA_SUCCESS)
    return r;
  std::unique_lock<std::shared_mutex> lock(gMutex);
  Block *b = blockAt(dptr);
  if (!b || b->freeIssued)
    return CUDA_ERROR_INVALID_VALUE;
  releaseLocked(b, true);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!free || !total)
    return CUDA_ERROR_INVALID_VALUE;
  std::shared_lock<std::shared_mutex> lock(gMutex);
  *total = deviceMemoryLimit();
  *free = *total - std::min(*total, gMapped);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!dptr || bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  MemPool *pool;
  {
    std::unique_lock<std::shared_mutex> lock(gMutex);
    pool = defaultPoolLocked();
  }
  return allocAsync(dptr, bytesize, pool, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUmemoryPool pool, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!dptr || bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  MemPool *p;
  {
    std::shared_lock<std::shared_mutex> lock(gMutex);
    p = lookupPool(pool);
  }
  if (!p)
    return CUDA_ERROR_INVALID_VALUE; // cuMemAllocFromPoolAsync: bad pool
  return allocAsync(dptr, bytesize, p, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!isLiveStream(hStream))
    return CUDA_ERROR_INVALID_HANDLE;
  Block *b;
  {
    std::unique_lock<std::shared_mutex> lock(gMutex);
    b = blockAt(dptr);
    if (!b || b->freeIssued) {
      bool freed = b || gFreed.count(uintptr_t(dptr));
      log("cuMemFreeAsync: " + hex(uintptr_t(dptr)) +
              (freed ? " was already freed"
                     : " is not the start of a live allocation"),
          true);
      return CUDA_ERROR_INVALID_VALUE;
    }
    b->freeIssued = true;
    b->freeStream = hStream;
    ++b->pendingReleases;
    if (b->pool) {
      b->pool->used -= b->rounded;
      gPending.emplace(std::make_tuple(b->pool, b->rounded, hStream), b);
    }
  }
  return enqueue(hStream, "cuMemFreeAsync", [b](std::string *) {
    std::unique_lock<std::shared_mutex> lock(gMutex);
    if (--b->pendingReleases > 0 || !b->freeIssued) {
      // Taken back by a later allocation on this stream: only refill it.
      std::memset(b->ptr, 0xFF, b->rounded);
      return CUDA_SUCCESS;
    }
    erasePending(b);
    releaseLocked(b, false);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  // The documented checks: device memory of device 0, pinned allocations.
  if (!pool || !poolProps ||
      poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->location.id != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  auto p = std::make_unique<MemPool>();
  p->props = *poolProps;
  CUmemoryPool handle = reinterpret_cast<CUmemoryPool>(p.get());
  std::unique_lock<std::shared_mutex> lock(gMutex);
  gPools[handle] = std::move(p);
  *pool = handle;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::unique_lock<std::shared_mutex> lock(gMutex);
  MemPool *p = lookupPool(pool);
  if (!p || p->isDefault)
    return CUDA_ERROR_INVALID_VALUE;
  // Live allocations keep working until freed (the documented behaviour);
  // their blocks then go to the "no pool" cache.
  for (auto it = gPending.begin(); it != gPending.end();)
    it = std::get<0>(it->first) == p ? gPending.erase(it) : std::next(it);
  for (auto &[ptr, b] : gLive)
    if (b->pool == p)
      b->pool = nullptr, (void)ptr;
  for (auto it = gCache.begin(); it != gCache.end();) {
    if (it->first.first == p) {
      unmapBlock(it->second);
      it = gCache.erase(it);
    } else {
      ++it;
    }
  }
  gPools.erase(pool);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::unique_lock<std::shared_mutex> lock(gMutex);
  MemPool *p = lookupPool(pool);
  if (!p || !value)
    return CUDA_ERROR_INVALID_VALUE;
  cuuint64_t v64 = 0;
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    p->reuseFlags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] =
        *static_cast<int *>(value);
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    p->threshold = *static_cast<cuuint64_t *>(value);
    return CUDA_SUCCESS;
  // The high-water marks can only be reset to zero (cuMemPoolSetAttribute's
  // documentation); they then restart from the current value.
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    v64 = *static_cast<cuuint64_t *>(value);
    if (v64 != 0)
      return CUDA_ERROR_INVALID_VALUE;
    p->reservedHigh = p->reserved;
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    v64 = *static_cast<cuuint64_t *>(value);
    if (v64 != 0)
      return CUDA_ERROR_INVALID_VALUE;
    p->usedHigh = p->used;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_lock<std::shared_mutex> lock(gMutex);
  MemPool *p = lookupPool(pool);
  if (!p || !value)
    return CUDA_ERROR_INVALID_VALUE;
  auto put = [&](cuuint64_t v) {
    *static_cast<cuuint64_t *>(value) = v;
    return CUDA_SUCCESS;
  };
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    *static_cast<int *>(value) =
        p->reuseFlags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    return put(p->threshold);
  case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    return put(p->reserved);
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    return put(p->reservedHigh);
  case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    return put(p->used);
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    return put(p->usedHigh);
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

// Copies. The CUDA driver API's "API synchronization behavior" section:
// pageable -> device copies stage the source before returning (the DMA may
// still be pending); device -> pageable copies return once done. The
// stand-in has no pinned memory, so every host pointer is pageable.

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                           size_t ByteCount, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (!srcHost)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkRange(dstDevice, ByteCount, "cuMemcpyHtoDAsync dst");
      r != CUDA_SUCCESS)
    return r;
  auto staged = std::make_shared<std::vector<char>>(
      static_cast<const char *>(srcHost),
      static_cast<const char *>(srcHost) + ByteCount);
  return enqueue(hStream, "cuMemcpyHtoDAsync", [=](std::string *) {
    std::memcpy(reinterpret_cast<void *>(dstDevice), staged->data(), ByteCount);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                      size_t ByteCount) {
  return cuMemcpyHtoDAsync(dstDevice, srcHost, ByteCount, nullptr);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
                           size_t ByteCount, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (!dstHost)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkRange(srcDevice, ByteCount, "cuMemcpyDtoHAsync src");
      r != CUDA_SUCCESS)
    return r;
  if (CUresult r = enqueue(hStream, "cuMemcpyDtoHAsync",
                           [=](std::string *) {
                             std::memcpy(dstHost,
                                         reinterpret_cast<void *>(srcDevice),
                                         ByteCount);
                             return CUDA_SUCCESS;
                           });
      r != CUDA_SUCCESS)
    return r;
  return synchronizeStream(hStream);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return cuMemcpyDtoHAsync(dstHost, srcDevice, ByteCount, nullptr);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                           size_t ByteCount, CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  if (CUresult r = checkRange(dstDevice, ByteCount, "cuMemcpyDtoDAsync dst");
      r != CUDA_SUCCESS)
    return r;
  if (CUresult r = checkRange(srcDevice, ByteCount, "cuMemcpyDtoDAsync src");
      r != CUDA_SUCCESS)
    return r;
  return enqueue(hStream, "cuMemcpyDtoDAsync", [=](std::string *) {
    std::memmove(reinterpret_cast<void *>(dstDevice),
                 reinterpret_cast<void *>(srcDevice), ByteCount);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                         CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (N == 0)
    return CUDA_SUCCESS;
  if (CUresult r = checkRange(dstDevice, N, "cuMemsetD8Async dst");
      r != CUDA_SUCCESS)
    return r;
  return enqueue(hStream, "cuMemsetD8Async", [=](std::string *) {
    std::memset(reinterpret_cast<void *>(dstDevice), uc, N);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                          CUstream hStream) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  // cuMemsetD32: "dstDevice ... must be 4-byte aligned".
  if (dstDevice % 4 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (N == 0)
    return CUDA_SUCCESS;
  if (N > SIZE_MAX / 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkRange(dstDevice, N * 4, "cuMemsetD32Async dst");
      r != CUDA_SUCCESS)
    return r;
  return enqueue(hStream, "cuMemsetD32Async", [=](std::string *) {
    auto *d = reinterpret_cast<unsigned *>(dstDevice);
    std::fill(d, d + N, ui);
    return CUDA_SUCCESS;
  });
}

} // extern "C"
