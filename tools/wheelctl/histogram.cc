#include "histogram.h"

#include <algorithm>
#include <cmath>

namespace wheelrpc::wheelctl {
namespace {

// 128 sub-buckets per power of two; values below 2 * kSubCount have a bucket
// each (the first octave split into 128 is 128 .. 255, one value per bucket).
constexpr int kSubBits = 7;
constexpr std::uint64_t kSubCount = std::uint64_t{1} << kSubBits;
constexpr std::size_t kBuckets = (64 - kSubBits + 1) << kSubBits;

}  // namespace

Histogram::Histogram() : counts_(kBuckets) {}

std::size_t Histogram::buckets() noexcept { return kBuckets; }

std::size_t Histogram::index_of(std::uint64_t value) noexcept {
  if (value < kSubCount) return static_cast<std::size_t>(value);
  const int e = 63 - __builtin_clzll(value);
  return (static_cast<std::size_t>(e - kSubBits + 1) << kSubBits) +
         static_cast<std::size_t>((value >> (e - kSubBits)) & (kSubCount - 1));
}

std::uint64_t Histogram::lower_of(std::size_t index) noexcept {
  if (index < kSubCount) return index;
  if (index >= kBuckets) return ~std::uint64_t{0};  // past the last bucket: its exclusive upper bound
  const int e = static_cast<int>(index >> kSubBits) + kSubBits - 1;
  return (std::uint64_t{1} << e) + (static_cast<std::uint64_t>(index & (kSubCount - 1)) << (e - kSubBits));
}

void Histogram::merge(const Histogram& other) noexcept {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

std::uint64_t Histogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  if (p >= 100) return max_;
  if (p <= 0) return min_;
  const auto rank =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_) - 1e-9)));
  std::uint64_t seen = 0;
  for (std::size_t i = index_of(min_); i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const std::uint64_t lower = lower_of(i);
      const std::uint64_t upper = lower_of(i + 1);  // exclusive
      const std::uint64_t mid = lower + (upper - lower - 1) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

std::uint64_t Histogram::count_at_or_above(std::uint64_t value) const noexcept {
  std::uint64_t n = 0;
  for (std::size_t i = index_of(value); i < kBuckets; ++i) n += counts_[i];
  return n;
}

std::vector<Histogram::Bar> Histogram::bars(std::size_t rows) const {
  std::vector<Bar> out;
  if (count_ == 0) return out;
  rows = std::max<std::size_t>(rows, 1);
  const std::size_t first = index_of(min_);
  const std::size_t end = index_of(max_) + 1;
  // Bounds spaced evenly in log(value) between min and max, each moved to the
  // start of its bucket; duplicates (narrow ranges) collapse.
  std::vector<std::size_t> bounds{first};
  const double lo = static_cast<double>(std::max<std::uint64_t>(min_, 1));
  const double hi = static_cast<double>(std::max<std::uint64_t>(max_, 1)) + 1;
  for (std::size_t k = 1; k < rows; ++k) {
    const double v = lo * std::pow(hi / lo, static_cast<double>(k) / static_cast<double>(rows));
    const std::size_t idx = index_of(static_cast<std::uint64_t>(v));
    if (idx > bounds.back() && idx < end) bounds.push_back(idx);
  }
  bounds.push_back(end);
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    Bar bar{lower_of(bounds[k]), lower_of(bounds[k + 1]), 0};
    for (std::size_t i = bounds[k]; i < bounds[k + 1]; ++i) bar.count += counts_[i];
    out.push_back(bar);
  }
  return out;
}

}  // namespace wheelrpc::wheelctl
