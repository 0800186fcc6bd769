#pragma once
// floor(n / d) for 0 <= n < 2^62 and a fixed d >= 1000 without a hardware
// division (40-90 cycles for 64 bits on many x86 cores): a double reciprocal
// lands within a couple of units of the quotient, exact integer arithmetic
// corrects it.

#include <cstdint>

namespace wheelrpc::timer::detail {

class TickDivider {
 public:
  explicit TickDivider(std::int64_t d) noexcept : d_(d), inv_(1.0 / static_cast<double>(d)) {}

  std::int64_t divisor() const noexcept { return d_; }

  std::int64_t floor_div(std::int64_t n) const noexcept {
    std::int64_t q = static_cast<std::int64_t>(static_cast<double>(n) * inv_);
    std::int64_t r = n - q * d_;
    while (r < 0) {
      --q;
      r += d_;
    }
    while (r >= d_) {
      ++q;
      r -= d_;
    }
    return q;
  }

 private:
  std::int64_t d_;
  double inv_;
};

}  // namespace wheelrpc::timer::detail
