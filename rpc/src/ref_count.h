#pragma once
// The release half of the intrusive reference counts (Call, ReplySlot, a
// server connection's context).

#include <atomic>

namespace wheelrpc::rpc::detail {

/// Drops one reference from `refs`; true if it was the last (the caller
/// deletes). The last one needs no locked instruction: with the count at
/// one, no other thread holds a reference, and only a holder can make
/// another.
inline bool drop_reference(std::atomic<int>& refs) noexcept {
  return refs.load(std::memory_order_acquire) == 1 || refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

}  // namespace wheelrpc::rpc::detail
