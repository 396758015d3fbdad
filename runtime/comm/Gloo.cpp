//===- Gloo.cpp - the Gloo communicator (host memory over TCP) ------------===//
// Gloo's collectives run on one worker thread per communicator, in issue
// order; a Work is that operation's completion. Gloo reports failures with
// exceptions, which end here as a Status; the rank that caused them is
// found through the rendezvous store, whose server sees which ranks'
// connections ended without a goodbye. A sub-communicator (a group of the
// job's ranks) is the same class over its own Gloo context, sharing the
// parent's transport device and store.
#define ASIO_STANDALONE
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/TcpStore.h"

#include "runtime/device/HalfConversions.h"

#include <asio.hpp>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace dlrt::comm {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds(std::chrono::milliseconds t) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", t.count() / 1000.0);
  return b;
}

/// Completion of one queued or posted operation. The first finish() wins
/// (abort() may finish an operation the worker is still running).
/// |complete|, when set, is run by the first wait(): point-to-point
/// operations are posted at once (postNow) and waited for there.
class QueuedWork : public Work {
public:
  Status wait() override {
    std::function<Status()> complete;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return done_; });
      if (!complete_)
        return status_;
      complete = std::move(complete_);
      complete_ = nullptr;
    }
    Status st = complete();
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.ok())
      status_ = st;
    return status_;
  }
  bool timing(std::chrono::steady_clock::time_point *start,
              std::chrono::steady_clock::time_point *end) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_ || !started_)
      return false;
    *start = start_;
    *end = end_;
    return true;
  }
  /// The worker starts running the operation.
  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    start_ = std::chrono::steady_clock::now();
    started_ = true;
  }
  void finish(Status s, std::function<Status()> complete = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (done_)
        return;
      end_ = std::chrono::steady_clock::now();
      status_ = std::move(s);
      complete_ = std::move(complete);
      done_ = true;
    }
    cv_.notify_all();
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_, end_;
  Status status_;
  std::function<Status()> complete_;
};

/// Element-wise sum for Gloo's allreduce (out may alias a or b).
template <typename T>
void sumOf(void *out, const void *a, const void *b, size_t n) {
  T *o = static_cast<T *>(out);
  const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
  for (size_t i = 0; i < n; ++i)
    o[i] = x[i] + y[i];
}
template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t)>
void sum16(void *out, const void *a, const void *b, size_t n) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const uint16_t *x = static_cast<const uint16_t *>(a),
                 *y = static_cast<const uint16_t *>(b);
  for (size_t i = 0; i < n; ++i)
    o[i] = Narrow(Widen(x[i]) + Widen(y[i]));
}

/// Divides |n| elements at |data| by |divisor| (Avg after a Sum).
void divide(void *data, size_t n, DataType type, int divisor) {
  const float d = float(divisor);
  switch (type) {
  case DataType::F32: {
    float *p = static_cast<float *>(data);
    for (size_t i = 0; i < n; ++i)
      p[i] /= d;
    break;
  }
  case DataType::F16: {
    uint16_t *p = static_cast<uint16_t *>(data);
    for (size_t i = 0; i < n; ++i)
      p[i] = floatToHalfBits(halfBitsToFloat(p[i]) / d);
    break;
  }
  case DataType::BF16: {
    uint16_t *p = static_cast<uint16_t *>(data);
    for (size_t i = 0; i < n; ++i)
      p[i] = floatToBFloat16Bits(bfloat16BitsToFloat(p[i]) / d);
    break;
  }
  case DataType::I64:
    break;
  }
}

/// The address of this host's interface that routes to |master| (no
/// packet is sent: a UDP socket is only connected), or loopback.
std::string interfaceTowards(const std::string &master) {
  if (master == "localhost" || master.rfind("127.", 0) == 0)
    return "127.0.0.1";
  try {
    asio::io_context io;
    asio::ip::udp::resolver resolver(io);
    auto endpoints = resolver.resolve(asio::ip::udp::v4(), master, "9");
    asio::ip::udp::socket socket(io);
    socket.connect(*endpoints.begin());
    return socket.local_endpoint().address().to_string();
  } catch (const std::exception &) {
    return master; // let Gloo report what does not work
  }
}

