// FailbackQueue on a manual timer: results in, retries scheduled on the wheel,
// resends posted to an executor run by one thread. Time moves only when the
// test advances the manual clock; waits for the posted resend are bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/options.h>

#include "client/failback_queue.h"
#include "support/manual_timer.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

namespace {

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::FailbackOptions;
using wheelrpc::rpc::detail::FailbackQueue;
using wheelrpc::test::IoThreads;
using wheelrpc::test::ManualTimer;
using wheelrpc::test::wait_until;
using Delivery = FailbackQueue::Delivery;

FailbackOptions failback(std::chrono::milliseconds interval, unsigned retries, std::size_t max_pending) {
  FailbackOptions o;
  o.interval = interval;
  o.retries = retries;
  o.max_pending = max_pending;
  return o;
}

Delivery delivery(std::string method, unsigned tries = 1) {
  Delivery d;
  d.method = std::move(method);
  d.payload = "x";
  d.tries = tries;
  return d;
}

/// A queue whose resends are recorded (on the executor's thread).
struct QueueFixture {
  explicit QueueFixture(FailbackOptions o, int io_threads = 1) : io(io_threads) {
    queue = std::make_shared<FailbackQueue>(io.io.get_executor(), mt.timer, o, [this](Delivery d) {
      std::lock_guard lock(mu);
      sent.push_back(std::move(d));
    });
  }
  ~QueueFixture() {
    queue->close();
    io.stop();
  }
  std::size_t sent_count() {
    std::lock_guard lock(mu);
    return sent.size();
  }
  Delivery sent_at(std::size_t i) {
    std::lock_guard lock(mu);
    return sent.at(i);
  }
  /// Runs everything posted to the executor so far (one I/O thread: in order).
  void flush() {
    wheelrpc::test::Latch done(1);
    boost::asio::post(io.io, [&] { done.count_down(); });
    ASSERT_TRUE(done.wait_for(10s));
  }

  ManualTimer mt;  // outlives the I/O thread
  IoThreads io;
  std::shared_ptr<FailbackQueue> queue;
  std::mutex mu;
  std::vector<Delivery> sent;
};

TEST(FailbackQueue, ASuccessIsCountedAsDelivered) {
  QueueFixture f(failback(100ms, 3, 10));
  f.queue->on_result(delivery("a"), {}, "");
  f.queue->on_result(delivery("b", 3), {}, "");
  EXPECT_EQ(f.queue->delivered(), 2u);
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.queue->retries(), 0u);
  EXPECT_EQ(f.queue->given_up(), 0u);
  EXPECT_EQ(f.mt.timer.stats().pending, 0u) << "nothing scheduled";
}

TEST(FailbackQueue, OnlyErrorsALaterTryMayFixAreFixable) {
  const struct {
    errc code;
    bool fixable;
  } rows[] = {
      {errc::unavailable, true},    {errc::connection_lost, true},  {errc::timeout, true},
      {errc::server_timeout, true}, {errc::too_many_pending, true}, {errc::method_not_found, false},
      {errc::bad_request, false},   {errc::server_error, false},    {errc::cancelled, false},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(FailbackQueue::fixable(make_error_code(r.code)), r.fixable) << make_error_code(r.code).message();
  }
  EXPECT_FALSE(FailbackQueue::fixable(boost::asio::error::operation_aborted));
}

TEST(FailbackQueue, AFixableErrorIsSentAgainExactlyAfterTheInterval) {
  QueueFixture f(failback(100ms, 3, 10));
  f.queue->on_result(delivery("work"), errc::unavailable, "no connection");
  EXPECT_EQ(f.queue->pending(), 1u);
  EXPECT_EQ(f.mt.timer.stats().pending, 1u) << "one RetryTimerTask on the wheel";

  EXPECT_EQ(f.mt.advance(99ms), 0u);
  f.flush();
  EXPECT_EQ(f.sent_count(), 0u) << "not a tick early";
  EXPECT_EQ(f.queue->pending(), 1u);

  EXPECT_EQ(f.mt.advance(1ms), 1u);  // the task only posts the resend
  ASSERT_TRUE(wait_until([&] { return f.sent_count() == 1; }));
  const auto d = f.sent_at(0);
  EXPECT_EQ(d.method, "work");
  EXPECT_EQ(d.payload, "x");
  EXPECT_EQ(d.tries, 2u) << "the resend counts itself";
  EXPECT_EQ(f.queue->retries(), 1u);
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.queue->given_up(), 0u);
}

TEST(FailbackQueue, EachFailedTryWaitsItsOwnInterval) {
  QueueFixture f(failback(50ms, 3, 10));
  f.queue->on_result(delivery("work"), errc::connection_lost, "lost");
  f.mt.advance(50ms);
  ASSERT_TRUE(wait_until([&] { return f.sent_count() == 1; }));
  // The resend failed too: another interval from now.
  f.mt.advance(30ms);
  f.queue->on_result(f.sent_at(0), errc::timeout, "timed out");
  EXPECT_EQ(f.mt.advance(49ms), 0u);
  f.flush();
  EXPECT_EQ(f.sent_count(), 1u);
  EXPECT_EQ(f.mt.advance(1ms), 1u);
  ASSERT_TRUE(wait_until([&] { return f.sent_count() == 2; }));
  EXPECT_EQ(f.sent_at(1).tries, 3u);
  EXPECT_EQ(f.queue->retries(), 2u);
}

