// A server under overload: deadline-aware admission sheds what nobody waits
// for (spent when read, or spent waiting for the handler executor), and the
// server-wide concurrency limit refuses beyond it at once with
// resource_exhausted, which clients retry on another provider.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/read.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/frame.h>

#include "support/held_responders.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace transport = wheelrpc::transport;
using wheelrpc::test::IoThreads;
using wheelrpc::test::RpcFixture;

namespace {

using Held = wheelrpc::test::HeldResponders;

/// A handler executor of one thread the test can hold busy.
struct BlockablePool {
  IoThreads threads{1};
  wheelrpc::test::Latch started{1};
  wheelrpc::test::Latch gate{1};
  /// Occupies the pool's thread until open().
  void block() {
    asio::post(threads.io, [this] {
      started.count_down();
      gate.wait_for(60s);
    });
    ASSERT_TRUE(started.wait_for(30s));
  }
  void open() { gate.count_down(); }
};

rpc::MethodStats stats_of(const rpc::Server& server, const std::string& method) {
  for (auto& m : server.method_stats()) {
    if (m.method == method) return m;
  }
  return {};
}

std::uint8_t status_byte(rpc::Status s) { return static_cast<std::uint8_t>(s); }

/// A call with `timeout` and no retries.
rpc::CallOptions once(std::chrono::milliseconds timeout) {
  rpc::CallOptions o;
  o.timeout = timeout;
  o.retries = 0;
  return o;
}

}  // namespace

TEST(Overload, ARequestWhoseBudgetIsSpentWhenReadIsShedWithoutRunningItsHandler) {
  std::atomic<int> ran{0};
  RpcFixture fx({}, {}, 2, [&](rpc::Server& s) {
    // Inline handlers: a busy one delays the frames read with it.
    s.handle("spin", [](rpc::Request, rpc::Responder r) {
      const auto end = std::chrono::steady_clock::now() + 50ms;
      while (std::chrono::steady_clock::now() < end) {
      }
      r.reply("spun");
    });
    s.handle("count", [&](rpc::Request, rpc::Responder r) {
      ran.fetch_add(1);
      r.reply("counted");
    });
  });
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect(fx.server.local_endpoint());
  auto frame = [](std::uint8_t flags, std::uint64_t id, std::string method, transport::Attachments a,
                  std::uint32_t deadline_ms) {
    transport::Frame f;
    f.header.flags = flags;
    f.header.request_id = id;
    f.header.deadline_ms = deadline_ms;
    f.method = std::move(method);
    f.attachments = std::move(a);
    std::string out;
    transport::encode_frame(f, out);
    return out;
  };
  using namespace wheelrpc::transport;
  const std::uint8_t call = kFlagRequest | kFlagTwoWay;
  asio::write(socket,
              asio::buffer(frame(kFlagEvent | call, 1, "hello", {{"version", "1"}, {"heartbeat_ms", "15000"}}, 0)));
  // Both requests in one write, so the server reads them together: the second
  // one's 5 ms are spent while the first one's handler runs.
  asio::write(socket, asio::buffer(frame(call, 2, "spin", {}, 0) + frame(call, 3, "count", {}, 5)));
  FrameDecoder decoder;
  std::vector<std::uint8_t> buf;
  std::vector<Frame> replies;
  while (replies.size() < 3) {  // HELLO and two replies
    std::array<std::uint8_t, 4096> chunk{};
    boost::system::error_code ec;
    const auto n = socket.read_some(asio::buffer(chunk), ec);
    ASSERT_FALSE(ec) << ec.message();
    buf.insert(buf.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    for (;;) {
      Frame f;
      std::size_t used = 0;
      const auto r = decoder.decode(buf.data(), buf.size(), f, used);
      ASSERT_NE(r, FrameDecoder::Result::error);
      if (r == FrameDecoder::Result::need_more) break;
      buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(used));
      replies.push_back(std::move(f));
    }
  }
  ASSERT_EQ(replies[2].header.request_id, 3u);
  EXPECT_EQ(replies[2].header.status, status_byte(rpc::Status::server_timeout));
  EXPECT_NE(replies[2].payload.find("had passed when the server got to it"), std::string::npos) << replies[2].payload;
  EXPECT_EQ(ran.load(), 0) << "the handler of a shed request never runs";
  EXPECT_EQ(fx.server.stats().shed, 1u);
  EXPECT_EQ(fx.server.stats().server_timeouts, 1u);
  EXPECT_EQ(stats_of(fx.server, "count").shed, 1u);
  EXPECT_EQ(stats_of(fx.server, "spin").shed, 0u);
}

