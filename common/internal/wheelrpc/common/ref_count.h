#pragma once
// The intrusive reference counts' cheap halves (Call, ReplySlot, a server
// connection's context): the first references of an unpublished object, and
// the release.

#include <atomic>

namespace wheelrpc::common {

/// Drops one reference from `refs`; true if it was the last (the caller
/// deletes). The last one needs no locked instruction: with the count at
/// one, no other thread holds a reference, and only a holder can make
/// another.
inline bool drop_reference(std::atomic<int>& refs) noexcept {
  return refs.load(std::memory_order_acquire) == 1 || refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

/// Adds a reference to an object no other thread can see yet (just made,
/// not published anywhere): a plain store, not a locked add.
inline void add_unpublished_reference(std::atomic<int>& refs) noexcept {
  refs.store(refs.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace wheelrpc::common
