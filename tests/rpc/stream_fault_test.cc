// Streams through a FaultProxy, and under provider churn: a blackhole ends a
// stream by its message-idle timeout, a frozen reader ends the writer by its
// write-stall timeout while other connections go on, a reset ends it at once
// with a connection error, and many streams across restarting providers each
// end exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/rpc/status_code.h>

#include "support/rpc_fixture.h"
#include "support/toxic.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;
using wheelrpc::fault::FaultProxy;
using wheelrpc::fault::Stream;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StreamTimer;
using wheelrpc::test::IoThreads;
using wheelrpc::test::toxic;
using wheelrpc::test::wait_until;

namespace {

/// Echoes each message ("chat"), or holds the stream and never reads ("deaf").
struct StreamMethods {
  void add(Server& server) {
    server.handle_stream("chat", [](ServerStream s) {
      asio::co_spawn(
          s.get_executor(),
          [s]() mutable -> asio::awaitable<void> {
            for (;;) {
              auto [ec, m] = co_await s.async_read(asio::as_tuple(asio::use_awaitable));
              if (ec || !m) break;
              auto [wec] = co_await s.async_write(std::move(*m), asio::as_tuple(asio::use_awaitable));
              if (wec) break;
            }
            s.finish();
          },
          asio::detached);
    });
    server.handle_stream("deaf", [this](ServerStream s) {
      std::lock_guard lock(mu);
      held.push_back(std::move(s));
    });
  }
  void release() {
    std::lock_guard lock(mu);
    held.clear();
  }
  std::mutex mu;
  std::vector<ServerStream> held;
};

/// Server <- FaultProxy <- Client; heartbeats slow enough (10 s) that the
/// connection's own idle checks stay out of the way of the stream timers.
struct ProxyFixture {
  ProxyFixture()
      : server(io.io.get_executor(), timer, server_options()),
        proxy(io.io.get_executor(), wheelrpc::test::loopback0(), listen()) {
    if (auto ec = proxy.start()) throw boost::system::system_error(ec);
    ClientOptions co;
    co.heartbeat = 10s;
    client.emplace(io.io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{proxy.local_endpoint()}, co);
  }
  ~ProxyFixture() {
    client->close();
    methods.release();
    proxy.stop();
    server.stop();
    io.stop();
  }
  static ServerOptions server_options() {
    ServerOptions so;
    so.keepalive.heartbeat = 10s;
    so.streams.window = 8 * 1024;
    return so;
  }
  asio::ip::tcp::endpoint listen() {
    wheelrpc::test::register_test_methods(server, io.io);
    methods.add(server);
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    return server.local_endpoint();
  }
  ClientStream open(const std::string& method, CallOptions o = {}) {
    auto f = client->async_open_stream(method, std::move(o), asio::use_future);
    if (f.wait_for(20s) != std::future_status::ready) throw std::runtime_error("open: no completion in 20 s");
    return f.get();
  }

  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  StreamMethods methods;
  Server server;
  FaultProxy proxy;
  std::optional<Client> client;
};

/// How a stream ended, counting its ends (a second one is a bug).
struct EndWatch {
  void watch(ClientStream& s) {
    s.async_finish([this](error_code ec) {
      std::lock_guard lock(mu);
      ends.push_back(ec);
      at = std::chrono::steady_clock::now();
    });
  }
  bool wait_one() {
    return wait_until(
        [&] {
          std::lock_guard lock(mu);
          return !ends.empty();
        },
        20s);
  }
  std::mutex mu;
  std::vector<error_code> ends;
  std::chrono::steady_clock::time_point at;
};

TEST(StreamFaults, ABlackholeMidStreamEndsItByTheMessageIdleTimeout) {
  ProxyFixture fx;
  CallOptions o;
  o.message_timeout = 300ms;
  auto s = fx.open("chat", o);
  auto echo = [&](const std::string& m) {
    s.async_write(m, asio::use_future).get();
    return s.async_read(asio::use_future).get().value_or("");
  };
  ASSERT_EQ(echo("one"), "one");
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("hole", Stream::both, wheelrpc::fault::Blackhole{})));
  EndWatch end;
  end.watch(s);
  s.async_write("lost", [](error_code) {});
  ASSERT_TRUE(end.wait_one());
  std::lock_guard lock(end.mu);
  ASSERT_EQ(end.ends.size(), 1u);
  EXPECT_EQ(end.ends[0], errc::message_timeout) << s.error_message();
  const auto info = s.info();
  EXPECT_EQ(info.timer, StreamTimer::message_idle);
  EXPECT_GE(info.timer_elapsed, 300ms);
  EXPECT_EQ(info.messages_received, 1u);
}

