#pragma once
// The retry budget of one client (Finagle's RetryBudget, Envoy's retry
// budget): over a sliding window, retries may number at most ratio x calls
// plus a floor per second. Counted in one-second buckets. Not thread-safe
// (the client guards it with its lock).

#include <chrono>
#include <cstdint>
#include <vector>

namespace wheelrpc::rpc::detail {

class RetryBudget {
 public:
  using Clock = std::chrono::steady_clock;

  /// `ratio` >= 0, `window` >= 1 s (the client validates its options).
  RetryBudget(double ratio, unsigned min_per_second, std::chrono::seconds window);

  /// A call started (its first attempt): it deposits `ratio` of a retry.
  void on_call(Clock::time_point now) noexcept;
  /// Asks for one retry (or hedge): true, and counted, if the window allows it.
  bool try_retry(Clock::time_point now) noexcept;

  /// In the current window (after advancing it to `now`).
  std::uint64_t calls(Clock::time_point now) noexcept;
  std::uint64_t retries(Clock::time_point now) noexcept;

 private:
  struct Bucket {
    std::int64_t second = -1;
    std::uint64_t calls = 0;
    std::uint64_t retries = 0;
  };
  Bucket& advance(Clock::time_point now) noexcept;

  const double ratio_;
  const double floor_;  // min_per_second x window seconds
  std::vector<Bucket> ring_;
  std::uint64_t calls_ = 0;    // sums over the ring
  std::uint64_t retries_ = 0;
  std::int64_t last_second_ = -1;
};

}  // namespace wheelrpc::rpc::detail
