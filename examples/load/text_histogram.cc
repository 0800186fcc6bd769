#include "load/text_histogram.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace wheelrpc::examples::load {

namespace {

/// The upper edges of every bucket but the last, in ms.
constexpr std::array<double, 11> kEdgesMs = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250};
/// Index 0 is an empty bucket; 1..8 the block characters, one eighth each.
constexpr std::array<std::string_view, 9> kBars = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                                   "\u2585", "\u2586", "\u2587", "\u2588"};

std::string label(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", ms);
  return buf;
}

}  // namespace

std::string text_histogram(const support::LatencyHistogram& h, std::chrono::nanoseconds unit) {
  constexpr std::size_t kBuckets = kEdgesMs.size() + 1;
  std::array<std::uint64_t, kBuckets> counts{};
  std::uint64_t below_prev = 0;
  for (std::size_t i = 0; i < kEdgesMs.size(); ++i) {
    const double edge = kEdgesMs[i] * 1e6 / static_cast<double>(unit.count());  // in h's unit
    const std::uint64_t below = h.count_below(static_cast<std::uint64_t>(std::llround(edge)));
    counts[i] = below - below_prev;
    below_prev = below;
  }
  counts[kBuckets - 1] = h.count() - below_prev;
  std::uint64_t fullest = 0;
  for (const auto n : counts) fullest = std::max(fullest, n);

  std::string out = "latency histogram (ms):";
  for (std::size_t i = 0; i < kBuckets; ++i) {
    std::size_t level = 0;
    if (counts[i] > 0) {
      // ceil(8 n / fullest), in integers: any non-empty bucket shows.
      level = static_cast<std::size_t>((8 * counts[i] + fullest - 1) / fullest);
    }
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false
    // positive) on "<" + std::string.
    out += ' ';
    if (i == 0) {
      out += '<';
      out += label(kEdgesMs.front());
    } else if (i == kBuckets - 1) {
      out += '>';
      out += label(kEdgesMs.back());
    } else {
      out += label(kEdgesMs[i]);
    }
    out += ' ';
    out += kBars[level];
  }
  return out;
}

}  // namespace wheelrpc::examples::load
