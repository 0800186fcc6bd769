// What a Client and a Server show of themselves: per-method metrics, recent
// timeouts with their phase and trace id, connection rows, offline/online,
// in-process calls (async_invoke), and W3C trace context propagation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/error.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/detail/lazy_trace.h>
#include <wheelrpc/rpc/trace.h>

#include "base/method_metrics.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::CallCode;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::MethodStats;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::TimeoutPhase;
using wheelrpc::rpc::TraceContext;
using wheelrpc::rpc::detail::MethodCells;
using wheelrpc::test::RpcFixture;

namespace {

using wheelrpc::test::Outcome;

Outcome call(wheelrpc::rpc::Client& client, std::string method, std::string payload, CallOptions o = {}) {
  return wheelrpc::test::call_and_wait(client, std::move(method), std::move(payload), std::move(o));
}

const MethodStats* find(const std::vector<MethodStats>& all, const std::string& method) {
  for (const auto& m : all) {
    if (m.method == method) return &m;
  }
  return nullptr;
}

std::uint64_t handled(const MethodStats& m, CallCode code) { return m.handled[static_cast<std::size_t>(code)]; }

}  // namespace

TEST(MethodMetrics, FineBucketsAreAQuarterOctaveWideAndCoarseOnesFollowPrometheusLe) {
  EXPECT_EQ(MethodCells::fine_index(0), 0u);
  EXPECT_EQ(MethodCells::fine_index(1023), 0u);
  EXPECT_EQ(MethodCells::fine_index(1024), 1u);  // [1024, 1280)
  EXPECT_EQ(MethodCells::fine_index(1279), 1u);
  EXPECT_EQ(MethodCells::fine_index(1280), 2u);
  EXPECT_EQ(MethodCells::fine_index(2048), 5u);  // the next octave
  EXPECT_EQ(MethodCells::fine_index(~0ULL), MethodCells::kFine - 1);
  EXPECT_EQ(MethodCells::coarse_index(0), 0u);
  EXPECT_EQ(MethodCells::coarse_index(500'000), 0u);  // le="0.0005" includes 0.0005
  EXPECT_EQ(MethodCells::coarse_index(500'001), 1u);
  EXPECT_EQ(MethodCells::coarse_index(10'000'000'000), 13u);
  EXPECT_EQ(MethodCells::coarse_index(10'000'000'001), 14u);  // +Inf
}

TEST(MethodMetrics, SnapshotSumsCodesLatencyAndInFlight) {
  MethodCells cells("m");
  for (int i = 0; i < 3; ++i) cells.started();
  cells.completed(CallCode::ok, 100us);
  cells.completed(CallCode::timeout, 2ms);
  cells.deadline_exceeded();
  const auto s = cells.snapshot();
  EXPECT_EQ(s.method, "m");
  EXPECT_EQ(handled(s, CallCode::ok), 1u);
  EXPECT_EQ(handled(s, CallCode::timeout), 1u);
  EXPECT_EQ(s.calls(), 2u);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.deadline_exceeded, 1u);
  EXPECT_EQ(s.latency.count, 2u);
  EXPECT_EQ(s.latency.counts[0], 1u);  // 100 us <= 0.5 ms
  EXPECT_EQ(s.latency.counts[2], 1u);  // 2 ms in (0.001, 0.0025]
  EXPECT_NEAR(s.latency.sum, 0.0021, 1e-9);
  EXPECT_NEAR(s.max_s, 0.002, 1e-12);
  // Quantiles from the fine buckets: within their quarter-octave width.
  EXPECT_NEAR(s.latency_fine.quantile(0.5), 100e-6, 30e-6);
  EXPECT_NEAR(s.latency_fine.quantile(1.0), 2e-3, 0.5e-3);
}

TEST(MethodMetrics, HistogramSinceGivesTheObservationsBetweenTwoSnapshots) {
  MethodCells cells("m");
  cells.completed(CallCode::ok, 100us);
  const auto before = cells.snapshot();
  cells.completed(CallCode::ok, 3ms);
  const auto window = cells.snapshot().latency_fine.since(before.latency_fine);
  EXPECT_EQ(window.count, 1u);
  EXPECT_NEAR(window.quantile(0.5), 3e-3, 0.75e-3);
  EXPECT_GE(window.max_bound(), 3e-3);
}

TEST(MethodMetrics, PercentilesAreClampedToTheFastestAndSlowestCall) {
  // 100 calls of exactly 1.1 ms: one fine bucket, [1.048576, 1.31072) ms.
  // Interpolating inside it puts p99 near its top (1.31 ms, above every
  // call) and p1 near its bottom (below every call).
  MethodCells cells("m");
  for (int i = 0; i < 100; ++i) cells.completed(CallCode::ok, 1100us);
  const auto s = cells.snapshot();
  EXPECT_NEAR(s.max_s, 1.1e-3, 1e-12);
  EXPECT_NEAR(s.min_s, 1.1e-3, 1e-12);
  ASSERT_GT(s.latency_fine.quantile(0.99), s.max_s) << "the interpolation this guards against";
  ASSERT_LT(s.latency_fine.quantile(0.01), s.min_s);
  EXPECT_DOUBLE_EQ(s.latency_quantile(0.99), s.max_s);
  EXPECT_DOUBLE_EQ(s.latency_quantile(0.5), 1.1e-3);
  EXPECT_DOUBLE_EQ(s.latency_quantile(0.01), s.min_s);
  EXPECT_DOUBLE_EQ(s.latency_fine.quantile(0.99, 0, 1e-3), 1e-3);
  // Spread calls: the clamp changes nothing inside the range.
  MethodCells spread("s");
  for (int i = 1; i <= 100; ++i) spread.completed(CallCode::ok, std::chrono::microseconds(i * 100));
  const auto t = spread.snapshot();
  EXPECT_NEAR(t.min_s, 100e-6, 1e-12);
  EXPECT_DOUBLE_EQ(t.latency_quantile(0.5), t.latency_fine.quantile(0.5));
  EXPECT_LE(t.latency_quantile(0.99), t.max_s);
  EXPECT_EQ(MethodCells("empty").snapshot().min_s, 0);
}

TEST(CallCodes, EachPairsAStatusWithADetailAndTellsTheApplicationsStatusesApart) {
  using wheelrpc::rpc::call_code;
  using wheelrpc::rpc::call_code_name;
  using wheelrpc::rpc::call_status;
  using wheelrpc::rpc::StatusCode;
  // Every (status, reason) pair once: the label sets of *_handled_total.
  std::set<std::pair<StatusCode, std::string_view>> pairs;
  for (std::size_t i = 0; i < wheelrpc::rpc::kCallCodes; ++i) {
    const auto c = static_cast<CallCode>(i);
    EXPECT_TRUE(pairs.emplace(call_status(c), call_code_name(c)).second) << call_code_name(c);
  }
  // A status a handler chose counts under that status: UNAUTHENTICATED and
  // INVALID_ARGUMENT no longer fall together under "other".
  for (int v = 1; v < wheelrpc::rpc::kStatusCodes; ++v) {
    const auto code = static_cast<StatusCode>(v);
    const auto counted = call_code(make_error_code(code));
    EXPECT_EQ(call_status(counted), code) << v;
    EXPECT_EQ(call_code_name(counted), "application") << v;
    EXPECT_EQ(counted, wheelrpc::rpc::application_code(code));
  }
  EXPECT_NE(call_code(make_error_code(StatusCode::unauthenticated)),
            call_code(make_error_code(StatusCode::invalid_argument)));
  EXPECT_EQ(call_code(error_code{}), CallCode::ok);
  EXPECT_EQ(call_status(CallCode::ok), StatusCode::ok);
  EXPECT_EQ(call_code_name(CallCode::ok), "ok");
  // The framework's own errors keep their detail beside their status.
  EXPECT_EQ(call_status(call_code(make_error_code(errc::server_timeout))), StatusCode::deadline_exceeded);
  EXPECT_EQ(call_code_name(call_code(make_error_code(errc::server_timeout))), "server_timeout");
  EXPECT_EQ(call_code_name(call_code(make_error_code(errc::timeout))), "timeout");
  EXPECT_EQ(call_code_name(call_code(boost::asio::error::operation_aborted)), "aborted");
  EXPECT_EQ(call_status(call_code(boost::asio::error::operation_aborted)), StatusCode::cancelled);
  const error_code foreign = make_error_code(boost::system::errc::io_error);
  EXPECT_EQ(call_code(foreign), CallCode::other);
  EXPECT_EQ(call_status(CallCode::other), wheelrpc::rpc::status_code_of(foreign));
}

TEST(Trace, ParseAndFormatRoundTrip) {
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto t = TraceContext::parse(tp);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->traceparent(), tp);
  EXPECT_EQ(t->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  const auto child = t->child();
  EXPECT_EQ(child.trace_id_hex(), t->trace_id_hex());
  EXPECT_NE(child.traceparent(), tp);
  for (std::string bad :
       std::vector<std::string>{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
                                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                                "00-4bf92f3577b34da6a3ce929d0e0e4736x00f067aa0ba902b7-01",
                                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b/-01",
                                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0:",
                                std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0") + '\xff'}) {
    EXPECT_FALSE(TraceContext::parse(bad)) << bad;
  }
  const auto root = TraceContext::make_root();
  EXPECT_TRUE(TraceContext::parse(root.traceparent()));
  std::string written(TraceContext::kTraceparentSize, '?');
  root.write_traceparent(written.data());
  EXPECT_EQ(written, root.traceparent());
  EXPECT_NE(root.trace_id_hex(), TraceContext::make_root().trace_id_hex());
}

TEST(Trace, EveryByteValueIsWrittenAsItsTwoLowerCaseHexDigits) {
  // Ids holding each of the 256 byte values at each position: the digits
  // against a formatting by snprintf, and back through parse.
  for (int start = 0; start < 256; start += 8) {
    TraceContext t;
    for (std::size_t i = 0; i < t.trace_id.size(); ++i) t.trace_id[i] = static_cast<std::uint8_t>(start + i * 7);
    for (std::size_t i = 0; i < t.parent_id.size(); ++i) t.parent_id[i] = static_cast<std::uint8_t>(start + i + 1);
    t.flags = static_cast<std::uint8_t>(start + 3);
    std::string expected = "00-";
    char digits[3];
    for (auto b : t.trace_id) expected += (std::snprintf(digits, sizeof digits, "%02x", b), digits);
    expected += '-';
    for (auto b : t.parent_id) expected += (std::snprintf(digits, sizeof digits, "%02x", b), digits);
    std::snprintf(digits, sizeof digits, "%02x", t.flags);
    expected += '-';
    expected += digits;
    EXPECT_EQ(t.traceparent(), expected);
    EXPECT_EQ(t.trace_id_hex(), expected.substr(3, 32));
    const auto back = TraceContext::parse(expected);
    ASSERT_TRUE(back) << expected;
    EXPECT_EQ(back->trace_id, t.trace_id);
    EXPECT_EQ(back->parent_id, t.parent_id);
  }
}

TEST(Trace, ARequestsTraceIsParsedWhenAskedAndScopesNestAndRestore) {
  using wheelrpc::rpc::TraceScope;
  using wheelrpc::rpc::detail::LazyTrace;
  using wheelrpc::rpc::detail::LazyTraceScope;
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  LazyTrace good, bad, none;
  good.set_raw(tp);
  bad.set_raw("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
  none.set_raw("short");
  ASSERT_TRUE(good.get());
  EXPECT_EQ(good.get()->traceparent(), tp);
  EXPECT_FALSE(bad.get());
  EXPECT_FALSE(none.get());

  const auto outer = TraceContext::make_root();
  {
    TraceScope o(outer);
    {
      LazyTraceScope request(good);
      ASSERT_TRUE(wheelrpc::rpc::current_trace());
      EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), tp);
      {
        const auto inner = TraceContext::make_root();
        TraceScope i(inner);
        EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), inner.traceparent());
      }
      EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), tp);
    }
    EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), outer.traceparent());
    {
      LazyTraceScope request(bad);  // malformed: no trace in force
      EXPECT_FALSE(wheelrpc::rpc::current_trace());
    }
    {
      LazyTraceScope unparsed(good);  // never asked: the outer comes back all the same
    }
    EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), outer.traceparent());
    {
      // A request's scope inside another's (a typed coroutine resumed where a
      // handler runs): the outer, never parsed, comes back as it was, and so
      // does one that was parsed.
      LazyTrace second;
      const auto other = TraceContext::make_root();
      second.set(other);
      LazyTraceScope first_scope(good);
      {
        LazyTraceScope second_scope(second);
        EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), other.traceparent());
      }
      EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), tp);
      {
        LazyTraceScope second_scope(second);
        LazyTraceScope malformed(bad);
        EXPECT_FALSE(wheelrpc::rpc::current_trace());
      }
      EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), tp);
    }
    EXPECT_EQ(wheelrpc::rpc::current_trace()->traceparent(), outer.traceparent());
  }
  EXPECT_FALSE(wheelrpc::rpc::current_trace());
}

