#pragma once
// A hierarchical timing wheel over a NodePool's records (one per shard; every
// method requires the shard's lock).
//
// Level L has W = 2^bits slots of W^L ticks each. A record with deadline d goes
// to the level of the highest bit group in which d and `elapsed` differ (the
// scheme of Tokio's wheel), to the slot holding d's digit at that level. So a
// level's occupied slots all lie ahead of elapsed's digit there, the earliest
// event is the first occupied slot of the lowest non-empty level, and a record
// moves down at most once per level: no laps, whatever the delay.
//
// Occupied slots are tracked in a bitmap per level (plus a summary word), so
// finding the next event never walks empty slots: the worker sleeps until it.

#include <array>
#include <cstdint>
#include <vector>

#include "node_pool.h"

namespace wheelrpc::timer::detail {

inline constexpr std::uint64_t kNever = ~std::uint64_t{0};

class Wheel {
 public:
  static constexpr std::uint32_t kHeadBit = 1u << 31;
  /// The level reported for the due list (records whose deadline had passed
  /// when they were inserted).
  static constexpr unsigned kDueLevel = ~0u;

  /// `slot_bits`: log2 of slots per level, 1..12.
  explicit Wheel(unsigned slot_bits);

  std::uint64_t elapsed() const noexcept { return elapsed_; }
  unsigned slots_per_level() const noexcept { return 1u << bits_; }

  /// Links record `i` for deadline tick `d` and stores d's low 32 bits in it.
  /// d <= elapsed goes to the due list.
  void insert(NodePool& pool, std::uint32_t i, std::uint64_t d) noexcept;

  /// Unlinks a linked record; O(1).
  void unlink(NodePool& pool, std::uint32_t i) noexcept;

  /// The tick of the next event (a due list, a level-0 deadline, or a higher
  /// level slot to cascade), or kNever when empty.
  std::uint64_t next_event() const noexcept;

  /// If the next event is at or before `now`: advances elapsed to it, detaches
  /// its list and returns true with `chain` = the first record (records chained
  /// through link.next, ending with kNil) and `level` (kDueLevel for the due
  /// list). Records of level 0 and of the due list are due; higher levels'
  /// must be inserted again.
  bool take_next(NodePool& pool, std::uint64_t now, std::uint32_t& chain, unsigned& level) noexcept;

  /// Moves elapsed forward to `now` (callers first take everything due).
  void advance_to(std::uint64_t now) noexcept {
    if (now > elapsed_) elapsed_ = now;
  }

  /// The full deadline of a record linked in a slot (d >= elapsed).
  std::uint64_t deadline_ahead(std::uint32_t low) const noexcept {
    return elapsed_ + static_cast<std::uint32_t>(low - static_cast<std::uint32_t>(elapsed_));
  }
  /// The full deadline of a record that is due (d <= elapsed).
  std::uint64_t deadline_behind(std::uint32_t low) const noexcept {
    return elapsed_ - static_cast<std::uint32_t>(static_cast<std::uint32_t>(elapsed_) - low);
  }

  /// Detaches every list (for stop()), calling f(i) on each record.
  template <class F>
  void drain(NodePool& pool, F&& f) {
    for (std::uint32_t h = 0; h < heads_.size(); ++h) {
      std::uint32_t i = heads_[h].next;
      while (i != (h | kHeadBit)) {
        const std::uint32_t next = pool[i].link.next;
        f(i);
        i = next;
      }
      heads_[h] = {h | kHeadBit, h | kHeadBit};
    }
    std::fill(words_.begin(), words_.end(), 0);
    std::fill(summary_.begin(), summary_.end(), 0);
    level_mask_ = 0;
  }

 private:
  Link& link(NodePool& pool, std::uint32_t x) noexcept { return (x & kHeadBit) ? heads_[x & ~kHeadBit] : pool[x].link; }
  std::uint32_t due_head() const noexcept { return levels_ << bits_; }
  bool due_empty() const noexcept { return heads_[due_head()].next == (due_head() | kHeadBit); }
  void set_bit(unsigned level, unsigned slot) noexcept;
  void clear_bit(unsigned level, unsigned slot) noexcept;
  /// First occupied slot >= from at `level`, or -1.
  int find_from(unsigned level, unsigned from) const noexcept;
  unsigned digit(std::uint64_t t, unsigned level) const noexcept {
    return static_cast<unsigned>(t >> (level * bits_)) & (slots_per_level() - 1);
  }
  std::uint64_t slot_time(unsigned level, unsigned slot) const noexcept;

  unsigned bits_;
  unsigned levels_;
  std::array<std::uint8_t, 64> level_of_bit_;  // bit index / bits_, without dividing
  unsigned words_per_level_;
  std::uint64_t elapsed_ = 0;
  std::uint64_t level_mask_ = 0;        // bit L: level L has an occupied slot
  std::vector<Link> heads_;             // levels_ * W slot heads, then the due list
  std::vector<std::uint64_t> words_;    // occupancy bits, words_per_level_ per level
  std::vector<std::uint64_t> summary_;  // per level: bit w = words_[level][w] != 0
};

}  // namespace wheelrpc::timer::detail
