#pragma once
// The retry budget of one client (Finagle's RetryBudget, Envoy's retry
// budget): over a sliding window, retries may number at most ratio x calls
// plus a floor per second. Counted in one-second buckets.
//
// Thread safety: every method may be called from any thread. `on_call` (once
// per call: the hot path) is one relaxed atomic increment, plus a short lock
// once per second to start a new bucket; `try_retry` (rare) takes the lock.
// A call counted while its second's bucket is being recycled may be lost:
// the budget is an estimate by design.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include <wheelrpc/common/mutex.h>

namespace wheelrpc::rpc::detail {

class RetryBudget {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  /// `ratio` >= 0, `window` >= 1 s (the client validates its options).
  RetryBudget(double ratio, unsigned min_per_second, std::chrono::seconds window);

  /// A call started (its first attempt): it deposits `ratio` of a retry.
  void on_call(TimePoint now) noexcept;
  /// Asks for one retry (or hedge): true, and counted, if the window allows it.
  bool try_retry(TimePoint now) noexcept;

  /// In the window ending at `now`.
  std::uint64_t calls(TimePoint now) noexcept;
  std::uint64_t retries(TimePoint now) noexcept;

 private:
  struct Bucket {
    std::atomic<std::int64_t> second{-1};
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> retries{0};
  };
  static std::int64_t second_of(TimePoint now) noexcept;
  /// The bucket of `second`, recycled first if it held an older second.
  Bucket& bucket(std::int64_t second) noexcept;
  /// Sums over the buckets inside the window ending at `second` (lock held).
  void sums(std::int64_t second, std::uint64_t& calls, std::uint64_t& retries) const noexcept WHEELRPC_REQUIRES(mu_);

  const double ratio_;
  const double floor_;  // min_per_second x window seconds
  const std::int64_t size_;
  std::unique_ptr<Bucket[]> ring_;  // its buckets are atomics; recycling one takes mu_
  mutable common::Mutex mu_;        // recycling buckets, retries
};

}  // namespace wheelrpc::rpc::detail