class GlooCommunicator : public Communicator {
public:
  /// |jobRanks[g]| is the job's rank of rank g (empty: the job itself, whose
  /// ranks are their own); messages name ranks by it.
  GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                   TcpStore *store, std::vector<int> jobRanks = {})
      : rank_(rank), size_(size), timeout_(timeout), store_(store),
        jobRanks_(std::move(jobRanks)), sendSeq_(size), recvSeq_(size) {
    if (jobRanks_.empty())
      for (int r = 0; r < size_; ++r)
        jobRanks_.push_back(r);
    else
      groupName_ = " of ranks " + formatRanks(jobRanks_);
    if (size_ > 1)
      worker_ = std::thread([this] { run(); });
  }
  ~GlooCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable())
      worker_.join();
  }

  /// Connects to every peer through Gloo's full-mesh rendezvous, which
  /// publishes each rank's addresses under "<prefix><rank>"; groups made
  /// from this communicator reuse |device| and extend |prefix|.
  Status connect(std::shared_ptr<gloo::transport::Device> device,
                 const std::string &prefix) {
    device_ = device;
    prefix_ = prefix;
    try {
      auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      context->setTimeout(timeout_);
      context->connectFullMesh(store_->glooStore(prefix), device);
      context_ = context;
      return Status::OK();
    } catch (const std::exception &e) {
      // The peers whose addresses never appeared. This rank published its
      // own before waiting; under load a probe of its key has been seen to
      // miss it (the message then named this rank too), so it is not
      // probed: the message is about its peers.
      std::string missing;
      for (int r = 0; r < size_; ++r)
        if (r != rank_ && !store_
                 ->wait({prefix + std::to_string(r)},
                        std::chrono::milliseconds(0))
                 .ok())
          missing +=
              (missing.empty() ? "" : ", ") + std::to_string(jobRanks_[r]);
      const std::string who = rankName(rank_) + " cannot connect to its peers" +
                              groupName_ + " (Gloo): ";
      if (!missing.empty())
        return Status::error(DLRT_UNAVAILABLE, who + "rank(s) " + missing +
                                                   " did not join within " +
                                                   seconds(timeout_));
      return Status::error(DLRT_UNAVAILABLE, who + firstLine(e.what()));
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backend() const override { return "gloo"; }

  std::shared_ptr<Work> allReduce(void *data, size_t count, DataType type,
                                  ReduceOp op) override {
    const size_t bytes = count * dataTypeBytes(type);
    std::string name = "all_reduce of " + formatBytes(bytes);
    if (op == ReduceOp::Avg && type == DataType::I64)
      return invalid(name, "average of i64 is not supported (use sum)");
    if (size_ == 1 || count == 0)
      return finishedWork(Status::OK());
    return enqueue(name, [=] {
      gloo::AllreduceOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      switch (type) {
      case DataType::F32:
        opts.setOutput(static_cast<float *>(data), count);
        opts.setReduceFunction(&sumOf<float>);
        break;
      case DataType::I64:
        opts.setOutput(static_cast<int64_t *>(data), count);
        opts.setReduceFunction(&sumOf<int64_t>);
        break;
      case DataType::F16:
        opts.setOutput(static_cast<uint16_t *>(data), count);
        opts.setReduceFunction(&sum16<floatToHalfBits, halfBitsToFloat>);
        break;
      case DataType::BF16:
        opts.setOutput(static_cast<uint16_t *>(data), count);
        opts.setReduceFunction(
            &sum16<floatToBFloat16Bits, bfloat16BitsToFloat>);
        break;
      }
      gloo::allreduce(opts);
      if (op == ReduceOp::Avg)
        divide(data, count, type, size_);
    });
  }

  std::shared_ptr<Work> broadcast(void *data, size_t count, DataType type,
                                  int root) override {
    const size_t bytes = count * dataTypeBytes(type);
    std::string name =
        "broadcast of " + formatBytes(bytes) + " from " + rankName(root);
    if (root < 0 || root >= size_)
      return invalid(name, "root is not a rank of " + std::to_string(size_));
    if (size_ == 1 || count == 0)
      return finishedWork(Status::OK());
    return enqueue(name, [=] {
      gloo::BroadcastOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setRoot(root);
      opts.setOutput(static_cast<char *>(data), bytes);
      gloo::broadcast(opts);
    });
  }

  std::shared_ptr<Work> allGather(const void *input, void *output, size_t count,
                                  DataType type) override {
    const size_t bytes = count * dataTypeBytes(type);
    std::string name = "all_gather of " + formatBytes(bytes * size_);
    if (size_ == 1 || count == 0) {
      if (bytes && input != output)
        std::memmove(output, input, bytes);
      return finishedWork(Status::OK());
    }
    return enqueue(name, [=] {
      gloo::AllgatherOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setInput(const_cast<char *>(static_cast<const char *>(input)),
                    bytes);
      opts.setOutput(static_cast<char *>(output), bytes * size_);
      gloo::allgather(opts);
    });
  }

  std::shared_ptr<Work> reduceScatter(const void *input, void *output,
                                      size_t count, DataType type,
                                      ReduceOp op) override {
    const size_t elem = dataTypeBytes(type), bytes = count * elem;
    std::string name = "reduce_scatter of " + formatBytes(bytes * size_);
    if (op == ReduceOp::Avg && type == DataType::I64)
      return invalid(name, "average of i64 is not supported (use sum)");
    if (size_ == 1 || count == 0) {
      if (bytes && input != output)
        std::memmove(output, input, bytes);
      return finishedWork(Status::OK());
    }
    auto scratch = std::make_shared<std::vector<char>>(
        static_cast<const char *>(input),
        static_cast<const char *>(input) + bytes * size_);
    // The all-reduce is queued as its own operation; the copy of this
    // rank's block follows it on the same worker.
    auto reduced = allReduce(scratch->data(), count * size_, type, op);
    return enqueue(name, [=] {
      Status st = reduced->wait();
      if (!st.ok())
        throw std::runtime_error(st.message);
      std::memcpy(output, scratch->data() + size_t(rank_) * bytes, bytes);
    });
  }

  std::shared_ptr<Work> send(const void *data, size_t count, DataType type,
                             int peer) override {
    const size_t bytes = count * dataTypeBytes(type);
    std::string name =
        "send of " + formatBytes(bytes) + " to " + rankName(peer);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return invalid(name, "the peer must be another rank of " +
                               std::to_string(size_));
    uint64_t slot;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot = p2pSlot(rank_, peer, sendSeq_[peer]++);
    }
    return postNow(name, [=] {
      std::shared_ptr<gloo::transport::UnboundBuffer> buf =
          context_->createUnboundBuffer(const_cast<void *>(data), bytes);
      buf->send(peer, slot);
      track(buf, true);
      return [buf, this] {
        if (!buf->waitSend(timeout_))
          throw std::runtime_error("aborted");
      };
    });
  }

  std::shared_ptr<Work> recv(void *data, size_t count, DataType type,
                             int peer) override {
    const size_t bytes = count * dataTypeBytes(type);
    std::string name =
        "recv of " + formatBytes(bytes) + " from " + rankName(peer);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return invalid(name, "the peer must be another rank of " +
                               std::to_string(size_));
    uint64_t slot;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot = p2pSlot(peer, rank_, recvSeq_[peer]++);
    }
    return postNow(name, [=] {
      std::shared_ptr<gloo::transport::UnboundBuffer> buf =
          context_->createUnboundBuffer(data, bytes);
      buf->recv(peer, slot);
      track(buf, false);
      return [buf, this] {
        if (!buf->waitRecv(timeout_))
          throw std::runtime_error("aborted");
      };
    });
  }

  std::shared_ptr<Work> barrier() override {
    if (size_ == 1)
      return finishedWork(Status::OK());
    return enqueue("barrier", [=] {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  /// Finishes the operation in flight and the queued ones with "aborted"
  /// at once. Gloo cannot interrupt an operation in flight: its buffers may
  /// still be written until it ends (at the latest at the timeout), so
  /// abort() is for shutting down, not for reusing them.
  void abort() override {
    std::deque<Task> queued;
    std::shared_ptr<QueuedWork> current;
    std::string currentName;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      broken_ = "the communicator was aborted";
      aborted_ = true;
      queued.swap(queue_);
      current = current_;
      currentName = currentName_;
    }
    cv_.notify_all();
    if (current)
      current->finish(
          Status::error(DLRT_UNAVAILABLE,
                        currentName + " failed: the communicator was aborted"));
    for (Task &t : queued)
      t.work->finish(Status::error(
          DLRT_UNAVAILABLE, t.name + " failed: the communicator was aborted"));
    // Posted sends and receives end their wait() now (Gloo keeps the abort
    // for a wait that has not started yet).
    std::vector<std::pair<std::weak_ptr<gloo::transport::UnboundBuffer>, bool>>
        posted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      posted.swap(posted_);
    }
    for (auto &[weak, isSend] : posted)
      if (auto buf = weak.lock())
        isSend ? buf->abortWaitSend() : buf->abortWaitRecv();
  }

protected:
  /// A Gloo context of |ranks| over this communicator's transport device,
  /// its rendezvous under "<prefix_>group/<ranks>/<k>/".
  Status createGroup(const std::vector<int> &ranks, int groupRank,
                     std::unique_ptr<Communicator> *out) override {
    std::vector<int> jobRanks;
    std::string prefix;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (Status st = nameGroup(ranks, jobRanks_, broken_, prefix_, groups_,
                                &jobRanks, &prefix);
          !st.ok())
        return st;
    }
    const int size = int(ranks.size());
    auto comm = std::make_unique<GlooCommunicator>(groupRank, size, timeout_,
                                                   store_, jobRanks);
    if (size > 1) {
      // The parent has more than one rank, so it has a store and a device.
      Status st = comm->connect(device_, prefix);
      if (!st.ok())
        return st;
    }
    *out = std::move(comm);
    return Status::OK();
  }

