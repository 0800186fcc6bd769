#pragma once
// The decisions of a call's attempts, as pure functions of what they look at:
// which failures may be retried, each attempt's budget, when the next hedge is
// due, whether a retry is made, and the words of the final error. No clock,
// no lock, no socket: the client core reads the time and its books, asks
// here, and acts on the answer. This is the one file that decides retries.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/rpc/status.h>

namespace wheelrpc::rpc::detail {

using TimePoint = std::chrono::steady_clock::time_point;
inline constexpr TimePoint kNever = TimePoint::max();

/// Whole milliseconds from `from` to `to` (for messages).
inline std::chrono::milliseconds ms_between(TimePoint from, TimePoint to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
}

/// How an attempt failed.
enum class Failure : std::uint8_t {
  connection_lost,   ///< the connection closed with the attempt sent
  not_sent,          ///< the connection closed before the attempt could be written
  write_queue_full,  ///< the connection's write queue was full
  unavailable,       ///< every provider in backoff after a failed connect (wait_for_ready off)
  overloaded,        ///< the server refused it unprocessed (overloaded)
  shutting_down,     ///< the server refused it unprocessed (stopping)
  attempt_timeout,   ///< the attempt's own timeout passed (idempotent calls)
  server_timeout,    ///< the server's deadline for it passed
  application,       ///< method_not_found, bad_request, server_error: the server's answer
};

/// The failure a non-ok response status stands for.
Failure failure_of(Status status) noexcept;

/// May an attempt that failed so be retried? Connection failures, unsent
/// attempts and refusals always; timeouts only for idempotent calls;
/// application errors never.
bool may_retry(Failure failure, bool idempotent) noexcept;

/// A call's retry policy, fixed when it starts.
struct AttemptPlan {
  bool has_deadline = true;
  bool idempotent = false;
  int max_attempts = 1;                          ///< retries + 1
  std::chrono::milliseconds attempt_timeout{0};  ///< CallOptions::attempt_timeout
  std::chrono::milliseconds hedge_delay{0};      ///< CallOptions::hedge_delay
  std::chrono::milliseconds budget{0};           ///< the whole call's (when it has a deadline)
  TimePoint deadline = kNever;
};

/// One attempt's budget: what the server is told (0 = no deadline) and when
/// the client stops waiting for it (kNever: only the call's deadline applies).
struct AttemptBudget {
  std::chrono::milliseconds wire{0};
  TimePoint expires = kNever;
};

/// The budget of attempt `number` (1-based) starting at `now`. The first
/// attempt of a call that never waited gets the whole budget as given; later
/// ones what is left. An idempotent, unhedged call that may still retry gives
/// each attempt `attempt_timeout` or an even share of what is left over the
/// attempts left (at least 1 ms); the last attempt gets all that is left.
/// With a deadline the wire budget is never below 1 ms (0 would mean none).
AttemptBudget attempt_budget(const AttemptPlan& plan, int number, bool waited, TimePoint now) noexcept;

/// When the next hedge of a call is due after attempt `number` started at
/// `now`: kNever when the call is not hedged or has no attempt left.
TimePoint next_hedge(const AttemptPlan& plan, int number, TimePoint now) noexcept;

/// The delay before retry `retry` (1-based) of a call: the retry backoff's
/// `retry`-th delay, drawn with `seed`.
std::chrono::milliseconds retry_delay(const BackoffOptions& backoff, int retry, std::uint64_t seed);

/// Whether a failed attempt is followed by another.
enum class RetryVerdict : std::uint8_t {
  retry,            ///< retry after the delay (if the retry budget allows)
  not_retryable,    ///< this failure is never retried for this call
  out_of_attempts,  ///< every allowed attempt was made
  no_time,          ///< the delay would end after the deadline
  budget_refused,   ///< the client's retry budget said no (decided by the caller)
};

/// Every check but the retry budget's, in order: retryable, attempts left,
/// time left for the delay.
RetryVerdict decide_retry(const AttemptPlan& plan, Failure failure, int attempts, TimePoint now,
                          std::chrono::milliseconds delay) noexcept;

/// " (attempt k of n)" once the call made more than one attempt, or always
/// when `always` (a retry was wanted and not made); "" otherwise.
std::string attempt_note(int attempts, int max_attempts, bool always);

/// The message a call ends with when `verdict` stops its retries: the last
/// attempt's message, the attempt count where it says something, and the
/// check that stopped the retrying.
std::string final_message(std::string_view last_message, RetryVerdict verdict, int attempts, int max_attempts,
                          std::chrono::milliseconds delay, std::chrono::milliseconds left);

/// "<what> after N ms calling 'method' on <peer>".
std::string describe(std::string_view what, std::chrono::milliseconds elapsed, std::string_view method,
                     std::string_view peer);

/// What a call knows when its deadline passes.
struct DeadlineFacts {
  bool sent = false;                   ///< an attempt is in flight
  bool inherited = false;              ///< the deadline was inherited from the request being served
  bool every_provider_failed = false;  ///< each provider's last connect attempt failed
  std::string last_connect_error;      ///< the latest of those errors
  boost::system::error_code last_ec;   ///< of the call's last failed attempt (empty: none)
  std::string last_error;              ///< its message
  int attempts = 0;
  int max_attempts = 1;
  std::chrono::milliseconds elapsed{0};
  std::string_view method;
  std::string_view peer;  ///< of the latest attempt, else every provider
  /// Not sent because every ready provider had this many attempts in flight
  /// (ClientOptions::max_active_per_provider); 0: not so.
  std::size_t every_ready_at_limit = 0;
  /// Not sent because the call's routing tag has no provider and its rule
  /// allows no fallback (ProviderSet::no_route_why); "": not so.
  std::string no_route;
};

struct Outcome {
  boost::system::error_code ec;
  std::string message;
};

/// The error and message of a call ended by its deadline: timeout "sent,
/// waiting" or "not sent", unavailable when no connection could be made at
/// all, or the last attempt's error when no provider was ready for another.
Outcome deadline_outcome(const DeadlineFacts& facts);

}  // namespace wheelrpc::rpc::detail
