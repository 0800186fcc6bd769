// Thread slots: each live thread owns its slot alone (so counters can add
// without a locked instruction), slots come back when threads end, and
// threads beyond the slots share one with atomic adds: no count is lost.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include <wheelrpc/common/thread_slot.h>

namespace common = wheelrpc::common;

TEST(ThreadSlot, LiveThreadsHoldDistinctSlotsAndTheRestShareOne) {
  // kThreadSlots + 4 threads alive at once: at most kThreadSlots distinct
  // own slots (this thread may hold one too), the others the shared one.
  const std::size_t n = common::kThreadSlots + 4;
  std::vector<std::size_t> slots(n);
  std::atomic<std::size_t> arrived{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      slots[i] = common::thread_slot();
      arrived.fetch_add(1);
      while (!go.load()) std::this_thread::yield();  // alive until all have chosen
    });
  }
  while (arrived.load() < n) std::this_thread::yield();
  go = true;
  for (auto& t : threads) t.join();
  std::set<std::size_t> own;
  std::size_t shared = 0;
  for (const auto s : slots) {
    ASSERT_LE(s, common::kSharedSlot);
    if (s == common::kSharedSlot) {
      ++shared;
    } else {
      EXPECT_TRUE(own.insert(s).second) << "slot " << s << " held by two live threads";
    }
  }
  EXPECT_GE(shared, 4u);
  EXPECT_EQ(common::thread_slot(), common::thread_slot()) << "a thread keeps its slot";
}

TEST(ThreadSlot, SlotsComeBackWhenThreadsEnd) {
  // Far more threads in sequence than slots: each finds one of its own.
  for (std::size_t i = 0; i < 4 * common::kThreadSlots; ++i) {
    std::size_t slot = common::kSharedSlot;
    std::thread([&] { slot = common::thread_slot(); }).join();
    EXPECT_NE(slot, common::kSharedSlot) << "thread " << i << " found no free slot";
  }
}

TEST(SlotCounters, ManyThreadsAddingAtOnceLoseNothing) {
  common::SlotCounters<2> counters;
  const std::size_t n = common::kThreadSlots + 8;  // some in the shared slot
  constexpr std::uint64_t kAdds = 20000;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&] {
      for (std::uint64_t k = 0; k < kAdds; ++k) {
        counters.add(0);
        counters.add(1, 2);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counters.value(0), n * kAdds);
  EXPECT_EQ(counters.value(1), 2 * n * kAdds);
}
