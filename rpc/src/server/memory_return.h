#pragma once
// Gives the memory that closed connections freed back to the operating
// system. glibc's allocator keeps freed memory for reuse (and a burst of
// connections leaves its arenas fragmented), so without this a server that
// weathered a thousand abusive connections stays that much larger for good.
#include <atomic>
#include <cstdint>
#include <memory>
#include <boost/asio/any_io_executor.hpp>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/common/work_gate.h>

namespace wheelrpc::rpc::detail {

/// After a connection closes, schedules one malloc_trim(0) a second later
/// (closes meanwhile join it): the timer's worker only posts it to the
/// executor. At most one a second.
///
/// @par Thread Safety
/// `note_close` and `returns` from any thread. `gate` (the owner's) must be
/// closed before the executor goes away; a trim posted after that does not run.
class MemoryReturn : public std::enable_shared_from_this<MemoryReturn> {
 public:
  MemoryReturn(boost::asio::any_io_executor ex, timer::Timer& timer, common::WorkGate& gate)
      : ex_(std::move(ex)), timer_(timer), gate_(gate) {}
  /// A connection closed: a trim follows within about a second.
  void note_close();
  /// Trims done so far.
  std::uint64_t returns() const noexcept { return returns_.load(std::memory_order_relaxed); }

 private:
  void trim();

  boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  common::WorkGate& gate_;
  std::atomic<bool> scheduled_{false};
  std::atomic<std::uint64_t> returns_{0};
};

}  // namespace wheelrpc::rpc::detail
