// grpc.health.v1.Health on every Server (Server::health, docs/operations.md):
// Check and Watch on both wires, the known services, what the application
// sets, offline, a graceful shutdown (NOT_SERVING before the unregister
// grace, the watches ended cleanly and never holding the drain), turning it
// off, and a user's own handler replacing the built-in one. Bounded waits
// only; the grace runs on a manual timer, so "still in the grace" is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <wheelrpc/rpc/announcer.h>
#include <wheelrpc/rpc/bearer_auth_interceptor.h>
#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/health.h>
#include <wheelrpc/rpc/status_code.h>

#include "base/health_codec.h"
#include "grpc/health/v1/health.pb.h"
#include "grpc/health/v1/health.wheelrpc.h"
#include "probe.wheelrpc.h"
#include "support/held_responders.h"
#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServingStatus;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::WireProtocol;
using wheelrpc::rpc::detail::kHealthCheckPath;
using wheelrpc::rpc::detail::kHealthWatchPath;
using wheelrpc::test::RpcFixture;

namespace {

constexpr auto kLimit = 30s;  // every wait's bound: generous on a loaded machine

template <class T>
T wait(std::future<T>& f) {
  if (f.wait_for(kLimit) != std::future_status::ready)
    throw std::runtime_error("no completion within the test's limit");
  return f.get();
}

/// A completion handler that fills a future with its arguments (a tuple),
/// once; it may outlive the test's wait.
template <class... T>
struct Capture {
  std::shared_ptr<std::promise<std::tuple<T...>>> promise = std::make_shared<std::promise<std::tuple<T...>>>();
  std::future<std::tuple<T...>> future() { return promise->get_future(); }
  void operator()(T... v) const { promise->set_value(std::make_tuple(std::move(v)...)); }
};

/// What Check answered: its status, or the error's gRPC code.
struct Checked {
  std::optional<ServingStatus> status;
  StatusCode code = StatusCode::ok;
};

Checked check(Client& client, std::string_view service) {
  auto out = wheelrpc::test::call_and_wait(client, std::string(kHealthCheckPath),
                                           wheelrpc::rpc::detail::encode_health_request(service));
  if (out.ec) return {std::nullopt, wheelrpc::rpc::status_code_of(out.ec)};
  std::uint32_t status = 99;
  EXPECT_TRUE(wheelrpc::rpc::detail::decode_health_response(out.response.payload, status));
  return {static_cast<ServingStatus>(status), StatusCode::ok};
}

/// A Watch stream, read one status at a time.
struct Watcher {
  ClientStream stream;
  StatusCode open_code = StatusCode::ok;  // the open's (or first read's) error, if any

  static Watcher open(Client& client, std::string_view service) {
    Watcher w;
    Capture<error_code, ClientStream> open_done;
    auto opened = open_done.future();
    client.async_open_stream(std::string(kHealthWatchPath), {}, open_done);
    auto [ec, stream] = wait(opened);
    if (ec) {
      w.open_code = wheelrpc::rpc::status_code_of(ec);
      return w;
    }
    w.stream = std::move(stream);
    Capture<error_code> write_done, half_closed;
    auto written = write_done.future();
    w.stream.async_write(wheelrpc::rpc::detail::encode_health_request(service), write_done);
    (void)wait(written);
    auto done = half_closed.future();
    w.stream.async_writes_done(half_closed);
    (void)wait(done);
    return w;
  }

