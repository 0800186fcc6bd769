// Interceptors on both sides: per call and per attempt on the client, around
// the handler on the server; the onion order; metadata both ways; rejection
// before anything is sent; asynchronous interceptors that block no io thread
// and respect the deadline; the bearer token pair and the access log.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/rpc/access_log_interceptor.h>
#include <wheelrpc/rpc/bearer_auth_interceptor.h>
#include <wheelrpc/rpc/bearer_token_interceptor.h>
#include <wheelrpc/rpc/client_interceptor.h>
#include <wheelrpc/rpc/server_interceptor.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/trace.h>

#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientCall;
using wheelrpc::rpc::ClientInterceptor;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::InterceptorNext;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerCall;
using wheelrpc::rpc::ServerInterceptor;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::StatusCode;
using wheelrpc::test::call_and_wait;
using wheelrpc::test::loopback0;
using wheelrpc::test::RpcFixture;
namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;

namespace {

using Ep = asio::ip::tcp::endpoint;

/// What happened, in order, across threads.
class Journal {
 public:
  void add(std::string s) {
    std::lock_guard l(mu_);
    events_.push_back(std::move(s));
  }
  std::vector<std::string> events() const {
    std::lock_guard l(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

bool has(const wheelrpc::transport::Attachments& a, const std::string& key, const std::string& value) {
  return std::any_of(a.begin(), a.end(), [&](const auto& kv) { return kv.first == key && kv.second == value; });
}

/// Client side: notes intercept and on_complete, may add metadata, may reject.
class NotingClient final : public ClientInterceptor {
 public:
  NotingClient(std::string tag, Journal& j) : tag_(std::move(tag)), j_(j) {}
  void intercept(ClientCall& call, InterceptorNext next) override {
    j_.add(tag_ + ".in " + call.provider() + " #" + std::to_string(call.attempt()));
    if (!add_key.empty()) call.metadata().emplace_back(add_key, add_value);
    if (reject) {
      next.reject(*reject, "rejected by " + tag_);
      return;
    }
    next.proceed();
  }
  void on_complete(ClientCall& call, const error_code& ec, const Response& response) override {
    j_.add(tag_ + ".out " + call.provider() + " #" + std::to_string(call.attempt()) + " " +
           std::string(rpc::to_string(rpc::status_code_of(ec))));
    if (has(response.attachments, "x-server", "2")) saw_reply_metadata = true;
  }
  std::string_view name() const noexcept override { return tag_; }

  std::string add_key, add_value;
  std::optional<StatusCode> reject;
  std::atomic<bool> saw_reply_metadata{false};

 private:
  std::string tag_;
  Journal& j_;
};

/// Server side: notes intercept and on_complete, may reject, may add reply metadata.
class NotingServer final : public ServerInterceptor {
 public:
  NotingServer(std::string tag, Journal& j) : tag_(std::move(tag)), j_(j) {}
  void intercept(ServerCall& call, InterceptorNext next) override {
    j_.add(tag_ + ".in " + call.method());
    if (reject) {
      next.reject(*reject, "no entry for " + call.method());
      return;
    }
    next.proceed();
  }
  void on_complete(ServerCall& call, const error_code& ec) override {
    j_.add(tag_ + ".out " + std::string(rpc::to_string(rpc::status_code_of(ec))));
    if (reply_metadata) call.reply_metadata().emplace_back("x-server", "2");
  }
  std::string_view name() const noexcept override { return tag_; }

  std::optional<StatusCode> reject;
  bool reply_metadata = false;

 private:
  std::string tag_;
  Journal& j_;
};

/// Hands each call's next to the test (a future per call), which goes on
/// from its own thread, when it likes.
class GateInterceptor final : public ClientInterceptor {
 public:
  void intercept(ClientCall& call, InterceptorNext next) override {
    if (call.method() != "gated") {
      next.proceed();
      return;
    }
    std::lock_guard l(mu_);
    nexts_.set_value(std::move(next));
  }
  void on_complete(ClientCall&, const error_code& ec, const Response&) override {
    std::lock_guard l(mu_);
    completions_.push_back(ec);
  }
  std::future<InterceptorNext> next() { return nexts_.get_future(); }
  std::vector<error_code> completions() {
    std::lock_guard l(mu_);
    return completions_;
  }

 private:
  std::mutex mu_;
  std::promise<InterceptorNext> nexts_;
  std::vector<error_code> completions_;
};

/// Notes the thread each intercept runs on.
class ThreadNote final : public ClientInterceptor {
 public:
  void intercept(ClientCall& call, InterceptorNext next) override {
    if (call.method() == "gated") thread.set_value(std::this_thread::get_id());
    next.proceed();
  }
  std::promise<std::thread::id> thread;
};

std::thread::id io_thread_of(asio::io_context& io) {
  std::promise<std::thread::id> p;
  asio::post(io, [&] { p.set_value(std::this_thread::get_id()); });
  return p.get_future().get();
}

// ---------------------------------------------------------------- rejection

TEST(Interceptors, ServerRejectionRunsNoHandler) {
  Journal j;
  auto guard = std::make_shared<NotingServer>("guard", j);
  guard->reject = StatusCode::permission_denied;
  ServerOptions so;
  so.interceptors = {guard};
  std::atomic<int> handled{0};
  RpcFixture fx(so, {}, 2, [&](Server& s) {
    s.handle("count", [&](Request, Responder r) {
      ++handled;
      r.reply("counted");
    });
  });
  const auto out = call_and_wait(*fx.client, "count");
  EXPECT_EQ(out.ec, make_error_code(StatusCode::permission_denied)) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("no entry for count"), std::string::npos) << out.response.error_message;
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(j.events(), (std::vector<std::string>{"guard.in count", "guard.out PERMISSION_DENIED"}));
}

TEST(Interceptors, ClientRejectionSendsNothing) {
  // The client talks to the server through a proxy that counts bytes.
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the io threads and what they still hold
  wheelrpc::test::IoThreads threads(2);
  Server server(threads.io.get_executor(), timer);
  wheelrpc::test::register_test_methods(server, threads.io);
  ASSERT_FALSE(server.listen(loopback0()));
  wheelrpc::fault::FaultProxy proxy(threads.io.get_executor(), loopback0(), server.local_endpoint());
  ASSERT_FALSE(proxy.start());

  Journal j;
  auto stop = std::make_shared<NotingClient>("stop", j);
  stop->reject = StatusCode::failed_precondition;
  ClientOptions co;
  co.interceptors = {stop};
  {
    Client client(threads.io.get_executor(), timer, {proxy.local_endpoint()}, co);
    const auto out = call_and_wait(client, "echo", "hello");
    EXPECT_EQ(out.ec, make_error_code(StatusCode::failed_precondition));
    EXPECT_EQ(out.response.error_message, "rejected by stop");
    EXPECT_EQ(client.providers().at(0).connect_attempts, 0u);
    EXPECT_EQ(client.stats().attempts, 0u);
    client.close();
  }
  const auto stats = proxy.stats();
  EXPECT_EQ(stats.connections_accepted, 0u);
  EXPECT_EQ(stats.bytes_upstream_in, 0u);
  EXPECT_EQ(stats.bytes_upstream_out, 0u);
  EXPECT_EQ(j.events(), (std::vector<std::string>{"stop.in  #0", "stop.out  #0 FAILED_PRECONDITION"}));
  proxy.stop();
  server.stop();
  threads.stop();
}

TEST(Interceptors, DroppedNextRejectsWithInternalNamingTheInterceptor) {
  struct Dropper final : ClientInterceptor {
    void intercept(ClientCall&, InterceptorNext) override {}  // the next goes out of scope unused
    std::string_view name() const noexcept override { return "dropper"; }
  };
  ClientOptions co;
  co.interceptors = {std::make_shared<Dropper>()};
  RpcFixture fx({}, co);
  const auto out = call_and_wait(*fx.client, "echo", "x");
  EXPECT_EQ(out.ec, make_error_code(StatusCode::internal));
  EXPECT_NE(out.response.error_message.find("'dropper'"), std::string::npos) << out.response.error_message;
}

TEST(Interceptors, AttemptRejectionIsNotRetried) {
  Journal j;
  auto no = std::make_shared<NotingClient>("no", j);
  no->reject = StatusCode::unavailable;
  ClientOptions co;
  co.attempt_interceptors = {no};
  std::atomic<int> handled{0};
  RpcFixture fx({}, co, 2, [&](Server& s) {
    s.handle("count", [&](Request, Responder r) {
      ++handled;
      r.reply("counted");
    });
  });
  CallOptions o;
  o.retries = 3;
  const auto out = call_and_wait(*fx.client, "count", "", o);
  EXPECT_EQ(out.ec, make_error_code(StatusCode::unavailable));
  EXPECT_EQ(handled.load(), 0);
  const auto events = j.events();
  ASSERT_EQ(events.size(), 2u);  // one attempt, not retried
  EXPECT_EQ(events[0].rfind("no.in 127.0.0.1:", 0), 0u) << events[0];
  EXPECT_NE(events[1].find("#1 UNAVAILABLE"), std::string::npos) << events[1];
}

// ---------------------------------------------------------------- order and metadata

TEST(Interceptors, OnionOrderAndMetadataBothWays) {
  Journal cj, sj;
  auto a = std::make_shared<NotingClient>("A", cj);
  auto b = std::make_shared<NotingClient>("B", cj);
  b->add_key = "x-client";
  b->add_value = "1";
  auto s1 = std::make_shared<NotingServer>("S1", sj);
  auto s2 = std::make_shared<NotingServer>("S2", sj);
  s2->reply_metadata = true;
  ServerOptions so;
  so.interceptors = {s1, s2};
  ClientOptions co;
  co.interceptors = {a, b};
  RpcFixture fx(so, co, 2, [&](Server& s) {
    s.handle("meta", [](Request req, Responder r) {
      const bool seen = has(req.attachments, "x-client", "1");
      r.reply(seen ? "seen" : "missing");
    });
  });
  const auto out = call_and_wait(*fx.client, "meta");
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "seen");                      // client metadata reached the handler
  EXPECT_TRUE(has(out.response.attachments, "x-server", "2"));  // reply metadata reached the caller
  EXPECT_TRUE(a->saw_reply_metadata.load());
  EXPECT_EQ(cj.events(), (std::vector<std::string>{"A.in  #0", "B.in  #0", "B.out  #0 OK", "A.out  #0 OK"}));
  EXPECT_EQ(sj.events(), (std::vector<std::string>{"S1.in meta", "S2.in meta", "S2.out OK", "S1.out OK"}));
}

// ---------------------------------------------------------------- per attempt

TEST(Interceptors, AttemptInterceptorsRunPerAttemptCallOnesOnce) {
  // Two servers; whichever gets the first attempt refuses it unprocessed
  // (retried on the other), the second answers.
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the io threads and what they still hold
  wheelrpc::test::IoThreads threads(2);
  std::atomic<int> calls{0};
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<Ep> endpoints;
  std::mutex mu;
  std::string refused_by, answered_by;
  for (int i = 0; i < 2; ++i) {
    auto s = std::make_unique<Server>(threads.io.get_executor(), timer);
    s->handle("flaky", [&, i](Request, Responder r) {
      const std::string me = "server" + std::to_string(i);
      if (calls.fetch_add(1) == 0) {
        {
          std::lock_guard l(mu);
          refused_by = me;
        }
        r.fail(errc::resource_exhausted, "busy");
      } else {
        {
          std::lock_guard l(mu);
          answered_by = me;
        }
        r.reply("ok");
      }
    });
    ASSERT_FALSE(s->listen(loopback0()));
    endpoints.push_back(s->local_endpoint());
    servers.push_back(std::move(s));
  }
  Journal j;
  auto per_call = std::make_shared<NotingClient>("call", j);
  auto per_attempt = std::make_shared<NotingClient>("try", j);
  ClientOptions co;
  co.interceptors = {per_call};
  co.attempt_interceptors = {per_attempt};
  {
    Client client(threads.io.get_executor(), timer, endpoints, co);
    client.connect();
    ASSERT_TRUE(wheelrpc::test::wait_until([&] {
      const auto p = client.providers();
      return p.size() == 2 && p[0].ready && p[1].ready;
    }));
    CallOptions o;
    o.retries = 2;
    o.timeout = std::chrono::seconds(10);
    const auto out = call_and_wait(client, "flaky", "", o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    client.close();
  }
  const auto peer = [&](const std::string& name) {
    return endpoints.at(name == "server0" ? 0 : 1).address().to_string() + ":" +
           std::to_string(endpoints.at(name == "server0" ? 0 : 1).port());
  };
  std::string first, second;
  {
    std::lock_guard l(mu);
    first = peer(refused_by);
    second = peer(answered_by);
  }
  EXPECT_NE(first, second);
  EXPECT_EQ(j.events(), (std::vector<std::string>{
                            "call.in  #0", "try.in " + first + " #1", "try.out " + first + " #1 RESOURCE_EXHAUSTED",
                            "try.in " + second + " #2", "try.out " + second + " #2 OK", "call.out  #0 OK"}));
  for (auto& s : servers) s->stop();
  threads.stop();
}

TEST(Interceptors, AttemptInterceptorsSeeAHedgeAndTheAbandonedAttempt) {
  // Whichever server gets the first attempt answers late; the hedge on the
  // other answers at once and wins.
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the io threads and what they still hold
  wheelrpc::test::IoThreads threads(2);
  std::atomic<int> calls{0};
  std::atomic<bool> slow_done{false};
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<Ep> endpoints;
  for (int i = 0; i < 2; ++i) {
    auto s = std::make_unique<Server>(threads.io.get_executor(), timer);
    s->handle("hedged", [&](Request, Responder r) {
      if (calls.fetch_add(1) == 0) {
        auto t = std::make_shared<asio::steady_timer>(threads.io, std::chrono::milliseconds(500));
        t->async_wait([t, r = std::move(r), &slow_done](const error_code&) mutable {
          r.reply("slow");
          slow_done = true;
        });
      } else {
        r.reply("fast");
      }
    });
    ASSERT_FALSE(s->listen(loopback0()));
    endpoints.push_back(s->local_endpoint());
    servers.push_back(std::move(s));
  }
  Journal j;
  auto per_attempt = std::make_shared<NotingClient>("try", j);
  ClientOptions co;
  co.attempt_interceptors = {per_attempt};
  {
    Client client(threads.io.get_executor(), timer, endpoints, co);
    client.connect();
    ASSERT_TRUE(wheelrpc::test::wait_until([&] {
      const auto p = client.providers();
      return p.size() == 2 && p[0].ready && p[1].ready;
    }));
    CallOptions o;
    o.idempotent = true;
    o.hedge_delay = std::chrono::milliseconds(50);
    o.retries = 1;
    o.timeout = std::chrono::seconds(10);
    const auto out = call_and_wait(client, "hedged", "", o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "fast");
    EXPECT_TRUE(wheelrpc::test::wait_until([&] { return slow_done.load(); }));  // nothing left pending
    client.close();
  }
  const auto events = j.events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_NE(events[0].find(" #1"), std::string::npos) << events[0];
  EXPECT_NE(events[1].find(" #2"), std::string::npos) << events[1];
  EXPECT_NE(events[2].find(" #2 OK"), std::string::npos) << events[2];                              // the winner
  EXPECT_NE(events[3].find(" #1 CANCELLED"), std::string::npos) << events[3];                       // abandoned
  EXPECT_NE(events[0].substr(0, events[0].find(" #")), events[1].substr(0, events[1].find(" #")));  // two providers
  for (auto& s : servers) s->stop();
  threads.stop();
}

// ---------------------------------------------------------------- asynchronous interceptors

TEST(Interceptors, AsyncInterceptorBlocksNoIoThreadAndResumesOnTheExecutor) {
  auto gate = std::make_shared<GateInterceptor>();
  auto note = std::make_shared<ThreadNote>();
  ClientOptions co;
  co.interceptors = {gate, note};
  RpcFixture fx({}, co, /*io_threads=*/1, [](Server& s) {
    s.handle("gated", [](Request req, Responder r) { r.reply(std::move(req.payload)); });
  });
  const auto io_thread = io_thread_of(fx.threads.io);
  auto next = gate->next();
  // Started from the io thread, so the gate's intercept runs there too.
  std::promise<std::future<wheelrpc::test::Outcome>> started;
  asio::post(fx.threads.io, [&] {
    CallOptions o;
    o.timeout = std::chrono::seconds(30);
    started.set_value(wheelrpc::test::start(*fx.client, "gated", "late", o));
  });
  auto gated = started.get_future().get();
  ASSERT_EQ(next.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  // While the gate holds it, another call on the one io thread completes.
  const auto other = call_and_wait(*fx.client, "echo", "meanwhile");
  ASSERT_FALSE(other.ec) << other.response.error_message;
  EXPECT_EQ(other.response.payload, "meanwhile");
  EXPECT_FALSE(wheelrpc::test::done(gated));
  // Goes on from a thread of its own: the chain resumes on the client's executor.
  std::thread foreign([n = next.get()]() mutable { n.proceed(); });
  const auto foreign_id = foreign.get_id();
  foreign.join();
  ASSERT_EQ(gated.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto out = gated.get();
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "late");
  const auto resumed_on = note->thread.get_future().get();
  EXPECT_EQ(resumed_on, io_thread);
  EXPECT_NE(resumed_on, foreign_id);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return gate->completions().size() == 2; }));
}

// A call whose per-call interceptors all go on inside intercept() is sent as
// one without them (InterceptorGate::run_call_chain): it does not wait in the
// books, and its deadline rides in its table entry, not on the wheel. One
// whose interceptor works on waits for it with its deadline on the wheel.
TEST(Interceptors, ACallWhoseInterceptorsGoOnInlinePutsNoDeadlineOnTheWheel) {
  auto gate = std::make_shared<GateInterceptor>();
  ClientOptions co;
  co.interceptors = {gate};
  RpcFixture fx({}, co, /*io_threads=*/2, [](Server& s) {
    s.handle("gated", [](Request req, Responder r) { r.reply(std::move(req.payload)); });
  });
  CallOptions o;
  o.timeout = std::chrono::seconds(30);
  ASSERT_FALSE(call_and_wait(*fx.client, "echo", "warm", o).ec);  // connected
  const auto before = fx.timer.stats().scheduled;
  for (int i = 0; i < 20; ++i) {
    const auto out = call_and_wait(*fx.client, "echo", "x", o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
  }
  // Connection upkeep may schedule a timeout or two; each call would be one.
  EXPECT_LE(fx.timer.stats().scheduled - before, 3u);
  auto next = gate->next();
  const auto mid = fx.timer.stats().scheduled;
  auto gated = wheelrpc::test::start(*fx.client, "gated", "late", o);
  ASSERT_EQ(next.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto held = next.get();
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.timer.stats().scheduled > mid; }));
  held.proceed();
  ASSERT_EQ(gated.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto out = gated.get();
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "late");
}