TEST(Introspection, ClientAndServerCountCallsByMethodAndOutcome) {
  RpcFixture fx;
  ASSERT_FALSE(call(*fx.client, "echo", "a").ec);
  ASSERT_FALSE(call(*fx.client, "echo", "b").ec);
  CallOptions quick;
  quick.timeout = 50ms;
  EXPECT_EQ(call(*fx.client, "sleep", "2000", quick).ec, errc::timeout);
  EXPECT_EQ(call(*fx.client, "nope", "").ec, errc::method_not_found);

  const auto client = fx.client->method_stats();
  ASSERT_NE(find(client, "echo"), nullptr);
  EXPECT_EQ(handled(*find(client, "echo"), CallCode::ok), 2u);
  EXPECT_EQ(handled(*find(client, "sleep"), CallCode::timeout), 1u);
  EXPECT_EQ(handled(*find(client, "nope"), CallCode::method_not_found), 1u);
  EXPECT_EQ(find(client, "echo")->latency.count, 2u);
  EXPECT_EQ(find(client, "echo")->in_flight, 0);

  // The server answers the sleep's deadline itself (the budget travels).
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        const auto all = fx.server.method_stats();
        const auto* s = find(all, "sleep");
        return s && s->deadline_exceeded == 1;
      },
      10s));
  const auto server = fx.server.method_stats();
  ASSERT_NE(find(server, "echo"), nullptr);
  EXPECT_EQ(handled(*find(server, "echo"), CallCode::ok), 2u);
  EXPECT_EQ(handled(*find(server, "sleep"), CallCode::server_timeout), 1u);
  EXPECT_EQ(handled(*find(server, "(unknown)"), CallCode::method_not_found), 1u);
  EXPECT_EQ(find(server, "nope"), nullptr) << "unknown method names must not become label sets";
}