  /// The next status; nullopt once the stream ended with success; `error`
  /// gets the code of a failed end.
  std::optional<ServingStatus> next(StatusCode* error = nullptr) {
    Capture<error_code, std::optional<std::string>> read_done;
    auto read = read_done.future();
    stream.async_read(read_done);
    auto [ec, message] = wait(read);
    if (ec) {
      if (error) *error = wheelrpc::rpc::status_code_of(ec);
      ADD_FAILURE() << "the watch failed: " << ec.message() << " " << stream.error_message();
      return std::nullopt;
    }
    if (!message) return std::nullopt;
    std::uint32_t status = 99;
    EXPECT_TRUE(wheelrpc::rpc::detail::decode_health_response(*message, status));
    return static_cast<ServingStatus>(status);
  }
};

ClientOptions on(WireProtocol wire) {
  ClientOptions o;
  o.protocol = wire;
  return o;
}

/// Records what the server asks of it; answers at once.
class FakeAnnouncer : public wheelrpc::rpc::ServiceAnnouncer {
 public:
  void announce(const asio::ip::tcp::endpoint&, Done done) override { done({}, ""); }
  void withdraw(Done done) override {
    if (!withdrew.exchange(true)) withdrawn.set_value();
    done({}, "");
  }
  std::promise<void> withdrawn;
  std::atomic<bool> withdrew{false};
};

class Health : public ::testing::TestWithParam<WireProtocol> {};

std::string wire_name(const ::testing::TestParamInfo<WireProtocol>& info) {
  return info.param == WireProtocol::grpc ? "grpc" : "native";
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Wires, Health, ::testing::Values(WireProtocol::native, WireProtocol::grpc), wire_name);

TEST_P(Health, CheckAnswersServingForTheServerAndNotFoundForAnUnknownService) {
  RpcFixture f({}, on(GetParam()));
  EXPECT_EQ(check(*f.client, "").status, ServingStatus::serving);
  const auto unknown = check(*f.client, "no.such.Service");
  EXPECT_FALSE(unknown.status);
  EXPECT_EQ(unknown.code, StatusCode::not_found);
}

TEST_P(Health, AMalformedRequestIsAnInvalidArgument) {
  RpcFixture f({}, on(GetParam()));
  // Field 1, length-delimited, 5 bytes announced, 1 present.
  auto out = wheelrpc::test::call_and_wait(*f.client, std::string(kHealthCheckPath), std::string("\x0a\x05x", 3));
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::invalid_argument) << out.ec.message();
  // A name past gRPC's 200 bytes too.
  out = wheelrpc::test::call_and_wait(*f.client, std::string(kHealthCheckPath),
                                      wheelrpc::rpc::detail::encode_health_request(std::string(201, 'a')));
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::invalid_argument) << out.ec.message();
}

TEST_P(Health, TypedAndUntypedGrpcStyleServicesAreKnownOthersAreNot) {
  typedtest::Probe::CallbackService probe;  // every method answers unimplemented: only its name matters
  RpcFixture f({}, on(GetParam()), 2, [&](Server& s) {
    s.add_service(probe);
    s.handle("/pkg.Untyped/Say", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { r.reply(""); });
    s.handle_stream("/pkg.Feed/Follow", [](wheelrpc::rpc::ServerStream stream) { stream.finish(); });
  });
  EXPECT_EQ(check(*f.client, "typedtest.Probe").status, ServingStatus::serving);
  EXPECT_EQ(check(*f.client, "pkg.Untyped").status, ServingStatus::serving);
  EXPECT_EQ(check(*f.client, "pkg.Feed").status, ServingStatus::serving);
  // "echo" (the fixture's) is no gRPC-style path: no service.
  EXPECT_EQ(check(*f.client, "echo").code, StatusCode::not_found);
  const auto services = f.server.health().services();
  ASSERT_FALSE(services.empty());
  EXPECT_EQ(services.front(), "");
  for (const char* known : {"grpc.health.v1.Health", "pkg.Feed", "pkg.Untyped", "typedtest.Probe"}) {
    EXPECT_NE(std::find(services.begin(), services.end(), known), services.end()) << known;
  }
  EXPECT_EQ(std::find(services.begin(), services.end(), "echo"), services.end());
}

TEST_P(Health, TheTypedHealthClientReadsOurAnswers) {
  RpcFixture f({}, on(GetParam()));
  f.server.health().set("shop.Orders", ServingStatus::not_serving);
  grpc::health::v1::Health::Stub stub(*f.client);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("shop.Orders");
  std::promise<std::pair<error_code, grpc::health::v1::HealthCheckResponse>> p;
  auto answered = p.get_future();
  stub.async_Check(req, [&p](error_code ec, grpc::health::v1::HealthCheckResponse r) { p.set_value({ec, r}); });
  auto [ec, reply] = wait(answered);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(reply.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
}

TEST_P(Health, SetIsSeenByCheckAndOfflineOverridesIt) {
  RpcFixture f({}, on(GetParam()));
  f.server.health().set("shop.Orders", ServingStatus::serving);
  EXPECT_EQ(check(*f.client, "shop.Orders").status, ServingStatus::serving);
  f.server.health().set("shop.Orders", ServingStatus::not_serving);
  EXPECT_EQ(check(*f.client, "shop.Orders").status, ServingStatus::not_serving);
  f.server.health().set("shop.Orders", ServingStatus::serving);

  f.server.set_online(false);
  // Check answers while offline (saying NOT_SERVING is its job); other calls are refused.
  EXPECT_EQ(check(*f.client, "").status, ServingStatus::not_serving);
  EXPECT_EQ(check(*f.client, "shop.Orders").status, ServingStatus::not_serving);
  EXPECT_TRUE(wheelrpc::test::call_and_wait(*f.client, "echo", "x").ec);
  f.server.set_online(true);
  EXPECT_EQ(check(*f.client, "").status, ServingStatus::serving);

  f.server.health().clear("shop.Orders");
  EXPECT_EQ(check(*f.client, "shop.Orders").code, StatusCode::not_found);
}

TEST_P(Health, TheHealthMethodsGoThroughTheServersInterceptors) {
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<wheelrpc::rpc::BearerAuthInterceptor>(std::vector<std::string>{"t0k3n"}));
  RpcFixture f(so, on(GetParam()));
  EXPECT_EQ(check(*f.client, "").code, StatusCode::unauthenticated);
  wheelrpc::rpc::CallOptions with_token;
  with_token.attachments.emplace_back("authorization", "Bearer t0k3n");
  auto out = wheelrpc::test::call_and_wait(*f.client, std::string(kHealthCheckPath),
                                           wheelrpc::rpc::detail::encode_health_request(""), with_token);
  EXPECT_FALSE(out.ec) << out.ec.message();
}

