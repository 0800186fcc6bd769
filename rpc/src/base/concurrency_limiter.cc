#include "base/concurrency_limiter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace wheelrpc::rpc::detail {

LimitState next_limit_state(const AutoLimitOptions& o, LimitState state, const LimitWindow& window, bool remeasure) {
  if (window.samples == 0) return state;
  if (window.min_unqueued.count() > 0) {
    state.no_load =
        remeasure || state.no_load.count() == 0 ? window.min_unqueued : std::min(state.no_load, window.min_unqueued);
  }
  const double lo = static_cast<double>(std::max<std::size_t>(o.min_limit, 1));
  const double hi = std::max(lo, static_cast<double>(o.max_limit));
  if (state.no_load.count() == 0 || window.avg_latency.count() <= 0) return state;  // nothing to compare with
  const double target = o.tolerance * static_cast<double>(state.no_load.count()) +
                        static_cast<double>(std::max<std::int64_t>(o.latency_allowance.count(), 0));
  const double gradient = std::clamp(target / static_cast<double>(window.avg_latency.count()), 0.5, 1.0);
  const double limit = state.limit;
  if (gradient >= 1.0 && static_cast<double>(window.max_in_flight) * 2 < limit) {
    // Fast enough, but the load never came near the limit: growing would only
    // let a burst in unchecked.
  } else {
    state.limit = limit * gradient + std::sqrt(limit);
  }
  state.limit = std::clamp(state.limit, lo, hi);
  return state;
}

void validate_concurrency_limit(const ConcurrencyLimit& limit) {
  auto fail = [](const char* what) {
    throw std::invalid_argument(std::string("ServerOptions::overload.max_concurrency: ") + what);
  };
  if (limit.kind() == ConcurrencyLimit::Kind::fixed && limit.fixed_limit() == 0) fail("a fixed limit must be >= 1");
  if (limit.kind() != ConcurrencyLimit::Kind::automatic) return;
  const auto& o = limit.auto_options();
  if (o.min_limit == 0) fail("min_limit must be >= 1");
  if (o.max_limit < o.min_limit) fail("max_limit must be >= min_limit");
  if (o.initial_limit < o.min_limit || o.initial_limit > o.max_limit)
    fail("initial_limit must be in [min_limit, max_limit]");
  if (!(o.tolerance >= 1.0)) fail("tolerance must be >= 1");
  if (o.window.count() < 0 || o.probe_interval.count() < 0 || o.latency_allowance.count() < 0) {
    fail("window, probe_interval and latency_allowance must be >= 0");
  }
  if (o.max_samples == 0 || o.min_samples > o.max_samples) fail("samples must be 1 <= min_samples <= max_samples");
}

ConcurrencyLimiter::ConcurrencyLimiter(const ConcurrencyLimit& limit, time_point start)
    : kind_(limit.kind()), options_(limit.auto_options()), window_start_ns_(ns(start)) {
  switch (kind_) {
    case ConcurrencyLimit::Kind::none: break;
    case ConcurrencyLimit::Kind::fixed: limit_.store(static_cast<std::int64_t>(limit.fixed_limit())); break;
    case ConcurrencyLimit::Kind::automatic: {
      const auto lo = std::max<std::size_t>(options_.min_limit, 1);
      const auto hi = std::max(lo, options_.max_limit);
      state_.limit = static_cast<double>(std::clamp(options_.initial_limit, lo, hi));
      limit_.store(static_cast<std::int64_t>(state_.limit));
      next_remeasure_ns_ = ns(start) + options_.probe_interval.count();
      break;
    }
  }
}

bool ConcurrencyLimiter::try_acquire() noexcept {
  const auto n = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n > limit_.load(std::memory_order_relaxed)) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  // A racy maximum: a lost update only makes the window look less busy.
  if (n > max_in_flight_.load(std::memory_order_relaxed)) max_in_flight_.store(n, std::memory_order_relaxed);
  return true;
}

void ConcurrencyLimiter::release(std::chrono::nanoseconds latency, std::chrono::nanoseconds queued, bool ran,
                                 time_point now) noexcept {
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  if (kind_ != ConcurrencyLimit::Kind::automatic) return;
  const auto lat = std::max<std::int64_t>(latency.count(), 0);
  if (ran) {
    const auto unqueued = std::max<std::int64_t>(lat - std::max<std::int64_t>(queued.count(), 0), 1);
    auto min = min_unqueued_ns_.load(std::memory_order_relaxed);
    while (unqueued < min && !min_unqueued_ns_.compare_exchange_weak(min, unqueued, std::memory_order_relaxed)) {
    }
  }
  sum_ns_.fetch_add(static_cast<std::uint64_t>(lat), std::memory_order_relaxed);
  const auto n = samples_.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto age = ns(now) - window_start_ns_.load(std::memory_order_relaxed);
  if (n >= options_.max_samples || (n >= options_.min_samples && age >= options_.window.count())) end_window(now);
}

void ConcurrencyLimiter::end_window(time_point now) noexcept {
  if (updating_.exchange(true, std::memory_order_acquire)) return;  // another release is ending it
  LimitWindow w;
  w.samples = samples_.exchange(0, std::memory_order_relaxed);
  const auto sum = sum_ns_.exchange(0, std::memory_order_relaxed);
  const auto min = min_unqueued_ns_.exchange(INT64_MAX, std::memory_order_relaxed);
  w.max_in_flight = static_cast<std::size_t>(
      std::max<std::int64_t>(max_in_flight_.exchange(in_flight_.load(std::memory_order_relaxed)), 0));
  window_start_ns_.store(ns(now), std::memory_order_relaxed);
  if (w.samples > 0) {
    w.avg_latency = std::chrono::nanoseconds(static_cast<std::int64_t>(sum / w.samples));
    w.min_unqueued = std::chrono::nanoseconds(min == INT64_MAX ? 0 : min);
    const bool remeasure = options_.probe_interval.count() > 0 && ns(now) >= next_remeasure_ns_;
    if (remeasure) next_remeasure_ns_ = ns(now) + options_.probe_interval.count();
    state_ = next_limit_state(options_, state_, w, remeasure);
    limit_.store(static_cast<std::int64_t>(state_.limit), std::memory_order_relaxed);
  }
  updating_.store(false, std::memory_order_release);
}

std::size_t ConcurrencyLimiter::limit() const noexcept {
  return static_cast<std::size_t>(std::max<std::int64_t>(limit_.load(std::memory_order_relaxed), 0));
}

std::size_t ConcurrencyLimiter::in_flight() const noexcept {
  return static_cast<std::size_t>(std::max<std::int64_t>(in_flight_.load(std::memory_order_relaxed), 0));
}

}  // namespace wheelrpc::rpc::detail
