#pragma once
/// Histogram: the latency histogram of `wheelctl bench`, log-linear like
/// HdrHistogram, one per I/O thread, merged at the end.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wheelrpc::wheelctl {

/// Log-linear histogram of non-negative integers (wheelctl bench records
/// nanoseconds): values below 256 each have their bucket (exact); above, each
/// power of two is split into 128 buckets, so a value is known to within
/// 1/128 of itself (kRelativeError: the midpoint reported is within half of
/// that, 0.4 %). 8192 counters allocated once; record() never allocates.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (keep one per thread and
/// merge()).
///
/// @par Example
/// @code
/// Histogram h;
/// h.record(1234);
/// std::uint64_t p99 = h.percentile(99.0);
/// @endcode
class Histogram {
 public:
  /// Largest relative width of a bucket (1/128): any value reported
  /// (percentile()) is within kRelativeError / 2 of a value recorded.
  static constexpr double kRelativeError = 1.0 / 128;

  /// One row of bars(): the values in [lower, upper) and how many there are.
  struct Bar {
    std::uint64_t lower = 0;
    std::uint64_t upper = 0;
    std::uint64_t count = 0;
  };

  Histogram();

  void record(std::uint64_t value) noexcept {
    ++counts_[index_of(value)];
    ++count_;
    if (value > max_) max_ = value;
    if (value < min_) min_ = value;
  }
  /// Adds every value of `other`.
  void merge(const Histogram& other) noexcept;

  std::uint64_t count() const noexcept { return count_; }
  /// Exact extremes; 0 when empty.
  std::uint64_t max() const noexcept { return max_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }

  /// The nearest-rank percentile, `p` in [0, 100]: the smallest recorded
  /// value v such that at least p % of the values are <= v, to the
  /// histogram's resolution (the midpoint of v's bucket, clamped to [min,
  /// max]; exact below 256 and for the extremes). 0 when empty.
  std::uint64_t percentile(double p) const noexcept;
  /// How many recorded values are >= `value`, to the resolution (counted by
  /// bucket: `value` is rounded down to its bucket's lower bound).
  std::uint64_t count_at_or_above(std::uint64_t value) const noexcept;

  /// About `rows` rows (at least 1) covering [min, max] with log-spaced
  /// bounds on bucket boundaries, for printing; empty when the histogram is.
  std::vector<Bar> bars(std::size_t rows) const;

  /// The bucket of `value` and the bounds of a bucket (exposed for tests).
  static std::size_t index_of(std::uint64_t value) noexcept;
  static std::uint64_t lower_of(std::size_t index) noexcept;
  static std::size_t buckets() noexcept;

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
};

}  // namespace wheelrpc::wheelctl
