// text_histogram (examples/load): the load generator's one-line latency
// histogram, and LatencyHistogram::count_below, which it counts buckets with.
#include "load/text_histogram.h"

#include <chrono>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "support/latency_histogram.h"

namespace {

using wheelrpc::examples::load::text_histogram;
using wheelrpc::support::LatencyHistogram;
using namespace std::chrono_literals;

constexpr const char* kEmpty =
    "latency histogram (ms): <0.1   0.25   0.5   1   2.5   5   10   25   50   100   250   >250  ";

TEST(LatencyHistogramCountBelow, CountsTheValuesBelowAnEdge) {
  LatencyHistogram h;
  for (std::uint64_t v : {0, 5, 99, 100, 101, 1000, 5000}) h.record(v);
  EXPECT_EQ(h.count_below(0), 0u);
  EXPECT_EQ(h.count_below(100), 3u);
  EXPECT_EQ(h.count_below(101), 4u);
  EXPECT_EQ(h.count_below(1000), 5u);  // 1000 is a bucket bound: exact
  EXPECT_EQ(h.count_below(1001), 5u);  // inside 1000's bucket: rounded down
  EXPECT_EQ(h.count_below(UINT64_MAX), 7u);
}

TEST(TextHistogram, AnEmptyHistogramHasEveryLabelAndNoBar) {
  EXPECT_EQ(text_histogram(LatencyHistogram{}, 1us), kEmpty);
}

TEST(TextHistogram, StartsWithTheLineTestsGrepFor) {
  LatencyHistogram h;
  h.record(1234);
  EXPECT_EQ(text_histogram(h, 1us).rfind("latency histogram (ms): ", 0), 0u);
}

TEST(TextHistogram, TheFullestBucketGetsTheFullBlockAndOthersScaleToIt) {
  LatencyHistogram h;                          // in us
  for (int i = 0; i < 80; ++i) h.record(300);  // [0.25, 0.5) ms
  for (int i = 0; i < 40; ++i) h.record(50);   // < 0.1 ms
  h.record(2000);                              // [1, 2.5) ms: 1 of 80 still shows
  EXPECT_EQ(
      text_histogram(h, 1us),
      "latency histogram (ms): <0.1 \u2584 0.25   0.5 \u2588 1   2.5 \u2581 5   10   25   50   100   250   >250  ");
}

TEST(TextHistogram, EdgesBelongToTheBucketAboveThem) {
  LatencyHistogram h;
  h.record(100);     // exactly 0.1 ms: [0.1, 0.25)
  h.record(250000);  // exactly 250 ms: the last bucket
  EXPECT_EQ(text_histogram(h, 1us),
            "latency histogram (ms): <0.1   0.25 \u2588 0.5   1   2.5   5   10   25   50   100   250   >250 \u2588");
}

TEST(TextHistogram, TheUnitScalesTheEdges) {
  LatencyHistogram us;
  LatencyHistogram ns;
  for (std::uint64_t v : {20, 300, 700, 4000, 30000, 400000}) {
    us.record(v);
    ns.record(v * 1000);
  }
  EXPECT_EQ(text_histogram(ns, 1ns), text_histogram(us, 1us));
  // 300 ms in ms: the last bucket.
  LatencyHistogram ms;
  ms.record(300);
  EXPECT_EQ(text_histogram(ms, 1ms),
            "latency histogram (ms): <0.1   0.25   0.5   1   2.5   5   10   25   50   100   250   >250 \u2588");
}

}  // namespace