private:
  /// "rank J" for rank |r| of this communicator, J its rank in the job;
  /// "group rank r" when |r| is not a rank of it.
  std::string rankName(int r) const {
    if (r < 0 || r >= size_)
      return (groupName_.empty() ? "rank " : "group rank ") + std::to_string(r);
    return "rank " + std::to_string(jobRanks_[r]);
  }

  /// What the worker runs; |post| instead of |run| for operations that
  /// the worker only starts, returning what completes them.
  struct Task {
    std::string name;
    std::function<void()> run;
    std::shared_ptr<QueuedWork> work;
  };

  /// Remembers a posted send or receive for abort(), forgetting finished
  /// ones.
  void track(const std::shared_ptr<gloo::transport::UnboundBuffer> &buf,
             bool isSend) {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.erase(
        std::remove_if(posted_.begin(), posted_.end(),
                       [](const auto &p) { return p.first.expired(); }),
        posted_.end());
    posted_.emplace_back(buf, isSend);
  }

  /// Slots of point-to-point messages from |src| to |dst|: a prefix no Gloo
  /// collective uses, the direction, and the message's number.
  static uint64_t p2pSlot(int src, int dst, uint64_t seq) {
    return (uint64_t(0xd1) << 56) | (uint64_t(src < dst) << 55) |
           (seq & ((uint64_t(1) << 55) - 1));
  }

  static std::string firstLine(const std::string &s) {
    std::string line = s.substr(0, s.find('\n'));
    // Gloo prefixes its messages with "[file.cc:123] ".
    if (!line.empty() && line[0] == '[') {
      size_t end = line.find("] ");
      if (end != std::string::npos)
        line = line.substr(end + 2);
    }
    return line;
  }

  std::shared_ptr<Work> invalid(const std::string &name,
                                const std::string &why) {
    return finishedWork(
        Status::error(DLRT_INVALID_ARGUMENT, name + " is invalid: " + why));
  }

  std::shared_ptr<Work> enqueue(std::string name, std::function<void()> run) {
    auto work = std::make_shared<QueuedWork>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_)
        work->finish(
            Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_));
      else
        queue_.push_back({std::move(name), std::move(run), work});
    }
    cv_.notify_all();
    return work;
  }
  /// Posts a point-to-point operation from the calling thread, as
  /// PyTorch's ProcessGroupGloo does for send/recv: posting an unbound
  /// buffer does not block, and each message has its own slot, so it needs
  /// no ordering against the queued collectives. Going through the worker
  /// instead cost a thread wake-up on each side of a pipeline hand-over,
  /// on the critical path of every 1F1B micro-batch. wait() finishes it.
  std::shared_ptr<Work>
  postNow(std::string name, std::function<std::function<void()>()> post) {
    auto work = std::make_shared<QueuedWork>();
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      broken = stopping_ ? "the communicator was destroyed" : broken_;
    }
    if (!broken.empty()) {
      work->finish(Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken));
      return work;
    }
    work->start();
    std::function<void()> complete;
    try {
      complete = post();
    } catch (const std::exception &e) {
      work->finish(failed(name, e.what()));
      return work;
    }
    work->finish(Status::OK(), [this, name, complete]() -> Status {
      try {
        complete();
        return Status::OK();
      } catch (const std::exception &e) {
        return failed(name, e.what());
      }
    });
    return work;
  }

  /// Records |error| (a Gloo exception's text) as the group's failure and
  /// returns the operation's status.
  Status failed(const std::string &name, const std::string &error) {
    std::string why = cause(error);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_.empty())
        broken_ = why;
      else if (aborted_)
        why = broken_;
    }
    return Status::error(DLRT_UNAVAILABLE, name + " failed: " + why);
  }

  /// The one-line cause of a Gloo failure |what|, naming the rank that
  /// left where the store knows it.
  std::string cause(const std::string &what) {
    if (aborted_)
      return "the communicator was aborted";
    bool timedOut = what.find("Timed out") != std::string::npos ||
                    what.find("timed out") != std::string::npos;
    // The store's server may see the closed connection a moment after the
    // transport did; ask a few times.
    std::vector<int> lost;
    for (int attempt = 0; store_ && attempt < 20; ++attempt) {
      Status st = store_->lostRanks(&lost);
      if (!st.ok()) {
        lost = {0}; // rank 0 hosts the store: its process is gone
        break;
      }
      // Only members of this group can have failed its operation.
      lost.erase(std::remove_if(lost.begin(), lost.end(),
                                [&](int r) {
                                  return std::find(jobRanks_.begin(),
                                                   jobRanks_.end(),
                                                   r) == jobRanks_.end();
                                }),
                 lost.end());
      if (!lost.empty() || timedOut)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::string ranks;
    for (size_t i = 0; i < lost.size(); ++i)
      ranks += (i ? (i + 1 == lost.size() ? " and " : ", ") : "") +
               std::to_string(lost[i]);
    if (!lost.empty())
      return (lost.size() == 1 ? "rank " : "ranks ") + ranks +
             (lost.size() == 1 ? " closed its connection"
                               : " closed their connections") +
             " (process exited?)";
    if (timedOut)
      return "timed out after " + seconds(timeout_) +
             " (a peer is hung, gone or slower than the timeout)";
    return firstLine(what);
  }

  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty())
          return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::string broken;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        broken = stopping_ ? "the communicator was destroyed" : broken_;
      }
      if (!broken.empty()) {
        task.work->finish(
            Status::error(DLRT_UNAVAILABLE, task.name + " failed: " + broken));
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = task.work;
        currentName_ = task.name;
      }
      std::string error;
      task.work->start();
      try {
        task.run();
      } catch (const std::exception &e) {
        error = e.what();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = nullptr;
      }
      task.work->finish(error.empty() ? Status::OK() : failed(task.name, error));
    }
  }

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  TcpStore *store_;
  std::vector<int> jobRanks_; // the job's rank of each rank
  std::string groupName_;     // " of ranks [1, 3]"; empty for the job
  std::shared_ptr<gloo::transport::Device> device_;
  std::string prefix_; // of the store keys of this communicator
  std::shared_ptr<gloo::Context> context_;
  std::map<std::vector<int>, int> groups_; // groups made, by their ranks

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::atomic<bool> aborted_{false};
  std::string broken_;
  std::shared_ptr<QueuedWork> current_; // the operation the worker runs
  std::string currentName_;
  std::vector<uint64_t> sendSeq_, recvSeq_;
  std::vector<std::pair<std::weak_ptr<gloo::transport::UnboundBuffer>, bool>>
      posted_; // sends and receives that wait() has not finished
  std::thread worker_;
};