TEST(Introspection, AHandlersStatusIsCountedUnderItsOwnCodeOnBothSides) {
  RpcFixture fx({}, {}, 2, [](wheelrpc::rpc::Server& s) {
    s.handle("login", [](wheelrpc::rpc::Request, Responder r) {
      r.fail(wheelrpc::rpc::StatusCode::unauthenticated, "no token");
    });
    s.handle("parse", [](wheelrpc::rpc::Request req, Responder r) {
      if (req.payload == "errc") {
        r.fail(errc::bad_request, "refused by the framework's vocabulary");
      } else {
        r.fail(wheelrpc::rpc::StatusCode::invalid_argument, "not a number");
      }
    });
  });
  EXPECT_EQ(wheelrpc::rpc::status_code_of(call(*fx.client, "login", "").ec),
            wheelrpc::rpc::StatusCode::unauthenticated);
  EXPECT_EQ(wheelrpc::rpc::status_code_of(call(*fx.client, "parse", "x").ec),
            wheelrpc::rpc::StatusCode::invalid_argument);
  EXPECT_EQ(call(*fx.client, "parse", "errc").ec, errc::bad_request);
  const auto client = fx.client->method_stats();
  ASSERT_TRUE(find(client, "login") && find(client, "parse"));
  EXPECT_EQ(handled(*find(client, "login"), CallCode::app_unauthenticated), 1u);
  EXPECT_EQ(handled(*find(client, "login"), CallCode::other), 0u);
  EXPECT_EQ(handled(*find(client, "parse"), CallCode::app_invalid_argument), 1u);
  EXPECT_EQ(handled(*find(client, "parse"), CallCode::bad_request), 1u);
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        const auto all = fx.server.method_stats();
        const auto* p = find(all, "parse");
        return p && p->calls() == 2;
      },
      10s));
  const auto server = fx.server.method_stats();
  EXPECT_EQ(handled(*find(server, "login"), CallCode::app_unauthenticated), 1u);
  EXPECT_EQ(handled(*find(server, "parse"), CallCode::app_invalid_argument), 1u);
  EXPECT_EQ(handled(*find(server, "parse"), CallCode::bad_request), 1u);
  EXPECT_EQ(handled(*find(server, "parse"), CallCode::other), 0u);
}

