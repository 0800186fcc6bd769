#pragma once
// The client's table of calls sent and awaiting a reply, keyed by request id.
// An id is a sequence number above a slot index, so a lookup is one array
// access plus an equality check (no hashing, no allocation once the slot array
// has grown), and a stale id (a reply to a call that already completed, whose
// slot was reused) can never match the slot's new occupant. Holds any
// nullable pointer type (a CallPtr in the client: the table's entry owns one
// reference). Each entry may carry a deadline that `sweep` finds: one timeout
// per table (the earliest deadline) instead of one per entry. Not
// thread-safe: each client connection guards its own table.

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace wheelrpc::rpc::detail {

template <class Ptr, class Time = std::chrono::steady_clock::time_point>
class PendingTable {
 public:
  static constexpr unsigned kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  static constexpr Time kNoDeadline = Time::max();

  /// Stores `item` (non-null) with the deadline `sweep` finds it by (none by
  /// default) and returns its id (never 0).
  std::uint64_t insert(Ptr item, Time deadline = kNoDeadline) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back({Ptr{}, 0, kNoDeadline});
    }
    const std::uint64_t id = (next_seq_++ << kSlotBits) | slot;
    slots_[slot] = {std::move(item), id, deadline};
    ++size_;
    return id;
  }

  /// Removes and returns the item stored under `id`, or a null one if there is
  /// none (never inserted, already taken, or a stale id).
  Ptr take(std::uint64_t id) {
    const std::uint64_t slot = id & kSlotMask;
    if (slot >= slots_.size() || slots_[slot].id != id || !slots_[slot].item) return Ptr{};
    Ptr item = std::move(slots_[slot].item);
    slots_[slot] = {Ptr{}, 0, kNoDeadline};
    free_.push_back(static_cast<std::uint32_t>(slot));
    --size_;
    return item;
  }

  /// Calls f(id, item) for every stored item (the table must not change meanwhile).
  template <class F>
  void for_each(F&& f) const {
    for (const auto& s : slots_) {
      if (s.item) f(s.id, s.item);
    }
  }

  /// Calls due(id, item) for every item whose deadline is at or before `now`
  /// (left in the table: taking them is the caller's) and returns the
  /// earliest deadline of the others (kNoDeadline if none). O(slots).
  template <class F>
  Time sweep(Time now, F&& due) const {
    Time next = kNoDeadline;
    for (const auto& s : slots_) {
      if (!s.item || s.deadline == kNoDeadline) continue;
      if (s.deadline <= now) {
        due(s.id, s.item);
      } else if (s.deadline < next) {
        next = s.deadline;
      }
    }
    return next;
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    Ptr item;
    std::uint64_t id;
    Time deadline;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_seq_ = 1;
  std::size_t size_ = 0;
};

}  // namespace wheelrpc::rpc::detail
