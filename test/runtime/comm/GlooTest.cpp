//===- GlooTest.cpp - the Gloo communicator and its sub-communicators -----===//
// Gloo with 1, 2, 3 and 4 ranks as forked processes on loopback: the
// collectives and point-to-point transfers, peers that exit or hang, abort,
// and sub-communicators (groups of the job's ranks).
#include "CommTestUtil.h"
#include "runtime/device/HalfConversions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

using namespace dlrt;
using namespace dlrt::comm;
using namespace dlrt::comm::test;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------------------
// Gloo

TEST(Gloo, OneRankIsLocal) {
  Rendezvous r; // single process, no store
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(createGlooCommunicator(r, nullptr, 1000ms, &comm).ok());
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->backend(), "gloo");
  std::vector<float> x = {1.5f, -2.0f};
  EXPECT_TRUE(
      comm->allReduce(x.data(), 2, DataType::F32, ReduceOp::Avg)->wait().ok());
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> y(2);
  EXPECT_TRUE(
      comm->allGather(x.data(), y.data(), 2, DataType::F32)->wait().ok());
  EXPECT_EQ(y, x);
  EXPECT_TRUE(comm->barrier()->wait().ok());
  Status st = comm->send(x.data(), 2, DataType::F32, 0)->wait();
  EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT);
  EXPECT_EQ(st.message, "send of 8 B to rank 0 is invalid: the peer must be "
                        "another rank of 1");
  std::vector<int64_t> i = {3};
  st = comm->allReduce(i.data(), 1, DataType::I64, ReduceOp::Avg)->wait();
  EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT);
  st = comm->broadcast(x.data(), 2, DataType::F32, 1)->wait();
  EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT);
}

/// The value rank |r| holds at element |i|: small integers plus r/2, so
/// every partial sum is exact in f16 and bf16 too.
float input(int r, size_t i) { return float(i % 7) + 0.5f * float(r); }

template <typename T, typename Encode>
std::vector<T> fill(int rank, size_t n, Encode encode) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = encode(input(rank, i));
  return v;
}

