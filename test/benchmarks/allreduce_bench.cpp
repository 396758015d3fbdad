//===- allreduce_bench.cpp - all-reduce bus bandwidth of one rank ---------===//
// One rank of the all-reduce benchmark (test/benchmarks/allreduce.py starts
// W of them with torchrun's environment). Rank 0 prints one line per size:
//   bytes count iterations time_us algbw_GBps busbw_GBps
// with algbw = bytes / time and busbw = algbw * 2(W-1)/W, the bus bandwidth
// of nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md, "AllReduce"), which
// is comparable across world sizes. Times are the mean of one all-reduce
// (f32, sum) over the iterations after a warm-up, timed between barriers.
// Usage: dlrt-allreduce-bench [min_bytes max_bytes factor]
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/TcpStore.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace dlrt;
using namespace dlrt::comm;

static int fail(const Status &st) {
  std::fprintf(stderr, "allreduce_bench: %s\n", st.message.c_str());
  return 1;
}

int main(int argc, char **argv) {
  size_t minBytes = 1024, maxBytes = size_t(256) << 20, factor = 4;
  if (argc == 4) {
    minBytes = std::strtoull(argv[1], nullptr, 10);
    maxBytes = std::strtoull(argv[2], nullptr, 10);
    factor = std::strtoull(argv[3], nullptr, 10);
  }
  if (argc != 1 && argc != 4) {
    std::fprintf(stderr, "usage: %s [min_bytes max_bytes factor]\n", argv[0]);
    return 2;
  }
  if (minBytes < 4 || maxBytes < minBytes || factor < 2) {
    std::fprintf(stderr, "allreduce_bench: need 4 <= min_bytes <= max_bytes "
                         "and factor >= 2\n");
    return 2;
  }
  Rendezvous r;
  Status st = rendezvousFromEnvironment(&r);
  if (!st.ok())
    return fail(st);
  const auto timeout = std::chrono::seconds(120);
  std::unique_ptr<TcpStore> store;
  if (r.worldSize > 1) {
    st = TcpStore::create(tcpStoreOptions(r, timeout), &store);
    if (!st.ok())
      return fail(st);
  }
  std::unique_ptr<Communicator> comm;
  st = createGlooCommunicator(r, store.get(), timeout, &comm);
  if (!st.ok())
    return fail(st);
  const int W = comm->size();
  if (r.rank == 0)
    std::printf("# gloo all-reduce f32 sum, %d ranks\n"
                "# bytes count iterations time_us algbw_GBps busbw_GBps\n",
                W);
  std::vector<float> data(maxBytes / 4, 1.0f);
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const size_t count = bytes / 4;
    // About 256 MiB moved per size, between 3 and 200 iterations.
    const int iters =
        int(std::clamp<size_t>((size_t(256) << 20) / bytes, 3, 200));
    // |n| all-reduces one after the other, then a barrier.
    auto allReduces = [&](int n) {
      Status s;
      for (int i = 0; i < n && s.ok(); ++i)
        s = comm->allReduce(data.data(), count, DataType::F32, ReduceOp::Sum)
                ->wait();
      return s.ok() ? comm->barrier()->wait() : s;
    };
    if (!(st = allReduces(2)).ok()) // warm-up
      return fail(st);
    auto t0 = std::chrono::steady_clock::now();
    if (!(st = allReduces(iters)).ok())
      return fail(st);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count() /
        iters;
    double algbw = double(bytes) / seconds / 1e9;
    double busbw = algbw * 2.0 * (W - 1) / W;
    if (r.rank == 0) {
      std::printf("%zu %zu %d %.1f %.3f %.3f\n", bytes, count, iters,
                  seconds * 1e6, algbw, busbw);
      std::fflush(stdout);
    }
    // Keep the values finite: the sums grow by a factor W per call.
    std::fill(data.begin(), data.begin() + count, 1.0f);
  }
  return 0;
}
