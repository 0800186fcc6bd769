#pragma once
// The client's table of calls sent and awaiting a reply, keyed by request id.
// An id is a sequence number above a slot index, so a lookup is one array
// access plus an equality check (no hashing, no allocation once the slot array
// has grown), and a stale id (a reply to a call that already completed, whose
// slot was reused) can never match the slot's new occupant. Holds any
// nullable pointer type (a CallPtr in the client: the table's entry owns one
// reference). Not thread-safe: each client connection guards its own table.

#include <cstdint>
#include <utility>
#include <vector>

namespace wheelrpc::rpc::detail {

template <class Ptr>
class PendingTable {
 public:
  static constexpr unsigned kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;

  /// Stores `item` (non-null) and returns its id (never 0).
  std::uint64_t insert(Ptr item) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back({Ptr{}, 0});
    }
    const std::uint64_t id = (next_seq_++ << kSlotBits) | slot;
    slots_[slot] = {std::move(item), id};
    ++size_;
    return id;
  }

  /// Removes and returns the item stored under `id`, or a null one if there is
  /// none (never inserted, already taken, or a stale id).
  Ptr take(std::uint64_t id) {
    const std::uint64_t slot = id & kSlotMask;
    if (slot >= slots_.size() || slots_[slot].id != id || !slots_[slot].item) return Ptr{};
    Ptr item = std::move(slots_[slot].item);
    slots_[slot] = {Ptr{}, 0};
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

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    Ptr item;
    std::uint64_t id;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_seq_ = 1;
  std::size_t size_ = 0;
};

}  // namespace wheelrpc::rpc::detail
