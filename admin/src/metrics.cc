#include <wheelrpc/admin/metrics.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wheelrpc::admin {

namespace detail {
std::size_t this_thread_shard() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t shard = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shard;
}
}  // namespace detail

std::uint64_t Counter::value() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& c : cells_) sum += c.v.load(std::memory_order_relaxed);
  return sum;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i] > bounds_[i - 1]))) {
      throw std::invalid_argument("Histogram: bucket bounds must be finite and strictly increasing");
    }
  }
  for (auto& s : shards_) s.buckets = std::vector<std::atomic<std::uint64_t>>(bounds_.size() + 1);
}

std::vector<double> Histogram::latency_bounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

void Histogram::observe(double value) noexcept {
  auto& s = shards_[detail::this_thread_shard()];
  // The first bucket whose bound is >= value (Prometheus buckets are "le").
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  s.buckets[i].fetch_add(1, std::memory_order_relaxed);
  double old = s.sum.load(std::memory_order_relaxed);
  while (!s.sum.compare_exchange_weak(old, old + value, std::memory_order_relaxed)) {
  }
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot out;
  out.bounds = bounds_;
  out.counts.assign(bounds_.size() + 1, 0);
  for (const auto& s : shards_) {
    for (std::size_t i = 0; i < s.buckets.size(); ++i) out.counts[i] += s.buckets[i].load(std::memory_order_relaxed);
    out.sum += s.sum.load(std::memory_order_relaxed);
  }
  for (const auto c : out.counts) out.count += c;
  return out;
}

}  // namespace wheelrpc::admin