void collectives(int world) {
  auto codes = runRanks(world, [world](int rank, int port, Checker &check) {
    Member m;
    if (!join(rank, world, port, 20000ms, &m, check))
      return;
    Communicator &c = *m.comm;
    check(c.rank() == rank && c.size() == world, "rank/size");
    const float rankSum = 0.5f * float(world * (world - 1) / 2);
    // Odd count: the ring's chunks are uneven; 300001 f32 is > 1 MiB, so
    // Gloo splits it into several segments.
    for (size_t n : {size_t(1001), size_t(300001)}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        auto expect = [&](size_t i) {
          float sum = float(world) * float(i % 7) + rankSum;
          return op == ReduceOp::Sum ? sum : sum / float(world);
        };
        const char *opName = op == ReduceOp::Sum ? "sum" : "avg";
        auto f32 = fill<float>(rank, n, [](float x) { return x; });
        Status st = c.allReduce(f32.data(), n, DataType::F32, op)->wait();
        check(st.ok(), st.message);
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += f32[i] != expect(i);
        check(bad == 0, "f32 " + std::string(opName) + ": " +
                            std::to_string(bad) + " wrong of " +
                            std::to_string(n));
        auto f16 = fill<uint16_t>(rank, n, floatToHalfBits);
        st = c.allReduce(f16.data(), n, DataType::F16, op)->wait();
        check(st.ok(), st.message);
        bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += halfBitsToFloat(f16[i]) != expect(i);
        check(bad == 0, "f16 " + std::string(opName) + ": " +
                            std::to_string(bad) + " wrong");
        auto bf16 = fill<uint16_t>(rank, n, floatToBFloat16Bits);
        st = c.allReduce(bf16.data(), n, DataType::BF16, op)->wait();
        check(st.ok(), st.message);
        bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += bfloat16BitsToFloat(bf16[i]) != expect(i);
        check(bad == 0, "bf16 " + std::string(opName) + ": " +
                            std::to_string(bad) + " wrong");
      }
    }
    // i64 sum beyond 2^53 (not representable in f64).
    std::vector<int64_t> big = {(int64_t(1) << 60) + rank, -rank};
    Status st =
        c.allReduce(big.data(), 2, DataType::I64, ReduceOp::Sum)->wait();
    check(st.ok(), st.message);
    int64_t ranks = int64_t(world) * (world - 1) / 2;
    check(big[0] == int64_t(world) * ((int64_t(1) << 60)) + ranks &&
              big[1] == -ranks,
          "i64 sum");

    // Broadcast from the last rank.
    const int root = world - 1;
    std::vector<float> b(1000, float(rank));
    st = c.broadcast(b.data(), b.size(), DataType::F32, root)->wait();
    check(st.ok(), st.message);
    check(std::all_of(b.begin(), b.end(),
                      [&](float x) { return x == float(root); }),
          "broadcast");

    // All-gather: rank r contributes 3 values 10r, 10r+1, 10r+2.
    std::vector<float> mine = {10.0f * rank, 10.0f * rank + 1,
                               10.0f * rank + 2};
    std::vector<float> all(3 * world, -1);
    st = c.allGather(mine.data(), all.data(), 3, DataType::F32)->wait();
    check(st.ok(), st.message);
    for (int r = 0; r < world; ++r)
      for (int k = 0; k < 3; ++k)
        check(all[3 * r + k] == 10.0f * r + k, "all_gather");

    // Reduce-scatter: input j = j + rank; block r of the sum has
    // world * j + sum of ranks.
    const size_t per = 5;
    std::vector<float> in(per * world), out(per, -1);
    for (size_t j = 0; j < in.size(); ++j)
      in[j] = float(j) + rank;
    st = c.reduceScatter(in.data(), out.data(), per, DataType::F32,
                         ReduceOp::Sum)
             ->wait();
    check(st.ok(), st.message);
    for (size_t k = 0; k < per; ++k)
      check(out[k] == float(world) * float(rank * per + k) + float(ranks),
            "reduce_scatter block " + std::to_string(rank));

    // Reduce-scatter with the mean (W is a power of two: exact).
    st = c.reduceScatter(in.data(), out.data(), per, DataType::F32,
                         ReduceOp::Avg)
             ->wait();
    check(st.ok(), st.message);
    for (size_t k = 0; k < per; ++k)
      check(out[k] == (float(world) * float(rank * per + k) + float(ranks)) /
                          float(world),
            "reduce_scatter avg block " + std::to_string(rank));

    // Send/recv around the ring, twice (message order kept).
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    std::vector<int64_t> s1 = {rank, 100}, s2 = {rank, 200}, r1(2), r2(2);
    auto ws1 = c.send(s1.data(), 2, DataType::I64, next);
    auto ws2 = c.send(s2.data(), 2, DataType::I64, next);
    auto wr1 = c.recv(r1.data(), 2, DataType::I64, prev);
    auto wr2 = c.recv(r2.data(), 2, DataType::I64, prev);
    for (auto *w : {&ws1, &ws2, &wr1, &wr2}) {
      st = (*w)->wait();
      check(st.ok(), st.message);
    }
    check(r1 == std::vector<int64_t>{prev, 100} &&
              r2 == std::vector<int64_t>{prev, 200},
          "send/recv");

    // Overlap: issue two all-reduces, then wait for both (second first).
    std::vector<float> o1(4096, 1.0f), o2(4096, float(rank));
    auto w1 = c.allReduce(o1.data(), o1.size(), DataType::F32, ReduceOp::Sum);
    auto w2 = c.allReduce(o2.data(), o2.size(), DataType::F32, ReduceOp::Sum);
    check(w2->wait().ok() && w1->wait().ok(), "overlap");
    check(o1[4095] == float(world) && o2[0] == float(ranks), "overlap values");

    st = c.barrier()->wait();
    check(st.ok(), st.message);
  });
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(codes[r], 0) << "rank " << r;
}

