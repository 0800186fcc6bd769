#pragma once
// One accepted connection speaking gRPC over HTTP/2 (docs/grpc.md): the
// ServerTransport of the protocol seam for it, beside ServerConnection's
// native framed protocol. A unary call is an HTTP/2 stream carrying one
// message each way, handed to its server (ServerEvents::on_request) as an
// IncomingRequest once the client's END_STREAM arrives; a streaming
// method's HTTP/2 stream is a StreamCore, whose operations this connection
// says in HTTP/2 (it is the stream's StreamWire). Deadlines (grpc-timeout),
// admission, metrics and shutdown are the server's own, as for native calls.
//
// Threads and locks: bytes arrive on the channel's strand; replies and
// streams' operations come from any thread. `mu_` guards the nghttp2 session
// and the calls' state; under it the connection only encodes and queues
// bytes on the channel (whose write lock is a leaf). What the session
// decodes is gathered under it and delivered (to the server, to
// StreamCores) after it is released, so no stream or server lock is ever
// taken inside it. A StreamCore calls the StreamWire operations with its own
// lock held: the order is StreamCore::mu_, then `mu_`.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/transport/channel.h>

#include "wire/grpc/grpc_wire.h"
#include "wire/grpc/http2_session.h"
#include "wire/server_conn_context.h"
#include "wire/server_events.h"
#include "wire/server_transport.h"
#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

struct GrpcServerCall;
struct GrpcServerDelivery;

