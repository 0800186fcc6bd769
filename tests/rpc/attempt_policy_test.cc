// The decisions of a call's attempts, as tables: pure functions of explicit
// time points and plans. No clock, no client, no socket.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/rpc/errc.h>

#include "client/attempt_policy.h"

namespace {

using namespace std::chrono_literals;
using wheelrpc::rpc::BackoffOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::detail::attempt_budget;
using wheelrpc::rpc::detail::attempt_note;
using wheelrpc::rpc::detail::AttemptPlan;
using wheelrpc::rpc::detail::deadline_outcome;
using wheelrpc::rpc::detail::DeadlineFacts;
using wheelrpc::rpc::detail::decide_retry;
using wheelrpc::rpc::detail::describe;
using wheelrpc::rpc::detail::Failure;
using wheelrpc::rpc::detail::failure_of;
using wheelrpc::rpc::detail::final_message;
using wheelrpc::rpc::detail::kNever;
using wheelrpc::rpc::detail::may_retry;
using wheelrpc::rpc::detail::next_hedge;
using wheelrpc::rpc::detail::retry_delay;
using wheelrpc::rpc::detail::RetryVerdict;
using wheelrpc::rpc::detail::TimePoint;
using wheelrpc::rpc::Status;

const TimePoint t0 = TimePoint(1h);

const char* name(Failure f) {
  switch (f) {
    case Failure::connection_lost: return "connection_lost";
    case Failure::not_sent: return "not_sent";
    case Failure::write_queue_full: return "write_queue_full";
    case Failure::unavailable: return "unavailable";
    case Failure::overloaded: return "overloaded";
    case Failure::shutting_down: return "shutting_down";
    case Failure::attempt_timeout: return "attempt_timeout";
    case Failure::server_timeout: return "server_timeout";
    case Failure::application: return "application";
  }
  return "?";
}

const char* name(RetryVerdict v) {
  switch (v) {
    case RetryVerdict::retry: return "retry";
    case RetryVerdict::not_retryable: return "not_retryable";
    case RetryVerdict::out_of_attempts: return "out_of_attempts";
    case RetryVerdict::no_time: return "no_time";
    case RetryVerdict::budget_refused: return "budget_refused";
  }
  return "?";
}

// ---------------------------------------------------------------- failures

TEST(AttemptPolicy, EachNonOkStatusStandsForItsFailure) {
  const struct {
    Status status;
    Failure failure;
  } rows[] = {
      {Status::server_timeout, Failure::server_timeout}, {Status::overloaded, Failure::overloaded},
      {Status::shutting_down, Failure::shutting_down},   {Status::method_not_found, Failure::application},
      {Status::bad_request, Failure::application},       {Status::server_error, Failure::application},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(failure_of(r.status), r.failure) << "status " << static_cast<int>(r.status);
  }
}

TEST(AttemptPolicy, RefusalsAndLostConnectionsAreRetriedTimeoutsOnlyWhenIdempotentApplicationErrorsNever) {
  const struct {
    Failure failure;
    bool plain;       // may_retry(failure, idempotent = false)
    bool idempotent;  // may_retry(failure, idempotent = true)
  } rows[] = {
      {Failure::connection_lost, true, true},  {Failure::not_sent, true, true},
      {Failure::write_queue_full, true, true}, {Failure::unavailable, true, true},
      {Failure::overloaded, true, true},       {Failure::shutting_down, true, true},
      {Failure::attempt_timeout, false, true}, {Failure::server_timeout, false, true},
      {Failure::application, false, false},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(may_retry(r.failure, false), r.plain) << name(r.failure) << ", not idempotent";
    EXPECT_EQ(may_retry(r.failure, true), r.idempotent) << name(r.failure) << ", idempotent";
  }
}

// ---------------------------------------------------------------- budgets

AttemptPlan with_deadline(std::chrono::milliseconds budget, bool idempotent, int max_attempts) {
  AttemptPlan p;
  p.has_deadline = true;
  p.idempotent = idempotent;
  p.max_attempts = max_attempts;
  p.budget = budget;
  p.deadline = t0 + budget;
  return p;
}

AttemptPlan without_deadline(bool idempotent, int max_attempts) {
  AttemptPlan p;
  p.has_deadline = false;
  p.idempotent = idempotent;
  p.max_attempts = max_attempts;
  return p;
}

AttemptPlan with(AttemptPlan p, std::chrono::milliseconds attempt_timeout, std::chrono::milliseconds hedge = 0ms) {
  p.attempt_timeout = attempt_timeout;
  p.hedge_delay = hedge;
  return p;
}

TEST(AttemptPolicy, EachAttemptsBudgetFollowsThePlan) {
  struct Row {
    const char* name;
    AttemptPlan plan;
    int number;
    bool waited;
    TimePoint now;
    std::chrono::milliseconds wire;
    std::optional<std::chrono::milliseconds> expires_after;  // nullopt: kNever
  };
  const std::vector<Row> rows{
      // Calls that are not idempotent: one budget, the call's deadline only.
      {"first attempt gets the whole budget as given, even sent later", with_deadline(900ms, false, 3), 1, false,
       t0 + 5ms, 900ms, std::nullopt},
      {"a call that waited gets what is left", with_deadline(900ms, false, 3), 1, true, t0 + 300ms, 600ms,
       std::nullopt},
      {"a retry gets what is left, rounded up", with_deadline(900ms, false, 3), 2, false, t0 + 300400us, 600ms,
       std::nullopt},
      {"attempt_timeout is ignored when not idempotent", with(with_deadline(900ms, false, 3), 100ms), 1, false, t0,
       900ms, std::nullopt},
      // Idempotent: an even share over the attempts left, or attempt_timeout.
      {"an even share of three", with_deadline(900ms, true, 3), 1, false, t0, 300ms, 300ms},
      {"an even share of what is left over two", with_deadline(900ms, true, 3), 2, false, t0 + 300ms, 300ms, 300ms},
      {"the last attempt gets all that is left", with_deadline(900ms, true, 3), 3, false, t0 + 600ms, 300ms,
       std::nullopt},
      {"a waited first attempt shares what is left", with_deadline(900ms, true, 3), 1, true, t0 + 300ms, 200ms, 200ms},
      {"no retries: the single attempt gets it all", with_deadline(900ms, true, 1), 1, false, t0, 900ms, std::nullopt},
      {"attempt_timeout below what is left", with(with_deadline(900ms, true, 3), 100ms), 1, false, t0, 100ms, 100ms},
      {"attempt_timeout above what is left: what is left", with(with_deadline(900ms, true, 3), 2000ms), 1, false, t0,
       900ms, std::nullopt},
      {"attempt_timeout on the last attempt: all that is left", with(with_deadline(900ms, true, 3), 100ms), 3, false,
       t0 + 200ms, 700ms, std::nullopt},
      {"a share below a millisecond is 1 ms", with_deadline(2ms, true, 3), 1, false, t0, 1ms, 1ms},
      {"hedged: every attempt runs to the deadline", with(with_deadline(900ms, true, 3), 100ms, 50ms), 1, false, t0,
       900ms, std::nullopt},
      // No deadline: nothing on the wire unless attempt_timeout bounds it.
      {"no deadline, not idempotent", without_deadline(false, 3), 1, false, t0, 0ms, std::nullopt},
      {"no deadline, idempotent, no attempt_timeout", without_deadline(true, 3), 1, false, t0, 0ms, std::nullopt},
      {"no deadline, attempt_timeout bounds an attempt that may retry", with(without_deadline(true, 3), 100ms), 2,
       false, t0, 100ms, 100ms},
      {"no deadline, the last attempt is unbounded", with(without_deadline(true, 3), 100ms), 3, false, t0, 0ms,
       std::nullopt},
      {"no deadline, hedged: unbounded", with(without_deadline(true, 3), 100ms, 50ms), 1, false, t0, 0ms, std::nullopt},
      {"no deadline, attempt_timeout ignored when not idempotent", with(without_deadline(false, 3), 100ms), 1, false,
       t0, 0ms, std::nullopt},
  };
  for (const auto& r : rows) {
    const auto b = attempt_budget(r.plan, r.number, r.waited, r.now);
    EXPECT_EQ(b.wire, r.wire) << r.name;
    if (r.expires_after) {
      EXPECT_EQ(b.expires, r.now + *r.expires_after) << r.name;
    } else {
      EXPECT_EQ(b.expires, kNever) << r.name;
    }
  }
}

TEST(AttemptPolicy, AnAttemptOfACallWithADeadlineAlwaysTellsTheServerOne) {
  const struct {
    const char* name;
    AttemptPlan plan;
    int number;
    bool waited;
    TimePoint now;
  } rows[] = {
      {"a retry at the deadline", with_deadline(900ms, false, 3), 2, false, t0 + 900ms},
      {"a hedge past the deadline", with(with_deadline(900ms, true, 3), 0ms, 50ms), 2, false, t0 + 950ms},
      {"a waiting call dispatched past its deadline", with_deadline(900ms, false, 3), 1, true, t0 + 901ms},
      {"an idempotent retry past the deadline", with_deadline(900ms, true, 3), 2, false, t0 + 1s},
  };
  for (const auto& r : rows) {
    EXPECT_GT(attempt_budget(r.plan, r.number, r.waited, r.now).wire, 0ms)
        << r.name << ": the server would be told there is no deadline";
  }
}

TEST(AttemptPolicy, TheNextHedgeIsDueHedgeDelayAfterAnAttemptWhileAttemptsAreLeft) {
  const auto hedged = with(with_deadline(1s, true, 3), 0ms, 50ms);
  const struct {
    const char* name;
    AttemptPlan plan;
    int number;
    TimePoint expected;
  } rows[] = {
      {"not hedged", with_deadline(1s, true, 3), 1, kNever},
      {"after the first of three", hedged, 1, t0 + 250ms},
      {"after the second of three", hedged, 2, t0 + 250ms},
      {"after the last", hedged, 3, kNever},
      {"no retries, nothing to hedge with", with(with_deadline(1s, true, 1), 0ms, 50ms), 1, kNever},
      {"hedged without a deadline", with(without_deadline(true, 2), 0ms, 50ms), 1, t0 + 250ms},
  };
  for (const auto& r : rows) EXPECT_EQ(next_hedge(r.plan, r.number, t0 + 200ms), r.expected) << r.name;
}

// ---------------------------------------------------------------- retries

TEST(AttemptPolicy, RetryDelaysFollowTheBackoff) {
  BackoffOptions b{10ms, 20ms, 2.0, 0.0, 100ms};
  const struct {
    int retry;
    std::chrono::milliseconds delay;
  } rows[] = {{0, 0ms}, {1, 10ms}, {2, 20ms}, {3, 40ms}, {4, 80ms}, {5, 100ms}, {9, 100ms}};
  for (const auto& r : rows) EXPECT_EQ(retry_delay(b, r.retry, 12345), r.delay) << "retry " << r.retry;
}

TEST(AttemptPolicy, JitteredRetryDelaysStayInTheirSpreadAndRepeatForASeed) {
  BackoffOptions b{100ms, 200ms, 2.0, 0.2, 1000ms};
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const auto first = retry_delay(b, 1, seed);
    EXPECT_GE(first, 80ms);
    EXPECT_LE(first, 120ms);
    const auto second = retry_delay(b, 2, seed);
    EXPECT_GE(second, 160ms);
    EXPECT_LE(second, 240ms);
    EXPECT_EQ(retry_delay(b, 2, seed), second) << "a seed draws the same delays";
  }
}

