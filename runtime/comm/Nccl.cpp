//===- Nccl.cpp - the NCCL communicator (device memory, CUDA streams) -----===//
// NCCL is opened with dlopen like the CUDA libraries (runtime/cuda), so
// libdlrt starts without it and says clearly why it is missing. Each
// collective runs on the communicator's own stream, ordered after the
// caller's stream by an event, and the caller's stream is ordered after it
// by another when its Work is waited for. A sub-communicator is another
// NCCL communicator (ncclCommInitRank) over the group's ranks, its unique id
// published under a key of the group.
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/TcpStore.h"

#include "runtime/cuda/CudaApi.h"

#include <nccl.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace dlrt::comm {
namespace {

#define DLRT_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetVersion)                                                            \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclAllReduce)                                                             \
  X(ncclBroadcast)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclSend)                                                                  \
  X(ncclRecv)                                                                  \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)                                                              \
  X(ncclCommAbort)                                                             \
  X(ncclCommDestroy)                                                           \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclGetErrorString)

/// The NCCL entry points this backend calls.
struct NcclApi {
#define DLRT_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  DLRT_NCCL_FUNCTIONS(DLRT_NCCL_MEMBER)
#undef DLRT_NCCL_MEMBER
  int version = 0;
};

/// Opens NCCL once per process; a failure is not cached.
Status loadNcclApi(const NcclApi **out) {
  static std::mutex mutex;
  static NcclApi *table = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (table) {
    *out = table;
    return Status::OK();
  }
  std::vector<std::string> candidates;
  std::string shown;
  if (const char *path = std::getenv("DLRT_NCCL_LIBRARY"); path && *path) {
    candidates.push_back(path);
    shown = std::string(path) + " (DLRT_NCCL_LIBRARY)";
  } else {
    candidates.push_back("libnccl.so.2");
    if (const char *home = std::getenv("CUDA_HOME"); home && *home)
      candidates.push_back(std::string(home) + "/lib64/libnccl.so.2");
    candidates.push_back("/usr/local/cuda/lib64/libnccl.so.2");
    shown = "libnccl.so.2";
  }
  void *handle = nullptr;
  std::string error;
  for (const std::string &c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    if (error.empty())
      if (const char *e = dlerror())
        error = e;
  }
  if (!handle)
    return Status::error(DLRT_UNAVAILABLE,
                         "NCCL is not available: cannot load " + shown + " (" +
                             error + ")");
  auto api = std::make_unique<NcclApi>();
#define DLRT_NCCL_LOAD(name)                                                   \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, #name));     \
  if (!api->name) {                                                            \
    dlclose(handle);                                                           \
    return Status::error(DLRT_UNAVAILABLE, "NCCL is not available: " + shown + \
                                               " lacks " #name                 \
                                               " (not NCCL, or older than "    \
                                               "2.12?)");                      \
  }
  DLRT_NCCL_FUNCTIONS(DLRT_NCCL_LOAD)
#undef DLRT_NCCL_LOAD
  if (ncclResult_t r = api->ncclGetVersion(&api->version); r != ncclSuccess)
    return Status::error(DLRT_UNAVAILABLE,
                         "NCCL is not available: ncclGetVersion failed (" +
                             std::string(api->ncclGetErrorString(r)) + ")");
  table = api.release(); // lives until the process exits
  *out = table;
  return Status::OK();
}

ncclDataType_t ncclType(DataType type) {
  switch (type) {
  case DataType::F32:
    return ncclFloat32;
  case DataType::F16:
    return ncclFloat16;
  case DataType::BF16:
    return ncclBfloat16;
  case DataType::I64:
    return ncclInt64;
  }
  return ncclFloat32;
}

using Clock = std::chrono::steady_clock;

std::string seconds(std::chrono::milliseconds t) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", t.count() / 1000.0);
  return b;
}

class NcclCommunicator;