namespace {

/// A server whose handlers run on a pool the test holds busy, on a manual
/// clock (the deadline on the wheel is far away in real time).
struct QueuedFixture {
  explicit QueuedFixture(bool admission, std::chrono::milliseconds queue_target = rpc::OverloadOptions{}.queue_target) {
    rpc::ServerOptions so;
    so.handler_executor = pool.threads.io.get_executor();
    so.overload.deadline_admission = admission;
    so.overload.queue_target = queue_target;
    so.clock = &clock;
    fx.emplace(so, rpc::ClientOptions{}, 2, [this](rpc::Server& s) {
      s.handle("count", [this](rpc::Request, rpc::Responder r) {
        ran.fetch_add(1);
        r.reply("counted");
      });
      // Takes 10 s of the server's (manual) time on the handler thread.
      s.handle("work", [this](rpc::Request, rpc::Responder r) {
        ran.fetch_add(1);
        clock.advance(10s);
        r.reply("worked");
      });
    });
  }
  ~QueuedFixture() {
    pool.open();
    // Every job given to the pool (one thread: in order) has returned and let
    // go of its request before the server, its timer and its threads go: a
    // handler's last reference may hold the server's core.
    std::promise<void> drained;
    asio::post(pool.threads.io, [&drained] { drained.set_value(); });
    EXPECT_EQ(drained.get_future().wait_for(60s), std::future_status::ready);
    fx.reset();
    pool.threads.stop();
  }
  /// Starts a call of `method` with options `o` and waits until the server
  /// has queued it for the (held) pool.
  std::future<wheelrpc::test::Outcome> queue_call(const std::string& method, const rpc::CallOptions& o) {
    const auto before = fx->server.stats().queued;
    auto f = wheelrpc::test::start(*fx->client, method, "", o);
    EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx->server.stats().queued == before + 1; }, 30s));
    return f;
  }
  BlockablePool pool;
  wheelrpc::timer::ManualClock clock;
  std::atomic<int> ran{0};
  std::optional<RpcFixture> fx;
};

}  // namespace

