#pragma once
// One accepted connection of a server: its HELLO, the ids its client
// cancelled, and its limit on requests in flight (read pause and resume).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>

#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/ref_count.h>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/channel.h>

#include "server_transport.h"
#include "stream_table.h"

namespace wheelrpc::rpc::detail {

class ServerCore;

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
/// set before the channel starts; thread-safe.
struct ServerConnContext {
  std::atomic<int> refs{0};
  std::shared_ptr<ServerCore> core;
  std::weak_ptr<ServerTransport> transport;  // its channel owns it: weak here; null for in-process calls
  CancelSet cancels;
  std::atomic<std::int64_t> in_flight{0};                                // its requests not yet answered
  std::atomic<std::uint32_t> peer_max_body{transport::kDefaultMaxBody};  // the client's, from its HELLO
  std::atomic<std::uint32_t> peer_stream_window{0};  // the client's, from its HELLO (0: it speaks no streams)
  std::atomic<std::uint8_t> peer_accept{0};          // what the client decodes, from its HELLO (CompressionSet bits)
  /// Its open streams (null for the in-process calls' context).
  std::shared_ptr<StreamTable> streams;

  /// One of its requests was answered (its reply queued, or dropped): one
  /// fewer in flight; back below `cap` (ServerOptions::limits.
  /// limits.max_requests_per_connection; 0: none), the connection reads on (see
  /// ServerConnection::pause_if_full). Returns how many were in flight
  /// before. Any thread. (`core` is null in the in-process calls' context.)
  std::int64_t request_done(std::size_t cap);

  friend void intrusive_ptr_add_ref(ServerConnContext* c) noexcept { c->refs.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(ServerConnContext* c) noexcept {
    if (common::drop_reference(c->refs)) delete c;
  }
};
using ConnContextPtr = boost::intrusive_ptr<ServerConnContext>;

/// One accepted connection speaking the native framed protocol: the
/// ServerTransport of the protocol seam (server_transport.h). Expects a
/// HELLO first (within hello_timeout), then requests, heartbeats and
/// cancels; encodes replies. Its frames and its close run on the channel's
/// strand; the HELLO timeout only posts a close.
class ServerConnection final : public transport::ChannelHandler, public ServerTransport {
 public:
  explicit ServerConnection(std::shared_ptr<ServerCore> core);
  /// The channel made for `self` (this handler), before it starts.
  void attach(const std::shared_ptr<ServerConnection>& self, const std::shared_ptr<transport::Channel>& channel);

  // ServerTransport
  bool send_reply(std::uint64_t id, Status status, std::string& payload, transport::Attachments& attachments,
                  std::string_view method, ReplyCoding& coding, bool delivering) override;
  void resume_reading() override;
  std::string remote() const override { return remote_; }
  std::uint64_t id() const noexcept override { return id_; }
  boost::asio::any_io_executor executor() const override;
  /// Closes `channel` unless its HELLO comes within ServerOptions::keepalive.hello_timeout.
  /// Before the channel starts.
  void start_hello_timeout(timer::Timer& timer, const std::shared_ptr<transport::Channel>& channel);

  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec, const std::string& reason) override;
  /// The client opened with the HTTP/2 preface (or ALPN h2): its gRPC
  /// connection (GrpcServerConnection) takes the channel over.
  std::shared_ptr<transport::ChannelHandler> on_http2(transport::Channel& channel) override;

  /// The heartbeat interval agreed in the HELLO (ms; 0 before it): read by
  /// the timer tasks and connections(), from any thread.
  const std::shared_ptr<std::atomic<std::int64_t>>& heartbeat_ms() const { return heartbeat_ms_; }
  const ConnContextPtr& context() const { return context_; }

 private:
  /// A stream's frame: an OPEN goes to the server; the others to their stream.
  void on_stream_frame(transport::Channel& channel, transport::Frame& frame);
  /// Answers the HELLO: agrees on the heartbeat and learns the client's max_body.
  void on_hello(transport::Channel& channel, const transport::Frame& frame);
  /// At the connection's limit of requests in flight: reads nothing more
  /// until a reply goes out (ServerConnContext::request_done resumes).
  void pause_if_full(transport::Channel& channel);

  /// A reply the client could not take (over the limit its HELLO gave)
  /// would make it close the connection and fail every call on it: this
  /// call alone fails instead (the reply becomes a server_error).
  void fit_peer_limit(transport::Frame& f, std::string_view method, const transport::Channel& channel);
  /// Swaps the reply's payload for its compressed form (in the per-thread
  /// compression_scratch()) if the client decodes `coding`'s algorithm and
  /// it is worth it; false: it goes as it is.
  bool compress_reply(transport::Frame& f, const ReplyCoding& coding);

  std::weak_ptr<transport::Channel> channel_;  // the channel owns this handler: weak here
  transport::Channel* raw_channel_ = nullptr;  // the same, for a reply sent while it delivers
  std::string remote_;
  std::uint64_t id_ = 0;
  timer::Timeout hello_timeout_;
  std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms_;  // agreed; read by the timer tasks
  bool hello_done_ = false;
  bool first_frame_not_hello_ = false;
  ConnContextPtr context_;
};

}  // namespace wheelrpc::rpc::detail
