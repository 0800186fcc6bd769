#pragma once
// The record one accepted connection shares with the requests read from it,
// whatever its wire: its server (as ServerEvents), the transport to answer
// on, the ids its client cancelled, its requests in flight and what the
// client's handshake said. Made by the connection's wire; read by the server.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_set>

#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/ref_count.h>
#include <wheelrpc/transport/frame.h>

#include "stream/stream_table.h"
#include "wire/server_transport.h"

namespace wheelrpc::rpc::detail {

class ServerEvents;
struct ServerWireSettings;

/// Request ids a client cancelled on one connection. Bounded: an id is
/// forgotten when its reply is dropped, or as the oldest of too many (a
/// cancel that crossed its reply on the wire names a request already
/// answered). Thread-safe: added on the channel's strand, checked from any
/// thread; `mu_` is a leaf.
class CancelSet {
 public:
  void add(std::uint64_t id) {
    common::LockGuard lock(mu_);
    if (!ids_) ids_ = std::make_unique<Ids>();  // most connections never cancel: no memory until one does
    if (!ids_->set.insert(id).second) return;
    ids_->order.push_back(id);
    if (ids_->order.size() > kMax) {
      ids_->set.erase(ids_->order.front());
      ids_->order.pop_front();
    }
    any_.store(true, std::memory_order_release);
  }
  /// True if `id` was cancelled; forgets it when `forget`.
  bool check(std::uint64_t id, bool forget) {
    if (!any_.load(std::memory_order_acquire)) return false;  // the common case: no lock
    common::LockGuard lock(mu_);
    if (!ids_ || ids_->set.count(id) == 0) return false;
    if (forget) {
      ids_->set.erase(id);
      ids_->order.erase(std::find(ids_->order.begin(), ids_->order.end(), id));
      if (ids_->set.empty()) any_.store(false, std::memory_order_release);
    }
    return true;
  }

 private:
  static constexpr std::size_t kMax = 1024;
  struct Ids {
    std::deque<std::uint64_t> order;
    std::unordered_set<std::uint64_t> set;
  };
  common::Mutex mu_;
  std::unique_ptr<Ids> ids_ WHEELRPC_GUARDED_BY(mu_);
  std::atomic<bool> any_{false};
};

/// What the requests of one connection share: the server, the transport to
/// answer on, and the ids the client cancelled. One reference per request in
/// flight (ReplySlot) and one of the connection's own: the counts stay on the
/// connection's cache line instead of the server's. The fields are atomics or
/// set before the channel starts; thread-safe. The in-process calls' context
/// has no events, settings, transport nor streams.
struct ServerConnContext {
  std::atomic<int> refs{0};
  /// The server its wire reports to; held, so the server outlives every
  /// request of the connection not yet answered.
  std::shared_ptr<ServerEvents> events;
  /// The server's settings for its wires (ServerEvents::wire_settings; alive
  /// as long as `events`).
  const ServerWireSettings* settings = nullptr;
  std::weak_ptr<ServerTransport> transport;  // its channel owns it: weak here; null for in-process calls
  CancelSet cancels;
  std::atomic<std::int64_t> in_flight{0};                                // its requests not yet answered
  std::atomic<std::uint32_t> peer_max_body{transport::kDefaultMaxBody};  // the client's, from its HELLO
  std::atomic<std::uint32_t> peer_stream_window{0};  // the client's, from its HELLO (0: it speaks no streams)
  std::atomic<std::uint8_t> peer_accept{0};          // what the client decodes, from its HELLO (CompressionSet bits)
  std::atomic<std::uint64_t> load_report_seen{0};    // the last load report its replies carried (LoadReporter)
  /// Its open streams (null for the in-process calls' context).
  std::shared_ptr<StreamTable> streams;

  /// One of its requests was answered (its reply queued, or dropped): one
  /// fewer in flight; back below `cap` (ServerOptions::limits.
  /// max_requests_per_connection; 0: none), the connection reads on (its
  /// wire paused reading at the cap). Returns how many were in flight
  /// before. Any thread.
  std::int64_t request_done(std::size_t cap) {
    const auto before = in_flight.fetch_sub(1);
    if (cap != 0 && before == static_cast<std::int64_t>(cap)) {
      if (auto t = transport.lock()) t->resume_reading();
    }
    return before;
  }

  friend void intrusive_ptr_add_ref(ServerConnContext* c) noexcept { c->refs.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(ServerConnContext* c) noexcept {
    if (common::drop_reference(c->refs)) delete c;
  }
};
using ConnContextPtr = boost::intrusive_ptr<ServerConnContext>;

}  // namespace wheelrpc::rpc::detail