/// One collective on the communicator's stream; |done| is recorded after it.
class NcclWork : public Work {
public:
  NcclWork(NcclCommunicator &comm, std::string name, CUevent done)
      : comm_(comm), name_(std::move(name)), done_(done) {}
  ~NcclWork() override;
  Status wait() override;

private:
  NcclCommunicator &comm_;
  std::string name_;
  CUevent done_;
  bool waited_ = false;
  Status status_;
};

Status createNccl(const NcclApi &nccl, const cuda::DriverApi &cu, int rank,
                  const std::vector<int> &jobRanks, CUstream stream,
                  std::chrono::milliseconds timeout, TcpStore *store,
                  const std::string &prefix, const std::string &group,
                  std::unique_ptr<Communicator> *out);

class NcclCommunicator : public Communicator {
public:
  /// |jobRanks[g]| is the job's rank of rank g (messages name ranks by it);
  /// the store keys of this communicator are under |prefix|; |group| is
  /// " of ranks [1, 3]" for a group, empty for the job.
  NcclCommunicator(const NcclApi &nccl, const cuda::DriverApi &cu, int rank,
                   std::vector<int> jobRanks, CUstream user,
                   std::chrono::milliseconds timeout, TcpStore *store,
                   std::string prefix, std::string group)
      : nccl_(nccl), cu_(cu), rank_(rank), size_(int(jobRanks.size())),
        jobRanks_(std::move(jobRanks)), user_(user), timeout_(timeout),
        store_(store), prefix_(std::move(prefix)), group_(std::move(group)) {}
  ~NcclCommunicator() override {
    if (comm_)
      (aborted_ ? nccl_.ncclCommAbort : nccl_.ncclCommDestroy)(comm_);
    if (stream_)
      cu_.cuStreamDestroy(stream_);
  }

