// Streams are guarded like calls (docs/interceptors.md, docs/streams.md):
// the server's interceptors run at a stream's opening and may refuse it, on
// both wires and for every stream kind; on_complete runs at its end; the
// stream passes the same admission as a call (limits, overload, deadline,
// the method's own timeout); and one mistake gets one answer on both wires.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/access_log_interceptor.h>
#include <wheelrpc/rpc/bearer_auth_interceptor.h>
#include <wheelrpc/rpc/bearer_token_interceptor.h>
#include <wheelrpc/rpc/server_interceptor.h>
#include <wheelrpc/rpc/service.h>
#include <wheelrpc/rpc/status_code.h>

#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::InterceptorNext;
using wheelrpc::rpc::MethodOptions;
using wheelrpc::rpc::ServerCall;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::WireProtocol;
using wheelrpc::test::RpcFixture;

namespace {

std::atomic<int> handlers_run{0};

/// Reads until the client half-closes or the stream ends, then finishes.
void read_to_end(ServerStream s) {
  asio::co_spawn(
      s.get_executor(),
      [s]() mutable -> awaitable<void> {
        for (;;) {
          auto [ec, m] = co_await s.async_read(asio::as_tuple(use_awaitable));
          if (ec || !m) break;
        }
        s.finish();
      },
      asio::detached);
}

/// One method of each stream kind, counting the handlers that ran.
void register_kinds(wheelrpc::rpc::Server& server) {
  // bidi: echoes each message until the client half-closes.
  server.handle_stream("chat", [](ServerStream s) {
    handlers_run.fetch_add(1);
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          while (auto m = co_await s.async_read(use_awaitable)) co_await s.async_write(std::move(*m), use_awaitable);
          s.finish();
        },
        asio::detached);
  });
  // server streaming: the request "N" answered with "0" .. "N-1".
  server.handle_stream("count", [](ServerStream s) {
    handlers_run.fetch_add(1);
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          auto req = co_await s.async_read(use_awaitable);
          const int n = req ? std::stoi(*req) : 0;
          for (int i = 0; i < n; ++i) co_await s.async_write(std::to_string(i), use_awaitable);
          s.finish();
        },
        asio::detached);
  });
  // client streaming: the sum of what it read, once.
  server.handle_stream("sum", [](ServerStream s) {
    handlers_run.fetch_add(1);
    asio::co_spawn(
        s.get_executor(),
        [s]() mutable -> awaitable<void> {
          long long sum = 0;
          while (auto m = co_await s.async_read(use_awaitable)) sum += std::stoll(*m);
          co_await s.async_write(std::to_string(sum), use_awaitable);
          s.finish();
        },
        asio::detached);
  });
  // Answers with the metadata it sees under "who", then ends.
  server.handle_stream("whoami", [](ServerStream s) {
    handlers_run.fetch_add(1);
    std::string who = "<none>";
    for (const auto& [k, v] : s.metadata()) {
      if (k == "who") who = v;
    }
    s.async_write(who, [s](error_code) mutable { s.finish(); });
  });
  // Held open until the client goes.
  server.handle_stream("hold", [](ServerStream s) {
    handlers_run.fetch_add(1);
    read_to_end(std::move(s));
  });
}

struct Fixture : RpcFixture {
  Fixture(ServerOptions so, ClientOptions co, WireProtocol wire)
      : RpcFixture(std::move(so), with(std::move(co), wire), 2, register_kinds) {}
  static ClientOptions with(ClientOptions co, WireProtocol wire) {
    co.protocol = wire;
    return co;
  }
  asio::any_io_executor ex() { return threads.io.get_executor(); }
};

/// What a client got of one stream: the open's error, else the first
/// failure of its exchange (a refused gRPC stream opens, then fails its
/// first read), and the messages it read.
struct Exchange {
  error_code ec;
  std::string message;  // the stream's error message
  std::vector<std::string> read;
};

