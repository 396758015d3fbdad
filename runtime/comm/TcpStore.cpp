//===- TcpStore.cpp - the rendezvous store's server and client (Asio) -----===//
// Wire format (little-endian): a request is u8 op, u32 part count, then each
// part as u32 length + bytes; a reply is u8 code (Ok, Missing, Error), u32
// part count and parts. The server runs on its own io_context thread; a
// client runs each round trip on its own io_context with a deadline
// (run_for), so a silent server cannot block it past the timeout.
#define ASIO_STANDALONE
#include "runtime/comm/TcpStore.h"
#include "runtime/comm/Rendezvous.h"

#include <asio.hpp>
#include <gloo/rendezvous/store.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace dlrt::comm {

TcpStoreOptions tcpStoreOptions(const Rendezvous &rendezvous,
                                std::chrono::milliseconds timeout) {
  TcpStoreOptions o;
  o.host = rendezvous.masterAddr;
  o.port = rendezvous.masterPort;
  o.isServer = rendezvous.rank == 0;
  o.rank = rendezvous.rank;
  o.worldSize = rendezvous.worldSize;
  o.timeout = timeout;
  return o;
}

namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Parts = std::vector<std::string>;

enum Op : uint8_t { Hello = 1, Set, Get, Add, Check, Lost, Bye };
enum Code : uint8_t { Ok = 0, Missing = 1, Error = 2 };

void putU32(std::string &s, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i)
    b[i] = char((v >> (8 * i)) & 0xff);
  s.append(b, 4);
}
uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}

std::string encode(uint8_t head, const Parts &parts) {
  std::string s(1, char(head));
  putU32(s, uint32_t(parts.size()));
  for (const std::string &p : parts) {
    putU32(s, uint32_t(p.size()));
    s += p;
  }
  return s;
}

std::string seconds(std::chrono::milliseconds t) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", t.count() / 1000.0);
  return b;
}

/// Reads one message (head + parts) from |socket| asynchronously; calls
/// |done(error, head, parts)|. Parts are limited to 1 GiB in total.
template <typename Done> void readMessage(tcp::socket &socket, Done done) {
  struct State {
    char header[5];
    uint8_t head = 0;
    uint32_t count = 0;
    Parts parts;
    char len[4];
  };
  auto st = std::make_shared<State>();
  auto readPart = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weakReadPart = readPart;
  *readPart = [&socket, st, done, weakReadPart]() {
    auto self = weakReadPart.lock();
    if (st->parts.size() == st->count) {
      done(std::error_code(), st->head, std::move(st->parts));
      return;
    }
    asio::async_read(socket, asio::buffer(st->len, 4),
                     [&socket, st, done, self](std::error_code ec, size_t) {
                       if (ec)
                         return done(ec, 0, Parts());
                       uint32_t n = getU32(st->len);
                       if (n > (1u << 30))
                         return done(asio::error::message_size, 0, Parts());
                       st->parts.emplace_back(n, '\0');
                       asio::async_read(
                           socket, asio::buffer(st->parts.back().data(), n),
                           [st, done, self](std::error_code ec, size_t) {
                             if (ec)
                               return done(ec, 0, Parts());
                             (*self)();
                           });
                     });
  };
  asio::async_read(socket, asio::buffer(st->header, 5),
                   [st, done, readPart](std::error_code ec, size_t) {
                     if (ec)
                       return done(ec, 0, Parts());
                     st->head = uint8_t(st->header[0]);
                     st->count = getU32(st->header + 1);
                     if (st->count > 1u << 20)
                       return done(asio::error::message_size, 0, Parts());
                     (*readPart)();
                   });
}

int64_t decodeI64(const std::string &s) {
  int64_t v = 0;
  if (s.size() == 8)
    std::memcpy(&v, s.data(), 8);
  return v;
}
std::string encodeI64(int64_t v) { return std::string((const char *)&v, 8); }

/// The server: one io_context thread, all state touched only there.
class Server {
public:
  Server(int worldSize) : worldSize_(worldSize), acceptor_(io_) {}
  ~Server() { stop(); }