TEST(Overload, ARequestThatWaitsInTheQueuePastItsBudgetIsShedWithoutRunningItsHandler) {
  QueuedFixture q(/*admission=*/true);
  q.pool.block();
  const auto o = once(30s);  // on the wire; the server's clock is the manual one
  auto pending = q.queue_call("count", o);
  q.clock.advance(31s);  // it waited longer than its budget
  q.pool.open();
  ASSERT_EQ(pending.wait_for(30s), std::future_status::ready);
  const auto out = pending.get();
  EXPECT_EQ(out.ec, rpc::errc::server_timeout);
  EXPECT_NE(out.response.error_message.find("for a handler thread, past its deadline"), std::string::npos)
      << out.response.error_message;
  EXPECT_EQ(q.ran.load(), 0);
  const auto s = q.fx->server.stats();
  EXPECT_EQ(s.shed, 1u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(stats_of(q.fx->server, "count").shed, 1u);
  // A request that did not wait that long runs.
  EXPECT_FALSE(wheelrpc::test::call_and_wait(*q.fx->client, "count", "", o).ec);
  EXPECT_EQ(q.ran.load(), 1);
}

TEST(Overload, AQueuedRequestWithLessBudgetLeftThanItsHandlerTakesIsShed) {
  QueuedFixture q(/*admission=*/true, /*queue_target=*/0ms);  // no controlled delay: the queue stands 42 s
  const auto o = once(60s);                                   // on the wire; the server's clock is the manual one
  // Two requests teach the server that "work" takes 10 s of a handler thread.
  for (int i = 0; i < 2; ++i) ASSERT_FALSE(wheelrpc::test::call_and_wait(*q.fx->client, "work", "", o).ec);
  q.pool.block();
  auto enough = q.queue_call("work", o);
  rpc::CallOptions shorter = o;
  shorter.timeout = 58s;
  auto too_little = q.queue_call("work", shorter);
  q.clock.advance(42s);
  q.pool.open();
  // The first has 18 s left when its turn comes: it runs (10 s). Then the
  // second has 6 s left, less than the 10 s the handler takes: shed, though
  // its deadline has not passed.
  ASSERT_EQ(enough.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(enough.get().ec);
  ASSERT_EQ(too_little.wait_for(30s), std::future_status::ready);
  const auto out = too_little.get();
  EXPECT_EQ(out.ec, rpc::errc::server_timeout);
  EXPECT_NE(out.response.error_message.find("6000000 us of its budget left, less than the 10000000 us its handler "
                                            "has recently taken"),
            std::string::npos)
      << out.response.error_message;
  EXPECT_EQ(q.ran.load(), 3);
  EXPECT_EQ(q.fx->server.stats().shed, 1u);
  EXPECT_EQ(stats_of(q.fx->server, "work").shed, 1u);
}

TEST(Overload, InAQueueThatHasNotEmptiedForAnIntervalWhatWaitedPastTheTargetIsShed) {
  QueuedFixture q(/*admission=*/true);  // target 5 ms, interval 100 ms
  q.pool.block();
  const auto o = once(60s);  // far from its deadline throughout
  auto first = q.queue_call("count", o);
  auto second = q.queue_call("count", o);
  q.clock.advance(150ms);  // both waited 150 ms; the queue has stood as long
  q.pool.open();
  // The first leaves one behind it, in a queue not empty for 150 ms: shed.
  // The second empties the queue when its turn comes: it runs.
  ASSERT_EQ(first.wait_for(30s), std::future_status::ready);
  const auto out = first.get();
  EXPECT_EQ(out.ec, rpc::errc::server_timeout);
  EXPECT_NE(out.response.error_message.find("waited 150000 us for a handler thread in a queue not empty for 150 ms, "
                                            "over its target of 5000 us (ServerOptions::overload.queue_target"),
            std::string::npos)
      << out.response.error_message;
  ASSERT_EQ(second.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(second.get().ec);
  EXPECT_EQ(q.ran.load(), 1);
  EXPECT_EQ(q.fx->server.stats().shed, 1u);
  EXPECT_EQ(stats_of(q.fx->server, "count").shed, 1u);
}

TEST(Overload, InAStandingQueueASlowHandlersRequestMayWaitTwiceItsTimeBeforeItIsShed) {
  QueuedFixture q(/*admission=*/true);  // target 5 ms, interval 100 ms
  const auto o = once(60s);
  // "work" takes 10 s of a handler thread: its requests' target is 20 s.
  for (int i = 0; i < 2; ++i) ASSERT_FALSE(wheelrpc::test::call_and_wait(*q.fx->client, "work", "", o).ec);
  q.pool.block();
  std::vector<std::future<wheelrpc::test::Outcome>> calls;
  for (int n = 0; n < 3; ++n) calls.push_back(q.queue_call("work", o));
  q.clock.advance(15s);
  q.pool.open();
  // The first waited 15 s, under its 20 s: it runs (10 s). The second has
  // then waited 25 s in a queue that never emptied: shed. The third empties
  // the queue: it runs.
  for (auto& c : calls) ASSERT_EQ(c.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(calls[0].get().ec);
  const auto shed = calls[1].get();
  EXPECT_EQ(shed.ec, rpc::errc::server_timeout);
  EXPECT_NE(shed.response.error_message.find("waited 25000000 us for a handler thread in a queue not empty for "
                                             "25000 ms, over its target of 20000000 us"),
            std::string::npos)
      << shed.response.error_message;
  EXPECT_FALSE(calls[2].get().ec);
  EXPECT_EQ(q.ran.load(), 4);
  EXPECT_EQ(q.fx->server.stats().shed, 1u);
}

TEST(Overload, AQueueThatEmptiesWithinTheIntervalShedsNothingForItsDelay) {
  QueuedFixture q(/*admission=*/true);
  q.pool.block();
  const auto o = once(60s);
  auto first = q.queue_call("count", o);
  auto second = q.queue_call("count", o);
  q.clock.advance(80ms);  // past the target, but the queue was empty 80 ms ago: not standing
  q.pool.open();
  ASSERT_EQ(first.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(first.get().ec);
  ASSERT_EQ(second.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(second.get().ec);
  EXPECT_EQ(q.ran.load(), 2);
  EXPECT_EQ(q.fx->server.stats().shed, 0u);
}

TEST(Overload, WithAdmissionOffAnExpiredRequestRunsItsHandler) {
  QueuedFixture q(/*admission=*/false);
  q.pool.block();
  const auto o = once(30s);
  auto pending = q.queue_call("count", o);
  q.clock.advance(31s);
  q.pool.open();
  ASSERT_EQ(pending.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(q.ran.load(), 1);
  EXPECT_EQ(q.fx->server.stats().shed, 0u);
}

TEST(Overload, TheDeadlineAnswersARequestStillQueuedAndItsHandlerNeverRuns) {
  QueuedFixture q(/*admission=*/true);
  q.pool.block();
  const auto o = once(300ms);  // the wheel (real time) answers while the pool is held
  auto pending = wheelrpc::test::start(*q.fx->client, "count", "", o);
  ASSERT_EQ(pending.wait_for(30s), std::future_status::ready);
  const auto out = pending.get();
  EXPECT_TRUE(out.ec == rpc::errc::server_timeout || out.ec == rpc::errc::timeout) << out.ec.message();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return q.fx->server.stats().server_timeouts == 1; }, 30s));
  const auto timeouts = q.fx->server.recent_timeouts();
  ASSERT_EQ(timeouts.size(), 1u);
  EXPECT_EQ(timeouts[0].phase, rpc::TimeoutPhase::queued);
  q.pool.open();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return q.fx->server.stats().shed == 1; }, 30s));
  EXPECT_EQ(q.ran.load(), 0);
}

TEST(Overload, AnAutomaticLimitRefusesBeyondItAtOnceWithResourceExhausted) {
  Held held;
  rpc::AutoLimitOptions lo;
  lo.initial_limit = lo.min_limit = lo.max_limit = 2;
  rpc::ServerOptions so;
  so.overload.max_concurrency = rpc::ConcurrencyLimit::automatic(lo);
  RpcFixture fx(so, {}, 2, [&](rpc::Server& s) {
    s.handle("hold", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  });
  EXPECT_EQ(fx.server.stats().concurrency_limit, 2u);
  const auto o = once(20s);
  auto a = wheelrpc::test::start(*fx.client, "hold", "", o);
  auto b = wheelrpc::test::start(*fx.client, "hold", "", o);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 2; }, 30s));
  const auto refused = wheelrpc::test::call_and_wait(*fx.client, "echo", "", o);
  EXPECT_EQ(refused.ec, rpc::errc::resource_exhausted) << "the limit is the whole server's";
  EXPECT_NE(refused.response.error_message.find("concurrency limit of 2 requests at once (auto"), std::string::npos)
      << refused.response.error_message;
  EXPECT_EQ(fx.server.stats().refused_overloaded, 1u);
  held.release_all();
  EXPECT_FALSE(a.get().ec);
  EXPECT_FALSE(b.get().ec);
  EXPECT_FALSE(wheelrpc::test::call_and_wait(*fx.client, "echo", "", o).ec) << "slots given back by the replies";
}

