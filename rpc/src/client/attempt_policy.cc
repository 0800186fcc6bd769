#include "client/attempt_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>

namespace wheelrpc::rpc::detail {
namespace {
long long count_ms(std::chrono::milliseconds d) { return static_cast<long long>(d.count()); }
}  // namespace

Failure failure_of(Status status) noexcept {
  switch (status) {
    case Status::server_timeout: return Failure::server_timeout;
    case Status::overloaded: return Failure::overloaded;
    case Status::shutting_down: return Failure::shutting_down;
    default: return Failure::application;
  }
}

bool may_retry(Failure failure, bool idempotent) noexcept {
  switch (failure) {
    case Failure::connection_lost:
    case Failure::not_sent:
    case Failure::write_queue_full:
    case Failure::unavailable:
    case Failure::overloaded:
    case Failure::shutting_down: return true;
    case Failure::attempt_timeout:
    case Failure::server_timeout: return idempotent;
    case Failure::application: return false;
  }
  return false;
}

AttemptBudget attempt_budget(const AttemptPlan& plan, int number, bool waited, TimePoint now) noexcept {
  AttemptBudget out;
  const bool hedged = plan.hedge_delay.count() > 0;
  if (plan.has_deadline) {
    out.wire = waited || number > 1 ? std::chrono::ceil<std::chrono::milliseconds>(plan.deadline - now) : plan.budget;
    // An attempt started at (or, on a busy executor, just after) the deadline
    // still tells the server it has no time, never "no deadline".
    out.wire = std::max(out.wire, std::chrono::milliseconds(1));
    const int left = plan.max_attempts - number + 1;
    if (plan.idempotent && !hedged && left > 1) {
      const auto share = plan.attempt_timeout.count() > 0 ? plan.attempt_timeout : out.wire / left;
      if (share < out.wire) {
        out.wire = std::max(share, std::chrono::milliseconds(1));
        out.expires = now + out.wire;
      }
    }
  } else if (plan.idempotent && plan.attempt_timeout.count() > 0 && !hedged && number < plan.max_attempts) {
    out.wire = plan.attempt_timeout;
    out.expires = now + out.wire;
  }
  return out;
}

TimePoint next_hedge(const AttemptPlan& plan, int number, TimePoint now) noexcept {
  if (plan.hedge_delay.count() <= 0 || number >= plan.max_attempts) return kNever;
  return now + plan.hedge_delay;
}

std::chrono::milliseconds retry_delay(const BackoffOptions& backoff, int retry, std::uint64_t seed) {
  Backoff b(backoff, seed | 1);
  std::chrono::milliseconds d{0};
  for (int i = 0; i < retry; ++i) d = b.next();
  return d;
}

RetryVerdict decide_retry(const AttemptPlan& plan, Failure failure, int attempts, TimePoint now,
                          std::chrono::milliseconds delay) noexcept {
  if (!may_retry(failure, plan.idempotent)) return RetryVerdict::not_retryable;
  if (attempts >= plan.max_attempts) return RetryVerdict::out_of_attempts;
  if (plan.has_deadline && now + delay >= plan.deadline) return RetryVerdict::no_time;
  return RetryVerdict::retry;
}

std::string attempt_note(int attempts, int max_attempts, bool always) {
  if (!always && attempts <= 1) return {};
  return fmt::format(" (attempt {} of {})", attempts, max_attempts);
}

std::string final_message(std::string_view last_message, RetryVerdict verdict, int attempts, int max_attempts,
                          std::chrono::milliseconds delay, std::chrono::milliseconds left) {
  std::string out(last_message);
  switch (verdict) {
    case RetryVerdict::retry:
    case RetryVerdict::not_retryable: out += attempt_note(attempts, max_attempts, false); break;
    case RetryVerdict::out_of_attempts: out += attempt_note(attempts, max_attempts, max_attempts > 1); break;
    case RetryVerdict::no_time:
      out += attempt_note(attempts, max_attempts, true);
      out += fmt::format("; no time left to retry: backoff {} ms, {} ms left before the deadline", count_ms(delay),
                         count_ms(left));
      break;
    case RetryVerdict::budget_refused:
      out += attempt_note(attempts, max_attempts, true);
      out += "; retry refused by the client's retry budget";
      break;
  }
  return out;
}

std::string describe(std::string_view what, std::chrono::milliseconds elapsed, std::string_view method,
                     std::string_view peer) {
  return fmt::format("{} after {} ms calling '{}' on {}", what, count_ms(elapsed), method, peer);
}

Outcome deadline_outcome(const DeadlineFacts& f) {
  const char* inherited = f.inherited ? " (the deadline inherited from the request being served)" : "";
  Outcome out{make_error_code(errc::timeout), {}};
  if (f.sent) {
    out.message = describe("timeout (sent, waiting for the reply)", f.elapsed, f.method, f.peer) +
                  attempt_note(f.attempts, f.max_attempts, false) + inherited;
    if (f.last_ec) out.message += "; earlier attempt: " + f.last_error;
    return out;
  }
  // Never sent, or waiting to be sent again: say why. A tag with nowhere to
  // go comes first (a call that waits for ready waits for its provider, not
  // for a connection). If every provider failed to connect, the call could
  // not have been served at all.
  if (!f.no_route.empty()) {
    out.message = describe("timeout (not sent: " + f.no_route + ")", f.elapsed, f.method, f.peer) + inherited;
    if (f.last_ec) out.message += "; earlier attempt: " + f.last_error;
  } else if (f.every_provider_failed) {
    out.ec = make_error_code(errc::unavailable);
    out.message =
        describe("unavailable (no connection could be made before the deadline; " + f.last_connect_error + ")",
                 f.elapsed, f.method, f.peer);
  } else if (f.last_ec) {
    out.ec = f.last_ec;
    out.message = f.last_error + attempt_note(f.attempts, f.max_attempts, false) +
                  "; no provider was ready for another attempt before the deadline";
  } else if (f.every_ready_at_limit != 0) {
    out.message = describe(fmt::format("timeout (not sent: every ready provider has {} attempts in flight, "
                                       "max_active_per_provider)",
                                       f.every_ready_at_limit),
                           f.elapsed, f.method, f.peer) +
                  inherited;
  } else {
    out.message = describe("timeout (not sent: no connection ready)", f.elapsed, f.method, f.peer) + inherited;
  }
  return out;
}

}  // namespace wheelrpc::rpc::detail
