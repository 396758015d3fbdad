//===- CommTest.cpp - rendezvous, TCP store and NCCL communicators --------===//
// The rendezvous (torchrun, Open MPI and Slurm environments), the TCP store
// with forked clients, and NCCL's load errors and one-rank GPU runs. Gloo
// has its own file (GlooTest.cpp) in the same executable.
#include "CommTestUtil.h"

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
// Rendezvous

Status parse(const std::map<std::string, std::string> &env, Rendezvous *r) {
  return rendezvousFromEnvironment(
      [&](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      r);
}

TEST(Rendezvous, NothingSetIsOneProcess) {
  Rendezvous r;
  r.rank = 7;
  ASSERT_TRUE(parse({}, &r).ok());
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.worldSize, 1);
  EXPECT_EQ(r.source, RendezvousSource::SingleProcess);
  EXPECT_EQ(r.masterAddr, "127.0.0.1");
  EXPECT_EQ(r.masterPort, 29500);
  EXPECT_TRUE(r.masterDefaulted);
}

TEST(Rendezvous, Torchrun) {
  Rendezvous r;
  Status st = parse({{"RANK", "5"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "node0"},
                     {"MASTER_PORT", "1234"},
                     {"OMPI_COMM_WORLD_RANK", "3"}, // torchrun wins
                     {"OMPI_COMM_WORLD_SIZE", "4"}},
                    &r);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.source, RendezvousSource::Torchrun);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.worldSize, 8);
  EXPECT_EQ(r.localRank, 1);
  EXPECT_EQ(r.localWorldSize, 4);
  EXPECT_EQ(r.masterAddr, "node0");
  EXPECT_EQ(r.masterPort, 1234);
  EXPECT_FALSE(r.masterDefaulted);
  EXPECT_EQ(
      r.describe(),
      "rank 5 of 8 (local 1 of 4) from torchrun, rendezvous at node0:1234");
}

TEST(Rendezvous, OpenMpiOverSlurm) {
  Rendezvous r;
  Status st = parse({{"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                     {"SLURM_PROCID", "1"},
                     {"SLURM_NTASKS", "4"}},
                    &r);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.source, RendezvousSource::OpenMpi);
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.worldSize, 4);
  EXPECT_EQ(r.localRank, 0);
  EXPECT_EQ(r.localWorldSize, 2);
  EXPECT_EQ(r.masterPort, 29500);
  EXPECT_TRUE(r.masterDefaulted);
}

TEST(Rendezvous, Slurm) {
  Rendezvous r;
  Status st = parse({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_TASKS_PER_NODE", "4(x2)"},
                     {"MASTER_ADDR", "10.0.0.1"}},
                    &r);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.source, RendezvousSource::Slurm);
  EXPECT_EQ(r.rank, 6);
  EXPECT_EQ(r.worldSize, 8);
  EXPECT_EQ(r.localRank, 2);
  EXPECT_EQ(r.localWorldSize, 4);
  EXPECT_EQ(r.masterAddr, "10.0.0.1");
  EXPECT_TRUE(r.masterDefaulted); // the port was defaulted
}

TEST(Rendezvous, Errors) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string message;
  } cases[] = {
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}},
       "RANK=2 is not below WORLD_SIZE=2"},
      {{{"RANK", "x1"}, {"WORLD_SIZE", "2"}},
       "RANK='x1' is not a whole number"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}},
       "WORLD_SIZE='0' is not a whole number >= 1"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "2"}},
       "RANK='-1' is not a whole number"},
      {{{"RANK", "0"}}, "RANK is set but WORLD_SIZE is not"},
      {{{"WORLD_SIZE", "2"}}, "WORLD_SIZE is set but RANK is not"},
      {{{"RANK", "0"},
        {"WORLD_SIZE", "4"},
        {"LOCAL_RANK", "2"},
        {"LOCAL_WORLD_SIZE", "2"}},
       "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}},
       "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "3"}},
       "SLURM_PROCID=3 is not below SLURM_NTASKS=3"},
      {{{"MASTER_PORT", "70000"}},
       "MASTER_PORT='70000' is not a port number (1..65535)"},
      {{{"MASTER_PORT", "12ab"}}, "MASTER_PORT='12ab' is not a port number"},
      {{{"MASTER_ADDR", ""}}, "MASTER_ADDR is empty"},
  };
  for (const Case &c : cases) {
    Rendezvous r;
    r.rank = 42;
    Status st = parse(c.env, &r);
    EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT) << c.message;
    EXPECT_NE(st.message.find(c.message), std::string::npos)
        << "got: " << st.message << "\nwanted: " << c.message;
    EXPECT_EQ(st.message.find('\n'), std::string::npos);
    EXPECT_EQ(r.rank, 42) << "output changed on error";
  }
}