TEST(Interceptors, DeadlinePassingWhileAnInterceptorWorksEndsTheCallOnce) {
  auto gate = std::make_shared<GateInterceptor>();
  ClientOptions co;
  co.interceptors = {gate};
  std::atomic<int> handled{0};
  RpcFixture fx({}, co, 1, [&](Server& s) {
    s.handle("gated", [&](Request, Responder r) {
      ++handled;
      r.reply("ran");
    });
  });
  auto next = gate->next();
  CallOptions o;
  o.timeout = std::chrono::milliseconds(100);
  auto gated = wheelrpc::test::start(*fx.client, "gated", "", o);  // a second completion would throw
  ASSERT_EQ(gated.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto out = gated.get();
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("interceptors"), std::string::npos) << out.response.error_message;
  // on_complete waits until the interceptor lets go of its next.
  EXPECT_TRUE(gate->completions().empty());
  ASSERT_EQ(next.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  std::thread([n = next.get()]() mutable { n.proceed(); }).join();  // late: ignored
  EXPECT_EQ(gate->completions(), (std::vector<error_code>{make_error_code(errc::timeout)}));
  // Anything the late proceed could have posted ran before this round trip.
  const auto after = call_and_wait(*fx.client, "echo", "after");
  EXPECT_FALSE(after.ec);
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(fx.client->stats().attempts, 1u);  // the echo's only
}

TEST(Interceptors, ServerAsyncInterceptorResumesWhereTheHandlerRuns) {
  struct Later final : ServerInterceptor {
    void intercept(ServerCall& call, InterceptorNext next) override {
      if (call.method() != "where") {
        next.proceed();
        return;
      }
      // Goes on from a thread of its own (joined by the test).
      worker = std::thread([n = std::move(next), this]() mutable {
        foreign.set_value(std::this_thread::get_id());
        n.proceed();
      });
    }
    std::promise<std::thread::id> foreign;
    std::thread worker;
  };
  auto later = std::make_shared<Later>();
  ServerOptions so;
  so.interceptors = {later};
  std::promise<std::thread::id> handler_thread;
  RpcFixture fx(so, {}, 1, [&](Server& s) {
    s.handle("where", [&](Request, Responder r) {
      handler_thread.set_value(std::this_thread::get_id());
      r.reply("here");
    });
  });
  const auto io_thread = io_thread_of(fx.threads.io);
  const auto out = call_and_wait(*fx.client, "where");
  ASSERT_FALSE(out.ec) << out.response.error_message;
  const auto ran_on = handler_thread.get_future().get();
  EXPECT_EQ(ran_on, io_thread);
  EXPECT_NE(ran_on, later->foreign.get_future().get());
  later->worker.join();
}

TEST(Interceptors, ServerDeadlinePassingWhileAnInterceptorWorks) {
  struct Hold final : ServerInterceptor {
    void intercept(ServerCall& call, InterceptorNext next) override {
      if (call.method() == "held") {
        held.set_value(std::move(next));
      } else {
        next.proceed();
      }
    }
    void on_complete(ServerCall& call, const error_code& ec) override {
      if (call.method() != "held") return;
      std::lock_guard l(mu);
      completions.push_back(ec);
    }
    std::promise<InterceptorNext> held;
    std::mutex mu;
    std::vector<error_code> completions;
  };
  auto hold = std::make_shared<Hold>();
  ServerOptions so;
  so.interceptors = {hold};
  std::atomic<int> handled{0};
  RpcFixture fx(so, {}, 1, [&](Server& s) {
    s.handle("held", [&](Request, Responder r) {
      ++handled;
      r.reply("ran");
    });
  });
  auto next = hold->held.get_future();
  CallOptions o;
  o.timeout = std::chrono::milliseconds(100);
  auto call = wheelrpc::test::start(*fx.client, "held", "", o);
  ASSERT_EQ(next.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto out = call.get();
  EXPECT_TRUE(out.ec == errc::timeout || out.ec == errc::server_timeout) << out.response.error_message;
  // The server's deadline answered while the interceptor held its next.
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().server_timeouts == 1; }));
  {
    std::lock_guard l(hold->mu);
    EXPECT_TRUE(hold->completions.empty());  // not while the interceptor works
  }
  std::thread([n = next.get()]() mutable { n.proceed(); }).join();  // late: ignored
  {
    std::lock_guard l(hold->mu);
    EXPECT_EQ(hold->completions, (std::vector<error_code>{make_error_code(errc::server_timeout)}));
  }
  const auto after = call_and_wait(*fx.client, "echo", "after");  // posted work, if any, ran before
  EXPECT_FALSE(after.ec);
  EXPECT_EQ(handled.load(), 0);
}

