// TCP_USER_TIMEOUT (gRFC A18): both sides of a connection set it to the
// connection's idle limit once its heartbeat is agreed, on either wire, so a
// peer that stops acknowledging data is found dead within the idle limit, not
// after the kernel's ~15 minutes of retransmissions. The sockets are read
// back from the kernel (support/socket_probe.h); the dead peers are made with
// an in-process FaultProxy that stops taking what one side sends.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/frame.h>

#include "support/rpc_fixture.h"
#include "support/socket_probe.h"
#include "support/toxic.h"
#include "support/wait.h"

namespace {

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::fault::Blackhole;
using wheelrpc::fault::FaultProxy;
using wheelrpc::fault::Latency;
using wheelrpc::fault::Stream;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ConnectionInfo;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::WireProtocol;
using wheelrpc::test::IoThreads;
using wheelrpc::test::loopback0;
using wheelrpc::test::Outcome;
using wheelrpc::test::socket_user_timeout;
using wheelrpc::test::toxic;
using wheelrpc::test::wait_until;
namespace transport = wheelrpc::transport;
using UtClock = std::chrono::steady_clock;

std::chrono::milliseconds ut_since(UtClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(UtClock::now() - t);
}

std::string ut_wire_name(const ::testing::TestParamInfo<WireProtocol>& info) {
  return info.param == WireProtocol::grpc ? "Grpc" : "Native";
}

// ---- Channel::set_user_timeout on a real socket

/// Takes nothing: the channels of the unit tests are never started.
class UtIgnoring : public transport::ChannelHandler {
 public:
  void on_frame(transport::Channel&, transport::Frame&) override {}
  void on_close(transport::Channel&, const error_code&, const std::string&) override {}
};

/// A connected loopback pair; `channel` holds the client end, not started.
struct UtSocketPair {
  UtSocketPair() : acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0}), peer(io) {
    boost::asio::ip::tcp::socket s(io);
    s.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
    channel = transport::Channel::create(std::move(s), std::make_shared<UtIgnoring>());
  }
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::ip::tcp::socket peer;
  std::shared_ptr<transport::Channel> channel;
};

TEST(ChannelUserTimeout, ReadsBackWhatWasSetOnTheSocket) {
  UtSocketPair p;
  EXPECT_EQ(p.channel->user_timeout(), 0ms) << "the kernel's default before any is set";
  ASSERT_FALSE(p.channel->set_user_timeout(1500ms));
  EXPECT_EQ(p.channel->user_timeout(), 1500ms);
  // The kernel agrees, read on the socket itself.
  EXPECT_EQ(socket_user_timeout(p.channel->local(), p.channel->remote()), 1500ms);
  ASSERT_FALSE(p.channel->set_user_timeout(20ms));
  EXPECT_EQ(p.channel->user_timeout(), 20ms);
}

TEST(ChannelUserTimeout, ZeroOrNegativeIsRefusedAndChangesNothing) {
  UtSocketPair p;
  ASSERT_FALSE(p.channel->set_user_timeout(700ms));
  EXPECT_TRUE(p.channel->set_user_timeout(0ms));
  EXPECT_TRUE(p.channel->set_user_timeout(-5ms));
  EXPECT_EQ(p.channel->user_timeout(), 700ms);
}

// ---- both sides set it, on either wire

ServerOptions ut_server_options(std::chrono::milliseconds heartbeat = 200ms) {
  ServerOptions o;
  o.keepalive.heartbeat = heartbeat;
  return o;
}

ClientOptions ut_client_options(WireProtocol wire, std::chrono::milliseconds heartbeat = 200ms) {
  ClientOptions o;
  o.protocol = wire;
  o.heartbeat = heartbeat;
  o.connect_timeout = 3s;
  o.reconnect.initial = 50ms;
  o.reconnect.max = 200ms;
  return o;
}