TEST(AttemptPolicy, DecideRetryChecksRetryableThenAttemptsThenTime) {
  const auto plan = with_deadline(1000ms, /*idempotent=*/false, 3);
  const auto idem = with_deadline(1000ms, /*idempotent=*/true, 3);
  const struct {
    const char* name;
    AttemptPlan plan;
    Failure failure;
    int attempts;
    TimePoint now;
    std::chrono::milliseconds delay;
    RetryVerdict expected;
  } rows[] = {
      {"a lost connection with time and attempts left", plan, Failure::connection_lost, 1, t0, 10ms,
       RetryVerdict::retry},
      {"an application error", idem, Failure::application, 1, t0, 10ms, RetryVerdict::not_retryable},
      {"an attempt timeout, not idempotent", plan, Failure::attempt_timeout, 1, t0, 10ms, RetryVerdict::not_retryable},
      {"a server timeout, not idempotent", plan, Failure::server_timeout, 1, t0, 10ms, RetryVerdict::not_retryable},
      {"an attempt timeout, idempotent", idem, Failure::attempt_timeout, 2, t0, 10ms, RetryVerdict::retry},
      {"not retryable beats out of attempts and time", plan, Failure::application, 3, t0 + 2s, 10ms,
       RetryVerdict::not_retryable},
      {"every attempt made", plan, Failure::overloaded, 3, t0, 10ms, RetryVerdict::out_of_attempts},
      {"out of attempts beats out of time", plan, Failure::overloaded, 3, t0 + 999ms, 10ms,
       RetryVerdict::out_of_attempts},
      {"the delay would end at the deadline", plan, Failure::overloaded, 2, t0 + 995ms, 5ms, RetryVerdict::no_time},
      {"the delay would end past the deadline", plan, Failure::not_sent, 1, t0, 5s, RetryVerdict::no_time},
      {"the delay ends just before the deadline", plan, Failure::overloaded, 2, t0 + 994ms, 5ms, RetryVerdict::retry},
      {"no deadline: any delay", without_deadline(false, 3), Failure::unavailable, 1, t0, 1h, RetryVerdict::retry},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(decide_retry(r.plan, r.failure, r.attempts, r.now, r.delay), r.expected)
        << r.name << ": got " << name(decide_retry(r.plan, r.failure, r.attempts, r.now, r.delay));
  }
}