/// Opens `method`, writes `writes`, half-closes, reads to the end, finishes.
Exchange exchange(Fixture& fx, const std::string& method, std::vector<std::string> writes,
                  wheelrpc::rpc::CallOptions o = {}) {
  auto f = asio::co_spawn(
      fx.ex(),
      [&fx, method, writes, o]() mutable -> awaitable<Exchange> {
        Exchange out;
        auto [ec, s] = co_await fx.client->async_open_stream(method, o, asio::as_tuple(use_awaitable));
        if (ec) {
          out.ec = ec;
          out.message = s.error_message();
          co_return out;
        }
        for (auto& w : writes) {
          auto [wec] = co_await s.async_write(std::move(w), asio::as_tuple(use_awaitable));
          if (wec) break;
        }
        co_await s.async_writes_done(asio::as_tuple(use_awaitable));
        for (;;) {
          auto [rec, m] = co_await s.async_read(asio::as_tuple(use_awaitable));
          if (rec || !m) break;
          out.read.push_back(std::move(*m));
        }
        auto [fec] = co_await s.async_finish(asio::as_tuple(use_awaitable));
        out.ec = fec;
        out.message = s.error_message();
        co_return out;
      },
      asio::use_future);
  if (f.wait_for(30s) != std::future_status::ready) return {make_error_code(errc::server_error), "no end in 30 s", {}};
  return f.get();
}

class StreamGuard : public ::testing::TestWithParam<WireProtocol> {};

std::string wire_name(const ::testing::TestParamInfo<WireProtocol>& p) {
  return p.param == WireProtocol::native ? "native" : "grpc";
}

TEST_P(StreamGuard, BearerAuthRefusesEveryStreamKindWithoutTheTokenAndNoHandlerRuns) {
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<wheelrpc::rpc::BearerAuthInterceptor>(std::vector<std::string>{"s3cret"}));
  Fixture fx(so, {}, GetParam());
  handlers_run = 0;
  for (const char* method : {"chat", "count", "sum"}) {
    SCOPED_TRACE(method);
    const auto none = exchange(fx, method, {"1", "2"});
    EXPECT_EQ(none.ec, make_error_code(StatusCode::unauthenticated)) << none.ec.message() << ": " << none.message;
    EXPECT_NE(none.message.find("missing or invalid bearer token"), std::string::npos) << none.message;
    EXPECT_TRUE(none.read.empty());
    wheelrpc::rpc::CallOptions wrong;
    wrong.attachments.emplace_back("authorization", "Bearer guess");
    const auto bad = exchange(fx, method, {"1", "2"}, wrong);
    EXPECT_EQ(bad.ec, make_error_code(StatusCode::unauthenticated)) << bad.ec.message() << ": " << bad.message;
    EXPECT_TRUE(bad.read.empty());
  }
  EXPECT_EQ(handlers_run.load(), 0) << "a refused stream reached its handler";
  EXPECT_GE(fx.server.stats().streams_refused + fx.server.stats().streams.ends.refused, 6u);
}

TEST_P(StreamGuard, BearerTokenOnTheClientOpensEveryStreamKindPastBearerAuth) {
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<wheelrpc::rpc::BearerAuthInterceptor>(std::vector<std::string>{"s3cret"}));
  ClientOptions co;
  co.interceptors.push_back(std::make_shared<wheelrpc::rpc::BearerTokenInterceptor>("s3cret"));
  Fixture fx(so, co, GetParam());
  const auto chat = exchange(fx, "chat", {"a", "b"});
  ASSERT_FALSE(chat.ec) << chat.message;
  EXPECT_EQ(chat.read, (std::vector<std::string>{"a", "b"}));
  const auto count = exchange(fx, "count", {"3"});
  ASSERT_FALSE(count.ec) << count.message;
  EXPECT_EQ(count.read, (std::vector<std::string>{"0", "1", "2"}));
  const auto sum = exchange(fx, "sum", {"40", "2"});
  ASSERT_FALSE(sum.ec) << sum.message;
  EXPECT_EQ(sum.read, (std::vector<std::string>{"42"}));
}