  Status listen(int port) {
    std::error_code ec;
    tcp::endpoint ep(tcp::v4(), static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec)
      acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec)
      acceptor_.bind(ep, ec);
    if (!ec)
      acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return Status::error(DLRT_UNAVAILABLE,
                           "rank 0 cannot host the rendezvous: port " +
                               std::to_string(port) + " is taken (" +
                               ec.message() +
                               "); set MASTER_PORT to a free port");
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
    return Status::OK();
  }
  int port() const { return port_; }

  void stop() {
    io_.stop();
    if (thread_.joinable())
      thread_.join();
  }

private:
  struct Connection : std::enable_shared_from_this<Connection> {
    Connection(Server &s, tcp::socket sock)
        : server(s), socket(std::move(sock)) {}
    Server &server;
    tcp::socket socket;
    int rank = -1;
    bool said_bye = false;
    std::string out;

    void next() {
      auto self = shared_from_this();
      readMessage(socket, [self](std::error_code ec, uint8_t op, Parts parts) {
        if (ec) {
          self->closed();
          return;
        }
        Parts reply;
        uint8_t code = self->server.handle(*self, op, parts, &reply);
        self->out = encode(code, reply);
        asio::async_write(self->socket, asio::buffer(self->out),
                          [self](std::error_code ec, size_t) {
                            if (ec)
                              return self->closed();
                            self->next();
                          });
      });
    }
    void closed() {
      if (rank >= 0 && !said_bye)
        server.lost_.insert(rank);
      std::error_code ignored;
      socket.close(ignored);
    }
  };

  void accept() {
    acceptor_.async_accept([this](std::error_code ec, tcp::socket socket) {
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Connection>(*this, std::move(socket))->next();
      }
      accept();
    });
  }

  uint8_t handle(Connection &c, uint8_t op, const Parts &in, Parts *out) {
    switch (op) {
    case Hello: {
      if (in.size() != 2)
        break;
      int rank = int(decodeI64(in[0])), world = int(decodeI64(in[1]));
      if (world != worldSize_) {
        out->push_back(
            "world size mismatch: rank " + std::to_string(rank) +
            " has WORLD_SIZE=" + std::to_string(world) +
            " but rank 0 has WORLD_SIZE=" + std::to_string(worldSize_));
        return Error;
      }
      if (rank < 0 || rank >= worldSize_) {
        out->push_back("rank " + std::to_string(rank) +
                       " is outside the world of " +
                       std::to_string(worldSize_));
        return Error;
      }
      if (joined_.count(rank) && !lost_.count(rank)) {
        out->push_back("rank " + std::to_string(rank) +
                       " joined the rendezvous twice (two processes with the "
                       "same RANK?)");
        return Error;
      }
      joined_.insert(rank);
      c.rank = rank;
      return Ok;
    }
    case Set:
      if (in.size() != 2)
        break;
      data_[in[0]] = in[1];
      return Ok;
    case Get: {
      if (in.size() != 1)
        break;
      auto it = data_.find(in[0]);
      if (it == data_.end())
        return Missing;
      out->push_back(it->second);
      return Ok;
    }
    case Add: {
      if (in.size() != 2)
        break;
      std::string &v = data_[in[0]];
      int64_t n = decodeI64(v) + decodeI64(in[1]);
      v = encodeI64(n);
      out->push_back(v);
      return Ok;
    }
    case Check:
      for (const std::string &k : in)
        if (!data_.count(k))
          return Missing;
      return Ok;
    case Lost:
      for (int r : lost_)
        out->push_back(encodeI64(r));
      return Ok;
    case Bye:
      c.said_bye = true;
      return Ok;
    }
    out->push_back("malformed request");
    return Error;
  }

  int worldSize_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  int port_ = 0;
  std::map<std::string, std::string> data_;
  std::set<int> joined_, lost_;
};

class GlooAdapter;

} // namespace