// ---------------------------------------------------------------- messages

TEST(AttemptPolicy, AttemptNoteCountsOnlyOnceThereWasMoreThanOneAttemptOrWhenAskedTo) {
  EXPECT_EQ(attempt_note(1, 3, false), "");
  EXPECT_EQ(attempt_note(1, 1, false), "");
  EXPECT_EQ(attempt_note(2, 3, false), " (attempt 2 of 3)");
  EXPECT_EQ(attempt_note(1, 3, true), " (attempt 1 of 3)");
  EXPECT_EQ(attempt_note(1, 1, true), " (attempt 1 of 1)");
}

TEST(AttemptPolicy, TheFinalMessageNamesTheCheckThatStoppedTheRetries) {
  const struct {
    RetryVerdict verdict;
    int attempts;
    int max_attempts;
    const char* expected;
  } rows[] = {
      {RetryVerdict::retry, 1, 3, "boom"},
      {RetryVerdict::retry, 2, 3, "boom (attempt 2 of 3)"},
      {RetryVerdict::not_retryable, 1, 3, "boom"},
      {RetryVerdict::not_retryable, 2, 3, "boom (attempt 2 of 3)"},
      {RetryVerdict::out_of_attempts, 3, 3, "boom (attempt 3 of 3)"},
      {RetryVerdict::out_of_attempts, 1, 1, "boom"},
      {RetryVerdict::no_time, 1, 3,
       "boom (attempt 1 of 3); no time left to retry: backoff 150 ms, 40 ms left before the deadline"},
      {RetryVerdict::no_time, 2, 3,
       "boom (attempt 2 of 3); no time left to retry: backoff 150 ms, 40 ms left before the deadline"},
      {RetryVerdict::budget_refused, 1, 3, "boom (attempt 1 of 3); retry refused by the client's retry budget"},
      {RetryVerdict::budget_refused, 2, 3, "boom (attempt 2 of 3); retry refused by the client's retry budget"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(final_message("boom", r.verdict, r.attempts, r.max_attempts, 150ms, 40ms), r.expected)
        << name(r.verdict) << ", attempt " << r.attempts << " of " << r.max_attempts;
  }
}

TEST(AttemptPolicy, DescribeNamesWhatElapsedMethodAndPeer) {
  EXPECT_EQ(describe("connection lost", 12ms, "get", "127.0.0.1:9"),
            "connection lost after 12 ms calling 'get' on 127.0.0.1:9");
}

// ---------------------------------------------------------------- deadlines

TEST(AttemptPolicy, TheDeadlineOutcomeSaysWhereTheCallWas) {
  const std::string inherited = " (the deadline inherited from the request being served)";
  const std::string call = " after 500 ms calling 'get' on 127.0.0.1:9";
  auto facts = [] {
    DeadlineFacts f;
    f.attempts = 1;
    f.max_attempts = 3;
    f.elapsed = 500ms;
    f.method = "get";
    f.peer = "127.0.0.1:9";
    return f;
  };
  struct Row {
    const char* name;
    DeadlineFacts facts;
    boost::system::error_code ec;
    std::string message;
  };
  std::vector<Row> rows;
  {
    auto f = facts();
    f.sent = true;
    rows.push_back({"sent", f, errc::timeout, "timeout (sent, waiting for the reply)" + call});
  }
  {
    auto f = facts();
    f.sent = true;
    f.inherited = true;
    rows.push_back({"sent, inherited", f, errc::timeout, "timeout (sent, waiting for the reply)" + call + inherited});
  }
  {
    auto f = facts();
    f.sent = true;
    f.attempts = 2;
    f.last_ec = errc::connection_lost;
    f.last_error = "connection lost after 20 ms";
    rows.push_back({"sent again after an earlier attempt failed", f, errc::timeout,
                    "timeout (sent, waiting for the reply)" + call +
                        " (attempt 2 of 3); earlier attempt: connection lost after 20 ms"});
  }
  {
    auto f = facts();
    f.sent = true;
    f.every_provider_failed = true;
    f.last_connect_error = "cannot connect";
    rows.push_back({"sent: connect errors elsewhere do not matter", f, errc::timeout,
                    "timeout (sent, waiting for the reply)" + call});
  }
  {
    auto f = facts();
    f.attempts = 0;
    rows.push_back({"never sent", f, errc::timeout, "timeout (not sent: no connection ready)" + call});
  }
  {
    auto f = facts();
    f.attempts = 0;
    f.inherited = true;
    rows.push_back(
        {"never sent, inherited", f, errc::timeout, "timeout (not sent: no connection ready)" + call + inherited});
  }
  {
    auto f = facts();
    f.attempts = 0;
    f.every_provider_failed = true;
    f.last_connect_error = "cannot connect to 127.0.0.1:9: Connection refused";
    rows.push_back({"every provider failed to connect", f, errc::unavailable,
                    "unavailable (no connection could be made before the deadline; cannot connect to 127.0.0.1:9: "
                    "Connection refused)" +
                        call});
  }
  {
    auto f = facts();
    f.every_provider_failed = true;
    f.last_connect_error = "refused";
    f.last_ec = errc::too_many_pending;
    f.last_error = "overloaded";
    rows.push_back({"every provider failed beats an earlier attempt's error", f, errc::unavailable,
                    "unavailable (no connection could be made before the deadline; refused)" + call});
  }
  {
    auto f = facts();
    f.attempts = 2;
    f.last_ec = errc::too_many_pending;
    f.last_error = "too many calls pending after 3 ms calling 'get' on 127.0.0.1:9: busy";
    rows.push_back({"waiting to retry after a failed attempt: its error", f, errc::too_many_pending,
                    "too many calls pending after 3 ms calling 'get' on 127.0.0.1:9: busy (attempt 2 of 3); "
                    "no provider was ready for another attempt before the deadline"});
  }
  {
    auto f = facts();
    f.last_ec = errc::connection_lost;
    f.last_error = "lost";
    rows.push_back({"one failed attempt: no count", f, errc::connection_lost,
                    "lost; no provider was ready for another attempt before the deadline"});
  }
  for (const auto& r : rows) {
    const auto out = deadline_outcome(r.facts);
    EXPECT_EQ(out.ec, r.ec) << r.name << ": " << out.ec.message();
    EXPECT_EQ(out.message, r.message) << r.name;
  }
}

}  // namespace