/// Notes what it saw of each stream, and the status each one ended with.
struct Recorder : wheelrpc::rpc::ServerInterceptor {
  std::mutex mu;
  std::vector<std::string> seen;      // "method stream? deadline?"
  std::vector<error_code> completed;  // on_complete's
  void intercept(ServerCall& call, InterceptorNext next) override {
    {
      std::lock_guard lock(mu);
      seen.push_back(call.method() + (call.is_stream() ? " stream" : " call") +
                     (call.deadline() ? " deadline" : " no-deadline") + (call.peer().empty() ? "" : " peer"));
    }
    // Rewrites what the handler sees, and adds to what the client gets first.
    for (auto& [k, v] : call.metadata()) {
      if (k == "who") v = "rewritten " + v;
    }
    call.reply_metadata().emplace_back("checked-by", "recorder");
    next.proceed();
  }
  void on_complete(ServerCall&, const error_code& ec) override {
    std::lock_guard lock(mu);
    completed.push_back(ec);
  }
  std::size_t completions() {
    std::lock_guard lock(mu);
    return completed.size();
  }
};

TEST_P(StreamGuard, AnInterceptorSeesTheOpeningAndOnCompleteTheEnd) {
  auto rec = std::make_shared<Recorder>();
  ServerOptions so;
  so.interceptors.push_back(rec);
  Fixture fx(so, {}, GetParam());
  wheelrpc::rpc::CallOptions o;
  o.attachments.emplace_back("who", "me");
  o.stream_timeout = 20s;
  auto f = asio::co_spawn(
      fx.ex(),
      [&]() -> awaitable<std::pair<std::string, std::string>> {
        auto s = co_await fx.client->async_open_stream("whoami", o, use_awaitable);
        auto m = co_await s.async_read(use_awaitable);
        std::string checked;
        for (const auto& [k, v] : s.initial_metadata()) {
          if (k == "checked-by") checked = v;
        }
        co_await s.async_finish(use_awaitable);
        co_return std::pair{m.value_or("<end>"), checked};
      },
      asio::use_future);
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  const auto [who, checked] = f.get();
  EXPECT_EQ(who, "rewritten me") << "the handler sees the metadata as the interceptors left it";
  EXPECT_EQ(checked, "recorder") << "what intercept() adds to the reply goes as initial metadata";
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return rec->completions() == 1; }, 10s));
  std::lock_guard lock(rec->mu);
  EXPECT_EQ(rec->seen, (std::vector<std::string>{"whoami stream deadline peer"}));
  EXPECT_FALSE(rec->completed[0]) << rec->completed[0].message();
}

TEST_P(StreamGuard, OnCompleteGetsTheStatusTheStreamEndedWith) {
  auto rec = std::make_shared<Recorder>();
  ServerOptions so;
  so.interceptors.push_back(rec);
  so.streams.max_message = 64;
  Fixture fx(so, {}, GetParam());
  // A message over the server's limit ends the stream with RESOURCE_EXHAUSTED.
  const auto out = exchange(fx, "chat", {std::string(1000, 'x')});
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::resource_exhausted) << out.message;
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return rec->completions() == 1; }, 10s));
  std::lock_guard lock(rec->mu);
  EXPECT_EQ(wheelrpc::rpc::status_code_of(rec->completed[0]), StatusCode::resource_exhausted)
      << rec->completed[0].message();
}

/// Goes on later, from another thread: the client's first messages wait.
struct Slow : wheelrpc::rpc::ServerInterceptor {
  void intercept(ServerCall&, InterceptorNext next) override {
    std::lock_guard lock(mu);
    threads.emplace_back([next = std::move(next)]() mutable {
      std::this_thread::sleep_for(20ms);  // only makes the decision late; nothing waits on it
      next.proceed();
    });
  }
  /// Waits until every late decision is made and its thread has left
  /// proceed(): before the fixture's io_context goes.
  void join() {
    std::vector<std::thread> done;
    {
      std::lock_guard lock(mu);
      done.swap(threads);
    }
    for (auto& t : done) t.join();
  }
  ~Slow() override { join(); }
  std::mutex mu;
  std::vector<std::thread> threads;
};