TEST(StreamFaults, HeartbeatsAloneDoNotKeepAnIdleStreamOpen) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io(2);
  StreamMethods methods;
  ServerOptions so;
  so.keepalive.heartbeat = 20ms;
  so.keepalive.send_heartbeats = true;
  Server server(io.io.get_executor(), timer, so);
  methods.add(server);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  ClientOptions co;
  co.heartbeat = 20ms;
  Client client(io.io.get_executor(), timer, {server.local_endpoint()}, co);
  CallOptions o;
  o.message_timeout = 400ms;
  auto f = client.async_open_stream("deaf", o, asio::use_future);
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  auto s = f.get();
  EndWatch end;
  end.watch(s);
  ASSERT_TRUE(end.wait_one());
  {
    std::lock_guard lock(end.mu);
    EXPECT_EQ(end.ends.at(0), errc::message_timeout) << s.error_message();
  }
  // The connection was alive all along: heartbeats went both ways, and it is still up.
  EXPECT_GE(client.stats().heartbeats_sent + server.stats().heartbeats_sent, 3u);
  EXPECT_EQ(client.stats().idle_closes, 0u);
  EXPECT_GE(s.info().timer_elapsed, 400ms);
  auto out = wheelrpc::test::call_and_wait(client, "echo", "alive", {}, std::chrono::seconds(20));
  EXPECT_EQ(out.ec, errc::method_not_found) << "the connection should answer (no echo registered here)";
  client.close();
  methods.release();
  server.stop();
  io.stop();
}

TEST(StreamFaults, AFrozenReaderEndsTheWriterByTheWriteStallTimeoutWhileOthersGoOn) {
  ProxyFixture fx;
  // Another client, on its own connection straight to the server.
  Client other(fx.io.io.get_executor(), fx.timer, std::vector<asio::ip::tcp::endpoint>{fx.server.local_endpoint()});
  CallOptions o;
  o.stall_timeout = 300ms;
  auto s = fx.open("deaf", o);
  // The reader is frozen: its buffers fill, and no credit comes back.
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("freeze", Stream::both, wheelrpc::fault::Blackhole{})));
  std::promise<error_code> failed;
  std::atomic<int> written{0};
  std::function<void()> next = [&] {
    s.async_write(std::string(1024, 'x'), [&](error_code ec) {
      if (ec) return failed.set_value(ec);
      written.fetch_add(1);
      next();
    });
  };
  asio::post(fx.io.io, next);
  // Meanwhile calls on the other connection go on.
  int ok = 0;
  auto f = failed.get_future();
  while (f.wait_for(0s) != std::future_status::ready && ok < 10000) {
    auto out = wheelrpc::test::call_and_wait(other, "echo", "meanwhile", {}, std::chrono::seconds(20));
    ASSERT_FALSE(out.ec) << out.response.error_message;
    ++ok;
  }
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::write_stall) << s.error_message();
  EXPECT_GT(ok, 0);
  EXPECT_LE(written.load(), 8) << "wrote past the 8 KiB window";
  EXPECT_EQ(s.info().timer, StreamTimer::write_stall);
  EXPECT_NE(s.error_message().find("write-stall timeout after"), std::string::npos) << s.error_message();
  other.close();
}