  Status init(const ncclUniqueId &id) {
    if (CUresult r = cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
        r != CUDA_SUCCESS)
      return Status::error(DLRT_UNAVAILABLE,
                           cuda::describeCuResult(cu_, r, "cuStreamCreate"));
    if (ncclResult_t r = nccl_.ncclCommInitRank(&comm_, size_, id, rank_);
        r != ncclSuccess) {
      comm_ = nullptr;
      return Status::error(DLRT_UNAVAILABLE, "ncclCommInitRank failed on " +
                                                 rankName(rank_) + ": " +
                                                 nccl_.ncclGetErrorString(r));
    }
    return Status::OK();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backend() const override { return "nccl"; }

  std::shared_ptr<Work> allReduce(void *data, size_t count, DataType type,
                                  ReduceOp op) override {
    std::string name =
        "all_reduce of " + formatBytes(count * dataTypeBytes(type));
    if (op == ReduceOp::Avg && type == DataType::I64)
      return invalid(name, "average of i64 is not supported (use sum)");
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclAllReduce(data, data, count, ncclType(type),
                                 op == ReduceOp::Avg ? ncclAvg : ncclSum, comm_,
                                 s);
    });
  }
  std::shared_ptr<Work> broadcast(void *data, size_t count, DataType type,
                                  int root) override {
    std::string name = "broadcast of " +
                       formatBytes(count * dataTypeBytes(type)) + " from " +
                       rankName(root);
    if (root < 0 || root >= size_)
      return invalid(name, "root is not a rank of " + std::to_string(size_));
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclBroadcast(data, data, count, ncclType(type), root, comm_,
                                 s);
    });
  }
  std::shared_ptr<Work> allGather(const void *input, void *output, size_t count,
                                  DataType type) override {
    std::string name =
        "all_gather of " + formatBytes(count * size_ * dataTypeBytes(type));
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclAllGather(input, output, count, ncclType(type), comm_,
                                 s);
    });
  }
  std::shared_ptr<Work> reduceScatter(const void *input, void *output,
                                      size_t count, DataType type,
                                      ReduceOp op) override {
    std::string name =
        "reduce_scatter of " + formatBytes(count * size_ * dataTypeBytes(type));
    if (op == ReduceOp::Avg && type == DataType::I64)
      return invalid(name, "average of i64 is not supported (use sum)");
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclReduceScatter(input, output, count, ncclType(type),
                                     op == ReduceOp::Avg ? ncclAvg : ncclSum,
                                     comm_, s);
    });
  }
  std::shared_ptr<Work> send(const void *data, size_t count, DataType type,
                             int peer) override {
    std::string name = "send of " + formatBytes(count * dataTypeBytes(type)) +
                       " to " + rankName(peer);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return invalid(name, "the peer must be another rank of " +
                               std::to_string(size_));
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclSend(data, count, ncclType(type), peer, comm_, s);
    });
  }
  std::shared_ptr<Work> recv(void *data, size_t count, DataType type,
                             int peer) override {
    std::string name = "recv of " + formatBytes(count * dataTypeBytes(type)) +
                       " from " + rankName(peer);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return invalid(name, "the peer must be another rank of " +
                               std::to_string(size_));
    return issue(name, [&](cudaStream_t s) {
      return nccl_.ncclRecv(data, count, ncclType(type), peer, comm_, s);
    });
  }
  /// A host barrier through the store: NCCL has none, and this one needs no
  /// device memory.
  std::shared_ptr<Work> barrier() override {
    if (size_ == 1)
      return finishedWork(Status::OK());
    if (!broken_.empty())
      return finishedWork(
          Status::error(DLRT_UNAVAILABLE, "barrier failed: " + broken_));
    std::string key = prefix_ + "barrier/" + std::to_string(barriers_++);
    int64_t arrived = 0;
    Status st = store_->add(key, 1, &arrived);
    const auto deadline = Clock::now() + timeout_;
    while (st.ok() && arrived < size_) {
      if (Clock::now() >= deadline) {
        fail("timed out after " + seconds(timeout_) + " (" +
             std::to_string(size_ - arrived) + " ranks did not arrive)");
        return finishedWork(
            Status::error(DLRT_UNAVAILABLE, "barrier failed: " + broken_));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      st = store_->add(key, 0, &arrived);
    }
    if (!st.ok())
      return finishedWork(
          Status::error(DLRT_UNAVAILABLE, "barrier failed: " + st.message));
    return finishedWork(Status::OK());
  }
  void abort() override {
    std::lock_guard<std::mutex> lock(mutex_);
    fail("the communicator was aborted");
  }

  /// Waits for |done| (polling, so a hung peer cannot block past the
  /// timeout) and orders the caller's stream after it.
  Status waitFor(const std::string &name, CUevent done) {
    const auto deadline = Clock::now() + timeout_;
    auto pause = std::chrono::microseconds(10);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!broken_.empty())
          return Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_);
        ncclResult_t async = ncclSuccess;
        nccl_.ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          fail(std::string("NCCL reported ") + nccl_.ncclGetErrorString(async) +
               " (a peer failed or left)");
          return Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_);
        }
      }
      CUresult q = cu_.cuEventQuery(done);
      if (q == CUDA_SUCCESS)
        break;
      if (q != CUDA_ERROR_NOT_READY)
        return Status::error(
            DLRT_UNAVAILABLE,
            name +
                " failed: " + cuda::describeCuResult(cu_, q, "cuEventQuery"));
      if (Clock::now() >= deadline) {
        std::lock_guard<std::mutex> lock(mutex_);
        fail("timed out after " + seconds(timeout_) +
             " (a peer is hung, gone or slower than the timeout)");
        return Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
    if (CUresult r = cu_.cuStreamWaitEvent(user_, done, 0); r != CUDA_SUCCESS)
      return Status::error(
          DLRT_UNAVAILABLE,
          name + " failed: " +
              cuda::describeCuResult(cu_, r, "cuStreamWaitEvent"));
    return Status::OK();
  }
  const cuda::DriverApi &driver() const { return cu_; }