class GrpcServerConnection final : public transport::ChannelHandler,
                                   public ServerTransport,
                                   public StreamWire,
                                   public std::enable_shared_from_this<GrpcServerConnection> {
 public:
  /// Takes over `channel` from the native handler that saw the HTTP/2
  /// preface (its context: the connection's count of requests in flight,
  /// its cancels and its streams, as the server tracks them).
  static std::shared_ptr<GrpcServerConnection> create(const ConnContextPtr& context,
                                                      const std::shared_ptr<transport::Channel>& channel,
                                                      std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms);
  ~GrpcServerConnection() override;

  // ChannelHandler
  void on_frame(transport::Channel& channel, transport::Frame& frame) override;
  void on_data(transport::Channel& channel, std::string_view bytes) override;
  void on_close(transport::Channel& channel, const boost::system::error_code& ec, const std::string& reason) override;
  bool send_heartbeat(transport::Channel& channel) override;

  // ServerTransport
  bool send_reply(std::uint64_t id, Status status, std::string& payload, transport::Attachments& attachments,
                  std::string_view method, ReplyCoding& coding, bool delivering) override;
  void resume_reading() override {}
  std::string remote() const override { return remote_; }
  std::uint64_t id() const noexcept override { return id_; }
  boost::asio::any_io_executor executor() const override;
  void drain() override;

  // StreamWire (grpc_server_replies.cc)
  boost::system::error_code send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                         transport::Attachments& initial) override;
  boost::system::error_code send_half_close(std::uint64_t id) override;
  boost::system::error_code send_credit(std::uint64_t id, std::uint32_t bytes) override;
  boost::system::error_code send_end(std::uint64_t id, const boost::system::error_code& ec, std::string& message,
                                     transport::Attachments& metadata) override;
  boost::system::error_code send_reset(std::uint64_t id) override;
  boost::system::error_code send_open_answer(std::uint64_t id, const boost::system::error_code& ec,
                                             std::string& message) override;

  using Call = GrpcServerCall;          // one HTTP/2 stream's state (grpc_server_call.h)
  using Delivery = GrpcServerDelivery;  // what a read decoded, delivered after the lock
  struct Callbacks;

 private:
  GrpcServerConnection(const ConnContextPtr& context, const std::shared_ptr<transport::Channel>& channel);
  void start_session();

  // ---- under mu_: the session's callbacks and what they decide
  /// Hands `bytes` to nghttp2 and writes what it answers; false once the session failed.
  bool take(transport::Channel& channel, std::string_view bytes) WHEELRPC_REQUIRES(mu_);
  Call* find(std::int32_t stream_id) WHEELRPC_REQUIRES(mu_);
  /// A stream's call, while the session may still write to it (else null).
  Call* writable(std::uint64_t id) WHEELRPC_REQUIRES(mu_);
  int on_begin_headers(std::int32_t stream_id) WHEELRPC_REQUIRES(mu_);
  int on_header(std::int32_t stream_id, std::string_view name, std::string_view value) WHEELRPC_REQUIRES(mu_);
  int on_headers_done(std::int32_t stream_id, bool end_stream) WHEELRPC_REQUIRES(mu_);
  int on_chunk(std::int32_t stream_id, std::string_view bytes) WHEELRPC_REQUIRES(mu_);
  int on_end_stream(std::int32_t stream_id) WHEELRPC_REQUIRES(mu_);
  int on_rst(std::int32_t stream_id, std::uint32_t code) WHEELRPC_REQUIRES(mu_);
  int on_stream_closed(std::int32_t stream_id, std::uint32_t code) WHEELRPC_REQUIRES(mu_);
  int on_ping(bool ack, std::string_view opaque) WHEELRPC_REQUIRES(mu_);
  /// A response's last HEADERS went out: a refused call's client, still
  /// sending, is told to stop (RST_STREAM NO_ERROR, RFC 9113 8.1).
  int on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id) WHEELRPC_REQUIRES(mu_);
  ssize_t read_out(std::int32_t stream_id, std::uint8_t* buf, std::size_t length, std::uint32_t* flags)
      WHEELRPC_REQUIRES(mu_);
  /// A unary call's one message, or a stream's next one.
  void on_message(Call& c, std::string& message, bool compressed) WHEELRPC_REQUIRES(mu_);
  /// A stream's message not yet complete: its bytes so far are taken from the window.
  void take_partial(Call& c) WHEELRPC_REQUIRES(mu_);
  /// Refuses a call before it reaches the server (its headers or its first
  /// message were wrong): a trailers-only answer, or HTTP `http_status`.
  void refuse(Call& c, StatusCode code, std::string message, int http_status = 200) WHEELRPC_REQUIRES(mu_);
  /// The window a stream's StreamCore grants, in its own units (see the .cc).
  std::uint32_t stream_receive_window() const noexcept;
  static nghttp2_data_provider data_provider() noexcept;
  /// A call refused for what it sent counts toward max_bad_requests.
  void note_bad_request(std::string_view why) WHEELRPC_REQUIRES(mu_);
  /// The response's HEADERS (with a data provider): once per call.
  void submit_headers(Call& c, transport::Attachments* initial) WHEELRPC_REQUIRES(mu_);
  /// Queues the trailers once its data is out (or answers trailers-only).
  /// `metadata`: the reply's (trailing ones after kTrailersMarker). With
  /// `send_initial`, initial fields and no HEADERS sent yet: the response's
  /// HEADERS carry them first, then the trailers (not trailers-only).
  /// `http_status`: of a trailers-only answer.
  void submit_end(Call& c, StatusCode code, std::string_view message, transport::Attachments* metadata, int http_status,
                  bool send_initial) WHEELRPC_REQUIRES(mu_);
  /// Appends a message to the call's outgoing bytes and wakes its data.
  void queue_message(Call& c, std::string_view payload, bool compressed) WHEELRPC_REQUIRES(mu_);
  void resume(Call& c) WHEELRPC_REQUIRES(mu_);
  /// Writes what the session wants written; closes the channel once the
  /// session wants nothing more (after a GOAWAY) or `failed`.
  void flush(bool failed) WHEELRPC_REQUIRES(mu_);
  void goaway(std::uint32_t code, std::string_view debug) WHEELRPC_REQUIRES(mu_);

  // ---- outside the lock
  void deliver(std::vector<Delivery>& batch);
  void deliver_credits();

  common::Mutex mu_;
  Http2SessionPtr session_ WHEELRPC_GUARDED_BY(mu_);
  // Open addressing: a call's entry is added and erased on every call.
  boost::unordered_flat_map<std::int32_t, std::unique_ptr<Call>> calls_ WHEELRPC_GUARDED_BY(mu_);
  Call* last_found_ WHEELRPC_GUARDED_BY(mu_) = nullptr;   // find()'s last answer, while in calls_
  std::vector<Delivery> batch_ WHEELRPC_GUARDED_BY(mu_);  // gathered by a read, delivered after it
  // Credit for stream messages the session wrote (stream id, cost), posted to the strand.
  std::vector<std::pair<std::int32_t, std::uint64_t>> credits_ WHEELRPC_GUARDED_BY(mu_);
  bool credit_posted_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::string out_ WHEELRPC_GUARDED_BY(mu_);       // bytes taken from the session, then sent
  bool closing_ WHEELRPC_GUARDED_BY(mu_) = false;  // the channel's close is under way
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;   // on_close ran
  bool goaway_sent_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::string fail_reason_ WHEELRPC_GUARDED_BY(mu_);  // why the session ends (a GOAWAY of ours, bad input)
  bool draining_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool drain_ping_sent_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool goaway_out_ WHEELRPC_GUARDED_BY(mu_) = false;       // a GOAWAY is in the output
  std::uint32_t fatal_code_ WHEELRPC_GUARDED_BY(mu_) = 0;  // the error code of a session nghttp2 ended
  std::uint32_t bad_requests_ WHEELRPC_GUARDED_BY(mu_) = 0;
  // Keepalive enforcement and the reset bucket.
  std::chrono::steady_clock::time_point last_ping_ WHEELRPC_GUARDED_BY(mu_){};
  bool data_since_ping_ WHEELRPC_GUARDED_BY(mu_) = true;
  int ping_strikes_ WHEELRPC_GUARDED_BY(mu_) = 0;
  double reset_tokens_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point reset_refill_ WHEELRPC_GUARDED_BY(mu_){};

  static constexpr std::string_view kDrainPing{"wrpc-gaw", 8};  // the PING between the two GOAWAYs

  ConnContextPtr context_;
  std::weak_ptr<transport::Channel> channel_;  // the channel owns this handler
  transport::Channel* raw_channel_ = nullptr;  // the same, while it delivers
  std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms_;
  std::string remote_;
  std::uint64_t id_ = 0;
  const GrpcServerOptions& options_;  // the server's (it outlives its connections' use of it)
  std::string accept_encoding_;       // grpc-accept-encoding: what the server decodes
};

}  // namespace wheelrpc::rpc::detail
