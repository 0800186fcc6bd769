#pragma once
// The server-wide concurrency limit (ServerOptions::overload.max_concurrency): a
// count of requests in flight against a limit that is fixed, or adapted once
// per window of latency samples by a gradient rule (next_limit_state).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <wheelrpc/rpc/concurrency_limit.h>

namespace wheelrpc::rpc::detail {

/// What one window of samples measured.
struct LimitWindow {
  std::size_t samples = 0;
  /// Average latency (receipt to reply, queueing included) of the samples.
  std::chrono::nanoseconds avg_latency{0};
  /// The least latency of a sample, less its queueing time (the time it
  /// waited for the handler executor): what the request would have taken
  /// with nothing ahead of it. 0 when no sample ran its handler.
  std::chrono::nanoseconds min_unqueued{0};
  /// The most requests in flight at once during the window.
  std::size_t max_in_flight = 0;
};

/// The adaptive limit between windows.
struct LimitState {
  double limit = 0;
  /// The no-load latency: the least unqueued latency seen since the last
  /// re-measure (0: none yet).
  std::chrono::nanoseconds no_load{0};
};

/// The gradient rule (pure): the state after `window`. `remeasure`: the
/// no-load latency is taken from this window alone (it may rise) instead of
/// the least so far.
///
///   gradient = clamp((tolerance * no_load + latency_allowance) / avg_latency, 0.5, 1)
///   limit'   = limit * gradient + sqrt(limit)    (gradient < 1: shrinks)
///   limit'   = limit                             (gradient = 1 and at most half the limit
///                                                 was used: no evidence it could take more)
/// then clamped to [min_limit, max_limit].
LimitState next_limit_state(const AutoLimitOptions& options, LimitState state, const LimitWindow& window,
                            bool remeasure);

/// Throws std::invalid_argument naming the first invalid field of `limit`
/// (ServerOptions::overload.max_concurrency).
void validate_concurrency_limit(const ConcurrencyLimit& limit);

/// Counts the requests in flight against a fixed or adaptive limit.
///
/// @par Thread Safety
/// Every method from any thread. try_acquire and release are lock-free: a
/// few relaxed atomic operations on the limiter's own cache lines; the one
/// release that ends a window recomputes the limit (O(1)) while the others
/// go on.
class ConcurrencyLimiter {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// `start`: the time the first window begins (the server's clock).
  ConcurrencyLimiter(const ConcurrencyLimit& limit, time_point start);
  ConcurrencyLimiter(const ConcurrencyLimiter&) = delete;
  ConcurrencyLimiter& operator=(const ConcurrencyLimiter&) = delete;

  /// False for ConcurrencyLimit::none(): nothing is counted.
  bool enabled() const noexcept { return kind_ != ConcurrencyLimit::Kind::none; }

  /// Takes a slot if fewer than the limit are in flight; false: refuse.
  bool try_acquire() noexcept;
  /// Gives back a slot taken by try_acquire. `latency`: receipt to reply;
  /// `queued`: the part of it spent waiting for the handler executor;
  /// `ran`: whether the handler ran (a request shed unrun says nothing of
  /// the no-load latency). `now`: the reply's time.
  void release(std::chrono::nanoseconds latency, std::chrono::nanoseconds queued, bool ran, time_point now) noexcept;

  /// The limit now (0: none).
  std::size_t limit() const noexcept;
  std::size_t in_flight() const noexcept;

 private:
  void end_window(time_point now) noexcept;
  static std::int64_t ns(time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  const ConcurrencyLimit::Kind kind_;
  const AutoLimitOptions options_;

  alignas(64) std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::int64_t> limit_{0};  // whole requests, read by every try_acquire
  std::atomic<std::int64_t> max_in_flight_{0};

  // The window being measured (samples racing with its end may land in
  // either window).
  alignas(64) std::atomic<std::uint64_t> samples_{0};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::atomic<std::int64_t> min_unqueued_ns_{INT64_MAX};
  std::atomic<std::int64_t> window_start_ns_;

  // Owned by the release that holds updating_.
  std::atomic<bool> updating_{false};
  LimitState state_;
  std::int64_t next_remeasure_ns_ = 0;
};

}  // namespace wheelrpc::rpc::detail