protected:
  /// An NCCL communicator of |ranks| on the same stream and store; its keys
  /// are under "<prefix_>group/<ranks>/<k>/".
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
    return createNccl(nccl_, cu_, groupRank, jobRanks, user_, timeout_, store_,
                      prefix, " of ranks " + formatRanks(jobRanks), out);
  }

private:
  /// "rank J" for rank |r| of this communicator, J its rank in the job;
  /// "group rank r" when |r| is not a rank of it.
  std::string rankName(int r) const {
    if (r >= 0 && r < size_)
      return "rank " + std::to_string(jobRanks_[r]);
    return (group_.empty() ? "rank " : "group rank ") + std::to_string(r);
  }

  /// Marks the group broken (first cause wins) and aborts NCCL's
  /// communicator, which ends its kernels. Caller holds |mutex_|.
  void fail(const std::string &why) {
    if (!broken_.empty())
      return;
    broken_ = why;
    if (comm_ && !aborted_) {
      aborted_ = true;
      nccl_.ncclCommAbort(comm_);
      comm_ = nullptr;
    }
  }

  std::shared_ptr<Work> invalid(const std::string &name,
                                const std::string &why) {
    return finishedWork(
        Status::error(DLRT_INVALID_ARGUMENT, name + " is invalid: " + why));
  }

  template <typename Call>
  std::shared_ptr<Work> issue(const std::string &name, Call call) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.empty())
      return finishedWork(
          Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_));
    CUevent ready = nullptr, done = nullptr;
    auto driverError = [&](CUresult r, const char *what) {
      if (ready)
        cu_.cuEventDestroy(ready);
      if (done)
        cu_.cuEventDestroy(done);
      return finishedWork(Status::error(
          DLRT_INTERNAL,
          name + " failed: " + cuda::describeCuResult(cu_, r, what)));
    };
    if (CUresult r = cu_.cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING))
      return driverError(r, "cuEventCreate");
    if (CUresult r = cu_.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING))
      return driverError(r, "cuEventCreate");
    if (CUresult r = cu_.cuEventRecord(ready, user_))
      return driverError(r, "cuEventRecord");
    if (CUresult r = cu_.cuStreamWaitEvent(stream_, ready, 0))
      return driverError(r, "cuStreamWaitEvent");
    cu_.cuEventDestroy(ready); // destruction waits for its pending uses
    ready = nullptr;
    if (ncclResult_t r = call(reinterpret_cast<cudaStream_t>(stream_));
        r != ncclSuccess) {
      cu_.cuEventDestroy(done);
      fail(std::string("NCCL: ") + nccl_.ncclGetErrorString(r));
      return finishedWork(
          Status::error(DLRT_UNAVAILABLE, name + " failed: " + broken_));
    }
    if (CUresult r = cu_.cuEventRecord(done, stream_))
      return driverError(r, "cuEventRecord");
    return std::make_shared<NcclWork>(*this, name, done);
  }

  const NcclApi &nccl_;
  const cuda::DriverApi &cu_;
  const int rank_, size_;
  const std::vector<int> jobRanks_; // the job's rank of each rank
  CUstream user_;
  CUstream stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  const std::chrono::milliseconds timeout_;
  TcpStore *store_;
  const std::string prefix_; // of the store keys of this communicator
  const std::string group_;  // " of ranks [1, 3]"; empty for the job
  std::map<std::vector<int>, int> groups_; // groups made, by their ranks
  std::mutex mutex_;
  std::string broken_;
  bool aborted_ = false;
  int64_t barriers_ = 0;
};

NcclWork::~NcclWork() { comm_.driver().cuEventDestroy(done_); }

Status NcclWork::wait() {
  if (!waited_) {
    status_ = comm_.waitFor(name_, done_);
    waited_ = true;
  }
  return status_;
}

std::atomic<int> ncclCommunicators{0};

