// The server's maximum connection age (ServerKeepaliveOptions::
// max_connection_age and max_connection_age_grace), on both wires: a
// connection past its age is drained and replaced while its client keeps
// calling, and no call fails; a call in flight ends within the grace; one
// still running when the grace runs out ends with an error, not a hang; no
// age keeps one connection; the options are checked. Plus the jitter's pure
// function. Bounded waits only.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "server/connection_age.h"
#include "support/held_responders.h"
#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/run_process.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::WireProtocol;
using wheelrpc::rpc::detail::ConnectionAge;

namespace {

constexpr const char* kAgeEcho = "/test.Age/Echo";
constexpr const char* kAgeHold = "/test.Age/Hold";

/// A server with a maximum connection age and a client on `wire`: Echo
/// replies at once, Hold keeps its responder until the test releases it.
struct AgedPair {
  AgedPair(WireProtocol wire, std::chrono::milliseconds age, std::chrono::milliseconds grace)
      : log("wheelrpc.rpc", 4096), server(threads.io.get_executor(), timer, server_options(age, grace)) {
    server.handle(kAgeEcho, [](Request req, Responder r) { r.reply(std::move(req.payload)); });
    server.handle(kAgeHold, [this](Request, Responder r) { held.add(std::move(r)); });
    if (auto ec = server.listen(wheelrpc::test::loopback0())) throw boost::system::system_error(ec);
    ClientOptions co;
    co.protocol = wire;
    client.emplace(threads.io.get_executor(), timer,
                   std::vector<boost::asio::ip::tcp::endpoint>{server.local_endpoint()}, co);
  }
  ~AgedPair() {
    held.release_all();
    if (client) client->close();
    server.stop();
    threads.stop();
  }
  static ServerOptions server_options(std::chrono::milliseconds age, std::chrono::milliseconds grace) {
    ServerOptions so;
    so.keepalive.max_connection_age = age;
    so.keepalive.max_connection_age_grace = grace;
    return so;
  }
  std::size_t aged_lines() const { return log.count("reached its maximum age"); }