TEST(FailbackQueue, AnErrorRetryingCannotFixIsGivenUpAtOnce) {
  QueueFixture f(failback(100ms, 3, 10));
  for (errc e : {errc::method_not_found, errc::bad_request, errc::server_error}) {
    f.queue->on_result(delivery("work"), e, "no");
  }
  EXPECT_EQ(f.queue->given_up(), 3u);
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.mt.timer.stats().pending, 0u);
}

TEST(FailbackQueue, ACancelledDeliveryIsNeitherRetriedNorCounted) {
  QueueFixture f(failback(100ms, 3, 10));
  f.queue->on_result(delivery("work"), errc::cancelled, "client closed");
  EXPECT_EQ(f.queue->given_up(), 0u);
  EXPECT_EQ(f.queue->delivered(), 0u);
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.mt.timer.stats().pending, 0u);
}

TEST(FailbackQueue, ADeliveryOutOfTriesIsGivenUp) {
  QueueFixture f(failback(100ms, 2, 10));  // the first try and 2 retries
  const struct {
    unsigned tries;
    bool retried;
  } rows[] = {{1, true}, {2, true}, {3, false}, {4, false}};
  std::uint64_t given_up = 0, pending = 0;
  for (const auto& r : rows) {
    f.queue->on_result(delivery("work", r.tries), errc::unavailable, "down");
    (r.retried ? pending : given_up) += 1;
    EXPECT_EQ(f.queue->given_up(), given_up) << "after try " << r.tries;
    EXPECT_EQ(f.queue->pending(), pending) << "after try " << r.tries;
  }
}

TEST(FailbackQueue, FailuresBeyondMaxPendingAreDropped) {
  QueueFixture f(failback(100ms, 3, 2));
  for (int i = 0; i < 5; ++i) f.queue->on_result(delivery("work"), errc::unavailable, "down");
  EXPECT_EQ(f.queue->pending(), 2u);
  EXPECT_EQ(f.queue->dropped(), 3u);
  EXPECT_EQ(f.mt.timer.stats().pending, 2u);
  // Once the waiting ones are resent there is room again.
  f.mt.advance(100ms);
  ASSERT_TRUE(wait_until([&] { return f.sent_count() == 2; }));
  EXPECT_EQ(f.queue->pending(), 0u);
  f.queue->on_result(delivery("work"), errc::unavailable, "down");
  EXPECT_EQ(f.queue->pending(), 1u);
  EXPECT_EQ(f.queue->dropped(), 3u);
}

TEST(FailbackQueue, CloseCancelsWaitingRetriesAndLaterResultsAreIgnored) {
  QueueFixture f(failback(100ms, 3, 10));
  f.queue->on_result(delivery("a"), errc::unavailable, "down");
  f.queue->on_result(delivery("b"), errc::timeout, "slow");
  ASSERT_EQ(f.queue->pending(), 2u);
  f.queue->close();
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.mt.timer.stats().pending, 0u) << "both retry tasks cancelled";
  EXPECT_EQ(f.mt.advance(1s), 0u);
  // Later results: not retried, and not counted as given up either.
  f.queue->on_result(delivery("c"), errc::unavailable, "down");
  EXPECT_EQ(f.queue->pending(), 0u);
  EXPECT_EQ(f.mt.timer.stats().pending, 0u);
  f.flush();
  EXPECT_EQ(f.sent_count(), 0u);
  EXPECT_EQ(f.queue->retries(), 0u);
  f.queue->close();  // idempotent
}

TEST(FailbackQueue, AResendPostedBeforeCloseButRunAfterItIsNotSent) {
  // The executor's thread starts only after close(): the retry task has run
  // and posted its resend, which then finds the queue closed.
  ManualTimer mt;
  boost::asio::io_context io;
  int sent = 0;
  auto queue =
      std::make_shared<FailbackQueue>(io.get_executor(), mt.timer, failback(100ms, 3, 10), [&](Delivery) { ++sent; });
  queue->on_result(delivery("work"), errc::unavailable, "down");
  EXPECT_EQ(mt.advance(100ms), 1u);  // posted, not run
  queue->close();
  EXPECT_EQ(io.poll(), 1u) << "the posted resend ran";
  EXPECT_EQ(sent, 0);
  EXPECT_EQ(queue->retries(), 0u);
}

TEST(FailbackQueue, NoResendIsPostedOnceTheQueueIsGone) {
  ManualTimer mt;
  boost::asio::io_context io;
  int sent = 0;
  auto queue =
      std::make_shared<FailbackQueue>(io.get_executor(), mt.timer, failback(100ms, 3, 10), [&](Delivery) { ++sent; });
  queue->on_result(delivery("work"), errc::unavailable, "down");
  queue.reset();  // the wheel still holds the task, which holds only a weak reference
  mt.advance(100ms);
  EXPECT_EQ(io.poll(), 0u) << "nothing posted";
  EXPECT_EQ(sent, 0);
}

}  // namespace