TEST(StreamFaults, AResetMidStreamEndsItAtOnceWithAConnectionError) {
  ProxyFixture fx;
  auto s = fx.open("chat");
  s.async_write("one", asio::use_future).get();
  ASSERT_EQ(s.async_read(asio::use_future).get().value_or(""), "one");
  EndWatch end;
  end.watch(s);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_FALSE(fx.proxy.add_toxic(toxic("rst", Stream::both, wheelrpc::fault::ResetPeer{0ms})));
  s.async_write("two", [](error_code) {});  // the reset comes with the next bytes, at the latest
  ASSERT_TRUE(end.wait_one());
  std::lock_guard lock(end.mu);
  ASSERT_EQ(end.ends.size(), 1u);
  EXPECT_EQ(end.ends[0], errc::connection_lost) << s.error_message();
  EXPECT_LT(end.at - t0, 5s) << "not at once";
  EXPECT_EQ(fx.client->stats().streams.ends.connection_lost, 1u);
}

/// A refused opening (nothing reached the application) goes to another
/// provider, and the stream stays pinned to the one that accepted it.
TEST(StreamFaults, ARefusedOpeningIsRetriedOnAnotherProvider) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io(2);
  StreamMethods ma, mb;
  Server a(io.io.get_executor(), timer), b(io.io.get_executor(), timer);
  ma.add(a);
  mb.add(b);
  ASSERT_FALSE(a.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(b.listen(wheelrpc::test::loopback0()));
  a.set_online(false);  // refuses new streams with shutting_down: the client tries elsewhere
  Client client(io.io.get_executor(), timer, {a.local_endpoint(), b.local_endpoint()});
  client.connect();
  ASSERT_TRUE(wait_until(
      [&] {
        int ready = 0;
        for (const auto& p : client.providers()) ready += p.ready ? 1 : 0;
        return ready == 2;
      },
      20s));
  const std::string b_peer = "127.0.0.1:" + std::to_string(b.local_endpoint().port());
  for (int i = 0; i < 4; ++i) {
    auto f = client.async_open_stream("chat", {}, asio::use_future);
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    auto s = f.get();
    EXPECT_EQ(s.info().peer, b_peer);
    s.async_write("x", asio::use_future).get();
    EXPECT_EQ(s.async_read(asio::use_future).get().value_or(""), "x");
  }
  EXPECT_GE(a.stats().streams_refused, 1u) << "round robin never tried the offline provider";
  EXPECT_EQ(a.stats().streams.opened, 0u);
  EXPECT_EQ(b.stats().streams.opened, 4u);
  EXPECT_GE(client.stats().retries, 1u);
  client.close();
  ma.release();
  mb.release();
  a.stop();
  b.stop();
  io.stop();
}

/// A provider source the test drives by hand.
class HandSource : public wheelrpc::rpc::ProviderSource {
 public:
  void start(Listener listener) override {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }
  void stop() override {}
  std::string describe() const override { return "test source"; }
  void report(std::vector<asio::ip::tcp::endpoint> eps) {
    std::lock_guard lock(mu_);
    listener_({}, std::move(eps), "");
  }

 private:
  std::mutex mu_;
  Listener listener_;
};