  wheelrpc::test::LogCapture log;  // first: the server's lines from the start
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads;
  wheelrpc::test::HeldResponders held;
  wheelrpc::rpc::Server server;
  std::optional<wheelrpc::rpc::Client> client;
};

CallOptions age_call_options() {
  CallOptions o;
  o.timeout = 20s;
  return o;
}

std::string wire_name(const testing::TestParamInfo<WireProtocol>& info) {
  return info.param == WireProtocol::grpc ? "Grpc" : "Native";
}

class MaxConnectionAge : public testing::TestWithParam<WireProtocol> {};

TEST_P(MaxConnectionAge, ConnectionsAreReplacedAndNoCallFails) {
  AgedPair p(GetParam(), 300ms, 5s);
  int calls = 0, failed = 0;
  std::string first_failure;
  // Calls one after the other until the server accepted three connections
  // (two replaced), and for at least a couple of seconds.
  const auto start = std::chrono::steady_clock::now();
  const auto limit = start + 60s;
  while (std::chrono::steady_clock::now() < limit &&
         (p.server.stats().accepted < 3 || std::chrono::steady_clock::now() - start < 2s)) {
    auto out = wheelrpc::test::call_and_wait(*p.client, kAgeEcho, "x" + std::to_string(calls), age_call_options());
    ++calls;
    if (out.ec) {
      if (failed++ == 0) first_failure = out.ec.message() + ": " + out.response.error_message;
    } else {
      EXPECT_EQ(out.response.payload, "x" + std::to_string(calls - 1));
    }
  }
  EXPECT_EQ(failed, 0) << "of " << calls << " calls; the first: " << first_failure;
  EXPECT_GE(p.server.stats().accepted, 3u) << "the connection was replaced as it aged (" << calls << " calls)";
  EXPECT_GE(p.aged_lines(), 2u);
  EXPECT_GE(p.server.stats().aged_connections, 2u);
  EXPECT_EQ(p.server.stats().age_grace_closes, 0u);
  EXPECT_GE(p.client->stats().connects, 3u);
  for (const auto& line : p.log.lines()) {  // what the server logged (--gtest_output=xml shows it)
    if (line.find("reached its maximum age") != std::string::npos) {
      RecordProperty("aged_line", line);
      break;
    }
  }
}

TEST_P(MaxConnectionAge, ACallInFlightEndsWithinTheGrace) {
  AgedPair p(GetParam(), 300ms, 30s);
  auto held = wheelrpc::test::start(*p.client, kAgeHold, "", age_call_options());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.held.size() == 1; }, 20s));
  ASSERT_EQ(p.server.stats().connections, 1u);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.aged_lines() >= 1; }, 20s)) << "the connection aged";
  // Draining: the native wire serves new calls on this connection until it
  // is idle; the gRPC client, told GOAWAY, sends no new call on it: they wait
  // for the next connection, made once this one closes. Neither fails.
  auto during = wheelrpc::test::start(*p.client, kAgeEcho, "during", age_call_options());
  if (GetParam() == WireProtocol::native) {
    ASSERT_EQ(during.wait_for(20s), std::future_status::ready);
  }
  EXPECT_FALSE(wheelrpc::test::done(held)) << "the held call waits for its handler";
  p.held.release_one();
  ASSERT_EQ(during.wait_for(20s), std::future_status::ready);
  const auto during_out = during.get();
  EXPECT_FALSE(during_out.ec) << during_out.response.error_message;
  ASSERT_EQ(held.wait_for(20s), std::future_status::ready);
  auto out = held.get();
  EXPECT_FALSE(out.ec) << out.ec.message() << ": " << out.response.error_message;
  EXPECT_EQ(out.response.payload, "done");
  EXPECT_EQ(p.log.count("the grace of its maximum age"), 0u) << "it ended within the grace";
  // The aged connection closes once nothing is open on it; the client goes on.
  // (The first is gone once none is open, or a second was accepted and at
  // most one is open.)
  EXPECT_TRUE(wheelrpc::test::wait_until(
      [&] {
        const auto st = p.server.stats();
        return st.connections == 0 || (st.accepted >= 2 && st.connections <= 1);
      },
      20s));
  auto after = wheelrpc::test::call_and_wait(*p.client, kAgeEcho, "after", age_call_options());
  EXPECT_FALSE(after.ec) << after.response.error_message;
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return p.server.stats().accepted >= 2; }, 20s));
}

TEST_P(MaxConnectionAge, ACallStillRunningWhenTheGraceRunsOutFails) {
  AgedPair p(GetParam(), 300ms, 200ms);
  CallOptions o = age_call_options();
  o.retries = 0;  // its failure is the test's to see, not retried on the next connection
  auto held = wheelrpc::test::start(*p.client, kAgeHold, "", o);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return p.held.size() == 1; }, 20s));
  ASSERT_EQ(held.wait_for(20s), std::future_status::ready) << "the call ended, no hang";
  auto out = held.get();
  EXPECT_TRUE(out.ec) << "the grace ran out with the call in flight";
  EXPECT_LT(out.took, 15s);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return p.log.count("the grace of its maximum age") >= 1; }, 20s));
  EXPECT_GE(p.server.stats().age_grace_closes, 1u);
  RecordProperty("error", out.ec.message() + ": " + out.response.error_message);
  for (const auto& line : p.log.lines()) {
    if (line.find("the grace of its maximum age") != std::string::npos) {
      RecordProperty("grace_line", line);
      break;
    }
  }
  // The client goes on, on a new connection.
  auto after = wheelrpc::test::call_and_wait(*p.client, kAgeEcho, "after", age_call_options());
  EXPECT_FALSE(after.ec) << after.response.error_message;
}

