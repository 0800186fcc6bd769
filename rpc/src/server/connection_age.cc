// ConnectionAge: each connection's jittered maximum age, and the counts.
// ServerCore's part (the timeouts and the steps) is in server_age.cc.
#include "server/connection_age.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <wheelrpc/rpc/server.h>

namespace wheelrpc::rpc::detail {

namespace {
std::uint64_t age_splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// ---------------------------------------------------------------- the policy

ConnectionAge::ConnectionAge(const ServerKeepaliveOptions& options)
    : age_(options.max_connection_age), grace_(options.max_connection_age_grace), seed_(std::random_device{}()) {}

std::chrono::milliseconds ConnectionAge::jittered(std::chrono::milliseconds age, double unit) noexcept {
  unit = std::clamp(unit, 0.0, 1.0);
  const double ms = static_cast<double>(age.count()) * (0.9 + 0.2 * unit);
  return std::max(std::chrono::milliseconds(static_cast<std::int64_t>(std::floor(ms))), std::chrono::milliseconds(1));
}

std::chrono::milliseconds ConnectionAge::draw() noexcept {
  const std::uint64_t r = age_splitmix64(seed_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed));
  return jittered(age_, static_cast<double>(r >> 11) * 0x1.0p-53);  // 53 bits: [0, 1)
}

void ConnectionAge::add_stats(ServerStats& s) const noexcept {
  s.aged_connections = aged();
  s.age_grace_closes = grace_closes();
}

}  // namespace wheelrpc::rpc::detail