TEST_P(Health, TurnedOffBothMethodsAreUnimplemented) {
  ServerOptions so;
  so.health_service = false;
  RpcFixture f(so, on(GetParam()));
  EXPECT_EQ(check(*f.client, "").code, StatusCode::unimplemented);
  auto w = Watcher::open(*f.client, "");
  if (w.open_code == StatusCode::ok) {  // gRPC: the open's answer comes with the first read
    Capture<error_code, std::optional<std::string>> read_done;
    auto read = read_done.future();
    w.stream.async_read(read_done);
    auto [ec, message] = wait(read);
    w.open_code = wheelrpc::rpc::status_code_of(ec);
  }
  EXPECT_EQ(w.open_code, StatusCode::unimplemented);
}

TEST_P(Health, AUsersOwnHandlerReplacesTheBuiltInOne) {
  RpcFixture f({}, on(GetParam()), 2, [](Server& s) {
    s.handle(std::string(kHealthCheckPath), [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      r.reply(wheelrpc::rpc::detail::encode_health_response(2));  // always NOT_SERVING
    });
  });
  EXPECT_EQ(check(*f.client, "").status, ServingStatus::not_serving);
  EXPECT_EQ(check(*f.client, "anything").status, ServingStatus::not_serving);
  // Watch is still the built-in one.
  auto w = Watcher::open(*f.client, "");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::serving);
}

TEST_P(Health, WatchSendsTheStatusThenEachChangeAsItHappens) {
  RpcFixture f({}, on(GetParam()));
  auto w = Watcher::open(*f.client, "");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::serving);
  f.server.health().set("", ServingStatus::not_serving);
  EXPECT_EQ(w.next(), ServingStatus::not_serving);
  f.server.health().set("", ServingStatus::serving);
  EXPECT_EQ(w.next(), ServingStatus::serving);
  f.server.set_online(false);
  EXPECT_EQ(w.next(), ServingStatus::not_serving);
  f.server.set_online(true);
  EXPECT_EQ(w.next(), ServingStatus::serving);
  // The same status again is no change: nothing is sent for it.
  f.server.health().set("", ServingStatus::serving);
  f.server.health().set("", ServingStatus::unknown);
  EXPECT_EQ(w.next(), ServingStatus::unknown);
}

TEST_P(Health, WatchOfAnUnknownServiceSaysSoThenReportsItOnceKnown) {
  RpcFixture f({}, on(GetParam()));
  auto w = Watcher::open(*f.client, "late.Service");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::service_unknown);
  f.server.health().set("late.Service", ServingStatus::serving);
  EXPECT_EQ(w.next(), ServingStatus::serving);
  f.server.health().clear("late.Service");
  EXPECT_EQ(w.next(), ServingStatus::service_unknown);
}

TEST_P(Health, AClientThatReadsLateGetsTheNewestStatus) {
  RpcFixture f({}, on(GetParam()));
  auto w = Watcher::open(*f.client, "flappy.Service");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::service_unknown);
  for (int i = 0; i < 200; ++i) {
    f.server.health().set("flappy.Service", i % 2 == 0 ? ServingStatus::serving : ServingStatus::not_serving);
  }
  f.server.health().set("flappy.Service", ServingStatus::unknown);
  // At most every change, in order, ending with the newest: never an older one after it.
  int messages = 0;
  std::optional<ServingStatus> s;
  do {
    s = w.next();
    ++messages;
  } while (s && *s != ServingStatus::unknown && messages <= 201);
  EXPECT_EQ(s, ServingStatus::unknown);
  EXPECT_LE(messages, 201);
  EXPECT_EQ(f.server.health().status("flappy.Service"), ServingStatus::unknown);
}

