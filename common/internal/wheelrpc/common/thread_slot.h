#pragma once
// Counters that many threads add to without a shared read-modify-write.
//
// Every locked instruction costs a call tens of cycles even on a cache line
// no other thread touches, and a call used to pay for a dozen of them in
// statistics alone. Instead each live thread owns a slot (a small index no
// other live thread has; freed at thread exit for the next thread), adds to
// its own cache line with a plain load and store, and a reader sums the
// lines. Threads beyond kThreadSlots share one last slot with atomic adds.
//
// @par Thread Safety
// `add` from any thread; `value` from any thread (a relaxed sum: each line
// exact, the sum a moment's view).

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace wheelrpc::common {

inline constexpr std::size_t kThreadSlots = 16;
inline constexpr std::size_t kSharedSlot = kThreadSlots;  // for threads beyond kThreadSlots

/// This thread's slot: 0 .. kThreadSlots - 1 (its own while it lives), or
/// kSharedSlot.
std::size_t thread_slot() noexcept;

/// Adds `n` to the counter `c` of slot `slot` (see thread_slot()).
inline void add_in_slot(std::atomic<std::uint64_t>& c, std::uint64_t n, std::size_t slot) noexcept {
  if (slot != kSharedSlot) [[likely]] {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  } else {
    c.fetch_add(n, std::memory_order_relaxed);
  }
}

/// N counters, one cache line of them per slot (N <= 8).
template <std::size_t N>
class SlotCounters {
  static_assert(N >= 1 && N <= 8);

 public:
  void add(std::size_t counter, std::uint64_t n = 1) noexcept { add(counter, n, thread_slot()); }
  void add(std::size_t counter, std::uint64_t n, std::size_t slot) noexcept {
    add_in_slot(lines_[slot].v[counter], n, slot);
  }
  std::uint64_t value(std::size_t counter) const noexcept {
    std::uint64_t sum = 0;
    for (const auto& line : lines_) sum += line.v[counter].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Line {
    std::atomic<std::uint64_t> v[N]{};
  };
  Line lines_[kThreadSlots + 1];
};

}  // namespace wheelrpc::common
