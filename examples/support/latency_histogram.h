#pragma once
/// LatencyHistogram: the latency histogram of the load generator
/// (examples/load) and of the benchmarks (bench/), one class for both.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wheelrpc::support {

/// Log-linear histogram of non-negative integers (a latency in any unit the
/// caller picks: the benchmarks record ns, the load generator us), the peer
/// benchmarks' `Hist`: 128 sub-buckets per power of two (< 0.8 % relative
/// error), 8192 buckets allocated once; record() never allocates.
///
/// Thread safety: distinct objects safe, shared objects unsafe.
///
/// Example:
///   LatencyHistogram h;
///   h.record(1234);
///   double p99 = h.quantile(0.99);
class LatencyHistogram {
 public:
  void record(std::uint64_t v) noexcept {
    ++buckets_[index(v)];
    ++count_;
    max_ = std::max(max_, v);
  }
  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t max() const noexcept { return max_; }
  /// How many recorded values are below v, to the histogram's resolution:
  /// values are counted by bucket, so v is rounded down to the lower bound of
  /// its bucket (exact below 128, else within 0.8 %). count_below(b) -
  /// count_below(a) counts the values in [a, b).
  std::uint64_t count_below(std::uint64_t v) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0, end = index(v); i < end; ++i) n += buckets_[i];
    return n;
  }
  /// Nearest-rank quantile, q in [0, 1]: the midpoint of the bucket holding
  /// it (at most max()); 0 when empty.
  double quantile(double q) const noexcept {
    if (count_ == 0) return 0;
    const auto rank =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) {
        const double mid = (static_cast<double>(lower(i)) + static_cast<double>(lower(i + 1)) - 1) / 2.0;
        return std::min(mid, static_cast<double>(max_));
      }
    }
    return static_cast<double>(max_);
  }

 private:
  static constexpr int kSub = 7;
  static std::size_t index(std::uint64_t v) noexcept {
    if (v < (1u << kSub)) return static_cast<std::size_t>(v);
    const int e = 63 - __builtin_clzll(v);
    return (static_cast<std::size_t>(e - kSub + 1) << kSub) +
           static_cast<std::size_t>((v >> (e - kSub)) & ((1u << kSub) - 1));
  }
  static std::uint64_t lower(std::size_t i) noexcept {
    if (i < (1u << kSub)) return i;
    const int e = static_cast<int>(i >> kSub) + kSub - 1;
    return (std::uint64_t{1} << e) + (static_cast<std::uint64_t>(i & ((1u << kSub) - 1)) << (e - kSub));
  }

  std::vector<std::uint64_t> buckets_ = std::vector<std::uint64_t>(64u << kSub);
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace wheelrpc::support
