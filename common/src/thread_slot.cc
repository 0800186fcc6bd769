#include <wheelrpc/common/thread_slot.h>

namespace wheelrpc::common {
namespace {

static_assert(kThreadSlots <= 32);
std::atomic<std::uint32_t> g_taken{0};  // bit i: slot i has a live owner

thread_local std::size_t t_slot = kSharedSlot + 1;  // + 1: not chosen yet (trivially destructible)

// Gives the slot back when its thread ends. A counter added to later in the
// thread's exit (another thread_local's destructor) goes to the shared slot.
struct SlotReturn {
  ~SlotReturn() {
    if (t_slot < kThreadSlots) {
      const std::uint32_t bit = std::uint32_t{1} << t_slot;
      t_slot = kSharedSlot;
      g_taken.fetch_and(~bit, std::memory_order_release);  // our stores happen before the next owner's
    } else {
      t_slot = kSharedSlot;
    }
  }
};

std::size_t choose() noexcept {
  std::uint32_t taken = g_taken.load(std::memory_order_relaxed);
  for (;;) {
    const auto all = static_cast<std::uint32_t>((std::uint64_t{1} << kThreadSlots) - 1);
    const std::uint32_t free = ~taken & all;
    if (free == 0) return kSharedSlot;
    const unsigned i = static_cast<unsigned>(__builtin_ctz(free));
    if (g_taken.compare_exchange_weak(taken, taken | (std::uint32_t{1} << i), std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
      return i;
    }
  }
}

}  // namespace

std::size_t thread_slot() noexcept {
  if (t_slot <= kSharedSlot) [[likely]]
    return t_slot;
  thread_local SlotReturn give_back;  // constructed once, on this first use
  (void)give_back;
  t_slot = choose();
  return t_slot;
}

}  // namespace wheelrpc::common