TEST(Gloo, CollectivesTwoRanks) { collectives(2); }
TEST(Gloo, CollectivesFourRanks) { collectives(4); }

/// Rank |leaver| of 3 exits in the middle of the second all-reduce (64 MiB,
/// 20 ms after issuing it); the others' must fail within the 3 s timeout,
/// naming it (rank 0 hosts the store: its loss is seen as the store's
/// connection closing).
void peerExits(int leaver) {
  auto codes = runRanks(
      3,
      [leaver](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 3, port, 3000ms, &m, check))
          return;
        std::vector<float> x(16 << 20, 1.0f); // 64 MiB
        Status st =
            m.comm->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum)
                ->wait();
        check(st.ok(), st.message);
        if (rank == leaver) {
          std::fflush(stderr);
          _exit(0); // gone without a goodbye
        }
        std::this_thread::sleep_for(100ms);
        auto t0 = Clock::now();
        st = m.comm->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum)
                 ->wait();
        auto took = Clock::now() - t0;
        const std::string cause = "rank " + std::to_string(leaver) +
                                  " closed its connection (process exited?)";
        check(st.code == DLRT_UNAVAILABLE, "code");
        check(st.message == "all_reduce of 64.0 MiB failed: " + cause,
              "message: " + st.message);
        check(
            took < 4000ms,
            "took " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took)
                        .count()) +
                " ms");
        // The group is broken: later operations fail at once with the cause.
        st = m.comm->barrier()->wait();
        check(st.message == "barrier failed: " + cause,
              "later op: " + st.message);
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

TEST(Gloo, PeerThatExitsIsNamed) { peerExits(2); }
TEST(Gloo, StoreHostThatExitsIsNamed) { peerExits(0); }

