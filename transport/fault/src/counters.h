#pragma once
// The proxy's counters, shared by its connection pairs, and a toxic as the
// proxy keeps it (with its own "applied" counter shared by every stage made
// from it).

#include <atomic>
#include <cstdint>
#include <memory>

#include <wheelrpc/fault/toxic.h>

namespace wheelrpc::fault::detail {

using Counter = std::atomic<std::uint64_t>;

inline void bump(Counter& c, std::uint64_t n = 1) noexcept { c.fetch_add(n, std::memory_order_relaxed); }
inline std::uint64_t read(const Counter& c) noexcept { return c.load(std::memory_order_relaxed); }

struct Counters {
  Counter accepted{0}, active{0}, connect_failures{0};
  Counter upstream_in{0}, upstream_out{0}, downstream_in{0}, downstream_out{0}, dropped{0};
  Counter applied{0}, resets{0}, limit_closes{0};
};

struct ToxicEntry {
  Toxic toxic;
  std::shared_ptr<Counter> applied = std::make_shared<Counter>(0);
};

}  // namespace wheelrpc::fault::detail
