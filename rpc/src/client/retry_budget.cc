#include "client/retry_budget.h"

namespace wheelrpc::rpc::detail {

RetryBudget::RetryBudget(double ratio, unsigned min_per_second, std::chrono::seconds window)
    : ratio_(ratio),
      floor_(static_cast<double>(min_per_second) * static_cast<double>(window.count())),
      size_(window.count() > 0 ? window.count() : 1),
      ring_(std::make_unique<Bucket[]>(static_cast<std::size_t>(size_))) {}

std::int64_t RetryBudget::second_of(TimePoint now) noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
}

RetryBudget::Bucket& RetryBudget::bucket(std::int64_t second) noexcept {
  Bucket& b = ring_[static_cast<std::size_t>(second % size_)];
  if (b.second.load(std::memory_order_acquire) == second) return b;
  common::LockGuard lock(mu_);
  const std::int64_t held = b.second.load(std::memory_order_relaxed);
  if (held < second) {  // an older second (or none): start afresh
    b.calls.store(0, std::memory_order_relaxed);
    b.retries.store(0, std::memory_order_relaxed);
    b.second.store(second, std::memory_order_release);
  }
  return b;
}

void RetryBudget::sums(std::int64_t second, std::uint64_t& calls, std::uint64_t& retries) const noexcept {
  calls = retries = 0;
  for (std::int64_t i = 0; i < size_; ++i) {
    const Bucket& b = ring_[static_cast<std::size_t>(i)];
    const std::int64_t s = b.second.load(std::memory_order_acquire);
    if (s < 0 || s > second || second - s >= size_) continue;  // outside the window
    calls += b.calls.load(std::memory_order_relaxed);
    retries += b.retries.load(std::memory_order_relaxed);
  }
}

void RetryBudget::on_call(TimePoint now) noexcept {
  bucket(second_of(now)).calls.fetch_add(1, std::memory_order_relaxed);
}

bool RetryBudget::try_retry(TimePoint now) noexcept {
  const std::int64_t second = second_of(now);
  Bucket& b = bucket(second);
  common::LockGuard lock(mu_);
  std::uint64_t calls = 0, retries = 0;
  sums(second, calls, retries);
  if (static_cast<double>(retries + 1) > ratio_ * static_cast<double>(calls) + floor_) return false;
  b.retries.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::uint64_t RetryBudget::calls(TimePoint now) noexcept {
  common::LockGuard lock(mu_);
  std::uint64_t calls = 0, retries = 0;
  sums(second_of(now), calls, retries);
  return calls;
}

std::uint64_t RetryBudget::retries(TimePoint now) noexcept {
  common::LockGuard lock(mu_);
  std::uint64_t calls = 0, retries = 0;
  sums(second_of(now), calls, retries);
  return retries;
}

}  // namespace wheelrpc::rpc::detail