/// The TCP_USER_TIMEOUT of each side's socket of a fixture's one connection,
/// once a call went through, as the kernel has it (the client's
/// ConnectionInfo::user_timeout is checked against it; a server's row does
/// not fill it).
struct UtSides {
  std::optional<std::chrono::milliseconds> client, server;
};

UtSides ut_sides_after_a_call(wheelrpc::test::RpcFixture& f) {
  const Outcome out = wheelrpc::test::call_and_wait(*f.client, "echo", "hi");
  EXPECT_FALSE(out.ec) << out.ec.message();
  UtSides sides;
  const auto client_side = f.client->connections();
  const auto server_side = f.server.connections();
  EXPECT_EQ(client_side.size(), 1u);
  EXPECT_EQ(server_side.size(), 1u);
  if (client_side.size() != 1 || server_side.size() != 1) return sides;
  EXPECT_EQ(client_side[0].local, server_side[0].remote);
  sides.client = socket_user_timeout(client_side[0].local, client_side[0].remote);
  sides.server = socket_user_timeout(server_side[0].local, server_side[0].remote);
  EXPECT_EQ(sides.client, client_side[0].user_timeout) << "the client's /connections row";
  return sides;
}

class UserTimeoutSet : public ::testing::TestWithParam<WireProtocol> {};

TEST_P(UserTimeoutSet, BothSidesCarryThreeAgreedHeartbeats) {
  wheelrpc::test::RpcFixture f(ut_server_options(), ut_client_options(GetParam()));
  const UtSides s = ut_sides_after_a_call(f);
  EXPECT_EQ(s.client, 600ms);
  EXPECT_EQ(s.server, 600ms);
}

TEST_P(UserTimeoutSet, EachSideCarriesItsConfiguredIdleTimeout) {
  auto so = ut_server_options();
  so.keepalive.idle_timeout = 1500ms;
  auto co = ut_client_options(GetParam());
  co.idle_timeout = 1100ms;
  wheelrpc::test::RpcFixture f(so, co);
  const UtSides s = ut_sides_after_a_call(f);
  EXPECT_EQ(s.client, 1100ms);
  EXPECT_EQ(s.server, 1500ms);
}

TEST_P(UserTimeoutSet, TheServerUsesTheHeartbeatItAgreed) {
  // The client asks for 300 ms: a HELLO agrees the larger interval; a gRPC
  // connection has no HELLO, and the server keeps its own 200 ms.
  wheelrpc::test::RpcFixture f(ut_server_options(200ms), ut_client_options(GetParam(), 300ms));
  const UtSides s = ut_sides_after_a_call(f);
  EXPECT_EQ(s.client, 900ms);
  EXPECT_EQ(s.server, GetParam() == WireProtocol::native ? 900ms : 600ms);
}

TEST_P(UserTimeoutSet, AServerWithItOffLeavesItsSocketAlone) {
  auto so = ut_server_options();
  so.keepalive.tcp_user_timeout = false;
  wheelrpc::test::RpcFixture f(so, ut_client_options(GetParam()));
  const UtSides s = ut_sides_after_a_call(f);
  EXPECT_EQ(s.client, 600ms);
  EXPECT_EQ(s.server, 0ms);
}

TEST_P(UserTimeoutSet, AClientWithItOffLeavesItsSocketAlone) {
  auto co = ut_client_options(GetParam());
  co.tcp_user_timeout = false;
  wheelrpc::test::RpcFixture f(ut_server_options(), co);
  const UtSides s = ut_sides_after_a_call(f);
  EXPECT_EQ(s.client, 0ms);
  EXPECT_EQ(s.server, 600ms);
}

INSTANTIATE_TEST_SUITE_P(Wires, UserTimeoutSet, ::testing::Values(WireProtocol::native, WireProtocol::grpc),
                         ut_wire_name);

// ---- a dead peer with data queued is found within the idle limit