TEST(Rendezvous, ReadsTheProcessEnvironment) {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "3", 1);
  Rendezvous r;
  Status st = rendezvousFromEnvironment(&r);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.worldSize, 3);
  EXPECT_EQ(r.localRank, 1);
  EXPECT_EQ(r.localWorldSize, 3);
}

// ---------------------------------------------------------------------------
// TCP store

TcpStoreOptions storeOptions(int port, bool server, int rank, int world,
                             std::chrono::milliseconds timeout) {
  TcpStoreOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.isServer = server;
  o.rank = rank;
  o.worldSize = world;
  o.timeout = timeout;
  return o;
}

TEST(TcpStore, SetGetAddWait) {
  std::unique_ptr<TcpStore> server, client;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 2, 5000ms), &server).ok());
  const int port = server->port();
  ASSERT_GT(port, 0);
  Status st =
      TcpStore::create(storeOptions(port, false, 1, 2, 5000ms), &client);
  ASSERT_TRUE(st.ok()) << st.message;

  ASSERT_TRUE(server->set("a", {'x', '\0', 'y'}).ok());
  std::vector<char> v;
  ASSERT_TRUE(client->get("a", &v).ok());
  EXPECT_EQ(v, (std::vector<char>{'x', '\0', 'y'}));
  ASSERT_TRUE(client->set("a", {}).ok()); // replaced by an empty value
  ASSERT_TRUE(server->get("a", &v).ok());
  EXPECT_TRUE(v.empty());

  int64_t n = 0;
  ASSERT_TRUE(client->add("n", 5, &n).ok());
  EXPECT_EQ(n, 5);
  ASSERT_TRUE(server->add("n", -7, &n).ok());
  EXPECT_EQ(n, -2);

  // get blocks until another client sets the key.
  std::thread late([&] {
    std::this_thread::sleep_for(200ms);
    (void)server->set("late", {'1'});
  });
  auto t0 = Clock::now();
  st = client->get("late", &v);
  late.join();
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(v, std::vector<char>{'1'});
  EXPECT_GE(Clock::now() - t0, 150ms);

  EXPECT_TRUE(client->wait({"a", "n", "late"}, 1000ms).ok());
  st = client->wait({"a", "missing"}, 300ms);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message, "2 rendezvous keys did not appear within 0.3 s");

  std::vector<int> lost;
  ASSERT_TRUE(server->lostRanks(&lost).ok());
  EXPECT_TRUE(lost.empty());
}

TEST(TcpStore, AddIsAtomicAcrossClients) {
  std::unique_ptr<TcpStore> server;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 5, 5000ms), &server).ok());
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int rank = 1; rank <= 4; ++rank)
    clients.emplace_back([&, rank] {
      std::unique_ptr<TcpStore> c;
      if (!TcpStore::create(
               storeOptions(server->port(), false, rank, 5, 5000ms), &c)
               .ok())
        ++failures;
      int64_t v;
      for (int i = 0; i < 100; ++i)
        if (!c || !c->add("counter", 1, &v).ok())
          ++failures;
    });
  for (std::thread &t : clients)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  int64_t total = 0;
  ASSERT_TRUE(server->add("counter", 0, &total).ok());
  EXPECT_EQ(total, 400);
}

TEST(TcpStore, GetTimesOut) {
  std::unique_ptr<TcpStore> server;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 1, 400ms), &server).ok());
  std::vector<char> v;
  auto t0 = Clock::now();
  Status st = server->get("nobody", &v);
  auto took = Clock::now() - t0;
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message, "rendezvous key 'nobody' did not appear within 0.4 s");
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 1500ms);
}

TEST(TcpStore, PortTaken) {
  std::unique_ptr<TcpStore> first, second;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 1, 1000ms), &first).ok());
  Status st = TcpStore::create(storeOptions(first->port(), true, 0, 1, 1000ms),
                               &second);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_NE(
      st.message.find("port " + std::to_string(first->port()) + " is taken"),
      std::string::npos)
      << st.message;
  EXPECT_NE(st.message.find("MASTER_PORT"), std::string::npos) << st.message;
}

TEST(TcpStore, UnreachableAfterTimeout) {
  const int port = freePort(); // nobody listens there
  std::unique_ptr<TcpStore> client;
  auto t0 = Clock::now();
  Status st = TcpStore::create(storeOptions(port, false, 1, 2, 700ms), &client);
  auto took = Clock::now() - t0;
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message.rfind("cannot reach the rendezvous at 127.0.0.1:" +
                                 std::to_string(port) + " after 0.7 s",
                             0),
            0u)
      << st.message;
  EXPECT_GE(took, 700ms);
  EXPECT_LT(took, 3000ms);
}