/// Makes rank |rank| of the NCCL communicator of |jobRanks| (its size;
/// |group| names it in messages, empty for the job):
/// rank 0 makes the unique id and publishes it under "<prefix>id", every
/// rank counts itself in "<prefix>joined" and waits (at most |timeout|) for
/// the others before ncclCommInitRank, which would block without bound.
Status createNccl(const NcclApi &nccl, const cuda::DriverApi &cu, int rank,
                  const std::vector<int> &jobRanks, CUstream stream,
                  std::chrono::milliseconds timeout, TcpStore *store,
                  const std::string &prefix, const std::string &group,
                  std::unique_ptr<Communicator> *out) {
  const int size = int(jobRanks.size());
  if (size > 1 && !store)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "an NCCL communicator of " + std::to_string(size) +
                             " ranks needs the rendezvous store");
  Status st;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0) {
    if (ncclResult_t r = nccl.ncclGetUniqueId(&id); r != ncclSuccess)
      return Status::error(DLRT_UNAVAILABLE,
                           std::string("ncclGetUniqueId failed: ") +
                               nccl.ncclGetErrorString(r));
    if (store && size > 1) {
      st = store->set(
          prefix + "id",
          std::vector<char>(id.internal, id.internal + sizeof id.internal));
      if (!st.ok())
        return st;
    }
  } else {
    std::vector<char> bytes;
    st = store->get(prefix + "id", &bytes);
    if (!st.ok())
      return st;
    if (bytes.size() != sizeof id.internal)
      return Status::error(DLRT_INTERNAL,
                           "malformed NCCL unique id in the store");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  // ncclCommInitRank blocks until every rank calls it; make sure all have
  // arrived (bounded by the timeout) before entering it.
  if (store && size > 1) {
    int64_t joined = 0;
    st = store->add(prefix + "joined", 1, &joined);
    const auto deadline = Clock::now() + timeout;
    while (st.ok() && joined < size) {
      if (Clock::now() >= deadline)
        return Status::error(
            DLRT_UNAVAILABLE,
            "NCCL setup" + group + " timed out after " + seconds(timeout) +
                ": " + std::to_string(size - joined) + " ranks did not join");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      st = store->add(prefix + "joined", 0, &joined);
    }
    if (!st.ok())
      return st;
  }
  auto comm = std::make_unique<NcclCommunicator>(
      nccl, cu, rank, jobRanks, stream, timeout, store, prefix, group);
  st = comm->init(id);
  if (!st.ok())
    return st;
  *out = std::move(comm);
  return Status::OK();
}

} // namespace

Status loadNccl(int *version) {
  const NcclApi *api = nullptr;
  Status st = loadNcclApi(&api);
  if (st.ok())
    *version = api->version;
  return st;
}

Status createNcclCommunicator(const Rendezvous &rendezvous, TcpStore *store,
                              void *stream, std::chrono::milliseconds timeout,
                              std::unique_ptr<Communicator> *out) {
  const NcclApi *nccl = nullptr;
  Status st = loadNcclApi(&nccl);
  if (!st.ok())
    return st;
  const cuda::DriverApi *cu = nullptr;
  st = cuda::loadDriver(&cu);
  if (!st.ok())
    return st;
  if (!stream)
    return Status::error(
        DLRT_INVALID_ARGUMENT,
        "the NCCL communicator needs the CUDA device's stream");
  if (rendezvous.worldSize > 1 && !store)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "an NCCL communicator of " +
                             std::to_string(rendezvous.worldSize) +
                             " ranks needs the rendezvous store");
  std::vector<int> ranks(size_t(rendezvous.worldSize));
  for (int r = 0; r < rendezvous.worldSize; ++r)
    ranks[size_t(r)] = r;
  const int index = ncclCommunicators++;
  return createNccl(*nccl, *cu, rendezvous.rank, ranks,
                    static_cast<CUstream>(stream), timeout, store,
                    "nccl/" + std::to_string(index) + "/", "", out);
}

} // namespace dlrt::comm
