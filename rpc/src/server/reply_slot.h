#pragma once
// The shared state behind a Responder: one request's answer, completed once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <wheelrpc/rpc/detail/recycled.h>
#include <wheelrpc/common/ref_count.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/timer.h>

#include <wheelrpc/rpc/detail/lazy_trace.h>
#include "base/method_metrics.h"
#include "wire/server_conn_context.h"

namespace wheelrpc::rpc::detail {

class ServerCore;
class ServerInterception;

/// The shared state behind a Responder, completed exactly once by the
/// handler's reply, by the deadline (server_timeout, posted to the executor
/// from the timer's worker) or by a dropped Responder. Shared through
/// ReplySlotPtr: the Responder's reference, and the deadline task's while it
/// may run. Written by its request's admission before it is shared; after
/// that only `state`, `queued_ns` and `local` (by finish(), once) change.
///
/// The deadline goes on the wheel only if the handler has not answered by the
/// time it returns (ServerCore::arm_deadline): a handler that replies inline
/// costs no timeout, and its reply is checked against the deadline instead
/// (ServerCore::decide). `state` orders the two ends: whoever sets its bit
/// second sees the other's (the answer cancels an armed timeout; arming after
/// the answer cancels its own).
struct ReplySlot : Recycled<ReplySlot> {
  static constexpr std::uint8_t kAnswered = 1;  // finish() ran: exactly once
  static constexpr std::uint8_t kArmed = 2;     // `timeout` holds its deadline on the wheel
  ReplySlot() = default;
  ReplySlot(const ReplySlot&) = delete;
  ReplySlot& operator=(const ReplySlot&) = delete;
  // The handler is done with the request (its Responder is gone) and so is
  // the deadline: the method may admit another call. `running` belongs to a
  // handler entry of the server, which `conn` keeps alive.
  ~ReplySlot() {
    if (running) running->fetch_sub(1);
  }

  std::atomic<int> refs{0};
  std::atomic<std::uint8_t> state{0};  // kAnswered | kArmed
  bool answered() const noexcept { return state.load(std::memory_order_acquire) & kAnswered; }
  ConnContextPtr conn;
  ServerCore* core = nullptr;  // conn->core, kept alive by it
  std::uint64_t request_id = 0;
  bool two_way = true;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  timer::Timeout timeout;
  // The method's name: a view of the server's own copy (its method table's
  // key) once admission found the method, else of `method_storage`; so a
  // call of a registered method copies no name, however long.
  std::string_view method;
  std::string method_storage;
  /// Points `method` at a copy of its own (a name the server keeps no copy of).
  void own_method() {
    method_storage.assign(method.data(), method.size());
    method = method_storage;
  }
  MethodCells* cells = nullptr;                 // null: ServerOptions::metrics off
  std::atomic<std::size_t>* running = nullptr;  // its method's running count, under a concurrency limit
                                                // (given back by the destructor)
  std::chrono::steady_clock::time_point received{};
  // The algorithm of its reply (the call's, mirrored, or the server's own),
  // until the handler's Responder::set_compression; atomic because the
  // deadline's answer may read it while the handler sets it.
  std::atomic<transport::Compression> reply_compression{transport::Compression::identity};
  bool request_compressed = false;  // its request's payload came compressed
  LazyTrace trace;                  // the request's traceparent, parsed when asked
  // A call from inside the process (Server::async_invoke): completed here
  // instead of a reply on a channel.
  std::function<void(Status, std::string, transport::Attachments)> local;
  // Overload control (Admission): counted by the server's concurrency limit
  // (given back by finish()), and how long it waited for the handler
  // executor (ns; -1 until its handler starts).
  bool limited = false;
  std::atomic<std::int64_t> queued_ns{-1};
  // Its method's handler-time average, when its handler ran from the handler
  // executor: the handler's answer adds its time to it (finish()).
  std::atomic<std::int64_t>* service_ns = nullptr;
  // Its interceptors (ServerOptions::interceptors; null without): set before
  // the slot is shared, read-only after; ended by finish().
  std::shared_ptr<ServerInterception> interception;
};

using ReplySlotPtr = boost::intrusive_ptr<ReplySlot>;

/// Another reference to a slot no other thread can see yet (just made, its
/// deadline not scheduled): counted with a plain store, not a locked add.
inline ReplySlotPtr share_unpublished(ReplySlot& slot) noexcept {
  common::add_unpublished_reference(slot.refs);
  return ReplySlotPtr(&slot, /*add_ref=*/false);
}

}  // namespace wheelrpc::rpc::detail