TEST(Gloo, HungPeerTimesOut) {
  // Rank 1 never issues the all-reduce (but stays alive): rank 0 gives up
  // after its 1.5 s timeout instead of hanging.
  auto codes = runRanks(
      2,
      [](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 2, port, 1500ms, &m, check))
          return;
        if (rank == 1) {
          std::this_thread::sleep_for(4000ms);
          return;
        }
        std::vector<float> x(256, 1.0f);
        auto t0 = Clock::now();
        Status st =
            m.comm->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum)
                ->wait();
        auto took = Clock::now() - t0;
        check(st.message ==
                  "all_reduce of 1.0 KiB failed: timed out after 1.5 s "
                  "(a peer is hung, gone or slower than the timeout)",
              "message: " + st.message);
        check(
            took >= 1400ms && took < 3000ms,
            "took " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took)
                        .count()) +
                " ms");
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(Gloo, MissingRankFailsTheSetup) {
  // Only rank 0 of 2 starts: creating the communicator fails within the
  // timeout, naming the key of the rank that never came.
  auto codes = runRanks(1, [](int rank, int port, Checker &check) {
    Rendezvous r = makeRendezvous(0, 2, port);
    std::unique_ptr<TcpStore> store;
    Status st = TcpStore::create(tcpStoreOptions(r, 1000ms), &store);
    check(st.ok(), st.message);
    std::unique_ptr<Communicator> comm;
    auto t0 = Clock::now();
    st = createGlooCommunicator(r, store.get(), 1000ms, &comm);
    check(st.code == DLRT_UNAVAILABLE, "code");
    check(st.message == "rank 0 cannot connect to its peers (Gloo): rank(s) 1 "
                        "did not join within 1 s",
          "message: " + st.message);
    check(Clock::now() - t0 < 5000ms, "took too long");
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

TEST(Gloo, AbortFailsPendingWork) {
  auto codes = runRanks(
      2,
      [](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 2, port, 5000ms, &m, check))
          return;
        if (rank == 1) { // never takes part; rank 0 aborts its own op
          std::this_thread::sleep_for(1500ms);
          return;
        }
        std::vector<float> x(16, 1.0f);
        auto w =
            m.comm->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum);
        std::this_thread::sleep_for(200ms);
        auto t0 = Clock::now();
        m.comm->abort();
        Status st = w->wait();
        check(st.message ==
                  "all_reduce of 64 B failed: the communicator was aborted",
              "message: " + st.message);
        check(Clock::now() - t0 < 2000ms, "abort took too long");
        st = m.comm->barrier()->wait();
        check(st.message == "barrier failed: the communicator was aborted",
              "later: " + st.message);
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(Gloo, AbortEndsAPostedReceive) {
  auto codes = runRanks(
      2,
      [](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 2, port, 10000ms, &m, check))
          return;
        if (rank == 1) { // never sends
          std::this_thread::sleep_for(1500ms);
          return;
        }
        std::vector<float> x(4);
        auto w = m.comm->recv(x.data(), x.size(), DataType::F32, 1);
        std::this_thread::sleep_for(200ms); // the worker has posted it
        auto t0 = Clock::now();
        m.comm->abort();
        Status st = w->wait();
        check(
            st.message ==
                "recv of 16 B from rank 1 failed: the communicator was aborted",
            "message: " + st.message);
        check(Clock::now() - t0 < 2000ms, "abort took too long");
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// ---------------------------------------------------------------------------
// Gloo sub-communicators (groups of the job's ranks)

/// Creates the group of |ranks| from |parent|; null for a non-member.
std::unique_ptr<Communicator>
group(Communicator &parent, const std::vector<int> &ranks, Checker &check) {
  std::unique_ptr<Communicator> out;
  Status st = createSubCommunicator(parent, ranks, &out);
  check(st.ok(), "group " + formatRanks(ranks) + ": " + st.message);
  const bool member =
      std::find(ranks.begin(), ranks.end(), parent.rank()) != ranks.end();
  check((out != nullptr) == member, "group " + formatRanks(ranks) +
                                        ": membership of rank " +
                                        std::to_string(parent.rank()));
  return out;
}

TEST(GlooSubCommunicator, StagesAllReduceAmongTheirReplicas) {
  // Pipeline of S = 2 stages x D = 2 replicas: rank r is stage r / 2,
  // replica r % 2. Every rank creates both stages' groups, in stage order;
  // each stage's all-reduce sums its own replicas' gradients only, while
  // the job's communicator keeps working beside them.
  auto codes = runRanks(4, [](int rank, int port, Checker &check) {
    Member m;
    if (!join(rank, 4, port, 20000ms, &m, check))
      return;
    const int D = 2;
    std::unique_ptr<Communicator> stages[2];
    for (int s = 0; s < 2; ++s)
      stages[s] = group(*m.comm, {s * D, s * D + 1}, check);
    Communicator *stage = stages[rank / D].get();
    if (!stage)
      return;
    check(stage->rank() == rank % D && stage->size() == D &&
              std::string(stage->backend()) == "gloo",
          "stage rank/size/backend");
    // Rank r's gradient is (r + 1) * (i % 5 + 1): stage 0 sums to 3x,
    // stage 1 to 7x (small integers and halves: exact in f32).
    const size_t n = 1001;
    const float stageSum = rank / D == 0 ? 3.0f : 7.0f;
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      std::vector<float> g(n), all(n, 1.0f);
      for (size_t i = 0; i < n; ++i)
        g[i] = float(rank + 1) * float(i % 5 + 1);
      // The stage's all-reduce and one of the job's, in flight together.
      auto ws = stage->allReduce(g.data(), n, DataType::F32, op);
      auto wj = m.comm->allReduce(all.data(), n, DataType::F32, ReduceOp::Sum);
      Status st = ws->wait();
      check(st.ok(), st.message);
      st = wj->wait();
      check(st.ok(), st.message);
      const float scale = op == ReduceOp::Sum ? stageSum : stageSum / 2;
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i)
        bad += g[i] != scale * float(i % 5 + 1) || all[i] != 4.0f;
      check(bad == 0, std::string(op == ReduceOp::Sum ? "sum" : "avg") + ": " +
                          std::to_string(bad) + " wrong of " +
                          std::to_string(n));
    }
    Status st = stage->barrier()->wait();
    check(st.ok(), st.message);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0, 0}));
}

TEST(GlooSubCommunicator, GroupRanksFollowTheListsOrder) {
  auto codes = runRanks(4, [](int rank, int port, Checker &check) {
    Member m;
    if (!join(rank, 4, port, 20000ms, &m, check))
      return;
    Communicator &world = *m.comm;
    // Every rank creates every group, in the same order; non-members get
    // null. [1, 3] and [3, 1] are different groups.
    auto odd = group(world, {1, 3}, check);
    auto reversedOdd = group(world, {3, 1}, check);
    auto reversed = group(world, {3, 2, 1, 0}, check);
    std::unique_ptr<Communicator> firstOfReversed; // job ranks 3 and 2
    if (reversed)
      firstOfReversed = group(*reversed, {0, 1}, check);
    // The same ranks twice: two independent communicators.
    auto even1 = group(world, {0, 2}, check);
    auto even2 = group(world, {0, 2}, check);
    std::vector<std::unique_ptr<Communicator>> singles;
    for (int r = 0; r < 4; ++r)
      singles.push_back(group(world, {r}, check));

    const float mine = 10.0f * float(rank);
    auto gathered = [&](Communicator &c, const std::vector<float> &want,
                        const char *what) {
      std::vector<float> all(size_t(c.size()), -1.0f);
      Status st = c.allGather(&mine, all.data(), 1, DataType::F32)->wait();
      check(st.ok(), std::string(what) + ": " + st.message);
      check(all == want, std::string(what) + ": all_gather out of order");
    };
    if (odd) {
      check(odd->rank() == (rank == 1 ? 0 : 1) && odd->size() == 2,
            "[1, 3] rank");
      gathered(*odd, {10, 30}, "[1, 3]");
      std::vector<float> sum = {mine + 1};
      Status st =
          odd->allReduce(sum.data(), 1, DataType::F32, ReduceOp::Sum)->wait();
      check(st.ok() && sum[0] == 42.0f, "[1, 3] all_reduce " + st.message);
      // Group rank 1 is job rank 3.
      std::vector<int64_t> b = {rank};
      st = odd->broadcast(b.data(), 1, DataType::I64, 1)->wait();
      check(st.ok() && b[0] == 3, "[1, 3] broadcast " + st.message);
      // Point to point by group rank: job 1 (group 0) sends to job 3.
      std::vector<int64_t> msg = {rank == 1 ? 77 : -1};
      st = (rank == 1 ? odd->send(msg.data(), 1, DataType::I64, 1)
                      : odd->recv(msg.data(), 1, DataType::I64, 0))
               ->wait();
      check(st.ok() && msg[0] == 77, "[1, 3] send/recv " + st.message);
    }
    if (reversedOdd) {
      check(reversedOdd->rank() == (rank == 3 ? 0 : 1), "[3, 1] rank");
      gathered(*reversedOdd, {30, 10}, "[3, 1]");
      // Block g of the reduce-scatter goes to group rank g: job 3 gets
      // block 0, the sum of (10 + r) over r = 1, 3.
      std::vector<float> in = {10.0f + rank, 20.0f + rank}, out(1, -1);
      Status st = reversedOdd
                      ->reduceScatter(in.data(), out.data(), 1, DataType::F32,
                                      ReduceOp::Sum)
                      ->wait();
      check(st.ok() && out[0] == (rank == 3 ? 24.0f : 44.0f),
            "[3, 1] reduce_scatter " + st.message);
    }
    check(reversed != nullptr && reversed->rank() == 3 - rank,
          "[3, 2, 1, 0] rank");
    if (reversed)
      gathered(*reversed, {30, 20, 10, 0}, "[3, 2, 1, 0]");
    check((firstOfReversed != nullptr) == (rank >= 2),
          "group [0, 1] of [3, 2, 1, 0]: membership");
    if (firstOfReversed) {
      check(firstOfReversed->rank() == 3 - rank, "[3, 2] rank");
      gathered(*firstOfReversed, {30, 20}, "[0, 1] of [3, 2, 1, 0]");
    }
    if (even1 && even2) {
      // Issued in opposite orders on the two members: the groups are
      // separate, so neither waits for the other.
      std::vector<float> a = {float(rank + 1)}, b = {float(10 * (rank + 1))};
      std::shared_ptr<Work> wa, wb;
      if (rank == 0) {
        wa = even1->allReduce(a.data(), 1, DataType::F32, ReduceOp::Sum);
        wb = even2->allReduce(b.data(), 1, DataType::F32, ReduceOp::Sum);
      } else {
        wb = even2->allReduce(b.data(), 1, DataType::F32, ReduceOp::Sum);
        wa = even1->allReduce(a.data(), 1, DataType::F32, ReduceOp::Sum);
      }
      check(wa->wait().ok() && wb->wait().ok(), "[0, 2] twice");
      check(a[0] == 4.0f && b[0] == 40.0f, "[0, 2] twice: values");
    } else {
      check(rank % 2 == 1, "[0, 2]: missing on an even rank");
    }
    // A group of one: local, no store traffic.
    Communicator *self = singles[size_t(rank)].get();
    check(self && self->rank() == 0 && self->size() == 1, "[r] rank/size");
    if (self) {
      std::vector<float> x = {mine, 0.5f};
      Status st =
          self->allReduce(x.data(), 2, DataType::F32, ReduceOp::Avg)->wait();
      check(st.ok() && x == std::vector<float>{mine, 0.5f},
            "[r] all_reduce " + st.message);
      gathered(*self, {mine}, "[r]");
    }
    // The keys of the groups' Gloo rendezvous ("<prefix><group rank>"):
    // under the job's prefix ("gloo/0/": the test process makes no Gloo
    // communicator of several ranks, so a forked rank's job communicator is
    // its first), then the group's ranks and its number among the groups of
    // those ranks.
    for (const char *key :
         {"gloo/0/group/1,3/0/1", "gloo/0/group/3,1/0/0",
          "gloo/0/group/0,2/0/1", "gloo/0/group/0,2/1/1",
          "gloo/0/group/3,2,1,0/0/3", "gloo/0/group/3,2,1,0/0/group/0,1/0/1"})
      check(m.store->wait({key}, 0ms).ok(), std::string("no key ") + key);
    Status st = world.barrier()->wait();
    check(st.ok(), st.message);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0, 0}));
}