TEST_P(StreamGuard, AnInterceptorThatGoesOnLaterLosesNoMessage) {
  ServerOptions so;
  auto slow = std::make_shared<Slow>();
  so.interceptors.push_back(slow);
  Fixture fx(so, {}, GetParam());
  std::vector<std::string> writes;
  for (int i = 0; i < 50; ++i) writes.push_back(std::to_string(i));
  const auto out = exchange(fx, "sum", writes);
  slow->join();
  ASSERT_FALSE(out.ec) << out.message;
  EXPECT_EQ(out.read, (std::vector<std::string>{"1225"}));
}

/// Refuses with its own status: the client sees exactly it.
struct Refuse : wheelrpc::rpc::ServerInterceptor {
  void intercept(ServerCall& call, InterceptorNext next) override {
    if (call.is_stream()) return next.reject(StatusCode::permission_denied, "streams are closed today");
    next.proceed();
  }
};

TEST_P(StreamGuard, ARejectionIsTheStatusTheClientSeesAndCallsAreStillServed) {
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<Refuse>());
  Fixture fx(so, {}, GetParam());
  handlers_run = 0;
  const auto out = exchange(fx, "chat", {"a"});
  EXPECT_EQ(out.ec, make_error_code(StatusCode::permission_denied)) << out.message;
  EXPECT_NE(out.message.find("streams are closed today"), std::string::npos) << out.message;
  EXPECT_EQ(handlers_run.load(), 0);
  auto call = wheelrpc::test::call_and_wait(*fx.client, "echo", "hi");
  ASSERT_FALSE(call.ec) << call.response.error_message;
  EXPECT_EQ(call.response.payload, "hi");
  // The refused stream left nothing open.
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.open == 0; }, 10s));
}

TEST_P(StreamGuard, AccessLogWritesALinePerStreamOfEveryKindWithItsStatus) {
  wheelrpc::test::LogCapture capture(wheelrpc::rpc::kAccessLoggerName);
  ServerOptions so;
  so.interceptors.push_back(std::make_shared<wheelrpc::rpc::AccessLogInterceptor>());
  so.interceptors.push_back(std::make_shared<Refuse>());  // after it: the log sees the refusal
  Fixture fx(so, {}, GetParam());
  for (const char* method : {"count", "sum", "chat"}) {
    const auto out = exchange(fx, method, {"2"});
    EXPECT_EQ(out.ec, make_error_code(StatusCode::permission_denied)) << out.message;
  }
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return capture.lines().size() == 3; }, 10s));
  const auto lines = capture.lines();
  for (const char* method : {"count", "sum", "chat"}) {
    bool found = false;
    for (const auto& line : lines) {
      found = found || (line.find(std::string("method=") + method + " peer=127.0.0.1:") != std::string::npos &&
                        line.find("status=PERMISSION_DENIED") != std::string::npos);
    }
    EXPECT_TRUE(found) << method << " has no access log line with its status";
  }
}

// ---- admission ---------------------------------------------------------------

