#pragma once
// One accepted connection of a server speaking the native framed protocol:
// its HELLO, the ids its client cancelled, and its limit on requests in
// flight (read pause and resume). It reports to its server as ServerEvents.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/channel.h>

#include "wire/server_conn_context.h"
#include "wire/server_events.h"
#include "wire/server_transport.h"

namespace wheelrpc::rpc::detail {

/// The hand-off of a connection whose client opened with HTTP/2: the
/// handler of another wire (gRPC) that takes `channel` over, sharing the
/// connection's record and its heartbeat. Given by the wire factory
/// (wires.h), so this wire names no other.
using Http2Handoff = std::shared_ptr<transport::ChannelHandler> (*)(
    const ConnContextPtr& context, const std::shared_ptr<transport::Channel>& channel,
    std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms);

/// One accepted connection speaking the native framed protocol: the
/// ServerTransport of the protocol seam (server_transport.h). Expects a
/// HELLO first (within hello_timeout), then requests, heartbeats and
/// cancels; encodes replies. Its frames and its close run on the channel's
/// strand; the HELLO timeout only posts a close.
class ServerConnection final : public transport::ChannelHandler, public ServerTransport {
 public:
  /// Reports to `events`; `http2` (may be null: none) takes over a client
  /// that speaks HTTP/2.
  ServerConnection(std::shared_ptr<ServerEvents> events, Http2Handoff http2);
  /// The channel made for `self` (this handler), before it starts.
  void attach(const std::shared_ptr<ServerConnection>& self, const std::shared_ptr<transport::Channel>& channel);

  // ServerTransport
  bool send_reply(std::uint64_t id, Status status, std::string& payload, transport::Attachments& attachments,
                  std::string_view method, ReplyCoding& coding, bool delivering) override;
  void resume_reading() override;
  std::string remote() const override { return remote_; }
  std::uint64_t id() const noexcept override { return id_; }
  boost::asio::any_io_executor executor() const override;
  /// Past its maximum age: closes the channel (after the replies queued)
  /// once no request is in flight and no stream open; from then on what the
  /// client sends is dropped unread (its calls fail over as connection_lost
  /// and are retried on a new connection, never run twice). The native
  /// protocol has no word to tell the client first. On the strand.
  void retire() override;
  /// Closes `channel` unless its HELLO comes within ServerOptions::keepalive.hello_timeout.
  /// Before the channel starts.
  void start_hello_timeout(timer::Timer& timer, const std::shared_ptr<transport::Channel>& channel);

  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec, const std::string& reason) override;
  /// The client opened with the HTTP/2 preface (or ALPN h2): the hand-off's
  /// handler (gRPC's) takes the channel over, if the server serves gRPC.
  std::shared_ptr<transport::ChannelHandler> on_http2(transport::Channel& channel) override;
  /// The heartbeat of the native protocol: an empty event request.
  bool send_heartbeat(transport::Channel& channel) override;
  /// Still at the request limit: a resume asked when a reply went out
  /// before the pause it would undo (pause_if_full) keeps the channel paused.
  bool keep_paused(transport::Channel& channel) override;

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
  bool retired_ = false;  // strand only: closing for its age; frames are dropped
  ConnContextPtr context_;
  Http2Handoff http2_ = nullptr;
};

}  // namespace wheelrpc::rpc::detail