TEST(GlooSubCommunicator, InvalidRanksAndBrokenParent) {
  Rendezvous r; // one process: no store
  std::unique_ptr<Communicator> world, out;
  ASSERT_TRUE(createGlooCommunicator(r, nullptr, 1000ms, &world).ok());
  struct Case {
    std::vector<int> ranks;
    std::string message;
  } cases[] = {
      {{}, "a sub-communicator needs at least one rank"},
      {{0, 0}, "sub-communicator ranks [0, 0]: rank 0 appears twice"},
      {{0, 1},
       "sub-communicator ranks [0, 1]: 1 is not a rank of the "
       "parent's 1 (0..0)"},
      {{-1},
       "sub-communicator ranks [-1]: -1 is not a rank of the parent's "
       "1 (0..0)"},
  };
  for (const Case &c : cases) {
    // |*out| is reset even when it held a communicator.
    ASSERT_TRUE(createGlooCommunicator(r, nullptr, 1000ms, &out).ok());
    Status st = createSubCommunicator(*world, c.ranks, &out);
    EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT) << c.message;
    EXPECT_EQ(st.message, c.message);
    EXPECT_EQ(out, nullptr);
  }
  // The group of the only rank; and its own group of one.
  Status st = createSubCommunicator(*world, {0}, &out);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->size(), 1);
  std::unique_ptr<Communicator> inner;
  st = createSubCommunicator(*out, {0}, &inner);
  ASSERT_TRUE(st.ok()) << st.message;
  std::vector<float> x = {2.5f};
  EXPECT_TRUE(
      inner->allReduce(x.data(), 1, DataType::F32, ReduceOp::Sum)->wait().ok());
  EXPECT_EQ(x[0], 2.5f);
  // A broken parent makes no groups; the groups it made live on.
  world->abort();
  std::unique_ptr<Communicator> late;
  st = createSubCommunicator(*world, {0}, &late);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message, "cannot create the communicator of ranks [0]: its "
                        "parent is broken (the communicator was aborted)");
  EXPECT_EQ(late, nullptr);
  EXPECT_TRUE(out->barrier()->wait().ok());
}