TEST_P(StreamGuard, AMethodsMaxConcurrencyCountsItsOpenStreams) {
  auto more = [](wheelrpc::rpc::Server& server) {
    MethodOptions mo;
    mo.max_concurrency = 2;
    server.handle_stream("limited", read_to_end, mo);
  };
  ClientOptions co;
  co.protocol = GetParam();
  RpcFixture fx({}, co, 2, more);
  auto open = [&] {
    return asio::co_spawn(
        fx.threads.io.get_executor(),
        [&]() -> awaitable<std::pair<error_code, ClientStream>> {
          auto [ec, s] = co_await fx.client->async_open_stream("limited", {}, asio::as_tuple(use_awaitable));
          if (!ec) {
            // On gRPC a refusal shows at the first read: a ping through the
            // stream tells an open one from a refused one.
            auto [wec] = co_await s.async_write("ping", asio::as_tuple(use_awaitable));
            if (wec) ec = wec;
          }
          co_return std::pair{ec, std::move(s)};
        },
        asio::use_future);
  };
  auto a = open().get();
  auto b = open().get();
  ASSERT_FALSE(a.first) << a.first.message();
  ASSERT_FALSE(b.first) << b.first.message();
  // The third: refused at its start (on gRPC its end comes with the refusal).
  auto third = asio::co_spawn(
      fx.threads.io.get_executor(),
      [&]() -> awaitable<std::pair<error_code, std::string>> {
        auto [ec, s] = co_await fx.client->async_open_stream("limited", {}, asio::as_tuple(use_awaitable));
        if (!ec) {
          auto [fec] = co_await s.async_finish(asio::as_tuple(use_awaitable));
          ec = fec;
        }
        co_return std::pair{ec, s.error_message()};
      },
      asio::use_future);
  ASSERT_EQ(third.wait_for(30s), std::future_status::ready);
  const auto [ec, message] = third.get();
  EXPECT_EQ(wheelrpc::rpc::status_code_of(ec), StatusCode::resource_exhausted) << ec.message() << ": " << message;
  EXPECT_NE(message.find("at its limit of 2 streams"), std::string::npos) << message;
  // One ends: its place is given back, and a new one opens.
  a.second.cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.stats().streams.open == 1; }, 10s));
  auto c = open().get();
  EXPECT_FALSE(c.first) << c.first.message();
  b.second.cancel();
  c.second.cancel();
}

TEST_P(StreamGuard, TheMethodsTimeoutIsTheDeadlineOfAStreamWithoutOne) {
  auto more = [](wheelrpc::rpc::Server& server) {
    MethodOptions mo;
    mo.timeout = 200ms;
    server.handle_stream("bounded", read_to_end, mo);
  };
  ClientOptions co;
  co.protocol = GetParam();
  RpcFixture fx({}, co, 2, more);
  auto f = asio::co_spawn(
      fx.threads.io.get_executor(),
      [&]() -> awaitable<error_code> {
        auto [ec, s] = co_await fx.client->async_open_stream("bounded", {}, asio::as_tuple(use_awaitable));
        if (ec) co_return ec;
        auto [fec] = co_await s.async_finish(asio::as_tuple(use_awaitable));  // never half-closes
        co_return fec;
      },
      asio::use_future);
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready) << "the server's 200 ms did not end the stream";
  EXPECT_EQ(wheelrpc::rpc::status_code_of(f.get()), StatusCode::deadline_exceeded);
}

// ---- one answer per mistake ----------------------------------------------------

TEST_P(StreamGuard, AStreamMethodCalledAsACallIsUnimplementedNamingItsKind) {
  Fixture fx({}, {}, GetParam());
  auto out = wheelrpc::test::call_and_wait(*fx.client, "chat", "x");
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::unimplemented) << out.ec.message();
  EXPECT_NE(out.response.error_message.find("'chat' is a stream method: open it as a stream"), std::string::npos)
      << out.response.error_message;
}

TEST_P(StreamGuard, ACallMethodOpenedAsAStreamIsUnimplementedSayingSo) {
  Fixture fx({}, {}, GetParam());
  const auto out = exchange(fx, "echo", {"x"});
  EXPECT_EQ(wheelrpc::rpc::status_code_of(out.ec), StatusCode::unimplemented) << out.ec.message();
  EXPECT_NE(out.message.find("'echo' is a unary method"), std::string::npos) << out.message;
}

