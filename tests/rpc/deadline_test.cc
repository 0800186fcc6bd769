// Deadlines and cancellation: every call completes exactly once, by its
// deadline, with the precise error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/timer/clock.h>

#include "support/held_responders.h"
#include "support/rpc_fixture.h"
#include "support/scripted_server.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::test::IoThreads;
using wheelrpc::test::RpcFixture;
using wheelrpc::test::ScriptedServer;

namespace {

struct Outcome {
  error_code ec;
  Response response;
  Clock::time_point at;
};

// Starts a call; the future completes when its handler runs. Counts handler
// invocations in `runs` to prove exactly-once.
std::future<Outcome> start(Client& client, std::string method, std::string payload, CallOptions o,
                           std::shared_ptr<std::atomic<int>> runs = std::make_shared<std::atomic<int>>(0)) {
  auto p = std::make_shared<std::promise<Outcome>>();
  auto f = p->get_future();
  client.async_call(std::move(method), std::move(payload), std::move(o), [p, runs](error_code ec, Response r) {
    if (runs->fetch_add(1) == 0) p->set_value({ec, std::move(r), Clock::now()});
  });
  return f;
}

Outcome wait(std::future<Outcome>& f) {
  if (f.wait_for(20s) != std::future_status::ready) {
    ADD_FAILURE() << "the call never completed";
    return {};
  }
  return f.get();
}

CallOptions with_timeout(std::chrono::milliseconds t) {
  CallOptions o;
  o.timeout = t;
  return o;
}

TEST(Deadline, OneMillisecondDeadlineOnASleepingServer) {
  RpcFixture fx;
  ASSERT_FALSE(fx.client->call("echo", "warm up").payload.empty());  // connected
  auto runs = std::make_shared<std::atomic<int>>(0);
  const auto t0 = Clock::now();
  auto f = start(*fx.client, "sleep", "300", with_timeout(1ms), runs);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_NE(out.response.error_message.find("sent, waiting for the reply"), std::string::npos)
      << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("'sleep'"), std::string::npos);
  EXPECT_NE(out.response.error_message.find("127.0.0.1:"), std::string::npos);
  EXPECT_GE(out.at - t0, 1ms) << "never before the deadline";
  EXPECT_LT(out.at - t0, 250ms) << "long before the server's reply";
  // The server was given the same 1 ms. Either the client's deadline came
  // first and the server's server_timeout arrives late, counted and dropped;
  // or (under load) the server's server_timeout came first, and the client
  // reports it as its own timeout, saying so: nothing is late then (the
  // server drops its handler's "slept" once it has answered).
  if (out.response.error_message.find("the server timed out too") == std::string::npos) {
    ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.client->stats().late_replies == 1; }))
        << out.response.error_message;
  } else {
    EXPECT_EQ(fx.client->stats().late_replies, 0u);
  }
  EXPECT_EQ(runs->load(), 1);
  EXPECT_EQ(fx.client->stats().timeouts, 1u);
}

TEST(Deadline, TimeoutBeforeSendingNamesThatPhase) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  ScriptedServer silent(io.io.get_executor(), /*answer_hello=*/false, nullptr);
  Client client(io.io.get_executor(), timer, {silent.endpoint()});
  auto f = start(client, "echo", "x", with_timeout(50ms));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_NE(out.response.error_message.find("not sent"), std::string::npos) << out.response.error_message;
  EXPECT_EQ(silent.requests(), 0);
  client.close();
}

TEST(Deadline, ExpiredDeadlineFailsAtOnceWithoutSending) {
  RpcFixture fx;
  auto f = start(*fx.client, "echo", "x", with_timeout(0ms));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_NE(out.response.error_message.find("already passed"), std::string::npos);
  EXPECT_EQ(fx.server.stats().requests, 0u);
}