/// A server on 127.0.0.1 port 0: "size" replies with its name and the size of
/// the request; "big" replies with `reply_bytes` bytes; "hold" never replies
/// (until release_held).
struct UtProvider {
  UtProvider(IoThreads& io, wheelrpc::timer::Timer& timer, std::string n, const ServerOptions& so,
             std::size_t reply_bytes = 0)
      : name(std::move(n)), server(io.io.get_executor(), timer, so) {
    server.handle("size", [this](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      r.reply(name + " " + std::to_string(req.payload.size()));
    });
    server.handle("big", [reply_bytes](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      r.reply(std::string(reply_bytes, 'r'));
    });
    server.handle("hold", [this](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      std::lock_guard lock(mu);
      held.push_back(std::move(r));
    });
    if (auto ec = server.listen(loopback0())) throw boost::system::system_error(ec);
  }
  /// Answers the "hold" calls (server_error, the server being stopped).
  void release_held() {
    std::lock_guard lock(mu);
    held.clear();
  }
  const std::string name;
  Server server;
  std::mutex mu;
  std::vector<wheelrpc::rpc::Responder> held;
};

/// The FaultProxy's way of playing a peer that died with the connection
/// open: what it sends never arrives (blackhole), and what is sent to it is
/// held, never taken (a latency of a day: past the proxy's 1 MiB of buffer
/// the kernel's queues fill and the window closes).
void ut_play_dead(FaultProxy& proxy, Stream held) {
  const Stream lost = held == Stream::upstream ? Stream::downstream : Stream::upstream;
  ASSERT_FALSE(proxy.add_toxic(toxic("lost", lost, Blackhole{})));
  ASSERT_FALSE(proxy.add_toxic(toxic("held", held, Latency{24h, 0ms})));
}

/// The row of `peer` in the client's providers.
std::optional<wheelrpc::rpc::ProviderStats> ut_provider(const Client& c, const std::string& peer) {
  for (auto& p : c.providers()) {
    if (p.peer == peer) return p;
  }
  return std::nullopt;
}

bool ut_has_connection_from(const Server& s, const std::string& remote) {
  const auto conns = s.connections();
  return std::any_of(conns.begin(), conns.end(), [&](const ConnectionInfo& c) { return c.remote == remote; });
}

/// A call's outcome, waited for (bounded).
Outcome ut_outcome(std::future<Outcome>& f) {
  if (f.wait_for(60s) != std::future_status::ready) {
    ADD_FAILURE() << "a call never completed";
    return {};
  }
  return f.get();
}

class UserTimeoutDeadPeer : public ::testing::TestWithParam<WireProtocol> {};

/// The dead-peer test's heartbeat (its idle limit is three): 200 ms; 1 s
/// under ThreadSanitizer, where a loaded machine can keep a healthy
/// connection busy with 3 MB requests for more than 600 ms without a read
/// (the client then takes it for dead too). Its bounds scale with it.
#if defined(__SANITIZE_THREAD__)
constexpr std::chrono::milliseconds kDeadPeerHeartbeat = 1000ms;
#else
constexpr std::chrono::milliseconds kDeadPeerHeartbeat = 200ms;
#endif
constexpr int kDeadPeerScale = static_cast<int>(kDeadPeerHeartbeat / 200ms);

