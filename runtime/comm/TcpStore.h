//===- TcpStore.h - key-value store over TCP for the rendezvous -*- C++ -*-===//
// Rank 0 hosts the store's server (a thread of its process) on MASTER_PORT;
// every rank, rank 0 included, talks to it as a client. The communicators
// exchange their addresses (Gloo) and unique id (NCCL) through it. Built on
// standalone Asio; the wire format is private to this file's .cpp.
#ifndef DLRT_COMM_TCPSTORE_H
#define DLRT_COMM_TCPSTORE_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/Device.h"

namespace gloo::rendezvous {
class Store;
}

namespace dlrt::comm {

struct Rendezvous;

/// How to reach (or host) the store.
struct TcpStoreOptions {
  /// Address or host name of the server; the server itself listens on all
  /// interfaces.
  std::string host = "127.0.0.1";
  /// TCP port; 0 lets a server pick a free one (see TcpStore::port()).
  int port = 29500;
  /// True on the rank that hosts the server (rank 0).
  bool isServer = false;
  /// This client's rank and the world size it believes in; the server
  /// compares every client's world size with its own.
  int rank = 0;
  int worldSize = 1;
  /// Bound of connecting (with retries) and of every blocking call.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
};

/// The options a Rendezvous implies (rank 0 hosts the server).
TcpStoreOptions tcpStoreOptions(const Rendezvous &rendezvous,
                                std::chrono::milliseconds timeout);

/// A client of the rendezvous store, and on rank 0 also its server. Calls
/// are thread-safe (serialized). Keys are byte strings; values are bytes.
/// The server listens on IPv4 (all interfaces) and ends with rank 0's
/// TcpStore, so rank 0 should destroy it last (after a barrier); a client
/// destroyed normally says goodbye, so lostRanks() does not name it.
class TcpStore {
public:
  /// Starts the server when |options.isServer|, then connects, retrying
  /// until |options.timeout|, and registers this rank. Errors
  /// (DLRT_UNAVAILABLE, one line): "port P is taken (...)" when the server
  /// cannot listen; "cannot reach the rendezvous at A:P after N s (...)";
  /// "world size mismatch: rank R has WORLD_SIZE=X but rank 0 has
  /// WORLD_SIZE=Y"; "rank R joined the rendezvous twice".
  static Status create(const TcpStoreOptions &options,
                       std::unique_ptr<TcpStore> *out);
  ~TcpStore();
  TcpStore(const TcpStore &) = delete;
  TcpStore &operator=(const TcpStore &) = delete;

  /// The port the server listens on (the chosen one when created with 0).
  int port() const;
  std::chrono::milliseconds timeout() const;

  /// Sets |key| to |value| (replacing it).
  Status set(const std::string &key, const std::vector<char> &value);
  /// Waits until |key| exists (at most timeout()), then reads it. Errors:
  /// DLRT_UNAVAILABLE "rendezvous key 'K' did not appear within N s", or the
  /// connection's failure.
  Status get(const std::string &key, std::vector<char> *value);
  /// Atomically adds |delta| to the integer at |key| (0 if absent) and
  /// returns the new value in |*result|.
  Status add(const std::string &key, int64_t delta, int64_t *result);
  /// Waits until all |keys| exist, at most |timeout|.
  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout);
  /// Ranks whose connection to the server ended without a goodbye (their
  /// process exited or crashed), ascending.
  Status lostRanks(std::vector<int> *ranks);

  /// A view of this store with Gloo's interface (for
  /// gloo::rendezvous::Context::connectFullMesh); its calls throw
  /// std::runtime_error carrying this store's error message. Keys are
  /// prefixed with |prefix|. Lives as long as this store.
  gloo::rendezvous::Store &glooStore(const std::string &prefix);

  class Impl;

private:
  explicit TcpStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace dlrt::comm

#endif
