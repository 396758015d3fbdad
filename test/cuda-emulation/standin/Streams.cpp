//===- Streams.cpp - stand-in CUDA streams, events and worker pool --------===//
// Every stream (and the legacy default stream) has one worker thread that
// runs its work in issue order, so a runtime that reads results without
// synchronizing sees stale memory, as on a GPU. Events record a stream's
// position; the worker pool runs kernel blocks in parallel.
#include "DriverInternal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace dlc::standin {
namespace {

using Clock = std::chrono::steady_clock;
struct Stream;

struct Task {
  std::string label;
  std::function<CUresult(std::string *)> work;
  /// Streams this task must wait for (legacy default stream semantics and
  /// cuStreamWaitEvent): run only when stream->completed >= target.
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> waits;
};

struct Stream {
  unsigned flags = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Task> queue;
  uint64_t issued = 0;    // tasks enqueued so far
  uint64_t completed = 0; // tasks finished so far
  bool stop = false;
  std::thread worker;
  /// Stream capture (cuStreamBeginCapture): work enqueued while capturing
  /// is recorded in |captured| instead of run; |invalidated| once a call
  /// the capture cannot record was made on the stream.
  bool capturing = false, invalidated = false;
  std::vector<Task> captured;

  void run();
  void waitFor(uint64_t target) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return completed >= target; });
  }
};

std::atomic<int> gSticky{CUDA_SUCCESS};
thread_local bool tlsOnWorker = false;
thread_local const char *tlsOperation = nullptr;

void Stream::run() {
  tlsOnWorker = true;
  ensureAltStack();
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty())
        return;
      task = std::move(queue.front());
      queue.pop_front();
    }
    for (auto &[other, target] : task.waits)
      other->waitFor(target);
    // After the first asynchronous error the context is unusable: later
    // work is dropped, as a GPU drops it.
    if (gSticky.load() == CUDA_SUCCESS) {
      std::string message;
      setCurrentOperation(task.label.c_str());
      CUresult result;
      try {
        result = task.work(&message);
      } catch (const std::exception &e) {
        // A library part that throws must not take the process down
        // through the worker thread.
        message = std::string("C++ exception: ") + e.what();
        result = CUDA_ERROR_UNKNOWN;
      }
      setCurrentOperation(nullptr);
      if (result != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(result, &name);
        log(task.label + " failed (" + name + "): " + message, true);
        setStickyError(result);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++completed;
    }
    changed.notify_all();
  }
}

struct Event {
  unsigned flags = 0;
  std::shared_ptr<Stream> stream; // null until recorded
  uint64_t target = 0;
  std::shared_ptr<std::atomic<int64_t>> when; // ns since epoch, -1 pending
};

// Never destroyed: stream workers may still run while the process exits
// (a runtime need not destroy its streams), and a std::thread destroyed
// while joinable would terminate the process.
std::mutex &gMutex = *new std::mutex; // guards the three below
auto &gStreams = *new std::map<CUstream, std::shared_ptr<Stream>>;
auto &gLegacy = *new std::shared_ptr<Stream>;
auto &gEvents = *new std::map<CUevent, std::shared_ptr<Event>>;

std::shared_ptr<Stream> startStream(unsigned flags) {
  auto stream = std::make_shared<Stream>();
  stream->flags = flags;
  stream->worker = std::thread([s = stream.get()] { s->run(); });
  return stream;
}

void stopStream(const std::shared_ptr<Stream> &stream) {
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->stop = true;
  }
  stream->changed.notify_all();
  if (stream->worker.joinable())
    stream->worker.join();
}

/// The stream object behind |handle| (null: not live). gMutex held.
std::shared_ptr<Stream> lookupLocked(CUstream handle) {
  if (handle == nullptr || handle == CU_STREAM_LEGACY ||
      handle == CU_STREAM_PER_THREAD) {
    if (!gLegacy)
      gLegacy = startStream(0);
    return gLegacy;
  }
  auto it = gStreams.find(handle);
  return it == gStreams.end() ? nullptr : it->second;
}

bool isLegacy(CUstream handle) {
  return handle == nullptr || handle == CU_STREAM_LEGACY ||
         handle == CU_STREAM_PER_THREAD;
}