TEST_P(UserTimeoutDeadPeer, ABlackholedProviderIsDroppedWithinTheIdleLimitAndCallsMoveOn) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  UtProvider a(io, timer, "A", ut_server_options(kDeadPeerHeartbeat));
  UtProvider b(io, timer, "B", ut_server_options(kDeadPeerHeartbeat));
  FaultProxy proxy(io.io.get_executor(), loopback0(), a.server.local_endpoint());
  ASSERT_FALSE(proxy.start());
  const std::string a_peer = transport::endpoint_text(proxy.local_endpoint());
  Client client(io.io.get_executor(), timer,
                std::vector<boost::asio::ip::tcp::endpoint>{proxy.local_endpoint(), b.server.local_endpoint()},
                ut_client_options(GetParam(), kDeadPeerHeartbeat));
  client.connect();
  ASSERT_TRUE(wait_until([&] {
    auto ps = client.providers();
    return ps.size() == 2 && std::all_of(ps.begin(), ps.end(), [](const auto& p) { return p.ready; });
  }));
  // A's connection as A sees it: from the proxy's upstream socket.
  ASSERT_EQ(a.server.connections().size(), 1u);
  const std::string a_conn_remote = a.server.connections()[0].remote;
  const auto idle_closes_before = client.stats().idle_closes;

  ut_play_dead(proxy, Stream::upstream);
  const auto dead_from = UtClock::now();
  // Large idempotent requests (3 MB each: they fill the socket's queues), one
  // attempt each until their connection fails: started one by one until one
  // of them is in flight on A, then three more.
  CallOptions o;
  o.timeout = 30s * kDeadPeerScale;
  o.attempt_timeout = 30s * kDeadPeerScale;
  o.idempotent = true;
  o.retries = 2;
  const std::string payload(3'000'000, 'q');
  std::vector<std::future<Outcome>> calls;
  const auto a_attempts = ut_provider(client, a_peer)->attempts;
  while (calls.size() < 20 && ut_provider(client, a_peer)->attempts == a_attempts) {
    calls.push_back(wheelrpc::test::start(client, "size", payload, o));
    wait_until(
        [&] { return ut_provider(client, a_peer)->attempts != a_attempts || wheelrpc::test::done(calls.back()); }, 5s);
  }
  ASSERT_GT(ut_provider(client, a_peer)->attempts, a_attempts) << "no call went to A";
  for (int i = 0; i < 3; ++i) calls.push_back(wheelrpc::test::start(client, "size", payload, o));

  // Declared dead: the connection to A is no longer ready. 3 x 200 ms, with
  // room for a loaded machine; the kernel alone would take ~15 minutes.
  ASSERT_TRUE(wait_until([&] { return !ut_provider(client, a_peer)->ready; }, 20s * kDeadPeerScale));
  const auto client_dead_after = ut_since(dead_from);
  EXPECT_LT(client_dead_after, 5s * kDeadPeerScale);
  ASSERT_TRUE(wait_until([&] { return !ut_has_connection_from(a.server, a_conn_remote); }, 20s * kDeadPeerScale));
  const auto server_dead_after = ut_since(dead_from);
  EXPECT_LT(server_dead_after, 5s * kDeadPeerScale);

  // Every call, the ones that were on A too, ends well: on B, by its deadline.
  for (auto& f : calls) {
    const Outcome out = ut_outcome(f);
    EXPECT_FALSE(out.ec) << out.ec.message() << ": " << out.response.error_message;
    EXPECT_EQ(out.response.payload, "B 3000000");
    EXPECT_LT(out.took, 10s * kDeadPeerScale);
  }
  std::printf("[ figures ] %s: client declared A dead after %lld ms (idle closes %llu), A's server after %lld ms\n",
              GetParam() == WireProtocol::grpc ? "grpc" : "native", static_cast<long long>(client_dead_after.count()),
              static_cast<unsigned long long>(client.stats().idle_closes - idle_closes_before),
              static_cast<long long>(server_dead_after.count()));
  client.close();
  proxy.stop();
  a.server.stop();
  b.server.stop();
  io.stop();
}

INSTANTIATE_TEST_SUITE_P(Wires, UserTimeoutDeadPeer, ::testing::Values(WireProtocol::native, WireProtocol::grpc),
                         ut_wire_name);