// ---------------------------------------------------------------- bearer tokens

struct BearerFixture {
  BearerFixture() : fx(options()) {}
  static ServerOptions options() {
    ServerOptions so;
    so.interceptors = {std::make_shared<rpc::BearerAuthInterceptor>(std::vector<std::string>{"other", "s3cret"})};
    return so;
  }
  RpcFixture fx;
};

TEST(Interceptors, BearerTokenAcceptedMissingOrWrong) {
  BearerFixture b;
  {
    Client good(b.fx.threads.io.get_executor(), b.fx.timer, {b.fx.server.local_endpoint()}, [] {
      ClientOptions co;
      co.interceptors = {std::make_shared<rpc::BearerTokenInterceptor>("s3cret")};
      return co;
    }());
    const auto out = call_and_wait(good, "echo", "in");
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "in");
  }
  // The fixture's client sends no token.
  const auto missing = call_and_wait(*b.fx.client, "echo", "x");
  EXPECT_EQ(missing.ec, make_error_code(StatusCode::unauthenticated));
  EXPECT_NE(missing.response.error_message.find("missing or invalid bearer token for 'echo'"), std::string::npos)
      << missing.response.error_message;
  {
    Client wrong(b.fx.threads.io.get_executor(), b.fx.timer, {b.fx.server.local_endpoint()}, [] {
      ClientOptions co;
      co.interceptors = {std::make_shared<rpc::BearerTokenInterceptor>("s3cres")};
      return co;
    }());
    const auto out = call_and_wait(wrong, "echo", "x");
    EXPECT_EQ(out.ec, make_error_code(StatusCode::unauthenticated));
    EXPECT_EQ(out.response.error_message.find("s3cres"), std::string::npos) << out.response.error_message;
  }
}