TEST(GlooSubCommunicator, MemberThatExitsIsNamedByItsJobRank) {
  // Group [3, 1] of 4 ranks: job rank 3 (group rank 0) exits after the first
  // all-reduce; job rank 1's next one fails within the 3 s timeout naming
  // rank 3, and so does a broadcast from it. Ranks 0 (the store's host) and
  // 2 wait for rank 1 to finish.
  auto codes = runRanks(
      4,
      [](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 4, port, 3000ms, &m, check))
          return;
        auto g = group(*m.comm, {3, 1}, check);
        if (!g) {
          std::vector<char> v;
          m.store->get("test/done", &v); // at most the 3 s timeout
          return;
        }
        std::vector<float> x(1 << 18, 1.0f); // 1 MiB
        Status st =
            g->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum)
                ->wait();
        check(st.ok() && x[5] == 2.0f, "first all_reduce " + st.message);
        if (rank == 3) {
          std::fflush(stderr);
          _exit(0); // gone without a goodbye
        }
        std::this_thread::sleep_for(100ms);
        auto t0 = Clock::now();
        st = g->allReduce(x.data(), x.size(), DataType::F32, ReduceOp::Sum)
                 ->wait();
        auto took = Clock::now() - t0;
        const std::string cause =
            "rank 3 closed its connection (process exited?)";
        check(st.code == DLRT_UNAVAILABLE, "code");
        check(st.message == "all_reduce of 1.0 MiB failed: " + cause,
              "message: " + st.message);
        check(took < 4000ms, "took too long");
        st = g->broadcast(x.data(), 1, DataType::F32, 0)->wait();
        check(st.message == "broadcast of 4 B from rank 3 failed: " + cause,
              "later op: " + st.message);
        std::unique_ptr<Communicator> sub;
        st = createSubCommunicator(*g, {1}, &sub);
        check(st.code == DLRT_UNAVAILABLE &&
                  st.message == "cannot create the communicator of ranks "
                                "[1]: its parent is broken (" +
                                    cause + ")",
              "group of a broken group: " + st.message);
        m.store->set("test/done", {'1'});
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0, 0}));
}