/// A native server connection at its limit of requests in flight
/// (ServerOptions::limits.max_requests_per_connection): the server stops
/// reading it, and its CloseTimerTask takes it for busy, not idle. Its
/// replies, 24 MB, are never taken: the proxy holds what the server sends,
/// and past the proxy's buffer the kernel's queues fill and the window
/// closes. Only the server's TCP_USER_TIMEOUT ends such a connection: the
/// client's idle timeout is a minute and its own TCP_USER_TIMEOUT is off.
/// (The gRPC wire does not stop reading at the limit: its idle close sees
/// the writes stall.)
///
/// Disabled: under TSan the server's writes can stall past its idle limit
/// before the fourth "hold" request pauses reading, and the idle close (write
/// idle) then wins the race; run with --gtest_also_run_disabled_tests.
struct UtStuckReplies {
  explicit UtStuckReplies(bool server_sets) : server_sets_(server_sets) {
    auto so = ut_server_options();
    so.keepalive.tcp_user_timeout = server_sets;
    so.limits.max_requests_per_connection = 4;
    provider.emplace(io, timer, "S", so, 6'000'000);
    proxy.emplace(io.io.get_executor(), loopback0(), provider->server.local_endpoint());
    if (auto ec = proxy->start()) throw boost::system::system_error(ec);
    auto co = ut_client_options(WireProtocol::native);
    co.idle_timeout = 60s;
    co.tcp_user_timeout = false;
    client.emplace(io.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{proxy->local_endpoint()},
                   co);
  }
  ~UtStuckReplies() {
    client->close();
    proxy->stop();
    provider->server.stop();
    provider->release_held();
    io.stop();
  }
  /// Connects; then four "big" calls, whose replies stick, and four "hold"
  /// calls, which fill the connection's limit. Returns the server's side of
  /// the connection (its remote endpoint) once the server stopped reading
  /// it, "" if something failed.
  std::string stick() {
    const Outcome first = wheelrpc::test::call_and_wait(*client, "size", "x");
    EXPECT_FALSE(first.ec) << first.ec.message();
    const auto conns = provider->server.connections();
    EXPECT_EQ(conns.size(), 1u);
    if (conns.size() != 1) return {};
    EXPECT_EQ(socket_user_timeout(conns[0].local, conns[0].remote), server_sets_ ? 600ms : 0ms);
    EXPECT_FALSE(proxy->add_toxic(toxic("held", Stream::downstream, Latency{24h, 0ms})));
    CallOptions o;
    o.timeout = 60s;
    o.retries = 0;
    for (int i = 0; i < 4; ++i) calls.push_back(wheelrpc::test::start(*client, "big", {}, o));
    for (int i = 0; i < 4; ++i) calls.push_back(wheelrpc::test::start(*client, "hold", {}, o));
    if (!wait_until([&] { return provider->server.stats().read_pauses > 0; }, 20s)) {
      ADD_FAILURE() << "the server never stopped reading the connection";
      return {};
    }
    return conns[0].remote;
  }

  const bool server_sets_;
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads io;
  std::optional<UtProvider> provider;
  std::optional<FaultProxy> proxy;
  std::optional<Client> client;
  std::vector<std::future<Outcome>> calls;
};

TEST(UserTimeoutStuckServer, DISABLED_AConnectionAtItsLimitWithRepliesStuckIsDroppedWithinTheIdleLimit) {
  UtStuckReplies t(true);
  const std::string conn = t.stick();
  ASSERT_FALSE(conn.empty());
  const auto from = UtClock::now();
  // 600 ms of zero-window probes, plus the probe timer's granularity.
  ASSERT_TRUE(wait_until([&] { return !ut_has_connection_from(t.provider->server, conn); }, 30s));
  const auto after = ut_since(from);
  EXPECT_LT(after, 8s);
  EXPECT_EQ(t.provider->server.stats().idle_closes, 0u) << "the idle close, not the kernel, dropped it";
  std::printf("[ figures ] native: the server dropped the connection at its limit with replies stuck after %lld ms\n",
              static_cast<long long>(after.count()));
}

TEST(UserTimeoutStuckServer, DISABLED_WithoutItTheServerKeepsTheStuckConnection) {
  UtStuckReplies t(false);
  const std::string conn = t.stick();
  ASSERT_FALSE(conn.empty());
  // A bounded look for a close that must not come: several times what the
  // other test needs on an idle machine.
  EXPECT_FALSE(wait_until([&] { return !ut_has_connection_from(t.provider->server, conn); }, 3s));
}

}  // namespace
