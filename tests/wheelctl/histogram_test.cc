// Histogram (tools/wheelctl/histogram.h): exact percentiles where buckets are
// one value wide, the bucket error bound above, merge, bars.

#include "histogram.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace wheelrpc::wheelctl {
namespace {

TEST(Histogram, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_TRUE(h.bars(10).empty());
}

TEST(Histogram, PercentilesAreExactNearestRankOnSmallValues) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.percentile(50), 50u);
  EXPECT_EQ(h.percentile(90), 90u);
  EXPECT_EQ(h.percentile(99), 99u);
  EXPECT_EQ(h.percentile(99.9), 100u);
  EXPECT_EQ(h.percentile(100), 100u);
  EXPECT_EQ(h.percentile(0), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
}

TEST(Histogram, ValuesBelow256HaveABucketEach) {
  for (std::uint64_t v = 0; v < 256; ++v) {
    EXPECT_EQ(Histogram::lower_of(Histogram::index_of(v)), v);
    EXPECT_EQ(Histogram::lower_of(Histogram::index_of(v) + 1), v + 1);
  }
  Histogram h;
  for (std::uint64_t v = 200; v < 256; ++v) h.record(v);  // 56 values
  EXPECT_EQ(h.percentile(50), 227u);                      // rank 28
  EXPECT_EQ(h.percentile(25), 213u);                      // rank 14
}

TEST(Histogram, ExtremesAreExactAtAnyMagnitude) {
  Histogram h;
  h.record(1'000'003);
  h.record(987'654'321'987ull);
  EXPECT_EQ(h.min(), 1'000'003u);
  EXPECT_EQ(h.max(), 987'654'321'987ull);
  EXPECT_EQ(h.percentile(100), 987'654'321'987ull);
  // The midpoint of its bucket (clamped to [min, max]): within half a bucket.
  EXPECT_NEAR(static_cast<double>(h.percentile(50)), 1'000'003.0, 1'000'003.0 * Histogram::kRelativeError / 2);
}

TEST(Histogram, EveryValueLiesInItsBucketWhoseWidthIsWithinTheErrorBound) {
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> values{255, 256, 257, 511, 512, 1023, 1024, ~std::uint64_t{0}, std::uint64_t{1} << 63};
  for (int i = 0; i < 100000; ++i) values.push_back(rng() >> (rng() % 64));
  for (const std::uint64_t v : values) {
    const std::size_t i = Histogram::index_of(v);
    ASSERT_LT(i, Histogram::buckets()) << v;
    const std::uint64_t lower = Histogram::lower_of(i);
    const std::uint64_t upper = Histogram::lower_of(i + 1);  // exclusive; ~0 past the last
    ASSERT_LE(lower, v);
    if (i + 1 < Histogram::buckets()) {
      ASSERT_LT(v, upper);
      const double width = static_cast<double>(upper - lower);
      ASSERT_LE(width, std::max(1.0, static_cast<double>(v) * Histogram::kRelativeError)) << v;
    }
  }
  // Monotone: a larger value never lands in a smaller bucket.
  for (std::uint64_t v = 1; v < (1u << 20); v = v * 3 / 2 + 1) {
    EXPECT_LE(Histogram::index_of(v), Histogram::index_of(v + 1));
  }
}

TEST(Histogram, PercentileOfLargeValuesIsWithinHalfABucket) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 1000; ++round) {
    const std::uint64_t a = 1000 + rng() % 1'000'000'000;
    const std::uint64_t b = a * 3 + rng() % 1000;
    const std::uint64_t c = b * 3 + rng() % 1000;
    Histogram h;
    h.record(a);
    h.record(b);
    h.record(c);
    const double p = static_cast<double>(h.percentile(50));  // rank 2: b
    ASSERT_NEAR(p, static_cast<double>(b), static_cast<double>(b) * Histogram::kRelativeError / 2 + 1) << b;
  }
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  Histogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t v = rng() % 10'000'000;
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  Histogram merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) EXPECT_EQ(merged.percentile(p), all.percentile(p)) << p;
  Histogram empty;
  merged.merge(empty);
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.count(), all.count());
}

TEST(Histogram, CountAtOrAboveCountsByBucket) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 200; ++v) h.record(v);
  h.record(1'000'000);
  EXPECT_EQ(h.count_at_or_above(0), 201u);
  EXPECT_EQ(h.count_at_or_above(101), 101u);
  EXPECT_EQ(h.count_at_or_above(201), 1u);
  EXPECT_EQ(h.count_at_or_above(2'000'000), 0u);
}

TEST(Histogram, BarsCoverEveryValueInAscendingRanges) {
  Histogram h;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 10000; ++i) h.record(50'000 + rng() % 5'000'000);
  const auto bars = h.bars(12);
  ASSERT_FALSE(bars.empty());
  EXPECT_LE(bars.size(), 12u);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    total += bars[i].count;
    EXPECT_LT(bars[i].lower, bars[i].upper);
    if (i > 0) {
      EXPECT_EQ(bars[i].lower, bars[i - 1].upper);
    }
  }
  EXPECT_EQ(total, h.count());
  EXPECT_LE(bars.front().lower, h.min());
  EXPECT_GT(bars.back().upper, h.max());

  Histogram one;
  one.record(777);
  ASSERT_EQ(one.bars(12).size(), 1u);
  EXPECT_EQ(one.bars(12)[0].count, 1u);
}

}  // namespace
}  // namespace wheelrpc::wheelctl