TEST_P(Health, AGracefulShutdownSaysNotServingBeforeTheGraceAndEndsTheWatchCleanly) {
  wheelrpc::test::ManualTimer manual;  // the server's: the grace ends when the test says
  wheelrpc::timer::HashedWheelTimer client_timer;
  wheelrpc::test::IoThreads threads;
  auto announcer = std::make_shared<FakeAnnouncer>();
  auto withdrawn = announcer->withdrawn.get_future();
  ServerOptions so;
  so.announcer = announcer;
  so.unregister_grace = 1s;
  Server server(threads.io.get_executor(), manual.timer, so);
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  Client client(threads.io.get_executor(), client_timer, {server.local_endpoint()}, on(GetParam()));

  auto w = Watcher::open(client, "");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::serving);

  std::promise<error_code> shut;
  auto shut_down = shut.get_future();
  server.async_shutdown(10s, [&shut](error_code ec) { shut.set_value(ec); });
  EXPECT_EQ(w.next(), ServingStatus::not_serving);
  ASSERT_EQ(withdrawn.wait_for(kLimit), std::future_status::ready);
  // Still in the grace (the manual clock has not moved): the server serves
  // on, Check says NOT_SERVING, and the shutdown is not over.
  EXPECT_EQ(check(client, "").status, ServingStatus::not_serving);
  EXPECT_TRUE(server.state().listening);
  EXPECT_EQ(shut_down.wait_for(0s), std::future_status::timeout);

  manual.advance(1s + 10ms);  // the grace ends: the drain begins
  EXPECT_EQ(w.next(), std::nullopt) << "ended with success";
  // Not held until the drain timeout (10 s on the manual clock, which stays put).
  ASSERT_EQ(shut_down.wait_for(kLimit), std::future_status::ready);
  EXPECT_FALSE(shut_down.get());
  const auto stats = server.stats();
  EXPECT_EQ(stats.streams.ends.ok, 1u);
  EXPECT_EQ(stats.streams.ends.shutdown, 0u);
  client.close();
  server.stop();
  threads.stop();
}

TEST_P(Health, AWatchNeverHoldsTheDrain) {
  RpcFixture f({}, on(GetParam()));
  auto w = Watcher::open(*f.client, "");
  ASSERT_EQ(w.open_code, StatusCode::ok);
  EXPECT_EQ(w.next(), ServingStatus::serving);
  Capture<error_code> shutdown_done;
  auto shut_down = shutdown_done.future();
  f.server.async_shutdown(60s, shutdown_done);
  EXPECT_EQ(w.next(), ServingStatus::not_serving);
  EXPECT_EQ(w.next(), std::nullopt);
  auto [ec] = wait(shut_down);
  EXPECT_FALSE(ec) << ec.message() << ": the drain waited for its timeout";
  EXPECT_EQ(f.server.stats().streams.ends.ok, 1u);
}

// Native only: on gRPC the drain's GOAWAY sends new calls to a new connection,
// which the closed acceptor refuses.
TEST(HealthDrain, CheckAnswersNotServingDuringTheDrainWhileOtherCallsAreRefused) {
  wheelrpc::test::HeldResponders held;
  RpcFixture f({}, {}, 2, [&](Server& s) {
    s.handle("hold", [&held](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { held.add(std::move(r)); });
  });
  auto slow = wheelrpc::test::start(*f.client, "hold", "", {});  // holds the drain until released
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; }, kLimit));
  // Without an announcer the drain begins at once; the call in flight holds it.
  Capture<error_code> shutdown_done;
  auto shut_down = shutdown_done.future();
  f.server.async_shutdown(60s, shutdown_done);
  EXPECT_TRUE(wheelrpc::test::call_and_wait(*f.client, "echo", "x").ec) << "refused: draining";
  EXPECT_GE(f.server.stats().refused_shutting_down, 1u);
  const auto c = check(*f.client, "");
  EXPECT_EQ(c.status, ServingStatus::not_serving) << wheelrpc::rpc::to_string(c.code);
  held.release_all();
  EXPECT_FALSE(wait(slow).ec);
  auto [ec] = wait(shut_down);
  EXPECT_FALSE(ec);
}
