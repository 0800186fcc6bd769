#pragma once
/// Exponential backoff with jitter, for the two kinds of repeated attempt:
/// - reconnects to a server (ClientOptions::reconnect; the defaults below are
///   gRPC's connection backoff: a fast first attempt, then 1 s, x1.6, +-20 %,
///   120 s at most);
/// - retries of a call (ClientOptions::retry.backoff, whose own defaults are
///   10 ms, then 20 ms x2 +-20 %, 1 s at most; see RetryOptions in options.h).
/// An "attempt" below is a connect attempt for the first and a retry of the
/// call for the second.

#include <chrono>
#include <cstdint>

namespace wheelrpc::rpc {

struct BackoffOptions {
  /// Delay before the first attempt: the first reconnect after a connection is
  /// lost, or the first retry after a call's first attempt failed. Default 0
  /// (at once: the fast first attempt; RetryOptions sets 10 ms).
  std::chrono::milliseconds first{0};
  /// Delay before the second attempt. Default 1000 ms (RetryOptions: 20 ms); > 0.
  std::chrono::milliseconds initial{1000};
  /// Each later delay is the previous one times this. Default 1.6
  /// (RetryOptions: 2); 1 .. 100.
  double multiplier = 1.6;
  /// Each delay is spread uniformly by +- this fraction. Default 0.2; 0 .. 1.
  double jitter = 0.2;
  /// Longest delay (before jitter). Default 120 s (RetryOptions: 1 s);
  /// >= `initial`.
  std::chrono::milliseconds max{120000};
};

/// The delays of successive attempts: first, then initial, initial*multiplier,
/// ... capped at max, each spread by +-jitter. Used per connection for
/// reconnects and per call for retries. Not thread-safe.
class Backoff {
 public:
  /// Throws std::invalid_argument naming the field on an absurd option
  /// (negative delays, multiplier < 1, jitter outside [0, 1], max < initial).
  explicit Backoff(BackoffOptions options = {}, std::uint64_t seed = 0);

  /// The delay before the next attempt, and advances.
  std::chrono::milliseconds next();
  /// Back to the first attempt (for reconnects: after a successful connection).
  void reset() noexcept { attempt_ = 0; }
  /// Attempts made since the last reset.
  unsigned attempts() const noexcept { return attempt_; }
  const BackoffOptions& options() const noexcept { return options_; }

 private:
  BackoffOptions options_;
  unsigned attempt_ = 0;
  std::uint64_t rng_;
};

}  // namespace wheelrpc::rpc