class TcpStore::Impl {
public:
  TcpStoreOptions options;
  std::unique_ptr<Server> server;
  asio::io_context io;
  tcp::socket socket{io};
  std::mutex mutex;
  std::string broken; // set once the connection failed
  std::vector<std::unique_ptr<gloo::rendezvous::Store>> adapters;

  std::string where() const {
    return options.host + ":" + std::to_string(options.port);
  }

  Status connect() {
    const auto deadline = Clock::now() + options.timeout;
    std::string last = "no attempt";
    do {
      std::error_code ec;
      tcp::resolver resolver(io);
      // Rank 0 reaches its own server through loopback, whatever
      // MASTER_ADDR resolves to from inside its host.
      auto endpoints = resolver.resolve(
          options.isServer ? std::string("127.0.0.1") : options.host,
          std::to_string(options.port), ec);
      if (!ec) {
        bool done = false;
        asio::async_connect(socket, endpoints,
                            [&](std::error_code e, const tcp::endpoint &) {
                              ec = e;
                              done = true;
                            });
        io.restart();
        io.run_for(std::min<Clock::duration>(std::chrono::seconds(2),
                                             deadline - Clock::now()));
        if (!done) {
          std::error_code ignored;
          socket.close(ignored);
          io.restart();
          io.run(); // completes the cancelled handler
          ec = asio::error::timed_out;
        }
      }
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        return Status::OK();
      }
      last = ec.message();
      std::error_code ignored;
      socket.close(ignored);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (Clock::now() < deadline);
    return Status::error(DLRT_UNAVAILABLE,
                         "cannot reach the rendezvous at " + where() +
                             " after " + seconds(options.timeout) + " (" +
                             last + "); is rank 0 running with MASTER_ADDR " +
                             "and MASTER_PORT set to the same values?");
  }

  /// One request and its reply, within |timeout|. Caller holds |mutex|.
  Status roundTrip(uint8_t op, const Parts &in, uint8_t *code, Parts *out,
                   std::chrono::milliseconds timeout) {
    if (!broken.empty())
      return Status::error(DLRT_UNAVAILABLE, broken);
    std::string request = encode(op, in);
    std::error_code result;
    bool done = false;
    asio::async_write(
        socket, asio::buffer(request), [&](std::error_code ec, size_t) {
          if (ec) {
            result = ec;
            done = true;
            return;
          }
          readMessage(socket, [&](std::error_code ec, uint8_t head, Parts p) {
            result = ec;
            *code = head;
            *out = std::move(p);
            done = true;
          });
        });
    io.restart();
    io.run_for(timeout);
    if (!done) {
      std::error_code ignored;
      socket.close(ignored);
      io.restart();
      io.run();
      broken = "the rendezvous at " + where() + " did not answer within " +
               seconds(timeout);
      return Status::error(DLRT_UNAVAILABLE, broken);
    }
    if (result) {
      broken = "lost the connection to the rendezvous at " + where() +
               " (rank 0 gone?): " + result.message();
      return Status::error(DLRT_UNAVAILABLE, broken);
    }
    if (*code == Error)
      return Status::error(DLRT_UNAVAILABLE,
                           out->empty() ? "rendezvous error" : out->front());
    return Status::OK();
  }

  Status call(uint8_t op, const Parts &in, uint8_t *code, Parts *out) {
    std::lock_guard<std::mutex> lock(mutex);
    return roundTrip(op, in, code, out, options.timeout);
  }

  /// Polls |op| until it answers Ok (not Missing) or |timeout| passes.
  Status poll(uint8_t op, const Parts &in, Parts *out,
              std::chrono::milliseconds timeout, const std::string &what) {
    const auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      uint8_t code = Ok;
      Status st = call(op, in, &code, out);
      if (!st.ok() || code == Ok)
        return st;
      if (Clock::now() >= deadline)
        return Status::error(DLRT_UNAVAILABLE, what +
                                                   " did not appear within " +
                                                   seconds(timeout));
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }
};

