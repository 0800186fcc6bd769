#pragma once
// gRPC over HTTP/2 as a ClientTransport (docs/grpc.md): what a Subchannel
// drives when ClientOptions::protocol is WireProtocol::grpc. A call is an
// HTTP/2 stream: HEADERS (:path the method, grpc-timeout the budget, the
// metadata with -bin keys in base64), one prefixed message, END_STREAM; its
// reply is the response's message and trailers (grpc-status, grpc-message),
// or a trailers-only answer. A stream's StreamCore is bound to the HTTP/2
// stream as soon as its HEADERS are queued (a gRPC server sends its response
// headers when it likes: often with its first message), and its operations
// are said in HTTP/2 (this transport is its StreamWire). The handshake is
// the server's SETTINGS.
// HTTP/2 PING is the heartbeat, sent only while calls are open (gRPC
// servers count a PING on a connection without calls as abuse; meanwhile
// the channel's keepalive is paused), never more often than a server that
// answered GOAWAY too_many_pings allows (the interval then doubles).
//
// Threads and locks: as GrpcServerConnection's (grpc_server_connection.h):
// `mu_` guards the session and the calls; what a read decodes is delivered
// after it is released; StreamCore::mu_ may be held when `mu_` is taken,
// never the other way round (a stream is bound under `mu_` before it can
// send anything).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/transport/channel.h>

#include "wire/client_transport.h"
#include "wire/wire_settings.h"
#include "wire/grpc/http2_session.h"
#include "stream/stream_table.h"
#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

struct GrpcClientCall;
struct GrpcClientDelivery;