/// Appends a task; the legacy default stream waits for all blocking streams
/// and blocking streams wait for it (CUDA's implicit synchronization).
/// Returns the task's position (wait for completed >= it).
uint64_t push(const std::shared_ptr<Stream> &stream, bool legacy, Task task) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto position = [](const std::shared_ptr<Stream> &s) {
      std::lock_guard<std::mutex> lock(s->mutex);
      return s->issued;
    };
    if (legacy) {
      for (auto &[handle, other] : gStreams)
        if (!(other->flags & CU_STREAM_NON_BLOCKING))
          task.waits.emplace_back(other, position(other));
    } else if (!(stream->flags & CU_STREAM_NON_BLOCKING) && gLegacy) {
      task.waits.emplace_back(gLegacy, position(gLegacy));
    }
  }
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->queue.push_back(std::move(task));
    target = ++stream->issued;
  }
  stream->changed.notify_all();
  return target;
}

// The worker pool behind parallelFor: each call is a job whose indices the
// pool threads and the caller take one at a time.
struct Job {
  int64_t n;
  const std::function<void(int64_t)> *body;
  const char *operation;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  int active = 0; // pool threads inside work(); guarded by the pool's mutex
};

class Pool {
public:
  Pool() {
    unsigned hw = std::thread::hardware_concurrency();
    size_t threads = envUnsigned("DLRT_CUDA_STANDIN_THREADS", hw ? hw : 1);
    if (threads == 0)
      threads = 1;
    // The caller works too, so threads - 1 helpers.
    for (size_t i = 1; i < threads; ++i)
      helpers_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : helpers_)
      t.join();
  }
  bool serial() const { return helpers_.empty(); }

  void run(Job &job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(&job);
    }
    wake_.notify_all();
    work(job);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      finished_.wait(lock,
                     [&] { return job.done.load() == job.n && !job.active; });
    }
  }

private:
  static void work(Job &job) {
    for (int64_t i; (i = job.next.fetch_add(1)) < job.n;) {
      (*job.body)(i);
      job.done.fetch_add(1);
    }
  }

  void loop() {
    tlsOnWorker = true;
    ensureAltStack();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Job *job = nullptr;
      wake_.wait(lock, [&] {
        if (stop_)
          return true;
        for (Job *j : jobs_)
          if (j->next.load() < j->n) {
            job = j;
            return true;
          }
        return false;
      });
      if (!job)
        return;
      // The job stays alive while indices are taken: its owner waits for
      // done == n under mutex_ before it leaves.
      ++job->active;
      lock.unlock();
      setCurrentOperation(job->operation);
      work(*job);
      setCurrentOperation(nullptr);
      lock.lock();
      --job->active;
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::vector<Job *> jobs_;
  std::vector<std::thread> helpers_;
  bool stop_ = false;
};

Pool &pool() {
  static Pool *instance = new Pool(); // never destroyed: exit races workers
  return *instance;
}

} // namespace

CUresult stickyError() { return CUresult(gSticky.load()); }

void setStickyError(CUresult error) {
  int expected = CUDA_SUCCESS;
  gSticky.compare_exchange_strong(expected, error);
}

const char *currentOperation() { return tlsOperation; }
const char *setCurrentOperation(const char *label) {
  const char *previous = tlsOperation;
  tlsOperation = label;
  return previous;
}
bool onStreamWorker() { return tlsOnWorker; }

uint64_t envUnsigned(const char *name, uint64_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 0);
  return *end ? fallback : value;
}

void log(const std::string &message, bool always) {
  static const bool verbose = std::getenv("DLRT_CUDA_STANDIN_VERBOSE");
  if (always || verbose)
    std::fprintf(stderr, "dlrt-cuda-standin: %s\n", message.c_str());
}

void parallelFor(int64_t n, const std::function<void(int64_t)> &body) {
  if (n <= 0)
    return;
  Pool &p = pool();
  if (n == 1 || p.serial()) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  Job job;
  job.n = n;
  job.body = &body;
  job.operation = tlsOperation;
  p.run(job);
}

CUresult enqueue(CUstream stream, std::string label,
                 std::function<CUresult(std::string *message)> work) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    s = lookupLocked(stream);
  }
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  Task task;
  task.label = std::move(label);
  task.work = std::move(work);
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->capturing) {
      s->captured.push_back(std::move(task));
      return CUDA_SUCCESS;
    }
  }
  push(s, isLegacy(stream), std::move(task));
  return CUDA_SUCCESS;
}