namespace {

/// Echoes each message; a message "fail" ends the stream INVALID_ARGUMENT.
struct EchoOrFail : std::enable_shared_from_this<EchoOrFail> {
  explicit EchoOrFail(wheelrpc::rpc::ServerStream s) : stream(std::move(s)) {}
  void read() {
    stream.async_read([self = shared_from_this()](error_code ec, std::optional<std::string> m) {
      if (ec || !m) {
        self->stream.finish();
      } else if (*m == "fail") {
        self->stream.finish(wheelrpc::rpc::StatusCode::invalid_argument, "no");
      } else {
        self->stream.async_write(std::move(*m), [self](error_code werr) {
          if (!werr) self->read();
        });
      }
    });
  }
  wheelrpc::rpc::ServerStream stream;
};

std::uint64_t ended(const MethodStats& m, std::string_view cause, wheelrpc::rpc::StatusCode code) {
  for (const auto& e : m.stream_ends) {
    if (e.cause == cause && e.code == code) return e.count;
  }
  return ~std::uint64_t{0};  // not listed
}

}  // namespace

TEST(Introspection, StreamsAreCountedPerMethodOnBothSides) {
  using wheelrpc::rpc::StatusCode;
  RpcFixture fx({}, {}, 2, [](wheelrpc::rpc::Server& s) {
    s.handle_stream("chat",
                    [](wheelrpc::rpc::ServerStream st) { std::make_shared<EchoOrFail>(std::move(st))->read(); });
  });
  auto open = [&] {
    auto f = fx.client->async_open_stream("chat", {}, boost::asio::use_future);
    EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
    return f.get();
  };
  auto a = open();
  a.async_write("hi", boost::asio::use_future).get();
  EXPECT_EQ(a.async_read(boost::asio::use_future).get(), std::optional<std::string>("hi"));
  // Open: the method shows it.
  auto chat = [](const std::vector<MethodStats>& all) {
    const auto* m = find(all, "chat");
    return m ? *m : MethodStats{};
  };
  const auto open_client = chat(fx.client->method_stats());
  EXPECT_EQ(open_client.streams.opened, 1u);
  EXPECT_EQ(open_client.streams.open, 1u);
  EXPECT_EQ(open_client.streams.messages_out, 1u);
  EXPECT_EQ(open_client.streams.messages_in, 1u);
  const auto open_server = chat(fx.server.method_stats());
  EXPECT_EQ(open_server.streams.open, 1u);
  EXPECT_EQ(open_server.streams.messages_in, 1u);
  EXPECT_EQ(open_server.streams.messages_out, 1u);

  a.async_writes_done(boost::asio::use_future).get();
  EXPECT_EQ(a.async_read(boost::asio::use_future).get(), std::nullopt);
  a.async_finish(boost::asio::use_future).get();
  auto b = open();
  b.async_write("fail", boost::asio::use_future).get();
  EXPECT_THROW(b.async_finish(boost::asio::use_future).get(), std::exception);

  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        const auto s = chat(fx.server.method_stats());
        return s.streams.open == 0 && s.streams.opened == 2;
      },
      10s));
  for (const auto& m : {chat(fx.server.method_stats()), chat(fx.client->method_stats())}) {
    EXPECT_EQ(m.streams.opened, 2u);
    EXPECT_EQ(m.streams.open, 0u);
    EXPECT_EQ(m.streams.ends.ok, 1u);
    EXPECT_EQ(m.streams.ends.error, 1u);
    // By cause and status: the handler's INVALID_ARGUMENT, beside the usual codes at zero.
    EXPECT_EQ(ended(m, "ok", StatusCode::ok), 1u);
    EXPECT_EQ(ended(m, "error", StatusCode::invalid_argument), 1u);
    EXPECT_EQ(ended(m, "error", StatusCode::unknown), 0u);
    EXPECT_EQ(ended(m, "message_idle", StatusCode::deadline_exceeded), 0u);
    EXPECT_EQ(ended(m, "refused", StatusCode::unavailable), 0u);
  }
  // The side's totals still count every stream.
  EXPECT_EQ(fx.server.stats().streams.opened, 2u);
}