std::atomic<int> glooCommunicators{0};

} // namespace

Status createGlooCommunicator(const Rendezvous &rendezvous, TcpStore *store,
                              std::chrono::milliseconds timeout,
                              std::unique_ptr<Communicator> *out) {
  auto comm = std::make_unique<GlooCommunicator>(
      rendezvous.rank, rendezvous.worldSize, timeout, store);
  if (rendezvous.worldSize > 1) {
    if (!store)
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "a Gloo communicator of " +
                               std::to_string(rendezvous.worldSize) +
                               " ranks needs the rendezvous store");
    gloo::transport::tcp::attr attr;
    if (const char *iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
      attr.iface = iface;
    else
      attr.hostname = interfaceTowards(rendezvous.masterAddr);
    std::shared_ptr<gloo::transport::Device> device;
    try {
      device = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception &e) {
      return Status::error(
          DLRT_UNAVAILABLE,
          "Gloo cannot open a TCP device on " +
              (attr.iface.empty() ? attr.hostname : "interface " + attr.iface) +
              ": " + std::string(e.what()).substr(0, 200));
    }
    int n = glooCommunicators++;
    Status st = comm->connect(device, "gloo/" + std::to_string(n) + "/");
    if (!st.ok())
      return st;
  }
  *out = std::move(comm);
  return Status::OK();
}

} // namespace dlrt::comm
