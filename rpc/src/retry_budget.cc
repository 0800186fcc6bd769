#include "retry_budget.h"

namespace wheelrpc::rpc::detail {

RetryBudget::RetryBudget(double ratio, unsigned min_per_second, std::chrono::seconds window)
    : ratio_(ratio),
      floor_(static_cast<double>(min_per_second) * static_cast<double>(window.count())),
      ring_(static_cast<std::size_t>(window.count() > 0 ? window.count() : 1)) {}

RetryBudget::Bucket& RetryBudget::advance(Clock::time_point now) noexcept {
  const std::int64_t second = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  Bucket& b = ring_[static_cast<std::size_t>(second) % ring_.size()];
  if (second == last_second_) return b;
  // A new second: forget every bucket that left the window (the one reused
  // for this second among them).
  last_second_ = second;
  const auto size = static_cast<std::int64_t>(ring_.size());
  for (auto& old : ring_) {
    if (old.second >= 0 && (second - old.second >= size || old.second > second)) {
      calls_ -= old.calls;
      retries_ -= old.retries;
      old = Bucket{};
    }
  }
  b.second = second;
  return b;
}

void RetryBudget::on_call(Clock::time_point now) noexcept {
  ++advance(now).calls;
  ++calls_;
}

bool RetryBudget::try_retry(Clock::time_point now) noexcept {
  Bucket& b = advance(now);
  if (static_cast<double>(retries_ + 1) > ratio_ * static_cast<double>(calls_) + floor_) return false;
  ++b.retries;
  ++retries_;
  return true;
}

std::uint64_t RetryBudget::calls(Clock::time_point now) noexcept {
  advance(now);
  return calls_;
}

std::uint64_t RetryBudget::retries(Clock::time_point now) noexcept {
  advance(now);
  return retries_;
}

}  // namespace wheelrpc::rpc::detail