TEST(Interceptors, BearerTokenFromAnAsyncProvider) {
  BearerFixture b;
  std::atomic<int> asked{0};
  std::vector<std::thread> workers;
  std::mutex mu;
  auto provider = [&](rpc::BearerTokenInterceptor::TokenCallback cb) {
    const int n = ++asked;
    std::lock_guard l(mu);
    // Answers later, from another thread: the second time with an error.
    workers.emplace_back([cb = std::move(cb), n] {
      if (n == 1) {
        cb({}, "s3cret");
      } else {
        cb(make_error_code(errc::unavailable), {});
      }
    });
  };
  {
    ClientOptions co;
    co.interceptors = {std::make_shared<rpc::BearerTokenInterceptor>(provider)};
    Client client(b.fx.threads.io.get_executor(), b.fx.timer, {b.fx.server.local_endpoint()}, co);
    const auto out = call_and_wait(client, "echo", "async");
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "async");
    const auto failed = call_and_wait(client, "echo", "x");
    EXPECT_EQ(failed.ec, make_error_code(StatusCode::unauthenticated));
    EXPECT_NE(failed.response.error_message.find("no bearer token for 'echo'"), std::string::npos)
        << failed.response.error_message;
  }
  std::lock_guard l(mu);
  for (auto& w : workers) w.join();
  EXPECT_EQ(asked.load(), 2);
}