bool isLiveStream(CUstream stream) {
  std::lock_guard<std::mutex> lock(gMutex);
  return isLegacy(stream) || gStreams.count(stream);
}

CUresult synchronizeStream(CUstream stream) {
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    s = lookupLocked(stream);
  }
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    // As a real driver: synchronizing a capturing stream is not allowed
    // and invalidates the capture.
    if (s->capturing) {
      s->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    target = s->issued;
  }
  s->waitFor(target);
  trimPools();
  return stickyError();
}

CUresult synchronizeAll() {
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    for (auto &[handle, s] : gStreams)
      all.push_back(s);
    if (gLegacy)
      all.push_back(gLegacy);
  }
  for (auto &s : all) {
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      target = s->issued;
    }
    s->waitFor(target);
  }
  trimPools();
  return stickyError();
}

void resetStreams() {
  synchronizeAll();
  std::map<CUstream, std::shared_ptr<Stream>> streams;
  std::shared_ptr<Stream> legacy;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    streams.swap(gStreams);
    legacy.swap(gLegacy);
    gEvents.clear();
  }
  for (auto &[handle, s] : streams)
    stopStream(s);
  if (legacy)
    stopStream(legacy);
  gSticky.store(CUDA_SUCCESS);
}

/// The stream of |handle| (the legacy stream for 0), or null.
std::shared_ptr<Stream> findStream(CUstream handle) {
  std::lock_guard<std::mutex> lock(gMutex);
  return lookupLocked(handle);
}

/// A captured graph (CUgraph) or its instance (CUgraphExec): the tasks of
/// a stream capture, in order.
struct StandinGraph {
  std::vector<Task> tasks;
};

/// True (and the capture invalidated) when |s| is capturing: for calls a
/// capture here cannot record (events, synchronization).
bool refuseWhileCapturing(const std::shared_ptr<Stream> &s) {
  std::lock_guard<std::mutex> lock(s->mutex);
  if (!s->capturing)
    return false;
  s->invalidated = true;
  return true;
}

} // namespace dlc::standin

using namespace dlc::standin;

extern "C" {

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  if (!phStream || (Flags & ~unsigned(CU_STREAM_NON_BLOCKING)))
    return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s = startStream(Flags);
  // The handle is the Stream's address: unique while it lives.
  CUstream handle = reinterpret_cast<CUstream>(s.get());
  std::lock_guard<std::mutex> lock(gMutex);
  gStreams[handle] = std::move(s);
  *phStream = handle;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gStreams.find(hStream);
    if (it == gStreams.end())
      return CUDA_ERROR_INVALID_HANDLE;
    s = it->second;
    gStreams.erase(it);
  }
  // A real driver lets the stream's pending work finish after the call
  // returns; draining it here keeps that work's order intact.
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    target = s->issued;
  }
  s->waitFor(target);
  stopStream(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  return synchronizeStream(hStream);
}

