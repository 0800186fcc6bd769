#include <wheelrpc/rpc/backoff.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wheelrpc::rpc {

Backoff::Backoff(BackoffOptions o, std::uint64_t seed) : options_(o), rng_(seed ? seed : 0x9E3779B97F4A7C15ull) {
  using namespace std::chrono;
  if (o.first < milliseconds(0)) throw std::invalid_argument("BackoffOptions::first must be >= 0");
  if (o.initial <= milliseconds(0)) throw std::invalid_argument("BackoffOptions::initial must be > 0");
  if (!(o.multiplier >= 1.0) || o.multiplier > 100.0) {
    throw std::invalid_argument("BackoffOptions::multiplier must be between 1 and 100");
  }
  if (!(o.jitter >= 0.0 && o.jitter <= 1.0))
    throw std::invalid_argument("BackoffOptions::jitter must be between 0 and 1");
  if (o.max < o.initial) throw std::invalid_argument("BackoffOptions::max must be >= initial");
}

std::chrono::milliseconds Backoff::next() {
  double base;
  if (attempt_ == 0) {
    base = static_cast<double>(options_.first.count());
  } else {
    base = static_cast<double>(options_.initial.count()) *
           std::pow(options_.multiplier, static_cast<double>(std::min(attempt_ - 1, 200u)));
    base = std::min(base, static_cast<double>(options_.max.count()));
  }
  ++attempt_;
  // splitmix64 for the jitter: uniform in [-jitter, +jitter].
  std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 11) / static_cast<double>(std::uint64_t{1} << 53);  // [0, 1)
  const double spread = base * options_.jitter * (2.0 * u - 1.0);
  return std::chrono::milliseconds(static_cast<long long>(std::llround(std::max(0.0, base + spread))));
}

}  // namespace wheelrpc::rpc
