#pragma once
/// Exponential backoff with jitter for reconnect attempts (gRPC's connection
/// backoff is the anchor: 1 s initial, x1.6, +-20 %, 120 s at most).

#include <chrono>
#include <cstdint>

namespace wheelrpc::rpc {

struct BackoffOptions {
  /// Delay before the first attempt after a connection is lost. Default 0
  /// (reconnect at once: the fast first attempt).
  std::chrono::milliseconds first{0};
  /// Delay before the second attempt. Default 1000 ms.
  std::chrono::milliseconds initial{1000};
  /// Each later delay is the previous one times this. Default 1.6; >= 1.
  double multiplier = 1.6;
  /// Each delay is spread uniformly by +- this fraction. Default 0.2; 0 .. 1.
  double jitter = 0.2;
  /// Longest delay (before jitter). Default 120 s.
  std::chrono::milliseconds max{120000};
};

/// The delays of successive attempts: first, then initial, initial*multiplier,
/// ... capped at max, each spread by +-jitter. Not thread-safe.
class Backoff {
 public:
  /// Throws std::invalid_argument naming the field on an absurd option
  /// (negative delays, multiplier < 1, jitter outside [0, 1], max < initial).
  explicit Backoff(BackoffOptions options = {}, std::uint64_t seed = 0);

  /// The delay before the next attempt, and advances.
  std::chrono::milliseconds next();
  /// Back to the first attempt (after a successful connection).
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