TEST(Overload, RefusedByTheLimitACallIsRetriedOnAnotherProvider) {
  Held held;
  IoThreads threads(2);
  wheelrpc::timer::HashedWheelTimer timer;
  rpc::AutoLimitOptions lo;
  lo.initial_limit = lo.min_limit = lo.max_limit = 1;
  rpc::ServerOptions limited;
  limited.overload.max_concurrency = rpc::ConcurrencyLimit::automatic(lo);
  rpc::Server busy(threads.io.get_executor(), timer, limited), spare(threads.io.get_executor(), timer, limited);
  busy.handle("work", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  spare.handle("work", [](rpc::Request, rpc::Responder r) { r.reply("spare"); });
  ASSERT_FALSE(busy.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(spare.listen(wheelrpc::test::loopback0()));
  // An in-process call takes the busy server's only place under its limit.
  auto holding = busy.async_invoke("work", "", 20s, boost::asio::use_future);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 1; }, 30s));
  rpc::ClientOptions rr;
  rr.load_balance = rpc::LoadBalance::round_robin;
  rpc::Client both(threads.io.get_executor(), timer, {busy.local_endpoint(), spare.local_endpoint()}, rr);
  rpc::CallOptions o;
  o.timeout = 20s;
  both.connect();
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        const auto ps = both.providers();
        return ps.size() == 2 && ps[0].ready && ps[1].ready;
      },
      30s));
  for (int i = 0; i < 4; ++i) {
    const auto out = wheelrpc::test::call_and_wait(both, "work", "", o);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "spare");
  }
  EXPECT_GE(busy.stats().refused_overloaded, 1u);
  held.release_all();
  ASSERT_EQ(holding.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(holding.get().payload, "done");
  both.close();
  busy.stop();
  spare.stop();
  threads.stop();
}

