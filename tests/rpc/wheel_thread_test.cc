// The timer's worker only decides (design §2): a hedge or a retry that blocks
// while it is being sent (a slow encoder, a full socket) must not hold up the
// wheel, so an unrelated timeout due at the same instant still runs on time.
// Time is driven by hand: `advance()` runs what is due on the calling thread,
// so a callback that did the send on the wheel would block `advance()` itself.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>

#include "client/call_driver.h"
#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Request;
using wheelrpc::rpc::Responder;
using wheelrpc::rpc::Response;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::detail::CallDriver;
using wheelrpc::test::IoThreads;
using wheelrpc::test::ManualTimer;
using wheelrpc::test::wait_until;

namespace {

// Blocks the client's sends of attempt `attempt` until released, and records
// which thread ran them.
struct BlockingSendHook {
  explicit BlockingSendHook(int attempt) {
    CallDriver::before_send_hook = [this, attempt](std::string_view, int number) {
      if (number != attempt) return;
      sender = std::this_thread::get_id();
      entered = true;
      // Bounded: a broken build must fail the test, not hang the suite.
      wait_until([this] { return released.load(); }, 20s);
    };
  }
  ~BlockingSendHook() {
    released = true;
    CallDriver::before_send_hook = nullptr;
  }
  std::atomic<bool> entered{false}, released{false};
  std::thread::id sender;
};

// Runs `mt.advance(d)` on its own thread; `returned` tells when it is back.
struct Advance {
  Advance(ManualTimer& mt, std::chrono::milliseconds d)
      : thread([this, &mt, d] {
          id = std::this_thread::get_id();
          mt.advance(d);
          returned = true;
        }) {}
  ~Advance() { thread.join(); }
  std::atomic<bool> returned{false};
  std::thread::id id;
  std::thread thread;
};

ClientOptions manual(ManualTimer& mt) {
  ClientOptions o;
  o.clock = &mt.clock;
  o.heartbeat = 1h;  // no channel tasks due while the test moves time
  o.retry.backoff.first = 10ms;
  o.retry.backoff.jitter = 0;
  return o;
}

std::future<std::pair<error_code, Response>> start(Client& client, CallOptions o) {
  auto p = std::make_shared<std::promise<std::pair<error_code, Response>>>();
  auto f = p->get_future();
  client.async_call("work", "", o, [p](error_code ec, Response r) { p->set_value({ec, std::move(r)}); });
  return f;
}

TEST(WheelThread, ABlockedHedgeSendDoesNotDelayAnUnrelatedTimeout) {
  ManualTimer mt;
  IoThreads io(2);
  Server slow(io.io.get_executor(), mt.timer), fast(io.io.get_executor(), mt.timer);
  std::vector<Responder> held;
  std::mutex held_mu;
  slow.handle("work", [&](Request, Responder r) {
    std::lock_guard lock(held_mu);
    held.push_back(std::move(r));
  });
  fast.handle("work", [](Request, Responder r) { r.reply("fast"); });
  ASSERT_FALSE(slow.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(fast.listen(wheelrpc::test::loopback0()));
  Client client(io.io.get_executor(), mt.timer, {slow.local_endpoint(), fast.local_endpoint()}, manual(mt));
  client.connect();
  ASSERT_TRUE(wait_until([&] {
    auto ps = client.providers();
    return ps[0].ready && ps[1].ready;
  }));

  BlockingSendHook hook(/*attempt=*/2);  // the hedge
  CallOptions o;
  o.timeout = 5s;
  o.idempotent = true;
  o.hedge_delay = 50ms;
  auto f = start(client, o);  // round robin: the slow provider first
  ASSERT_TRUE(wait_until([&] { return slow.stats().requests == 1; }));

  std::atomic<bool> unrelated{false};
  mt.timer.new_timeout([&] { unrelated = true; }, 50ms);
  Advance adv(mt, 50ms);  // the hedge and the unrelated timeout are both due
  ASSERT_TRUE(wait_until([&] { return hook.entered.load(); })) << "the hedge was never sent";
  EXPECT_TRUE(wait_until([&] { return adv.returned.load(); }, 5s)) << "the wheel waited for the blocked hedge send";
  EXPECT_FALSE(hook.released.load()) << "the hedge is still blocked";
  EXPECT_TRUE(unrelated.load()) << "the unrelated timeout ran in the same advance, on time";
  EXPECT_NE(hook.sender, adv.id) << "the hedge was sent on the executor, not the wheel's thread";
  hook.released = true;
  auto out = f.get();
  EXPECT_FALSE(out.first) << out.second.error_message;
  EXPECT_EQ(out.second.payload, "fast");
  client.close();
  slow.stop();
  fast.stop();
  std::lock_guard lock(held_mu);
  held.clear();
}

TEST(WheelThread, ABlockedRetrySendDoesNotDelayAnUnrelatedTimeout) {
  ManualTimer mt;
  IoThreads io(2);
  Server busy(io.io.get_executor(), mt.timer), fine(io.io.get_executor(), mt.timer);
  busy.handle("work", [](Request, Responder r) { r.fail(errc::too_many_pending, "busy"); });  // overloaded: retried
  fine.handle("work", [](Request, Responder r) { r.reply("fine"); });
  ASSERT_FALSE(busy.listen(wheelrpc::test::loopback0()));
  ASSERT_FALSE(fine.listen(wheelrpc::test::loopback0()));
  Client client(io.io.get_executor(), mt.timer, {busy.local_endpoint(), fine.local_endpoint()}, manual(mt));
  client.connect();
  ASSERT_TRUE(wait_until([&] {
    auto ps = client.providers();
    return ps[0].ready && ps[1].ready;
  }));

  BlockingSendHook hook(/*attempt=*/2);  // the retry
  CallOptions o;
  o.timeout = 5s;
  const auto scheduled_before = mt.timer.stats().scheduled;
  auto f = start(client, o);  // round robin: the busy provider first
  ASSERT_TRUE(wait_until([&] { return client.stats().retries == 1; })) << "the retry's backoff never started";
  // The backoff goes on the wheel a moment after the retry is counted, due
  // 10 ms from the wheel's time then: time must not move before. It is one of
  // the three timeouts the call schedules (with its attempt's sweep and its
  // own deadline once it has no attempt in flight).
  ASSERT_TRUE(wait_until([&] { return mt.timer.stats().scheduled - scheduled_before >= 3; }))
      << "the retry's backoff is not on the wheel";

  std::atomic<bool> unrelated{false};
  mt.timer.new_timeout([&] { unrelated = true; }, 10ms);
  Advance adv(mt, 10ms);  // the end of the backoff and the unrelated timeout
  ASSERT_TRUE(wait_until([&] { return hook.entered.load(); })) << "the retry was never sent";
  EXPECT_TRUE(wait_until([&] { return adv.returned.load(); }, 5s)) << "the wheel waited for the blocked retry send";
  EXPECT_TRUE(unrelated.load());
  EXPECT_NE(hook.sender, adv.id);
  hook.released = true;
  auto out = f.get();
  EXPECT_FALSE(out.first) << out.second.error_message;
  EXPECT_EQ(out.second.payload, "fine");
  client.close();
  busy.stop();
  fine.stop();
}

TEST(WheelThread, ADeadlineFiresOnTheWheelButCompletesOnTheExecutor) {
  ManualTimer mt;
  IoThreads io(1);
  Server server(io.io.get_executor(), mt.timer);
  std::vector<Responder> held;
  std::mutex held_mu;
  server.handle("work", [&](Request, Responder r) {
    std::lock_guard lock(held_mu);
    held.push_back(std::move(r));
  });
  ASSERT_FALSE(server.listen(wheelrpc::test::loopback0()));
  Client client(io.io.get_executor(), mt.timer, {server.local_endpoint()}, manual(mt));
  CallOptions o;
  o.timeout = 100ms;
  std::atomic<bool> done{false};
  std::thread::id completed_on;
  client.async_call("work", "", o, [&](error_code ec, Response) {
    EXPECT_EQ(ec, errc::timeout);
    completed_on = std::this_thread::get_id();
    done = true;
  });
  ASSERT_TRUE(wait_until([&] { return server.stats().requests == 1; }));
  mt.advance(99ms);
  EXPECT_FALSE(wait_until([&] { return done.load(); }, 50ms)) << "a tick early";
  Advance adv(mt, 1ms);
  ASSERT_TRUE(wait_until([&] { return done.load(); }));
  ASSERT_TRUE(wait_until([&] { return adv.returned.load(); }));
  EXPECT_NE(completed_on, adv.id) << "the completion ran on the executor";
  client.close();
  server.stop();
  std::lock_guard lock(held_mu);
  held.clear();
}

}  // namespace