/// A provider that leaves the set keeps its open streams (they are pinned to
/// it) until ClientOptions::removal_grace; new streams go to the others.
TEST(StreamFaults, AStreamOnAProviderThatLeftTheSetRunsOnUntilTheRemovalGrace) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io(2);
  StreamMethods ma, mb;
  Server a(io.io.get_executor(), timer), b(io.io.get_executor(), timer);
  ma.add(a);
  mb.add(b);
  ASSERT_FALSE(a.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(b.listen(wheelrpc::test::loopback0()));
  auto source = std::make_shared<HandSource>();
  ClientOptions co;
  co.removal_grace = 500ms;
  Client client(io.io.get_executor(), timer, source, co);
  source->report({a.local_endpoint()});
  auto f = client.async_open_stream("chat", {}, asio::use_future);
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  auto s = f.get();
  EndWatch end;
  end.watch(s);
  const auto left = std::chrono::steady_clock::now();
  source->report({b.local_endpoint()});  // a leaves the set
  ASSERT_TRUE(wait_until([&] { return client.stats().providers_removed == 1; }, 20s));
  s.async_write("still", asio::use_future).get();
  EXPECT_EQ(s.async_read(asio::use_future).get().value_or(""), "still");
  ASSERT_TRUE(end.wait_one());
  {
    std::lock_guard lock(end.mu);
    EXPECT_EQ(end.ends.at(0), errc::connection_lost) << s.error_message();
    EXPECT_GE(end.at - left, 400ms) << "closed before the removal grace";
  }
  auto g = client.async_open_stream("chat", {}, asio::use_future);
  ASSERT_EQ(g.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(g.get().info().peer, "127.0.0.1:" + std::to_string(b.local_endpoint().port()));
  client.close();
  ma.release();
  mb.release();
  a.stop();
  b.stop();
  io.stop();
}

/// Providers killed and restarted on their ports while streams run: each
/// stream ends exactly once, none is left open.
TEST(StreamFaults, ExactlyOnceEndsUnderProviderChurn) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io(2);
  constexpr int kProviders = 3;
  std::vector<StreamMethods> methods(kProviders);
  std::vector<std::unique_ptr<Server>> servers(kProviders);
  std::vector<asio::ip::tcp::endpoint> endpoints;
  auto start_server = [&](int i, asio::ip::tcp::endpoint at) {
    servers[i] = std::make_unique<Server>(io.io.get_executor(), timer);
    methods[i].add(*servers[i]);
    if (auto ec = servers[i]->listen(at)) return false;
    return true;
  };
  for (int i = 0; i < kProviders; ++i) {
    ASSERT_TRUE(start_server(i, wheelrpc::test::loopback0()));
    endpoints.push_back(servers[i]->local_endpoint());
  }
  ClientOptions co;
  co.reconnect.initial = 10ms;
  co.reconnect.max = 50ms;
  Client client(io.io.get_executor(), timer, endpoints, co);

  constexpr int kLoops = 16, kStreamsPerLoop = 20;
  std::atomic<int> started{0}, ended_once{0}, ended_twice{0}, ok{0};
  std::atomic<int> loops_done{0};
  for (int l = 0; l < kLoops; ++l) {
    asio::co_spawn(
        io.io,
        [&]() -> asio::awaitable<void> {
          for (int n = 0; n < kStreamsPerLoop; ++n) {
            CallOptions o;
            o.timeout = 5s;
            o.wait_for_ready = true;
            auto [ec, s] = co_await client.async_open_stream("chat", o, asio::as_tuple(asio::use_awaitable));
            started.fetch_add(1);
            auto ends = std::make_shared<std::atomic<int>>(0);
            s.async_finish([&, ends](error_code) {
              if (ends->fetch_add(1) == 0) {
                ended_once.fetch_add(1);
              } else {
                ended_twice.fetch_add(1);
              }
            });
            if (ec) continue;
            bool fine = true;
            for (int i = 0; i < 5 && fine; ++i) {
              auto [wec] = co_await s.async_write("m" + std::to_string(i), asio::as_tuple(asio::use_awaitable));
              auto [rec, m] = co_await s.async_read(asio::as_tuple(asio::use_awaitable));
              fine = !wec && !rec && m && *m == "m" + std::to_string(i);
            }
            if (fine) {
              co_await s.async_writes_done(asio::as_tuple(asio::use_awaitable));
              auto [fec] = co_await s.async_finish(asio::as_tuple(asio::use_awaitable));
              if (!fec) ok.fetch_add(1);
            } else {
              s.cancel();
            }
          }
          loops_done.fetch_add(1);
        },
        asio::detached);
  }
  // Kill and restart providers while the loops run.
  for (int round = 0; round < 6 && loops_done.load() < kLoops; ++round) {
    const int i = round % kProviders;
    // Paced by progress: streams have opened since the last restart.
    wait_until([&] { return started.load() >= (round + 1) * 40 || loops_done.load() == kLoops; }, 20s);
    servers[i]->stop();
    start_server(i, endpoints[i]);  // the same port, if it is free again; else it stays down
  }
  ASSERT_TRUE(wait_until([&] { return loops_done.load() == kLoops; }, 60s));
  ASSERT_TRUE(wait_until([&] { return ended_once.load() == started.load(); }, 20s))
      << ended_once.load() << " of " << started.load() << " streams ended";
  EXPECT_EQ(ended_twice.load(), 0);
  EXPECT_EQ(started.load(), kLoops * kStreamsPerLoop);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(client.stats().streams.open, 0u);
  client.close();
  for (auto& m : methods) m.release();
  for (auto& s : servers) s->stop();
  io.stop();
}

}  // namespace
