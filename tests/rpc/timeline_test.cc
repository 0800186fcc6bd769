// Where a timed-out call's time went (docs/timeouts.md, "Where the time
// went"), and what a reply that arrives after the deadline, before the
// deadline's timer ran, becomes: a timeout, never a late success. Time is a
// manual clock driving a manual wheel, so "the timer's worker is starved" is
// simply "the clock moved and the wheel did not run"; the server is a scripted
// one that replies when the test says, whatever the clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/client.h>

#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/scripted_server.h"
#include "support/wait.h"
#include "client/timeline.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::test::IoThreads;
using wheelrpc::test::ManualTimer;
using wheelrpc::test::ScriptedServer;
using wheelrpc::test::wait_until;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A scripted server that keeps each request and replies when told.
struct HeldServer {
  explicit HeldServer(IoThreads& io)
      : server(io.io.get_executor(), true, [this](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
          std::lock_guard lock(mu);
          channel = ch.shared_from_this();
          reply = ScriptedServer::reply_to(f, f.payload);
          ++held;
        }) {}
  int held_count() {
    std::lock_guard lock(mu);
    return held;
  }
  void release() {
    std::lock_guard lock(mu);
    channel->send(*reply);
  }
  ScriptedServer server;
  std::mutex mu;
  std::shared_ptr<wheelrpc::transport::Channel> channel;
  std::optional<wheelrpc::transport::Frame> reply;
  int held = 0;
};

struct Outcome {
  error_code ec;
  Response response;
};

struct ManualClient {
  ManualClient() : server(io) {
    wheelrpc::rpc::ClientOptions o;
    o.clock = &manual.clock;
    o.heartbeat = 30s;  // judged in real time: no heartbeat while the test waits
    o.connect_timeout = 10s;
    client.emplace(client_io.io.get_executor(), manual.timer,
                   std::vector<boost::asio::ip::tcp::endpoint>{server.server.endpoint()}, o);
  }
  ~ManualClient() {
    client->close();
    client_io.stop();
    io.stop();
  }
  // Runs what was posted to the client's executor so far (one thread).
  void flush() {
    for (int i = 0; i < 4; ++i) {
      wheelrpc::test::Latch done(1);
      boost::asio::post(client_io.io, [&] { done.count_down(); });
      ASSERT_TRUE(done.wait_for(20s));
    }
  }
  std::future<Outcome> start(std::chrono::milliseconds timeout) {
    auto p = std::make_shared<std::promise<Outcome>>();
    auto f = p->get_future();
    CallOptions o;
    o.timeout = timeout;
    o.retries = 0;
    client->async_call("work", "x", o, [p, runs = runs](error_code ec, Response r) {
      if (runs->fetch_add(1) == 0) p->set_value({ec, std::move(r)});
    });
    return f;
  }

  /// Connects, starts a call and waits until the server holds it (ready
  /// first: the call is sent at once, at its start).
  std::future<Outcome> start_held(std::chrono::milliseconds timeout) {
    client->connect();
    EXPECT_TRUE(wait_until([&] { return client->providers().at(0).ready; }));
    auto f = start(timeout);
    EXPECT_TRUE(wait_until([&] { return server.held_count() == 1; }));
    return f;
  }

  ManualTimer manual;  // outlives the client
  IoThreads io;        // the server's
  IoThreads client_io{1};
  HeldServer server;
  std::optional<Client> client;
  std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0);
};

Outcome wait(std::future<Outcome>& f) {
  if (f.wait_for(20s) != std::future_status::ready) {
    ADD_FAILURE() << "the call never completed";
    return {};
  }
  return f.get();
}