TEST(Introspection, RecentTimeoutsNameThePhaseAndOneTraceIdOnBothSides) {
  RpcFixture fx;
  // Connected first: a connect slower than 50 ms would time the call out in
  // another phase, before it was sent.
  ASSERT_FALSE(call(*fx.client, "echo", "warm up").ec);
  CallOptions quick;
  quick.timeout = 50ms;
  ASSERT_EQ(call(*fx.client, "sleep", "2000", quick).ec, errc::timeout);
  const auto client = fx.client->recent_timeouts();
  ASSERT_EQ(client.size(), 1u);
  EXPECT_FALSE(client[0].server_side);
  EXPECT_EQ(client[0].method, "sleep");
  EXPECT_EQ(client[0].phase, TimeoutPhase::sent_waiting);
  EXPECT_EQ(client[0].code, CallCode::timeout);
  EXPECT_EQ(client[0].budget, 50ms);
  EXPECT_GE(client[0].elapsed, 50ms);
  EXPECT_EQ(client[0].attempts, 1);
  EXPECT_EQ(client[0].provider,
            fx.server.local_endpoint().address().to_string() + ":" + std::to_string(fx.server.local_endpoint().port()));
  EXPECT_EQ(client[0].trace_id.size(), 32u);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return !fx.server.recent_timeouts().empty(); }, 10s));
  const auto server = fx.server.recent_timeouts();
  EXPECT_TRUE(server[0].server_side);
  EXPECT_EQ(server[0].phase, TimeoutPhase::in_handler);
  EXPECT_EQ(server[0].code, CallCode::server_timeout);
  EXPECT_EQ(server[0].trace_id, client[0].trace_id);
}