TEST(TcpStore, WorldSizeMismatchAndDuplicateRank) {
  std::unique_ptr<TcpStore> server, client;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 2, 2000ms), &server).ok());
  Status st = TcpStore::create(
      storeOptions(server->port(), false, 1, 3, 2000ms), &client);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message, "world size mismatch: rank 1 has WORLD_SIZE=3 but "
                        "rank 0 has WORLD_SIZE=2");
  st = TcpStore::create(storeOptions(server->port(), false, 0, 2, 2000ms),
                        &client);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_NE(st.message.find("rank 0 joined the rendezvous twice"),
            std::string::npos)
      << st.message;
}

TEST(TcpStore, NamesRanksThatLeftWithoutGoodbye) {
  std::unique_ptr<TcpStore> server;
  ASSERT_TRUE(
      TcpStore::create(storeOptions(0, true, 0, 3, 5000ms), &server).ok());
  const int port = server->port();
  // Rank 1 closes cleanly; rank 2's process ends without a goodbye.
  pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<TcpStore> c;
    if (!TcpStore::create(storeOptions(port, false, 2, 3, 5000ms), &c).ok())
      _exit(1);
    _exit(0); // no destructor: like a crash
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  {
    std::unique_ptr<TcpStore> c;
    ASSERT_TRUE(
        TcpStore::create(storeOptions(port, false, 1, 3, 5000ms), &c).ok());
  }
  std::vector<int> lost;
  for (int i = 0; i < 100 && lost.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(server->lostRanks(&lost).ok());
  }
  EXPECT_EQ(lost, std::vector<int>{2});
}

// ---------------------------------------------------------------------------
// NCCL: loading only (no GPU here)

