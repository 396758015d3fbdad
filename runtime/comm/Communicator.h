//===- Communicator.h - collectives between the ranks of a job --*- C++ -*-===//
// One interface for the collectives a data-parallel step needs; the Gloo
// backend (host memory, TCP) and the NCCL backend (device memory, CUDA
// streams) implement it. docs/distributed.md, "Communicators", is the user's
// view of it.
#ifndef DLRT_COMM_COMMUNICATOR_H
#define DLRT_COMM_COMMUNICATOR_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/Device.h"

namespace dlrt::comm {

/// Element types a collective moves. f16 is IEEE binary16 and bf16 the
/// upper half of an f32, both reduced through f32 with the runtime's
/// conversions (HalfConversions.h), rounding once per addition.
enum class DataType { F32, F16, BF16, I64 };

/// Bytes of one element of |type|.
size_t dataTypeBytes(DataType type);
/// "f32", "f16", "bf16", "i64".
const char *dataTypeName(DataType type);

/// The reduction of allReduce and reduceScatter. Avg is the sum divided by
/// the world size (in f32 for f16/bf16, rounded once); it is refused for
/// i64 (DLRT_INVALID_ARGUMENT), whose mean is not an integer.
enum class ReduceOp { Sum, Avg };

/// The default timeout of every operation (dlrt's `--comm-timeout`).
constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(300);

/// The handle of one issued operation.
class Work {
public:
  virtual ~Work() = default;
  /// Blocks until this operation (and no later one) has finished; its
  /// buffers may then be read and reused. Returns the same status on every
  /// call. Errors (one line naming the operation, its size and the peer rank
  /// where known, e.g. "all_reduce of 4.0 MiB failed: rank 1 closed its
  /// connection"): DLRT_UNAVAILABLE (a peer failed or the operation timed
  /// out), DLRT_INVALID_ARGUMENT (bad arguments, found when issuing),
  /// DLRT_INTERNAL (the backend failed otherwise).
  virtual Status wait() = 0;
  /// When the backend started and finished moving the data, on the steady
  /// clock (for traces), once the operation has finished; false when the
  /// backend does not measure it (NCCL: the work runs on a CUDA stream) or
  /// the operation has not finished yet.
  virtual bool timing(std::chrono::steady_clock::time_point *start,
                      std::chrono::steady_clock::time_point *end) const {
    (void)start;
    (void)end;
    return false;
  }
};

/// A group of `size()` ranks that run collectives together. Every rank must
/// issue the same collectives in the same order with the same counts and
/// types (as with NCCL and MPI); operations run in issue order,
/// asynchronously to the caller, and each is bounded by the timeout given
/// at creation, so a dead or hung peer ends it with an error instead of a
/// hang. Pointers are host memory for Gloo and device memory for NCCL; they
/// must stay valid until the operation's wait() returns. Counts are
/// elements. Once an operation has failed, every later one fails with the
/// same cause (the group is broken; create a new one).
class Communicator {
public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 .. size()-1.
  virtual int rank() const = 0;
  /// The number of ranks.
  virtual int size() const = 0;
  /// "gloo" or "nccl".
  virtual const char *backend() const = 0;

  /// In place: every rank's |data| (|count| elements) becomes the
  /// element-wise reduction over all ranks.
  virtual std::shared_ptr<Work> allReduce(void *data, size_t count,
                                          DataType type, ReduceOp op) = 0;
  /// In place: every rank's |data| becomes rank |root|'s.
  virtual std::shared_ptr<Work> broadcast(void *data, size_t count,
                                          DataType type, int root) = 0;
  /// |output| (size() * |count| elements) receives every rank's |input|
  /// (|count| elements), ordered by rank.
  virtual std::shared_ptr<Work> allGather(const void *input, void *output,
                                          size_t count, DataType type) = 0;
  /// |input| has size() * |count| elements; rank r's |output| (|count|
  /// elements) receives the reduction of block r of every rank's input.
  virtual std::shared_ptr<Work> reduceScatter(const void *input, void *output,
                                              size_t count, DataType type,
                                              ReduceOp op) = 0;
  /// Sends |count| elements to rank |peer|, which must issue a matching
  /// recv; messages between two ranks arrive in the order sent.
  virtual std::shared_ptr<Work> send(const void *data, size_t count,
                                     DataType type, int peer) = 0;
  /// Receives |count| elements from rank |peer| (its matching send).
  virtual std::shared_ptr<Work> recv(void *data, size_t count, DataType type,
                                     int peer) = 0;
  /// Finishes when every rank has issued its barrier.
  virtual std::shared_ptr<Work> barrier() = 0;