TEST(GlooSubCommunicator, MemberThatNeverComesFailsTheSetup) {
  // Group [1, 0] of 2 ranks, which job rank 0 (group rank 1) never creates:
  // rank 1's creation fails within the 3 s timeout, naming job rank 0. (The
  // group inherits its parent's timeout, which also bounds the two processes'
  // first join: 1 s was too short for that on a loaded 2-core machine.)
  auto codes = runRanks(
      2,
      [](int rank, int port, Checker &check) {
        Member m;
        if (!join(rank, 2, port, 3000ms, &m, check))
          return;
        if (rank == 0) { // alive (hosting the store), but not in the group
          std::vector<char> v;
          m.store->get("test/done", &v);
          return;
        }
        std::unique_ptr<Communicator> g;
        auto t0 = Clock::now();
        Status st = createSubCommunicator(*m.comm, {1, 0}, &g);
        check(st.code == DLRT_UNAVAILABLE, "code");
        check(st.message == "rank 1 cannot connect to its peers of ranks "
                            "[1, 0] (Gloo): rank(s) 0 did not join within 3 s",
              "message: " + st.message);
        check(g == nullptr, "no communicator on error");
        check(Clock::now() - t0 < 10000ms, "took too long");
        m.store->set("test/done", {'1'});
      },
      30s);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

} // namespace