// ---------------------------------------------------------------- access log

TEST(Interceptors, AccessLogLinesAndSampling) {
  wheelrpc::test::LogCapture capture(rpc::kAccessLoggerName);
  struct DenyOne final : ServerInterceptor {
    void intercept(ServerCall& call, InterceptorNext next) override {
      if (call.method() == "secret") {
        next.reject(StatusCode::permission_denied, "no");
      } else {
        next.proceed();
      }
    }
  };
  ServerOptions so;
  so.interceptors = {std::make_shared<rpc::AccessLogInterceptor>(), std::make_shared<DenyOne>()};
  RpcFixture fx(so, {}, 2, [](Server& s) { s.handle("secret", [](Request, Responder r) { r.reply("leaked"); }); });
  const auto trace = rpc::TraceContext::make_root();
  CallOptions o;
  o.attachments.emplace_back(std::string(rpc::kTraceparentKey), trace.traceparent());
  ASSERT_FALSE(call_and_wait(*fx.client, "echo", "x", o).ec);
  EXPECT_EQ(call_and_wait(*fx.client, "secret", "x").ec, make_error_code(StatusCode::permission_denied));
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("method=echo peer=127.0.0.1:"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("status=OK duration_us="), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("trace=" + trace.trace_id_hex()), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("method=secret"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("status=PERMISSION_DENIED"), std::string::npos) << lines[1];
}

TEST(Interceptors, AccessLogSamplesOneInN) {
  wheelrpc::test::LogCapture capture(rpc::kAccessLoggerName);
  auto log = std::make_shared<rpc::AccessLogInterceptor>(3);
  ServerOptions so;
  so.interceptors = {log};
  RpcFixture fx(so);
  for (int i = 0; i < 7; ++i) {
    ASSERT_FALSE(call_and_wait(*fx.client, "echo", std::to_string(i)).ec);
  }
  EXPECT_EQ(log->seen(), 7u);
  EXPECT_EQ(capture.count("method=echo"), 3u);  // the 1st, 4th and 7th
  EXPECT_THROW(rpc::AccessLogInterceptor(0), std::invalid_argument);
}

}  // namespace
