#pragma once
/// Cheap metric cells for the hot path: counts and histograms spread over
/// cache-line-sized shards (a thread always adds to the same shard), summed
/// only when someone reads them (a scrape of /metrics). Adding is one relaxed
/// atomic add on a line no other thread writes, in the common case.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wheelrpc::admin {

namespace detail {
/// Shards per cell: threads beyond this share shards (still correct, a
/// little more contention).
inline constexpr std::size_t kShards = 16;
/// This thread's shard, assigned round robin at its first use.
std::size_t this_thread_shard() noexcept;
}  // namespace detail

/// A monotonically increasing count (a Prometheus counter).
///
/// @par Thread Safety
/// `add` and `value` from any thread; `value` is a sum of relaxed loads, so
/// it may miss adds racing with it, never counts one twice, and never goes
/// down between two calls from one thread.
class Counter {
 public:
  void add(std::uint64_t n = 1) noexcept {
    cells_[detail::this_thread_shard()].v.fetch_add(n, std::memory_order_relaxed);
  }
  std::uint64_t value() const noexcept;

 private:
  struct alignas(64) Cell {
    std::atomic<std::uint64_t> v{0};
  };
  std::array<Cell, detail::kShards> cells_{};
};

/// A value that goes up and down (a Prometheus gauge): calls in flight,
/// connections. Not sharded: a gauge is read-modify-written by both sides of
/// what it counts.
///
/// @par Thread Safety
/// Every method from any thread.
class Gauge {
 public:
  void add(std::int64_t n) noexcept { v_.fetch_add(n, std::memory_order_relaxed); }
  void set(std::int64_t n) noexcept { v_.store(n, std::memory_order_relaxed); }
  std::int64_t value() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> v_{0};
};

/// What a Histogram held when read.
struct HistogramSnapshot {
  std::vector<double> bounds;         ///< upper bounds, increasing (the `le` labels, +Inf not included)
  std::vector<std::uint64_t> counts;  ///< per bucket, not cumulative; bounds.size() + 1 (the last: above every bound)
  double sum = 0;                     ///< of every observed value
  std::uint64_t count = 0;            ///< observations (the sum of `counts`)
};

/// A distribution over fixed buckets (a Prometheus histogram), in the unit
/// the caller observes (seconds for the latencies here).
///
/// @par Thread Safety
/// `observe` and `snapshot` from any thread; a snapshot is consistent per
/// shard (its count is the sum of its buckets).
class Histogram {
 public:
  /// `bounds`: upper bounds, strictly increasing, finite; throws
  /// std::invalid_argument otherwise.
  explicit Histogram(std::vector<double> bounds);
  /// The latency buckets of the rpc metrics, in seconds: .0005 .001 .0025
  /// .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
  static std::vector<double> latency_bounds();

  void observe(double value) noexcept;
  HistogramSnapshot snapshot() const;

 private:
  struct alignas(64) Shard {
    std::vector<std::atomic<std::uint64_t>> buckets;  // bounds + 1
    std::atomic<double> sum{0};
  };
  std::vector<double> bounds_;
  std::array<Shard, detail::kShards> shards_;
};

}  // namespace wheelrpc::admin