CUresult cuStreamQuery(CUstream hStream) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    s = lookupLocked(hStream);
  }
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->completed == s->issued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuCtxSynchronize(void) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  return synchronizeAll();
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  if (CUresult r = checkContext(); r != CUDA_SUCCESS)
    return r;
  const unsigned known =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!phEvent || (Flags & ~known))
    return CUDA_ERROR_INVALID_VALUE;
  auto event = std::make_shared<Event>();
  event->flags = Flags;
  CUevent handle = reinterpret_cast<CUevent>(event.get());
  std::lock_guard<std::mutex> lock(gMutex);
  gEvents[handle] = std::move(event);
  *phEvent = handle;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::lock_guard<std::mutex> lock(gMutex);
  return gEvents.erase(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Event> event;
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gEvents.find(hEvent);
    if (it == gEvents.end())
      return CUDA_ERROR_INVALID_HANDLE;
    event = it->second;
    stream = lookupLocked(hStream);
  }
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE;
  if (refuseWhileCapturing(stream))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (CUresult r = stickyError(); r != CUDA_SUCCESS)
    return r;
  auto when = std::make_shared<std::atomic<int64_t>>(-1);
  Task task;
  task.label = "cuEventRecord";
  task.work = [when](std::string *) {
    when->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    Clock::now().time_since_epoch())
                    .count());
    return CUDA_SUCCESS;
  };
  uint64_t target = push(stream, isLegacy(hStream), std::move(task));
  std::lock_guard<std::mutex> lock(gMutex);
  event->stream = stream;
  event->target = target;
  event->when = when;
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Stream> stream;
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gEvents.find(hEvent);
    if (it == gEvents.end())
      return CUDA_ERROR_INVALID_HANDLE;
    stream = it->second->stream;
    target = it->second->target;
  }
  // Never recorded: complete (the driver API documents CUDA_SUCCESS).
  if (!stream)
    return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(stream->mutex);
  return stream->completed >= target ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  std::shared_ptr<Stream> stream;
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gEvents.find(hEvent);
    if (it == gEvents.end())
      return CUDA_ERROR_INVALID_HANDLE;
    stream = it->second->stream;
    target = it->second->target;
  }
  if (stream)
    stream->waitFor(target);
  trimPools();
  return stickyError();
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                            CUevent hEnd) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!pMilliseconds)
    return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Event> start, end;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto s = gEvents.find(hStart), e = gEvents.find(hEnd);
    if (s == gEvents.end() || e == gEvents.end())
      return CUDA_ERROR_INVALID_HANDLE;
    start = s->second;
    end = e->second;
  }
  // cuEventElapsedTime's documentation: CUDA_ERROR_INVALID_HANDLE when an
  // event was never recorded or was created with CU_EVENT_DISABLE_TIMING,
  // CUDA_ERROR_NOT_READY while one has not completed.
  if (!start->when || !end->when ||
      ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  int64_t t0 = start->when->load(), t1 = end->when->load();
  if (t0 < 0 || t1 < 0)
    return CUDA_ERROR_NOT_READY;
  *pMilliseconds = float(double(t1 - t0) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                           unsigned int Flags) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (Flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL))
    return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> stream, other;
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gEvents.find(hEvent);
    if (it == gEvents.end())
      return CUDA_ERROR_INVALID_HANDLE;
    other = it->second->stream;
    target = it->second->target;
    stream = lookupLocked(hStream);
  }
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE;
  if (refuseWhileCapturing(stream))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!other || other == stream)
    return CUDA_SUCCESS; // nothing to wait for / already in order
  Task task;
  task.label = "cuStreamWaitEvent";
  task.work = [](std::string *) { return CUDA_SUCCESS; };
  task.waits.emplace_back(other, target);
  push(stream, isLegacy(hStream), std::move(task));
  return CUDA_SUCCESS;
}

// Stream capture and graphs: a graph is the list of tasks captured on a
// stream; launching it enqueues copies of them, in order, on the launch
// stream (each task's work copies its parameters when it is made, so it can
// run again). Only the capture of a whole stream is modelled (no graph
// editing, no events inside a capture).

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  (void)mode;
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (isLegacy(hStream))
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    s = lookupLocked(hStream);
  }
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  s->capturing = true;
  s->invalidated = false;
  s->captured.clear();
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!phGraph)
    return CUDA_ERROR_INVALID_VALUE;
  *phGraph = nullptr;
  std::shared_ptr<Stream> s = findStream(hStream);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (!s->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  s->capturing = false;
  std::vector<Task> tasks;
  tasks.swap(s->captured);
  if (s->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto *graph = new StandinGraph{std::move(tasks)};
  *phGraph = reinterpret_cast<CUgraph>(graph);
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!phGraphExec || !hGraph || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto *exec = new StandinGraph(*reinterpret_cast<StandinGraph *>(hGraph));
  *phGraphExec = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  if (CUresult r = checkInitialized(); r != CUDA_SUCCESS)
    return r;
  if (!hGraphExec)
    return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s = findStream(hStream);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  for (const Task &t : reinterpret_cast<StandinGraph *>(hGraphExec)->tasks) {
    Task copy;
    copy.label = "graph: " + t.label;
    copy.work = t.work;
    push(s, isLegacy(hStream), std::move(copy));
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  delete reinterpret_cast<StandinGraph *>(hGraphExec);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  delete reinterpret_cast<StandinGraph *>(hGraph);
  return CUDA_SUCCESS;
}

} // extern "C"