TEST(Nccl, LoadErrorsAreClean) {
  // Each case in its own process: a successful load is kept per process.
  auto codes = runRanks(1, [](int, int, Checker &check) {
    setenv("DLRT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    int version = 0;
    Status st = loadNccl(&version);
    check(st.code == DLRT_UNAVAILABLE, "code");
    check(st.message.rfind("NCCL is not available: cannot load "
                           "/nonexistent/libnccl.so.2 (DLRT_NCCL_LIBRARY) (",
                           0) == 0,
          "message: " + st.message);
    std::unique_ptr<Communicator> comm;
    int dummyStream = 0;
    st = createNcclCommunicator(Rendezvous(), nullptr, &dummyStream, 1000ms,
                                &comm);
    check(st.message.rfind("NCCL is not available", 0) == 0,
          "create: " + st.message);
    setenv("DLRT_NCCL_LIBRARY", "libm.so.6", 1);
    st = loadNccl(&version);
    check(st.message == "NCCL is not available: libm.so.6 (DLRT_NCCL_LIBRARY) "
                        "lacks ncclGetVersion (not NCCL, or older than 2.12?)",
          "message: " + st.message);
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

TEST(Nccl, WithoutDriverTheErrorNamesIt) {
  auto codes = runRanks(1, [](int, int, Checker &check) {
    unsetenv("DLRT_NCCL_LIBRARY");
    int version = 0;
    Status st = loadNccl(&version);
    if (!st.ok()) { // no NCCL on this machine: that error must be clean
      check(st.message.rfind(
                "NCCL is not available: cannot load libnccl.so.2 (", 0) == 0,
            "message: " + st.message);
      return;
    }
    check(version >= 21200, "version " + std::to_string(version));
    std::unique_ptr<Communicator> comm;
    int dummyStream = 0;
    st = createNcclCommunicator(Rendezvous(), nullptr, &dummyStream, 1000ms,
                                &comm);
    // Without a GPU the driver's absence is the error. With one, this
    // thread has no current CUDA context (no CUDA device was created), so
    // the communicator's stream cannot be made, and the error says so
    // (seen on an H100); ncclCommInitRank is not reached.
    if (!st.ok())
      check(st.message.rfind("no CUDA driver", 0) == 0 ||
                st.message.rfind("no usable CUDA device", 0) == 0 ||
                st.message.rfind("cuStreamCreate failed: "
                                 "CUDA_ERROR_INVALID_CONTEXT",
                                 0) == 0,
            "message: " + st.message);
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

} // namespace

// ---------------------------------------------------------------------------
// NCCL on a GPU: one rank (tools/gpu/check.sh runs it on the lent GPU
// machine; elsewhere there is no CUDA device and it skips).

TEST(Nccl, OneRankAllReduceOnTheGpu) {
  std::unique_ptr<Device> device;
  Status st = createCudaDevice(0, &device);
  if (!st.ok())
    GTEST_SKIP() << "no CUDA device: " << st.message;
  int version = 0;
  st = loadNccl(&version);
  ASSERT_TRUE(st.ok()) << st.message;
  std::unique_ptr<Communicator> comm;
  st = createNcclCommunicator(Rendezvous(), nullptr, device->stream(), 60000ms,
                              &comm);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->backend(), "nccl");
  // 4 MiB of f32 values; on one rank sum and mean leave every bit as it was
  // (also when the bytes are read as bf16 or f16 pairs).
  const size_t n = size_t(1) << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(int(i % 2001) - 1000) * 0.125f;
  DeviceBuffer buffer;
  ASSERT_TRUE(device->allocate(n * 4, &buffer).ok());
  ASSERT_TRUE(device->copyToDevice(buffer.data, host.data(), n * 4).ok());
  struct Case {
    DataType type;
    size_t count;
    ReduceOp op;
  } cases[] = {{DataType::F32, n, ReduceOp::Sum},
               {DataType::F32, n, ReduceOp::Avg},
               {DataType::BF16, 2 * n, ReduceOp::Sum},
               {DataType::F16, 2 * n, ReduceOp::Avg}};
  for (const Case &c : cases) {
    std::shared_ptr<Work> work =
        comm->allReduce(buffer.data, c.count, c.type, c.op);
    st = work->wait();
    ASSERT_TRUE(st.ok()) << dataTypeName(c.type) << ": " << st.message;
    std::vector<float> back(n);
    ASSERT_TRUE(device->copyToHost(back.data(), buffer.data, n * 4).ok());
    EXPECT_EQ(0, std::memcmp(back.data(), host.data(), n * 4))
        << dataTypeName(c.type) << " on one rank changed the data";
  }
  device->release(buffer);
}

TEST(Nccl, SubCommunicatorOfOneRankOnTheGpu) {
  // One GPU holds one NCCL rank, so the group is the job's only rank; the
  // multi-rank key exchange is Gloo's tests' (the same store and keys).
  std::unique_ptr<Device> device;
  Status st = createCudaDevice(0, &device);
  if (!st.ok())
    GTEST_SKIP() << "no CUDA device: " << st.message;
  int version = 0;
  st = loadNccl(&version);
  ASSERT_TRUE(st.ok()) << st.message;
  std::unique_ptr<Communicator> world, group, inner, late;
  st = createNcclCommunicator(Rendezvous(), nullptr, device->stream(), 60000ms,
                              &world);
  ASSERT_TRUE(st.ok()) << st.message;
  st = createSubCommunicator(*world, {0, 1}, &group);
  EXPECT_EQ(st.code, DLRT_INVALID_ARGUMENT);
  EXPECT_EQ(st.message, "sub-communicator ranks [0, 1]: 1 is not a rank of "
                        "the parent's 1 (0..0)");
  st = createSubCommunicator(*world, {0}, &group);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->rank(), 0);
  EXPECT_EQ(group->size(), 1);
  EXPECT_STREQ(group->backend(), "nccl");
  st = createSubCommunicator(*group, {0}, &inner);
  ASSERT_TRUE(st.ok()) << st.message;
  // On one rank sum and mean leave every value as it was.
  const size_t n = 4096;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(int(i % 201) - 100) * 0.25f;
  DeviceBuffer buffer;
  ASSERT_TRUE(device->allocate(n * 4, &buffer).ok());
  ASSERT_TRUE(device->copyToDevice(buffer.data, host.data(), n * 4).ok());
  for (Communicator *c : {group.get(), inner.get()})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      st = c->allReduce(buffer.data, n, DataType::F32, op)->wait();
      ASSERT_TRUE(st.ok()) << st.message;
    }
  std::vector<float> back(n);
  ASSERT_TRUE(device->copyToHost(back.data(), buffer.data, n * 4).ok());
  EXPECT_EQ(back, host);
  // A broken parent makes no groups; the group it made still works.
  world->abort();
  st = createSubCommunicator(*world, {0}, &late);
  EXPECT_EQ(st.code, DLRT_UNAVAILABLE);
  EXPECT_EQ(st.message, "cannot create the communicator of ranks [0]: its "
                        "parent is broken (the communicator was aborted)");
  st = group->allReduce(buffer.data, n, DataType::F32, ReduceOp::Sum)->wait();
  EXPECT_TRUE(st.ok()) << st.message;
  inner.reset();
  group.reset();
  world.reset();
  device->release(buffer);
}