TEST_P(StreamGuard, WritingOnAHalfClosedStreamSaysItIsHalfClosed) {
  Fixture fx({}, {}, GetParam());
  auto f = asio::co_spawn(
      fx.ex(),
      [&]() -> awaitable<error_code> {
        auto s = co_await fx.client->async_open_stream("chat", {}, use_awaitable);
        co_await s.async_writes_done(use_awaitable);
        auto [ec] = co_await s.async_write("late", asio::as_tuple(use_awaitable));
        co_await s.async_finish(asio::as_tuple(use_awaitable));
        co_return ec;
      },
      asio::use_future);
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  const auto ec = f.get();
  EXPECT_EQ(ec, make_error_code(errc::stream_half_closed)) << ec.message();
  EXPECT_NE(ec.message().find("half-closed"), std::string::npos) << ec.message();
}

TEST_P(StreamGuard, ASecondReadAtOnceSaysOneReadAtATime) {
  Fixture fx({}, {}, GetParam());
  auto first = std::make_shared<std::promise<error_code>>();
  auto f = asio::co_spawn(
      fx.ex(),
      [&]() -> awaitable<error_code> {
        auto s = co_await fx.client->async_open_stream("hold", {}, use_awaitable);
        s.async_read([first](error_code ec, std::optional<std::string>) { first->set_value(ec); });
        auto [ec, m] = co_await s.async_read(asio::as_tuple(use_awaitable));
        s.cancel();
        co_await s.async_finish(asio::as_tuple(use_awaitable));
        co_return ec;
      },
      asio::use_future);
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(first->get_future().wait_for(10s), std::future_status::ready) << "the first read never ended";
  const auto ec = f.get();
  EXPECT_EQ(ec, make_error_code(errc::read_pending)) << ec.message();
  EXPECT_NE(ec.message().find("one read at a time"), std::string::npos) << ec.message();
}

INSTANTIATE_TEST_SUITE_P(BothWires, StreamGuard, ::testing::Values(WireProtocol::native, WireProtocol::grpc),
                         wire_name);

// ---- the server's registration and the method's own timeout for calls ------------

TEST(Registration, HandleAfterListenThrowsAndANegativeTimeoutIsRefused) {
  RpcFixture fx;
  EXPECT_THROW(fx.server.handle("late", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder) {}), std::logic_error);
  EXPECT_THROW(fx.server.handle_stream("late", [](ServerStream) {}), std::logic_error);
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads(1);
  wheelrpc::rpc::Server server(threads.io.get_executor(), timer);
  EXPECT_THROW(server.handle("m", {}, MethodOptions{0, std::chrono::milliseconds(-1)}), std::invalid_argument);
  EXPECT_THROW(server.handle_stream("s", {}, MethodOptions{0, std::chrono::milliseconds(-1)}), std::invalid_argument);
  server.stop();
}

TEST(MethodTimeout, BindsACallerWithoutADeadlineAndOneWithALaterOne) {
  struct Held {
    std::mutex mu;
    std::vector<wheelrpc::rpc::Responder> responders;  // never answered
  };
  auto held = std::make_shared<Held>();
  auto more = [held](wheelrpc::rpc::Server& server) {
    MethodOptions mo;
    mo.timeout = 200ms;
    server.handle(
        "never",
        [held](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
          std::lock_guard lock(held->mu);
          held->responders.push_back(std::move(r));
        },
        mo);
  };
  RpcFixture fx({}, {}, 2, more);
  wheelrpc::rpc::CallOptions none;
  none.timeout = wheelrpc::rpc::CallOptions::kNoDeadline;
  auto out = wheelrpc::test::call_and_wait(*fx.client, "never", "", none);
  EXPECT_EQ(out.ec, make_error_code(errc::server_timeout)) << out.ec.message() << ": " << out.response.error_message;
  wheelrpc::rpc::CallOptions later;
  later.timeout = std::chrono::milliseconds(60000);
  out = wheelrpc::test::call_and_wait(*fx.client, "never", "", later);
  EXPECT_EQ(out.ec, make_error_code(errc::server_timeout)) << out.ec.message() << ": " << out.response.error_message;
  std::lock_guard lock(held->mu);
  held->responders.clear();
}

}  // namespace