class GrpcClientTransport final : public ClientTransport,
                                  public StreamWire,
                                  public std::enable_shared_from_this<GrpcClientTransport> {
 public:
  /// Wraps a connected socket (TLS offers ALPN h2); `events` is told what
  /// happens; `settings` are held as long as the transport.
  static std::shared_ptr<GrpcClientTransport> create(boost::asio::ip::tcp::socket socket,
                                                     std::shared_ptr<ClientTransportEvents> events,
                                                     std::shared_ptr<const ClientWireSettings> settings,
                                                     std::string authority);
  ~GrpcClientTransport() override;

  // ClientTransport
  void start(std::uint64_t hello_id, std::chrono::milliseconds heartbeat, std::uint32_t max_body) override;
  SendResult send_request(OutgoingRequest& request, std::size_t& body, std::uint32_t& limit) override;
  void cancel_request(std::uint64_t id) override;
  void close(const boost::system::error_code& ec, const std::string& reason) override;
  bool delivering_here() const noexcept override { return channel_->delivering_here(); }
  const std::shared_ptr<transport::Channel>& channel() const noexcept override { return channel_; }
  std::size_t open_streams() const override { return streams_->size(); }

  // StreamWire (grpc_client_streams.cc)
  boost::system::error_code send_message(std::uint64_t id, std::string& payload, std::uint8_t encoding,
                                         transport::Attachments& initial) override;
  boost::system::error_code send_half_close(std::uint64_t id) override;
  boost::system::error_code send_credit(std::uint64_t id, std::uint32_t bytes) override;
  boost::system::error_code send_end(std::uint64_t id, const boost::system::error_code& ec, std::string& message,
                                     transport::Attachments& metadata) override;
  boost::system::error_code send_reset(std::uint64_t id) override;
  boost::system::error_code send_open_answer(std::uint64_t id, const boost::system::error_code& ec,
                                             std::string& message) override;

  // The channel's events (its strand), from Handler.
  void on_data(transport::Channel& channel, std::string_view bytes);
  void on_close(transport::Channel& channel, const boost::system::error_code& ec, const std::string& reason);
  void on_frames_delivered();
  bool send_heartbeat();

  /// One HTTP/2 stream's state, and what a read hands on (grpc_client_call.h).
  using Call = GrpcClientCall;
  using Delivery = GrpcClientDelivery;
  struct Callbacks;

 private:
  class Handler;
  GrpcClientTransport(std::shared_ptr<ClientTransportEvents> events, std::shared_ptr<const ClientWireSettings> settings,
                      std::string authority);

  // ---- under mu_
  Call* find(std::int32_t stream_id) WHEELRPC_REQUIRES(mu_);
  /// Runs `op` on stream `id`'s call under the lock, then flushes (grpc_client_streams.cc).
  template <class Op>
  boost::system::error_code on_call(std::uint64_t id, Op op) WHEELRPC_EXCLUDES(mu_);
  int on_header(std::int32_t stream_id, bool trailers, std::string_view name, std::string_view value)
      WHEELRPC_REQUIRES(mu_);
  int on_headers_done(std::int32_t stream_id, bool trailers, bool end_stream) WHEELRPC_REQUIRES(mu_);
  int on_chunk(std::int32_t stream_id, std::string_view bytes) WHEELRPC_REQUIRES(mu_);
  int on_stream_closed(std::int32_t stream_id, std::uint32_t code) WHEELRPC_REQUIRES(mu_);
  int on_settings() WHEELRPC_REQUIRES(mu_);
  int on_goaway(std::uint32_t code, std::string_view debug) WHEELRPC_REQUIRES(mu_);
  ssize_t read_out(std::int32_t stream_id, std::uint8_t* buf, std::size_t length, std::uint32_t* flags)
      WHEELRPC_REQUIRES(mu_);
  /// The call ended (its trailers, a reset, the connection): its reply or its stream's END, once.
  void finish(Call& c, Status status, std::string message) WHEELRPC_REQUIRES(mu_);
  void activity(int delta) WHEELRPC_REQUIRES(mu_);
  void flush() WHEELRPC_REQUIRES(mu_);
  /// Closes the channel after `mu_` is released (posted to the strand).
  void close_later(const boost::system::error_code& ec, std::string reason);
  static nghttp2_data_provider data_provider() noexcept;
  /// The heartbeat the handshake reports: the one start() was given.
  std::optional<std::chrono::milliseconds> heartbeat_for_handshake() const WHEELRPC_NO_THREAD_SAFETY_ANALYSIS;

  // ---- outside it
  void deliver(std::vector<Delivery>& batch);
  void deliver_credits();

  std::shared_ptr<ClientTransportEvents> events_;  // the Subchannel
  const std::shared_ptr<const ClientWireSettings> settings_;
  const std::string authority_;
  const std::string accept_encoding_;  // grpc-accept-encoding: what settings_ decode, made once
  std::shared_ptr<transport::Channel> channel_;
  const std::shared_ptr<StreamTable> streams_ = std::make_shared<StreamTable>();

  common::Mutex mu_;
  Http2SessionPtr session_ WHEELRPC_GUARDED_BY(mu_);
  // Open addressing: a call's entries are added and erased on every call.
  boost::unordered_flat_map<std::int32_t, std::unique_ptr<Call>> calls_ WHEELRPC_GUARDED_BY(mu_);
  boost::unordered_flat_map<std::uint64_t, std::int32_t> by_request_
      WHEELRPC_GUARDED_BY(mu_);                          // request id -> stream id
  Call* last_found_ WHEELRPC_GUARDED_BY(mu_) = nullptr;  // find()'s last answer, while in calls_
  // Fields whose values change with every call (grpc-timeout, traceparent)
  // are never indexed. The first of each on a connection is, though: in
  // both ends' HPACK tables, its name is then an index in every later call,
  // not a string to encode and decode. index_name_once() is true for that first.
  static constexpr unsigned kTimeoutName = 1, kTraceName = 2;
  std::atomic<unsigned> names_indexed_{0};
  bool index_name_once(unsigned name);
  /// A call chose zstd or lz4, which this wire sends as gzip
  /// (grpc_client_compression.h): its stream is told so; the client's log
  /// says it once per client. Any thread, without `mu_`.
  void note_fallback(OutgoingRequest& r);
  std::atomic<bool> fallback_noted_{false};  // this connection asked first_compression_fallback
  std::vector<Delivery> batch_ WHEELRPC_GUARDED_BY(mu_);
  std::vector<std::pair<std::int32_t, std::uint64_t>> credits_ WHEELRPC_GUARDED_BY(mu_);
  bool credit_posted_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::string out_ WHEELRPC_GUARDED_BY(mu_);
  bool handshake_done_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool goaway_ WHEELRPC_GUARDED_BY(mu_) = false;  // no new calls on this connection
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::string goaway_reason_ WHEELRPC_GUARDED_BY(mu_);
  int active_ WHEELRPC_GUARDED_BY(mu_) = 0;  // calls and streams open
  std::chrono::milliseconds heartbeat_ WHEELRPC_GUARDED_BY(mu_){0};
  std::chrono::steady_clock::time_point last_ping_ WHEELRPC_GUARDED_BY(mu_){};
  std::uint32_t max_body_ = 0;    // ours: replies and messages over it fail their call
  std::uint32_t window_ = 65535;  // SETTINGS_INITIAL_WINDOW_SIZE we announce (from ClientOptions::stream_window)
};

}  // namespace wheelrpc::rpc::detail
