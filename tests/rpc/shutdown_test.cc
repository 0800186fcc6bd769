// Server::async_shutdown: stop accepting, refuse new requests with
// shutting_down, let the calls in flight finish (up to the drain timeout),
// then stop; exactly one completion. Bounded waits only.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/use_future.hpp>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Response;
using wheelrpc::test::RpcFixture;
using wheelrpc::test::wait_until;
namespace asio = boost::asio;

namespace {

// A fixture whose "hold" method keeps its Responders until the test answers.
struct HoldFixture : RpcFixture {
  HoldFixture()
      : RpcFixture(wheelrpc::rpc::ServerOptions{}, wheelrpc::rpc::ClientOptions{}, 2, [this](wheelrpc::rpc::Server& s) {
          s.handle("hold", [this](wheelrpc::rpc::Request, Responder r) {
            std::lock_guard lock(mu);
            held.push_back(std::move(r));
          });
        }) {}
  std::size_t held_count() {
    std::lock_guard lock(mu);
    return held.size();
  }
  void answer_all(const std::string& payload) {
    std::vector<Responder> rs;
    {
      std::lock_guard lock(mu);
      rs.swap(held);
    }
    for (auto& r : rs) r.reply(payload);
  }
  std::mutex mu;
  std::vector<Responder> held;
};

CallOptions patient(int retries = 0) {
  CallOptions o;
  o.timeout = 30s;
  o.retries = retries;
  return o;
}

std::future<error_code> shutdown(wheelrpc::rpc::Server& server, std::chrono::milliseconds drain) {
  auto p = std::make_shared<std::promise<error_code>>();
  auto f = p->get_future();
  server.async_shutdown(drain, [p](error_code ec) { p->set_value(ec); });  // a second call would throw
  return f;
}

TEST(Shutdown, CallsInFlightFinishNewOnesAreRefusedThenItCompletes) {
  HoldFixture fx;
  auto held = fx.client->async_call("hold", "", patient(), asio::use_future);
  ASSERT_TRUE(wait_until([&] { return fx.held_count() == 1; }));
  EXPECT_EQ(fx.server.stats().in_flight, 1u);

  auto done = shutdown(fx.server, 30s);
  // A request arriving now is refused unprocessed; the client sees unavailable.
  auto refused = fx.client->async_call("echo", "late", patient(), asio::use_future);
  ASSERT_EQ(refused.wait_for(10s), std::future_status::ready);
  try {
    refused.get();
    FAIL() << "a request during the shutdown was served";
  } catch (const wheelrpc::rpc::CallError& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("server shutting down"), std::string::npos) << e.what();
  }
  EXPECT_EQ(done.wait_for(0s), std::future_status::timeout) << "completed with a call still in flight";

  fx.answer_all("finished");
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(held.get().payload, "finished") << "the call in flight was answered";
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(done.get()) << "drained in time";
  const auto s = fx.server.stats();
  EXPECT_EQ(s.refused_shutting_down, 1u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.connections, 0u) << "stopped once drained";
}

TEST(Shutdown, TheDrainTimeoutEndsItWithTimeout) {
  HoldFixture fx;
  auto held = fx.client->async_call("hold", "", patient(), asio::use_future);
  ASSERT_TRUE(wait_until([&] { return fx.held_count() == 1; }));
  auto done = shutdown(fx.server, 100ms);
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(done.get(), errc::timeout);
  // The server closed the connection: the call held there is lost.
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  try {
    held.get();
    FAIL() << "the held call succeeded";
  } catch (const wheelrpc::rpc::CallError& e) {
    EXPECT_EQ(e.code(), errc::connection_lost) << e.what();
  }
}

TEST(Shutdown, WithNothingInFlightItCompletesAtOnceAndOnlyOnce) {
  RpcFixture fx;
  EXPECT_EQ(fx.client->call("echo", "x").payload, "x");
  auto first = shutdown(fx.server, 30s);
  ASSERT_EQ(first.wait_for(10s), std::future_status::ready) << "waited for calls that did not exist";
  EXPECT_FALSE(first.get());
  auto second = shutdown(fx.server, 30s);  // after the first: at once
  ASSERT_EQ(second.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(second.get());
}

TEST(Shutdown, StopDuringTheDrainCompletesItAborted) {
  HoldFixture fx;
  auto held = fx.client->async_call("hold", "", patient(), asio::use_future);
  ASSERT_TRUE(wait_until([&] { return fx.held_count() == 1; }));
  auto done = shutdown(fx.server, 30s);
  fx.server.stop();
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(done.get(), asio::error::operation_aborted);
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
}

// A request still held by its handler keeps the server's core alive (its
// Responder, its deadline on the wheel) after the Server and its io_context
// are gone: the core's last reference may go on any thread, and nothing it
// then destroys may belong to that io_context (the listening socket).
TEST(ServerLifetime, ACoreKeptAliveByARequestOutlivesItsIoContext) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads client_io(1);
  std::mutex mu;
  std::optional<Responder> held;
  std::optional<wheelrpc::rpc::Client> client;
  std::future<wheelrpc::test::Outcome> pending;
  {
    wheelrpc::test::IoThreads server_io(1);
    auto server = std::make_unique<wheelrpc::rpc::Server>(server_io.io.get_executor(), timer);
    server->handle("hold", [&](wheelrpc::rpc::Request, Responder r) {
      std::lock_guard lock(mu);
      held.emplace(std::move(r));
    });
    ASSERT_FALSE(server->listen(wheelrpc::test::loopback0()));
    client.emplace(client_io.io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{server->local_endpoint()});
    CallOptions o;
    o.timeout = 30s;
    o.retries = 0;
    pending = wheelrpc::test::start(*client, "hold", "", o);
    ASSERT_TRUE(wait_until([&] {
      std::lock_guard lock(mu);
      return held.has_value();
    }));
    server->stop();
    server.reset();
    server_io.stop();
  }  // the server's io_context is destroyed here
  {
    std::lock_guard lock(mu);
    EXPECT_FALSE(held->reply("too late")) << "its connection is gone";
    held.reset();  // the request's last reference, and with it the core's
  }
  const auto out = pending.get();
  EXPECT_EQ(out.ec, errc::connection_lost) << out.response.error_message;
  client->close();
}

}  // namespace
