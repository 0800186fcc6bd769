// Discovery end to end, in one process against a real etcd: servers that
// announce themselves, a client that follows the service, and what happens
// to calls when a provider joins, stops gracefully, or etcd goes away.
// Bounded waits on outcomes only.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>

#include "registry/registry_test_util.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;
namespace rpc = wheelrpc::rpc;
namespace ip = boost::asio::ip;

/// A server announcing itself as `service` through a registry of its own.
struct Provider {
  Provider(IoThread& io, const std::string& etcd, const std::string& name, EtcdRegistryOptions ro = fast_options())
      : registry(EtcdRegistry::create(io.io.get_executor(), io.timer, etcd, ro)) {
    ServiceInstance inst;
    inst.service = "disc";
    AnnounceOptions ao;
    ao.on_state = [this](error_code ec, const std::string&) {
      if (!ec) registered = true;
    };
    rpc::ServerOptions so;
    so.announcer = announcer(registry, inst, ao);
    so.unregister_grace = 300ms;
    server = std::make_unique<rpc::Server>(io.io.get_executor(), io.timer, so);
    server->handle("who", [name](rpc::Request, rpc::Responder r) { r.reply(name); });
    if (auto ec = server->listen({ip::make_address("127.0.0.1"), 0})) throw boost::system::system_error(ec);
  }
  ~Provider() {
    server->stop();
    registry->close();
  }
  std::shared_ptr<EtcdRegistry> registry;
  std::unique_ptr<rpc::Server> server;
  std::atomic<bool> registered{false};
};

struct Follower {
  Follower(IoThread& io, const std::string& etcd, rpc::ClientOptions co = {})
      : registry(EtcdRegistry::create(io.io.get_executor(), io.timer, etcd, fast_options())),
        client(io.io.get_executor(), io.timer, provider_source(registry, "disc"), co) {}
  ~Follower() {
    client.close();
    registry->close();
  }
  std::size_t current() {
    std::size_t n = 0;
    for (const auto& p : client.providers()) n += !p.removed;
    return n;
  }
  /// Providers of the current set whose connection is ready.
  std::size_t ready() {
    std::size_t n = 0;
    for (const auto& p : client.providers()) n += !p.removed && p.ready;
    return n;
  }
  /// One call; its error (empty on success) and reply.
  std::pair<error_code, std::string> call(std::chrono::milliseconds timeout = 5s) {
    rpc::CallOptions o;
    o.timeout = timeout;
    o.retries = 2;
    try {
      return {{}, client.call("who", "", o).payload};
    } catch (const rpc::CallError& e) {
      return {e.code(), e.what()};
    }
  }
  std::shared_ptr<EtcdRegistry> registry;
  rpc::Client client;
};

class Discovery : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
  }
  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
};

TEST_F(Discovery, AProviderThatStartsMidRunGetsCallsAndAGracefulStopFailsNone) {
  auto p1 = std::make_unique<Provider>(io_, etcd_->endpoints(), "p1");
  Follower f(io_, etcd_->endpoints());
  ASSERT_TRUE(wait_until([&] { return f.current() == 1; }, 20s));
  ASSERT_EQ(f.call().second, "p1");

  Provider p2(io_, etcd_->endpoints(), "p2");
  ASSERT_TRUE(wait_until([&] { return f.current() == 2; }, 20s));
  // Calls go to ready providers only: p2 is connected before they start.
  ASSERT_TRUE(wait_until([&] { return f.ready() == 2; }, 20s));
  bool p2_called = false;
  for (int i = 0; i < 20 && !p2_called; ++i) {
    auto [ec, who] = f.call();
    ASSERT_FALSE(ec) << who;
    p2_called = who == "p2";
  }
  EXPECT_TRUE(p2_called) << "the provider that joined gets calls";

  // p1 stops gracefully while calls go on: none fails.
  std::promise<error_code> shut;
  p1->server->async_shutdown(5s, [&](error_code ec) { shut.set_value(ec); });
  auto done = shut.get_future();
  int calls = 0;
  while (done.wait_for(0s) != std::future_status::ready) {
    auto [ec, who] = f.call();
    ASSERT_FALSE(ec) << "call " << calls << ": " << who;
    ++calls;
  }
  EXPECT_FALSE(done.get());
  EXPECT_GE(calls, 1);
  // The watch tells the client p1 left; on a loaded machine it may come
  // after the shutdown's grace, and the calls above were retried on p2.
  EXPECT_TRUE(wait_until([&] { return f.current() == 1; }, 20s)) << "p1 unregistered";
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.call().second, "p2");
  p1.reset();
}

TEST_F(Discovery, WhileEtcdIsDownCallsGoOnAndEverythingRecoversAfterwards) {
  EtcdRegistryOptions ro = fast_options();
  ro.lease_ttl = 30s;  // longer than the outage: the registrations survive it
  Provider p1(io_, etcd_->endpoints(), "p1", ro);
  Follower f(io_, etcd_->endpoints());
  ASSERT_TRUE(wait_until([&] { return f.current() == 1; }, 20s));

  etcd_->kill(0);
  // Five seconds without etcd: every call still succeeds on the known provider
  // (a failed read or watch keeps the set; empty protection besides).
  const auto until = std::chrono::steady_clock::now() + 5s;
  int calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto [ec, who] = f.call();
    ASSERT_FALSE(ec) << "call " << calls << " with etcd down: " << who;
    ++calls;
  }
  EXPECT_GT(calls, 0);
  EXPECT_EQ(f.current(), 1u);

  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  // The subscription recovers by itself: a provider registered now is seen.
  Provider p2(io_, etcd_->endpoints(), "p2", ro);
  ASSERT_TRUE(wait_until([&] { return p2.registered.load(); }, 20s));
  ASSERT_TRUE(wait_until([&] { return f.current() == 2; }, 30s)) << "the watch resumed after the outage";
  // And p1's registration is still there: a new follower sees both.
  Follower g(io_, etcd_->endpoints());
  ASSERT_TRUE(wait_until([&] { return g.current() == 2; }, 20s));
}

}  // namespace
