// The reconnect backoff: the configured curve, within the jitter.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <wheelrpc/rpc/backoff.h>

using namespace std::chrono_literals;
using wheelrpc::rpc::Backoff;
using wheelrpc::rpc::BackoffOptions;

namespace {

TEST(Backoff, FollowsTheCurveWithinTheJitter) {
  BackoffOptions o;  // gRPC's: fast first, 1 s x 1.6 +- 20 %, 120 s max
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Backoff b(o, seed);
    EXPECT_EQ(b.next(), 0ms) << "the first attempt is immediate";
    double base = 1000;
    for (int i = 0; i < 20; ++i) {
      const double expect = std::min(base, 120000.0);
      const auto d = static_cast<double>(b.next().count());
      EXPECT_GE(d, std::floor(expect * 0.8)) << "attempt " << i + 2;
      EXPECT_LE(d, std::ceil(expect * 1.2)) << "attempt " << i + 2;
      base *= 1.6;
    }
  }
}

TEST(Backoff, JitterSpreadsAttempts) {
  BackoffOptions o;
  Backoff a(o, 1), b(o, 2);
  a.next();
  b.next();
  int differ = 0;
  for (int i = 0; i < 10; ++i) differ += a.next() != b.next();
  EXPECT_GT(differ, 5) << "two clients must not retry in lockstep";
}

TEST(Backoff, ResetStartsOver) {
  BackoffOptions o;
  o.jitter = 0;
  Backoff b(o);
  b.next();
  b.next();
  b.next();
  EXPECT_EQ(b.attempts(), 3u);
  b.reset();
  EXPECT_EQ(b.next(), 0ms);
  EXPECT_EQ(b.next(), 1000ms);
}

TEST(Backoff, AbsurdOptionsAreRejected) {
  auto with = [](auto set) {
    BackoffOptions o;
    set(o);
    return o;
  };
  EXPECT_THROW(Backoff(with([](auto& o) { o.initial = 0ms; })), std::invalid_argument);
  EXPECT_THROW(Backoff(with([](auto& o) { o.first = -1ms; })), std::invalid_argument);
  EXPECT_THROW(Backoff(with([](auto& o) { o.multiplier = 0.5; })), std::invalid_argument);
  EXPECT_THROW(Backoff(with([](auto& o) { o.jitter = 1.5; })), std::invalid_argument);
  EXPECT_THROW(Backoff(with([](auto& o) { o.max = 10ms; })), std::invalid_argument);
}

}  // namespace
