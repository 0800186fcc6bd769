#pragma once
// The client's table of calls sent and awaiting a reply, keyed by request id.
// An id is a sequence number above a slot index, so a lookup is one array
// access plus an equality check (no hashing, no allocation once the slot array
// has grown), and a stale id (a reply to a call that already completed, whose
// slot was reused) can never match the slot's new occupant. Not thread-safe:
// the client guards it with its lock.

#include <cstdint>
#include <vector>

namespace wheelrpc::rpc::detail {

template <class T>
class PendingTable {
 public:
  static constexpr unsigned kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;

  /// Stores `item` (non-null) and returns its id (never 0).
  std::uint64_t insert(T* item) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back({nullptr, 0});
    }
    const std::uint64_t id = (next_seq_++ << kSlotBits) | slot;
    slots_[slot] = {item, id};
    ++size_;
    return id;
  }

  /// Removes and returns the item stored under `id`, or nullptr if there is none
  /// (never inserted, already taken, or a stale id).
  T* take(std::uint64_t id) {
    const std::uint64_t slot = id & kSlotMask;
    if (slot >= slots_.size() || slots_[slot].id != id || !slots_[slot].item) return nullptr;
    T* item = slots_[slot].item;
    slots_[slot] = {nullptr, 0};
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
    T* item;
    std::uint64_t id;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_seq_ = 1;
  std::size_t size_ = 0;
};

}  // namespace wheelrpc::rpc::detail