TEST_P(MaxConnectionAge, NoMaximumAgeKeepsOneConnection) {
  AgedPair p(GetParam(), 0ms, 30s);
  // Longer than the ages the tests above set (300 ms + 10 %), by the wall
  // clock: nothing here waits for an event that could come late.
  const auto until = std::chrono::steady_clock::now() + 800ms;
  int calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto out = wheelrpc::test::call_and_wait(*p.client, kAgeEcho, "y", age_call_options());
    ASSERT_FALSE(out.ec) << out.response.error_message;
    ++calls;
  }
  EXPECT_EQ(p.server.stats().accepted, 1u) << calls << " calls";
  EXPECT_EQ(p.client->stats().connects, 1u);
  EXPECT_EQ(p.aged_lines(), 0u);
  EXPECT_EQ(p.server.stats().aged_connections, 0u);
}

INSTANTIATE_TEST_SUITE_P(Wires, MaxConnectionAge, testing::Values(WireProtocol::native, WireProtocol::grpc), wire_name);

TEST(MaxConnectionAgeGrpcio, AGrpcioClientFollowsTheGoawayAndNoCallFails) {
  if (std::system("/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no grpcio for /usr/bin/python3";
  }
  AgedPair p(WireProtocol::grpc, 300ms, 5s);
  std::string dir = (std::filesystem::temp_directory_path() / "wheelrpc-max-age-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string out_path = dir + "/grpcio.out";
  const int rc = wheelrpc::test::run_process(
      {"/usr/bin/python3", WHEELRPC_MAX_AGE_SCRIPT, std::to_string(p.server.local_endpoint().port()), "2.5"}, out_path,
      120s);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  if (rc == 77) GTEST_SKIP() << text.str();
  EXPECT_EQ(rc, 0) << text.str();
  EXPECT_NE(text.str().find("failed=0"), std::string::npos) << text.str();
  // The first connection counts too: at least one replaced (python's start
  // may take most of the run on a loaded machine).
  EXPECT_GE(p.server.stats().accepted, 2u) << text.str();
  EXPECT_GE(p.aged_lines(), 1u);
  RecordProperty("grpcio", text.str());
}

TEST(MaxConnectionAgeOptions, OutOfRangeValuesThrow) {
  wheelrpc::timer::HashedWheelTimer timer;
  boost::asio::io_context io;
  auto make = [&](std::chrono::milliseconds age, std::chrono::milliseconds grace) {
    ServerOptions so;
    so.keepalive.max_connection_age = age;
    so.keepalive.max_connection_age_grace = grace;
    wheelrpc::rpc::Server server(io.get_executor(), timer, so);
  };
  EXPECT_THROW(make(-1ms, 30s), std::invalid_argument);
  EXPECT_THROW(make(1ms, 30s), std::invalid_argument);
  EXPECT_THROW(make(99ms, 30s), std::invalid_argument);
  EXPECT_THROW(make(300ms, -1ms), std::invalid_argument);
  EXPECT_NO_THROW(make(0ms, 30s));
  EXPECT_NO_THROW(make(100ms, 0ms));
  EXPECT_NO_THROW(make(std::chrono::hours(24), 30s));
}

TEST(MaxConnectionAgeJitter, EachConnectionsAgeIsWithinTenPercent) {
  EXPECT_EQ(ConnectionAge::jittered(1000ms, 0.0), 900ms);
  EXPECT_EQ(ConnectionAge::jittered(1000ms, 0.5), 1000ms);
  EXPECT_LT(ConnectionAge::jittered(1000ms, 0.999999), 1100ms);
  EXPECT_EQ(ConnectionAge::jittered(1ms, 0.0), 1ms) << "never below 1 ms";
  wheelrpc::rpc::ServerKeepaliveOptions k;
  k.max_connection_age = 10000ms;
  ConnectionAge age(k);
  EXPECT_TRUE(age.enabled());
  std::chrono::milliseconds lo = 1h, hi = 0ms;
  for (int i = 0; i < 1000; ++i) {
    const auto a = age.draw();
    lo = std::min(lo, a);
    hi = std::max(hi, a);
  }
  EXPECT_GE(lo, 9000ms);
  EXPECT_LT(hi, 11000ms);
  EXPECT_LT(lo, 9500ms) << "the draws spread over the range";
  EXPECT_GT(hi, 10500ms);
  EXPECT_FALSE(ConnectionAge(wheelrpc::rpc::ServerKeepaliveOptions{}).enabled());
}

}  // namespace
