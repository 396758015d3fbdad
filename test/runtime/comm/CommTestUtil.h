//===- CommTestUtil.h - forked ranks for the comm tests ---------*- C++ -*-===//
// Multi-rank tests fork one process per rank on 127.0.0.1 (Gloo's state is
// per process, as in real jobs); a child reports failures on stderr and
// through its exit status, and the parent kills children that outlive a
// deadline, so a hang fails the test instead of blocking it. Shared by
// CommTest.cpp and GlooTest.cpp.
#ifndef DLRT_TEST_RUNTIME_COMM_COMMTESTUTIL_H
#define DLRT_TEST_RUNTIME_COMM_COMMTESTUTIL_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/TcpStore.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dlrt::comm::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// A TCP port that was free a moment ago (bind to 0, read, close).
inline int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline Rendezvous makeRendezvous(int rank, int world, int port) {
  Rendezvous r;
  r.rank = rank;
  r.worldSize = world;
  r.localRank = rank;
  r.localWorldSize = world;
  r.masterAddr = "127.0.0.1";
  r.masterPort = port;
  r.masterDefaulted = false;
  r.source = RendezvousSource::Torchrun;
  return r;
}

/// Failures of a child rank: printed at once, counted for the exit status.
struct Checker {
  int rank;
  int failures = 0;
  void operator()(bool ok, const std::string &what) {
    if (!ok) {
      ++failures;
      std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
    }
  }
};

/// Runs |body(rank, check)| in |world| forked processes and returns their
/// exit statuses (0 = every check passed; 99 = killed at |deadline|).
inline std::vector<int>
runRanks(int world,
         const std::function<void(int rank, int port, Checker &)> &body,
         std::chrono::seconds deadline = 60s) {
  const int port = freePort();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      Checker check{rank};
      body(rank, port, check);
      std::fflush(stderr);
      _exit(check.failures ? 1 : 0);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(world, -1);
  const auto end = Clock::now() + deadline;
  int left = world;
  while (left > 0) {
    for (int i = 0; i < world; ++i) {
      if (codes[i] != -1)
        continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
        --left;
      }
    }
    if (left && Clock::now() > end) {
      for (int i = 0; i < world; ++i)
        if (codes[i] == -1) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
          codes[i] = 99;
        }
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  return codes;
}

/// Store + Gloo communicator of one rank; failures are checked.
struct Member {
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Communicator> comm;
};
inline bool join(int rank, int world, int port, std::chrono::milliseconds timeout,
          Member *m, Checker &check) {
  Rendezvous r = makeRendezvous(rank, world, port);
  Status st = TcpStore::create(tcpStoreOptions(r, timeout), &m->store);
  check(st.ok(), "store: " + st.message);
  if (!st.ok())
    return false;
  st = createGlooCommunicator(r, m->store.get(), timeout, &m->comm);
  check(st.ok(), "gloo: " + st.message);
  return st.ok();
}

} // namespace dlrt::comm::test

#endif // DLRT_TEST_RUNTIME_COMM_COMMTESTUTIL_H