TEST(Deadline, ServerAnswersServerTimeoutAndDropsTheLateResult) {
  std::promise<bool> late_reply_result;
  boost::asio::io_context* io = nullptr;  // the fixture's, set before any call
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& server) {
    server.handle("slow", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      auto deadline = r.deadline();
      ASSERT_TRUE(deadline.has_value());
      EXPECT_GT(*deadline, Clock::now());
      auto t = std::make_shared<boost::asio::steady_timer>(*io, *deadline + 100ms);
      t->async_wait([t, &late_reply_result, r = std::move(r)](const error_code&) mutable {
        EXPECT_TRUE(r.expired());
        late_reply_result.set_value(r.reply("too late"));
      });
    });
  });
  io = &fx.threads.io;
  // Connected first: a connect slower than 100 ms would time the call out
  // before it was sent, and the handler would never run.
  ASSERT_FALSE(fx.client->call("echo", "warm up").payload.empty());
  auto f = start(*fx.client, "slow", "", with_timeout(100ms));
  auto out = wait(f);
  // Both ends know the deadline; whichever notices first, the call fails by it.
  EXPECT_TRUE(out.ec == errc::server_timeout || out.ec == errc::timeout) << out.ec.message();
  auto late = late_reply_result.get_future();
  ASSERT_EQ(late.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(late.get()) << "the handler's late reply must be dropped";
  const auto st = fx.server.stats();
  EXPECT_EQ(st.server_timeouts, 1u);
  EXPECT_EQ(st.late_replies, 1u);
}

TEST(Deadline, LateReplyIsCountedAndNeverDelivered) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  // Replies 100 ms after each request, ignoring deadlines.
  ScriptedServer slow(io.io.get_executor(), true, [&](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
    auto t = std::make_shared<boost::asio::steady_timer>(io.io, 100ms);
    t->async_wait([t, ch = ch.shared_from_this(), reply = ScriptedServer::reply_to(f, "late")](const error_code&) {
      ch->send(reply);
    });
  });
  Client client(io.io.get_executor(), timer, {slow.endpoint()});
  // Connected first (its reply comes well within 5 s, not late): a connect
  // slower than 20 ms would time the call out before it was sent.
  ASSERT_EQ(client.call("echo", "x", with_timeout(5000ms)).payload, "late");
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto f = start(client, "echo", "x", with_timeout(20ms), runs);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return client.stats().late_replies == 1; }));
  EXPECT_EQ(runs->load(), 1) << "the late reply must not complete the call again";
  client.close();
}

// The codes the client's own checks use too say who said them when it was
// the server: the prefix is the code's name, as the client's own messages
// begin ("unavailable (no provider ...", "bad request (...").
TEST(ErrorText, ARefusalByTheServerSaysTheServerRefusedIt) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  ScriptedServer refusing(
      io.io.get_executor(), true, [](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
        const bool bad = f.method == "bad";
        ch.send(
            ScriptedServer::reply_to(f, bad ? "age must be > 0" : "draining",
                                     bad ? wheelrpc::rpc::Status::bad_request : wheelrpc::rpc::Status::shutting_down));
      });
  Client client(io.io.get_executor(), timer, {refusing.endpoint()});
  CallOptions o = with_timeout(5000ms);
  o.retries = 0;
  auto f = start(client, "busy", "x", o);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable);
  EXPECT_EQ(out.response.error_message.rfind("unavailable (refused by the server) after ", 0), 0u)
      << out.response.error_message;
  EXPECT_NE(out.response.error_message.find(": draining"), std::string::npos) << out.response.error_message;
  auto g = start(client, "bad", "x", o);
  out = wait(g);
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_EQ(out.response.error_message.rfind("bad request (rejected by the server) after ", 0), 0u)
      << out.response.error_message;
  EXPECT_EQ(make_error_code(errc::unavailable).message().rfind("unavailable", 0), 0u);
  client.close();
}

TEST(Deadline, CancelBeforeSendFreesTheCallAtOnce) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  ScriptedServer silent(io.io.get_executor(), false, nullptr);  // never ready: calls wait
  Client client(io.io.get_executor(), timer, {silent.endpoint()});
  boost::asio::cancellation_signal signal;
  std::promise<Outcome> p;
  auto f = p.get_future();
  client.async_call("echo", "x", with_timeout(10s),
                    boost::asio::bind_cancellation_slot(signal.slot(), [&p](error_code ec, Response r) {
                      p.set_value({ec, std::move(r), Clock::now()});
                    }));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return silent.accepted() == 1; }));
  EXPECT_EQ(client.stats().pending, 1u);
  // Emit on the executor the handler runs on (Asio's rule for cancellation).
  const auto t0 = Clock::now();
  boost::asio::post(io.io, [&] { signal.emit(boost::asio::cancellation_type::terminal); });
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  auto out = f.get();
  EXPECT_EQ(out.ec, boost::asio::error::operation_aborted);
  EXPECT_LT(out.at - t0, 5s) << "cancellation does not wait for the 10 s deadline";
  EXPECT_EQ(client.stats().pending, 0u);
  EXPECT_EQ(silent.requests(), 0);
  client.close();
}