TEST(Introspection, RecentTimeoutsKeepTheLast256NewestFirst) {
  wheelrpc::rpc::detail::TimeoutLog log;
  for (int i = 0; i < 300; ++i) {
    wheelrpc::rpc::TimeoutRecord r;
    r.method = std::to_string(i);
    log.add(std::move(r));
  }
  const auto all = log.snapshot();
  ASSERT_EQ(all.size(), 256u);
  EXPECT_EQ(all.front().method, "299");
  EXPECT_EQ(all.back().method, "44");
}

TEST(Introspection, NestedCallsContinueTheTraceOfTheRequestBeingServed) {
  std::promise<std::pair<std::string, std::string>> seen;  // (outer's trace, inner's trace) as the handlers saw them
  auto seen_f = seen.get_future();
  wheelrpc::rpc::Client* client = nullptr;
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("outer", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      const auto outer = wheelrpc::rpc::current_trace();
      client->async_call("inner", "", {}, [&seen, outer, r = std::move(r)](error_code, Response inner) mutable {
        seen.set_value({outer ? outer->trace_id_hex() : "", inner.payload});
        r.reply("done");
      });
    });
    s.handle("inner", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      std::string tp;
      for (auto& [k, v] : req.attachments) {
        if (k == "traceparent") tp = v;
      }
      const auto t = TraceContext::parse(tp);
      r.reply(t ? t->trace_id_hex() : "none");
    });
  });
  client = &*fx.client;
  const auto root = TraceContext::make_root();
  CallOptions o;
  o.attachments = {{"traceparent", root.traceparent()}};
  ASSERT_FALSE(call(*fx.client, "outer", "", o).ec);
  ASSERT_EQ(seen_f.wait_for(10s), std::future_status::ready);
  const auto [outer, inner] = seen_f.get();
  EXPECT_EQ(outer, root.trace_id_hex());
  EXPECT_EQ(inner, root.trace_id_hex());
}

TEST(Introspection, ConnectionRowsOnBothSides) {
  RpcFixture fx;
  ASSERT_FALSE(call(*fx.client, "echo", "hello").ec);
  const auto client = fx.client->connections();
  ASSERT_EQ(client.size(), 1u);
  EXPECT_FALSE(client[0].server_side);
  EXPECT_EQ(client[0].state, wheelrpc::rpc::ConnectionInfo::State::ready);
  EXPECT_GE(client[0].frames_out, 2u);  // HELLO and the call
  EXPECT_GE(client[0].frames_in, 2u);
  EXPECT_GT(client[0].bytes_out, 0u);
  EXPECT_EQ(client[0].reconnect_attempts, 1u);
  EXPECT_GT(client[0].heartbeat.count(), 0);
  EXPECT_GE(client[0].last_read_age.count(), 0);
  EXPECT_EQ(client[0].in_flight, 0u);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return fx.server.connections().size() == 1; }, 10s));
  const auto server = fx.server.connections();
  EXPECT_TRUE(server[0].server_side);
  EXPECT_EQ(server[0].state, wheelrpc::rpc::ConnectionInfo::State::ready);
  EXPECT_EQ(server[0].remote, client[0].local);
  EXPECT_GE(server[0].frames_in, 2u);
}

