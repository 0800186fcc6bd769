// The pending-call table: ids are unique, lookups are exact, stale ids miss.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "base/pending_table.h"

using wheelrpc::rpc::detail::PendingTable;

namespace {

TEST(PendingTable, InsertThenTakeReturnsTheItemOnce) {
  PendingTable<int*> t;
  int a = 1, b = 2;
  const auto ia = t.insert(&a), ib = t.insert(&b);
  EXPECT_NE(ia, 0u);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.take(ib), &b);
  EXPECT_EQ(t.take(ib), nullptr) << "taken once";
  EXPECT_EQ(t.take(ia), &a);
  EXPECT_EQ(t.size(), 0u);
}

TEST(PendingTable, StaleIdNeverMatchesTheSlotsNextOccupant) {
  PendingTable<int*> t;
  int a = 1, b = 2;
  const auto ia = t.insert(&a);
  ASSERT_EQ(t.take(ia), &a);
  const auto ib = t.insert(&b);  // reuses the slot
  EXPECT_EQ(ia & PendingTable<int*>::kSlotMask, ib & PendingTable<int*>::kSlotMask);
  EXPECT_EQ(t.take(ia), nullptr) << "a late reply to the first call";
  EXPECT_EQ(t.take(ib), &b);
}

TEST(PendingTable, UnknownAndOutOfRangeIdsMiss) {
  PendingTable<int*> t;
  int a = 1;
  t.insert(&a);
  EXPECT_EQ(t.take(0), nullptr);
  EXPECT_EQ(t.take(12345), nullptr);
  EXPECT_EQ(t.take(~std::uint64_t{0}), nullptr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(PendingTable, ManyItemsIdsUniqueAndForEachSeesAll) {
  PendingTable<int*> t;
  std::vector<int> items(10000);
  std::set<std::uint64_t> ids;
  std::vector<std::uint64_t> order;
  for (auto& i : items) {
    const auto id = t.insert(&i);
    EXPECT_TRUE(ids.insert(id).second);
    order.push_back(id);
  }
  for (std::size_t k = 0; k < order.size(); k += 2) ASSERT_NE(t.take(order[k]), nullptr);
  for (std::size_t k = 0; k < 5000; ++k) EXPECT_TRUE(ids.insert(t.insert(&items[k])).second);
  std::size_t seen = 0;
  t.for_each([&](std::uint64_t, int*) { ++seen; });
  EXPECT_EQ(seen, t.size());
  EXPECT_EQ(t.size(), 10000u);
}

}  // namespace