TEST(Deadline, CancelAfterSendCompletesAndDropsTheReply) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  std::shared_ptr<wheelrpc::transport::Channel> held;
  wheelrpc::transport::Frame held_request;
  std::mutex mu;
  ScriptedServer hold(io.io.get_executor(), true, [&](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& f) {
    std::lock_guard lock(mu);
    held = ch.shared_from_this();
    held_request = f;
  });
  Client client(io.io.get_executor(), timer, {hold.endpoint()});
  boost::asio::cancellation_signal signal;
  auto runs = std::make_shared<std::atomic<int>>(0);
  std::promise<Outcome> p;
  auto f = p.get_future();
  client.async_call("echo", "x", with_timeout(10s),
                    boost::asio::bind_cancellation_slot(signal.slot(), [&p, runs](error_code ec, Response r) {
                      if (runs->fetch_add(1) == 0) p.set_value({ec, std::move(r), Clock::now()});
                    }));
  // The server counts the request before its handler keeps the channel:
  // wait for the channel itself.
  ASSERT_TRUE(wheelrpc::test::wait_until([&] {
    std::lock_guard lock(mu);
    return held != nullptr;
  }));
  EXPECT_EQ(hold.requests(), 1);
  boost::asio::post(io.io, [&] { signal.emit(boost::asio::cancellation_type::terminal); });
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().ec, boost::asio::error::operation_aborted);
  {
    std::lock_guard lock(mu);
    held->send(ScriptedServer::reply_to(held_request, "too late"));
  }
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return client.stats().late_replies == 1; }));
  EXPECT_EQ(runs->load(), 1);
  client.close();
}

TEST(Deadline, ServerStoppedMidCallFailsEveryPendingCallWithConnectionLost) {
  RpcFixture fx;
  ASSERT_EQ(fx.client->call("echo", "up").payload, "up");
  constexpr int kCalls = 50;
  std::vector<std::future<Outcome>> fs;
  std::vector<std::shared_ptr<std::atomic<int>>> runs;
  for (int i = 0; i < kCalls; ++i) {
    runs.push_back(std::make_shared<std::atomic<int>>(0));
    auto o = with_timeout(10s);
    o.retries = 0;  // one attempt: its connection's loss is the call's outcome
    fs.push_back(start(*fx.client, "sleep", "5000", o, runs.back()));
  }
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().requests == kCalls + 1; }));
  const auto t0 = Clock::now();
  fx.server.stop();
  for (int i = 0; i < kCalls; ++i) {
    auto out = wait(fs[static_cast<std::size_t>(i)]);
    EXPECT_EQ(out.ec, errc::connection_lost) << out.response.error_message;
    EXPECT_LT(out.at - t0, 5s);
  }
  for (auto& r : runs) EXPECT_EQ(r->load(), 1);
  EXPECT_EQ(fx.client->stats().pending, 0u);
}

TEST(Deadline, NoServerListeningFailsWithUnavailable) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  boost::asio::ip::tcp::endpoint dead;
  {
    // A port that was just free: nobody listens there.
    boost::asio::ip::tcp::acceptor a(io.io, wheelrpc::test::loopback0());
    dead = a.local_endpoint();
  }
  Client client(io.io.get_executor(), timer, {dead});
  // wait_for_ready: waits through reconnect attempts until the deadline, then
  // fails with unavailable and the reason.
  CallOptions wait_opts = with_timeout(300ms);
  wait_opts.wait_for_ready = true;
  const auto t0 = Clock::now();
  auto f = start(client, "echo", "x", wait_opts);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("cannot connect"), std::string::npos) << out.response.error_message;
  EXPECT_GE(out.at - t0, 300ms);
  // Without wait_for_ready (the default): at once, the provider being in
  // backoff after its failed connects.
  CallOptions no_wait = with_timeout(5s);
  const auto t1 = Clock::now();
  auto g = start(client, "echo", "x", no_wait);
  auto out2 = wait(g);
  EXPECT_EQ(out2.ec, errc::unavailable);
  EXPECT_LT(out2.at - t1, 2s);
  client.close();
}