namespace {
class GlooAdapter : public gloo::rendezvous::Store {
public:
  GlooAdapter(TcpStore &store, std::string prefix)
      : store_(store), prefix_(std::move(prefix)) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    check(store_.set(prefix_ + key, data));
  }
  std::vector<char> get(const std::string &key) override {
    std::vector<char> v;
    check(store_.get(prefix_ + key, &v));
    return v;
  }
  void wait(const std::vector<std::string> &keys) override {
    wait(keys, store_.timeout());
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    std::vector<std::string> full;
    for (const std::string &k : keys)
      full.push_back(prefix_ + k);
    check(store_.wait(full, timeout));
  }

private:
  static void check(const Status &st) {
    if (!st.ok())
      throw std::runtime_error(st.message);
  }
  TcpStore &store_;
  std::string prefix_;
};
} // namespace

TcpStore::TcpStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TcpStore::~TcpStore() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->broken.empty()) {
      uint8_t code;
      Parts out;
      (void)impl_->roundTrip(Bye, {}, &code, &out, std::chrono::seconds(2));
    }
    std::error_code ignored;
    impl_->socket.close(ignored);
  }
  if (impl_->server)
    impl_->server->stop();
}

Status TcpStore::create(const TcpStoreOptions &options,
                        std::unique_ptr<TcpStore> *out) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.isServer) {
    impl->server = std::make_unique<Server>(options.worldSize);
    Status st = impl->server->listen(options.port);
    if (!st.ok())
      return st;
    impl->options.port = impl->server->port();
    impl->options.host = options.host.empty() ? "127.0.0.1" : options.host;
  }
  Status st = impl->connect();
  if (!st.ok())
    return st;
  uint8_t code;
  Parts reply;
  st =
      impl->call(Hello, {encodeI64(options.rank), encodeI64(options.worldSize)},
                 &code, &reply);
  if (!st.ok())
    return st;
  out->reset(new TcpStore(std::move(impl)));
  return Status::OK();
}

int TcpStore::port() const { return impl_->options.port; }
std::chrono::milliseconds TcpStore::timeout() const {
  return impl_->options.timeout;
}

Status TcpStore::set(const std::string &key, const std::vector<char> &value) {
  uint8_t code;
  Parts out;
  return impl_->call(Set, {key, std::string(value.begin(), value.end())}, &code,
                     &out);
}

Status TcpStore::get(const std::string &key, std::vector<char> *value) {
  Parts out;
  Status st = impl_->poll(Get, {key}, &out, impl_->options.timeout,
                          "rendezvous key '" + key + "'");
  if (!st.ok())
    return st;
  if (out.size() != 1)
    return Status::error(DLRT_INTERNAL, "malformed rendezvous reply");
  value->assign(out[0].begin(), out[0].end());
  return Status::OK();
}

Status TcpStore::add(const std::string &key, int64_t delta, int64_t *result) {
  uint8_t code;
  Parts out;
  Status st = impl_->call(Add, {key, encodeI64(delta)}, &code, &out);
  if (!st.ok())
    return st;
  if (out.size() != 1)
    return Status::error(DLRT_INTERNAL, "malformed rendezvous reply");
  *result = decodeI64(out[0]);
  return Status::OK();
}

Status TcpStore::wait(const std::vector<std::string> &keys,
                      std::chrono::milliseconds timeout) {
  Parts out;
  std::string what = keys.size() == 1
                         ? "rendezvous key '" + keys[0] + "'"
                         : std::to_string(keys.size()) + " rendezvous keys";
  return impl_->poll(Check, Parts(keys.begin(), keys.end()), &out, timeout,
                     what);
}

Status TcpStore::lostRanks(std::vector<int> *ranks) {
  uint8_t code;
  Parts out;
  Status st = impl_->call(Lost, {}, &code, &out);
  if (!st.ok())
    return st;
  ranks->clear();
  for (const std::string &s : out)
    ranks->push_back(int(decodeI64(s)));
  return Status::OK();
}

gloo::rendezvous::Store &TcpStore::glooStore(const std::string &prefix) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->adapters.push_back(std::make_unique<GlooAdapter>(*this, prefix));
  return *impl_->adapters.back();
}

} // namespace dlrt::comm