TEST(LateReply, AReplyAfterTheDeadlineBeforeItsTimerRanIsATimeoutNotASuccess) {
  ManualClient m;
  auto f = m.start_held(30s);
  // The deadline passes, but the wheel does not run (a starved worker).
  m.manual.clock.advance(30s + 5ms);
  m.server.release();  // the reply arrives 5 ms after the deadline
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(out.response.payload.empty());
  EXPECT_TRUE(contains(out.response.error_message, "timeout (sent; the reply arrived after the deadline)"))
      << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message,
                       "; timeline: queued 0.0 ms, sent 0.0, reply arrived 30005.0 (5.0 after the deadline, before "
                       "its timer ran)"))
      << out.response.error_message;
  EXPECT_EQ(m.client->stats().late_replies, 1u);
  EXPECT_EQ(m.client->stats().timeouts, 1u);
  EXPECT_EQ(m.client->stats().ok, 0u);
  // The wheel runs at last: the call is not completed again.
  m.manual.advance(1ms);
  m.flush();
  EXPECT_EQ(m.runs->load(), 1);
  EXPECT_EQ(m.client->stats().timeouts, 1u);
  // Its /timeouts record carries the same timeline.
  const auto records = m.client->recent_timeouts();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(contains(records[0].timeline, "reply arrived 30005.0")) << records[0].timeline;
}

TEST(LateReply, AReplyJustBeforeTheDeadlineIsDelivered) {
  ManualClient m;
  auto f = m.start_held(30s);
  m.manual.clock.advance(30s - 1ms);
  m.server.release();
  auto out = wait(f);
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "x");
  EXPECT_EQ(m.client->stats().late_replies, 0u);
}

TEST(Timeline, ATimedOutCallSaysWhenItWasSentAndHowLateItsTimerRan) {
  ManualClient m;
  auto f = m.start_held(50ms);
  // The worker runs 7 ms after the deadline (the clock moved without it).
  m.manual.clock.advance(57ms);
  m.manual.timer.run_expired();
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "timeout (sent, waiting for the reply) after 57 ms"))
      << out.response.error_message;
  // Manual clock: no "socket wrote" (the socket's times are on the steady clock).
  EXPECT_TRUE(contains(out.response.error_message, "; timeline: queued 0.0 ms, sent 0.0, timer fired 57.0 (7.0 late)"))
      << out.response.error_message;
  const auto records = m.client->recent_timeouts();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].timeline, "timeline: queued 0.0 ms, sent 0.0, timer fired 57.0 (7.0 late)");
}

TEST(Timeline, ACallThatNeverGotAConnectionSaysSo) {
  ManualTimer manual;
  IoThreads client_io(1);
  // A server that never answers the HELLO: the connection is never ready.
  IoThreads io;
  ScriptedServer silent(io.io.get_executor(), /*answer_hello=*/false, nullptr);
  wheelrpc::rpc::ClientOptions o;
  o.clock = &manual.clock;
  o.heartbeat = 30s;
  o.connect_timeout = 10s;
  Client client(client_io.io.get_executor(), manual.timer,
                std::vector<boost::asio::ip::tcp::endpoint>{silent.endpoint()}, o);
  auto p = std::make_shared<std::promise<Outcome>>();
  auto f = p->get_future();
  CallOptions co;
  co.timeout = 40ms;
  client.async_call("work", "x", co, [p](error_code ec, Response r) { p->set_value({ec, std::move(r)}); });
  manual.clock.advance(40ms);
  manual.timer.run_expired();
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_TRUE(
      contains(out.response.error_message, "; timeline: queued 0.0 ms, never sent, timer fired 40.0 (0.0 late)"))
      << out.response.error_message;
  client.close();
  client_io.stop();
  io.stop();
}

// The text itself, from facts: every entry, in order.
TEST(Timeline, TheTextNamesEveryEntryInOrder) {
  using wheelrpc::rpc::detail::TimelineFacts;
  TimelineFacts f;
  f.start = TimelineFacts::TimePoint{} + 1h;
  f.first_sent = f.start + 100us;
  f.last_sent = f.start + 20300us;
  f.socket_wrote = f.start + 20400us;
  f.deadline = f.start + 50ms;
  f.fired = f.start + 50300us;
  f.completed = f.start + 50460us;
  EXPECT_EQ(
      wheelrpc::rpc::detail::timeline_text(f),
      "timeline: queued 0.0 ms, sent 0.1, last attempt sent 20.3, socket wrote 20.4, timer fired 50.3 (0.3 late), "
      "completed 50.5");
}

}  // namespace