  /// Ends the group: operations not yet finished fail with "aborted", and
  /// so do later ones. Safe to call from any thread, more than once.
  virtual void abort() = 0;

protected:
  /// The backend's part of createSubCommunicator: |ranks| (ranks of this
  /// communicator) are already checked, and this rank is |ranks[groupRank]|.
  /// The default refuses (DLRT_INVALID_ARGUMENT) for backends without
  /// groups.
  virtual Status createGroup(const std::vector<int> &ranks, int groupRank,
                             std::unique_ptr<Communicator> *out);

  friend Status createSubCommunicator(Communicator &parent,
                                      const std::vector<int> &ranks,
                                      std::unique_ptr<Communicator> *out);
};

/// Creates the communicator of a subset of |parent|'s ranks, with
/// MPI_Comm_split's and torch.distributed.new_group's semantics: rank i of
/// the new communicator is |parent|'s rank |ranks[i]|, so the order of
/// |ranks| is the order of the group (all-gather, reduce-scatter blocks,
/// roots and peers are group ranks). Pipeline parallelism with S stages of
/// D data-parallel replicas makes, on every rank, the group of each stage s,
/// {s*D + d : d in 0..D-1}, and all-reduces gradients in its own.
///
/// Every member must call it, and members must create the groups that
/// share a list of ranks in the same order; a non-member gets a null
/// |*out| and OK without communicating, so every rank may simply create
/// every group in the same order (torch.distributed.new_group's rule).
/// The group has |parent|'s backend, timeout and store (and, for NCCL, its
/// CUDA context and stream): the store must outlive it, |parent| need not.
/// Its store keys are under the parent's ("gloo/<n>/" or "nccl/<n>/")
/// followed by "group/<ranks, comma-separated>/<k>/", k counting the groups
/// of this list of ranks that this process made from |parent|, so they
/// collide neither with the parent's keys nor between groups. Creating it
/// waits (at most the timeout) for every member. A group of one rank needs
/// no store: its operations are local copies (Gloo) or a one-rank NCCL
/// communicator. Messages of the group name ranks by their rank in the job
/// (the root communicator's), e.g. "rank 3 closed its connection".
/// Sets |*out| to null first. Errors: DLRT_INVALID_ARGUMENT (|ranks|
/// empty, a rank repeated or not a rank of |parent|, one line naming it as
/// given); DLRT_UNAVAILABLE (|parent| is broken, naming its cause; a member
/// did not join within the timeout, naming it; the backend's setup failed,
/// as createGlooCommunicator and createNcclCommunicator say). A failed
/// creation leaves the members' counts of groups out of step: stop the job
/// rather than retry.
Status createSubCommunicator(Communicator &parent,
                             const std::vector<int> &ranks,
                             std::unique_ptr<Communicator> *out);

struct Rendezvous;
class TcpStore;

/// Creates the Gloo communicator of |rendezvous| (host memory, TCP): every
/// rank connects to every other through Gloo's TCP transport, exchanging
/// addresses through |store| (keys under "gloo/<n>/", n counting the
/// communicators this process created, so every rank must create them in
/// the same order). The transport binds the interface that routes to
/// MASTER_ADDR (loopback when it is local), or $GLOO_SOCKET_IFNAME when
/// set. Collectives are Gloo's (ring all-reduce, Gloo 0.5 "allreduce";
/// broadcast, allgather, barrier); reduce-scatter is an all-reduce of the
/// whole input of which each rank keeps its block (Gloo 0.5 has no typed
/// reduce-scatter for f16/bf16). Operations run one at a time in issue
/// order on a worker thread, so they overlap the caller's computation.
/// |timeout| bounds the connection and every operation. With world size 1
/// no store is needed (|store| may be null) and operations are local
/// copies. Errors: DLRT_UNAVAILABLE (a rank did not join within |timeout|,
/// naming the missing ranks where known; the transport failed),
/// DLRT_INVALID_ARGUMENT (no store for world size > 1).
Status createGlooCommunicator(const Rendezvous &rendezvous, TcpStore *store,
                              std::chrono::milliseconds timeout,
                              std::unique_ptr<Communicator> *out);

/// Creates the NCCL communicator of |rendezvous| on the current CUDA
/// context (the CUDA device's; rank r uses the device the caller chose,
/// usually LOCAL_RANK). NCCL is loaded with dlopen: $DLRT_NCCL_LIBRARY when
/// set, else libnccl.so.2 (the loader's path, then $CUDA_HOME/lib64 and
/// /usr/local/cuda/lib64); the CUDA driver through runtime/cuda. Rank 0
/// makes the unique id (ncclGetUniqueId) and publishes it in |store| (key
/// "nccl/<n>/id"). Collectives run on the communicator's own CUDA stream:
/// each waits (cuStreamWaitEvent) for the work issued so far on |stream|
/// (the CUDA device's CUstream), and Work::wait() makes |stream| wait for
/// the collective, then checks NCCL's asynchronous errors and aborts the
/// communicator if the collective has not finished within |timeout|.
/// Pointers are device pointers. Errors: DLRT_UNAVAILABLE "NCCL is not
/// available: cannot load libnccl.so.2 (...)", "no CUDA driver ...", a
/// missing NCCL symbol, or ncclCommInitRank's failure (naming the NCCL
/// error); DLRT_INVALID_ARGUMENT (no store for world size > 1, no stream).
Status createNcclCommunicator(const Rendezvous &rendezvous, TcpStore *store,
                              void *stream, std::chrono::milliseconds timeout,
                              std::unique_ptr<Communicator> *out);

/// Loads NCCL as createNcclCommunicator does (once per process), without
/// the driver or any communicator; |*version| receives ncclGetVersion
/// (e.g. 22703). Errors: DLRT_UNAVAILABLE "NCCL is not available: cannot
/// load <library> (<dlerror>)" or "<library> lacks <symbol> ...".
Status loadNccl(int *version);

/// "4.0 MiB", "512 B": the size of an operation in messages.
std::string formatBytes(size_t bytes);
/// "[1, 3]": a list of ranks in messages.
std::string formatRanks(const std::vector<int> &ranks);

/// What the backends' createGroup share, called under the parent's lock:
/// the job ranks of the group |ranks| of a parent whose rank i is job rank
/// |parentJobRanks|[i], and the group's store prefix
/// "<parentPrefix>group/<ranks, comma-separated>/<k>/", k counting the
/// groups of |ranks| made so far in |counts| (which it increments).
/// Errors: DLRT_UNAVAILABLE when |parentBroken| (the parent's failure) is
/// not empty, naming it.
Status nameGroup(const std::vector<int> &ranks,
                 const std::vector<int> &parentJobRanks,
                 const std::string &parentBroken,
                 const std::string &parentPrefix,
                 std::map<std::vector<int>, int> &counts,
                 std::vector<int> *jobRanks, std::string *prefix);

/// A Work that is already finished with |status| (errors found when
/// issuing, operations on one rank).
std::shared_ptr<Work> finishedWork(Status status);

} // namespace dlrt::comm

#endif
