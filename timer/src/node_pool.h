#pragma once
// The 32-byte timeout record and the per-shard pool that owns them.
//
// Records live in chunks that never move (chunk k holds 4096 * 2^k records), so
// an index stays valid for the pool's lifetime and the worker can read a firing
// record without the shard lock. Chunks are allocated without initialization:
// untouched pages cost no memory, and a record is initialized when first used.

#include <array>
#include <bit>
#include <cstdint>
#include <memory>

#include <wheelrpc/timer/detail/task_box.h>

namespace wheelrpc::timer::detail {

inline constexpr std::uint32_t kNil = 0xffffffffu;

/// Intrusive list links: record indices, or slot heads when kHeadBit is set.
struct Link {
  std::uint32_t next;
  std::uint32_t prev;
};

/// Record states (low 3 bits of Node::tag).
enum NodeState : std::uint32_t {
  kFree = 0,         // on the free list
  kPending = 1,      // in a wheel slot; deadline holds the deadline tick's low 32 bits
  kPendingFar = 2,   // in a wheel slot; deadline holds a hop, the real one is in Shard::far_
  kFiring = 3,       // expired and handed to run; freed when the task is done
  kUnprocessed = 4,  // the timer stopped first; kept until cancelled or the timer dies
};

// tag = generation << 4 | last_cancelled << 3 | state. The generation grows by
// one each time the record is freed, so a handle (which remembers the
// generation it was created with) can tell "mine" from "reused". last_cancelled
// records how the previous use ended, which lets a handle one generation
// behind still answer is_cancelled()/is_expired().
inline constexpr std::uint32_t kStateMask = 7;
inline constexpr std::uint32_t kLastCancelledBit = 8;
inline constexpr std::uint32_t kGenShift = 4;
inline constexpr std::uint32_t kGenMask = (1u << (32 - kGenShift)) - 1;

inline std::uint32_t state_of(std::uint32_t tag) noexcept { return tag & kStateMask; }
inline std::uint32_t gen_of(std::uint32_t tag) noexcept { return tag >> kGenShift; }

struct Node {
  Link link;
  std::uint32_t tag;
  std::uint32_t deadline;  // low 32 bits of the deadline tick (or of the hop)
  TaskBox task;
};
static_assert(sizeof(Node) == 32, "a pending timeout costs 32 bytes");
static_assert(std::is_trivially_default_constructible_v<Node>);

class NodePool {
 public:
  static constexpr unsigned kFirstChunkBits = 12;
  static constexpr unsigned kChunks = 15;
  /// Records per shard: 4096 * (2^15 - 1), just under 2^27 (the id's index bits).
  static constexpr std::uint32_t kCapacity = (1u << kFirstChunkBits) * ((1u << kChunks) - 1);

  Node& operator[](std::uint32_t i) noexcept {
    const std::uint32_t q = (i >> kFirstChunkBits) + 1;
    const unsigned k = std::bit_width(q) - 1;
    return chunks_[k][i + (1u << kFirstChunkBits) - (1u << (kFirstChunkBits + k))];
  }
  const Node& operator[](std::uint32_t i) const noexcept { return const_cast<NodePool&>(*this)[i]; }

  /// A free record's index, or kNil when the pool is full or memory ran out.
  /// The record keeps its tag (generation); link/deadline/task are garbage.
  std::uint32_t allocate() noexcept {
    if (free_head_ != kNil) {
      const std::uint32_t i = free_head_;
      free_head_ = (*this)[i].link.next;
      return i;
    }
    if (bump_ == limit_ && !grow()) return kNil;
    Node& n = (*this)[bump_];
    n.tag = 0;
    return bump_++;
  }

  /// Returns a record whose tag the caller already advanced.
  void release(std::uint32_t i) noexcept {
    (*this)[i].link.next = free_head_;
    free_head_ = i;
  }

  /// Records ever handed out (the high-water mark).
  std::uint32_t high_water() const noexcept { return bump_; }

 private:
  bool grow() noexcept {
    const unsigned k = chunk_count_;
    if (k == kChunks) return false;
    const std::size_t n = std::size_t{1} << (kFirstChunkBits + k);
    try {
      chunks_[k] = std::make_unique_for_overwrite<Node[]>(n);
    } catch (...) {
      return false;
    }
    ++chunk_count_;
    limit_ += static_cast<std::uint32_t>(n);
    return true;
  }

  std::array<std::unique_ptr<Node[]>, kChunks> chunks_{};
  unsigned chunk_count_ = 0;
  std::uint32_t free_head_ = kNil;
  std::uint32_t bump_ = 0;
  std::uint32_t limit_ = 0;
};

}  // namespace wheelrpc::timer::detail