TEST(Overload, HandlersOnTheHandlerExecutorReplyAsInline) {
  IoThreads pool(2);
  rpc::ServerOptions so;
  so.handler_executor = pool.io.get_executor();
  so.overload.max_concurrency = rpc::ConcurrencyLimit::automatic();
  {
    RpcFixture fx(so);
    for (int i = 0; i < 50; ++i) {
      const auto out = wheelrpc::test::call_and_wait(*fx.client, "echo", std::to_string(i));
      ASSERT_FALSE(out.ec) << out.response.error_message;
      EXPECT_EQ(out.response.payload, std::to_string(i));
    }
    const auto s = fx.server.stats();
    EXPECT_EQ(s.replies, 50u);
    EXPECT_EQ(s.shed, 0u);
    EXPECT_EQ(s.queued, 0u);
    EXPECT_GE(s.concurrency_limit, 2u);
    pool.stop();  // its jobs returned (and let go of their requests) before the server goes
  }
}

TEST(Overload, InvalidLimitsAreRefusedAtConstruction) {
  IoThreads threads(1);
  wheelrpc::timer::HashedWheelTimer timer;
  rpc::ServerOptions so;
  so.overload.max_concurrency = rpc::ConcurrencyLimit::fixed(0);
  EXPECT_THROW(rpc::Server(threads.io.get_executor(), timer, so), std::invalid_argument);
  const auto refused = [&](std::chrono::milliseconds target, std::chrono::milliseconds interval) {
    rpc::ServerOptions q;
    q.overload.queue_target = target;
    q.overload.queue_interval = interval;
    try {
      rpc::Server server(threads.io.get_executor(), timer, q);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused(-1ms, 100ms).find("queue_target"), std::string::npos);
  EXPECT_NE(refused(100ms, 100ms).find("queue_target"), std::string::npos);
  EXPECT_NE(refused(0ms, 0ms).find("queue_interval"), std::string::npos);
  EXPECT_NE(refused(0ms, std::chrono::milliseconds(0x100000000LL)).find("queue_interval"), std::string::npos);
  EXPECT_EQ(refused(0ms, 100ms), "");  // no controlled delay
  EXPECT_EQ(refused(5ms, 100ms), "");
}