TEST(Deadline, CallWithoutDeadlineHasNoBudgetOnEitherSide) {
  std::promise<bool> server_saw_deadline;
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& server) {
    server.handle("probe", [&](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      server_saw_deadline.set_value(req.deadline.has_value() || r.deadline().has_value());
      r.reply("ok");
    });
  });
  const auto scheduled_before = fx.timer.stats().scheduled;
  auto f = start(*fx.client, "probe", "", with_timeout(CallOptions::kNoDeadline));
  auto out = wait(f);
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_FALSE(server_saw_deadline.get_future().get());
  // Only the server's HELLO timeout, the connect timeout and the client's
  // handshake check (its ReconnectTimerTask brought forward) used the timer.
  EXPECT_LE(fx.timer.stats().scheduled - scheduled_before, 3u);
}

TEST(Deadline, CloseCancelsEveryPendingCall) {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the I/O threads
  IoThreads io;
  ScriptedServer hold(io.io.get_executor(), true, nullptr);  // never replies
  auto client = std::make_unique<Client>(io.io.get_executor(), timer,
                                         std::vector<boost::asio::ip::tcp::endpoint>{hold.endpoint()});
  auto sent = start(*client, "echo", "x", with_timeout(10s));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return hold.requests() == 1; }));
  client->close();
  auto out = wait(sent);
  EXPECT_EQ(out.ec, errc::cancelled);
  auto after = start(*client, "echo", "x", with_timeout(10s));
  EXPECT_EQ(wait(after).ec, errc::cancelled);
}

// The server puts a request's deadline on the wheel only if its handler has
// not answered when it returns: a handler that replies inline costs no timeout.
TEST(ServerDeadline, AHandlerThatRepliesInlinePutsNoTimeoutOnTheWheel) {
  wheelrpc::test::HeldResponders held;
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("hold", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { held.add(std::move(r)); });
  });
  auto invoke = [&](const char* method, std::chrono::milliseconds budget) {
    return fx.server.async_invoke(method, "x", budget, boost::asio::use_future);
  };
  const auto before = fx.timer.stats();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(invoke("echo", 30s).get().payload, "x");
  EXPECT_EQ(fx.timer.stats().scheduled, before.scheduled);
  // A handler that answers later: its deadline goes on the wheel, and the
  // reply takes it off.
  auto later = invoke("hold", 30s);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; }));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.timer.stats().scheduled == before.scheduled + 1; }));
  held.release_all();
  EXPECT_EQ(later.get().payload, "done");
  EXPECT_EQ(fx.timer.stats().cancelled, before.cancelled + 1);
}

// A handler that replies inline after its deadline: the answer is the
// deadline's, as if the wheel had fired while it ran, and the reply is late.
TEST(ServerDeadline, AnInlineReplyPastTheDeadlineIsAnsweredServerTimeout) {
  wheelrpc::timer::ManualClock clock;
  wheelrpc::rpc::ServerOptions so;
  so.clock = &clock;
  std::promise<bool> replied;
  RpcFixture fx(so, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("slow", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      clock.advance(2s);  // the handler "runs" for two seconds
      EXPECT_TRUE(r.expired());
      replied.set_value(r.reply("too late"));
    });
  });
  std::promise<Outcome> done;
  fx.server.async_invoke("slow", "", 1s, [&](error_code ec, Response r) { done.set_value({ec, std::move(r), {}}); });
  auto f = done.get_future();
  const auto out = wait(f);
  EXPECT_EQ(out.ec, errc::server_timeout);
  EXPECT_NE(out.response.error_message.find("passed before the handler replied"), std::string::npos)
      << out.response.error_message;
  EXPECT_FALSE(replied.get_future().get()) << "the handler's reply must be reported dropped";
  const auto st = fx.server.stats();
  EXPECT_EQ(st.server_timeouts, 1u);
  EXPECT_EQ(st.late_replies, 1u);
  ASSERT_EQ(fx.server.recent_timeouts().size(), 1u);
}

}  // namespace