TEST(Introspection, OfflineRefusesNewCallsAsUnavailableAndOnlineServesAgain) {
  RpcFixture fx;
  ASSERT_FALSE(call(*fx.client, "echo", "x").ec);
  EXPECT_TRUE(fx.server.state().serving());
  EXPECT_TRUE(fx.server.state().ready());
  fx.server.set_online(false);
  EXPECT_FALSE(fx.server.state().serving());
  const auto refused = call(*fx.client, "echo", "x");
  EXPECT_EQ(refused.ec, errc::unavailable);
  EXPECT_NE(refused.response.error_message.find("offline"), std::string::npos) << refused.response.error_message;
  EXPECT_GE(fx.server.stats().refused_offline, 1u);  // each attempt (unavailable is retried)
  fx.server.set_online(true);
  EXPECT_TRUE(fx.server.state().serving());
  EXPECT_FALSE(call(*fx.client, "echo", "y").ec);
}

TEST(Introspection, AsyncInvokeRunsAHandlerInProcessWithItsDeadline) {
  RpcFixture fx;
  auto invoke = [&](std::string m, std::string p, std::chrono::milliseconds t) {
    std::promise<Outcome> done;
    auto f = done.get_future();
    fx.server.async_invoke(std::move(m), std::move(p), t, [&done](error_code ec, Response r) {
      done.set_value({ec, std::move(r)});
    });
    EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
    return f.get();
  };
  const auto ok = invoke("echo", "hi", 0ms);
  EXPECT_FALSE(ok.ec);
  EXPECT_EQ(ok.response.payload, "hi");
  const auto timed_out = invoke("sleep", "2000", 50ms);
  EXPECT_EQ(timed_out.ec, errc::server_timeout);
  EXPECT_NE(timed_out.response.error_message.find("deadline"), std::string::npos) << timed_out.response.error_message;
  EXPECT_EQ(invoke("nope", "", 0ms).ec, errc::method_not_found);
  EXPECT_EQ(handled(*find(fx.server.method_stats(), "echo"), CallCode::ok), 1u);
  // use_future works too (an error becomes an exception).
  EXPECT_EQ(fx.server.async_invoke("echo", "f", 0ms, boost::asio::use_future).get().payload, "f");
}

TEST(Introspection, AGracefulShutdownWaitsForInProcessCalls) {
  // The handler hands its responder to the test, which replies only after the
  // shutdown has begun: the drain must not end before that reply. (A call
  // counted in flight but not yet admitted may still be refused by a shutdown,
  // so the test waits for the handler itself. The shutdown's completion and
  // the call's are both posted, in no set order.)
  std::promise<Responder> held;
  std::atomic<bool> replied{false};
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("hold", [&](wheelrpc::rpc::Request, Responder r) { held.set_value(std::move(r)); });
  });
  std::promise<void> invoked, shut;
  fx.server.async_invoke("hold", "", 0ms, [&](error_code ec, Response r) {
    EXPECT_FALSE(ec) << r.error_message;
    EXPECT_EQ(r.payload, "held");
    invoked.set_value();
  });
  auto responder_future = held.get_future();
  ASSERT_EQ(responder_future.wait_for(20s), std::future_status::ready);
  Responder responder = responder_future.get();
  fx.server.async_shutdown(10s, [&](error_code ec) {
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_TRUE(replied.load()) << "the drain ended before the in-process call replied";
    EXPECT_EQ(fx.server.stats().replies, 1u) << "the call's reply came first";
    shut.set_value();
  });
  replied = true;
  responder.reply("held");
  ASSERT_EQ(invoked.get_future().wait_for(20s), std::future_status::ready);
  ASSERT_EQ(shut.get_future().wait_for(20s), std::future_status::ready);
}

TEST(Introspection, MetricsOffKeepsNoMethodCells) {
  wheelrpc::rpc::ServerOptions so;
  so.metrics = false;
  wheelrpc::rpc::ClientOptions co;
  co.metrics = false;
  RpcFixture fx(so, co);
  ASSERT_FALSE(call(*fx.client, "echo", "x").ec);
  EXPECT_TRUE(fx.client->method_stats().empty());
  EXPECT_TRUE(fx.server.method_stats().empty());
  EXPECT_EQ(fx.client->stats().ok, 1u);
}
