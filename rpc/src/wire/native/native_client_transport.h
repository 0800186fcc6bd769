#pragma once
// The native framed protocol (docs/protocol.md) as a ClientTransport: the
// HELLO exchange, request and CANCEL frames, replies, and answers to the
// server's heartbeats, over one transport::Channel (TCP or TLS).

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/tls.h>

#include "wire/client_transport.h"
#include "wire/wire_settings.h"
#include "stream/stream_table.h"

namespace wheelrpc::rpc::detail {

class NativeClientTransport final : public ClientTransport, public std::enable_shared_from_this<NativeClientTransport> {
 public:
  /// Wraps a connected socket; `events` is told what happens (and kept alive
  /// until the channel closes); `settings` are held as long as the transport.
  static std::shared_ptr<NativeClientTransport> create(boost::asio::ip::tcp::socket socket,
                                                       std::shared_ptr<ClientTransportEvents> events,
                                                       std::shared_ptr<const ClientWireSettings> settings);

  void start(std::uint64_t hello_id, std::chrono::milliseconds heartbeat, std::uint32_t max_body) override;
  SendResult send_request(OutgoingRequest& request, std::size_t& body, std::uint32_t& limit) override;
  void cancel_request(std::uint64_t id) override;
  void close(const boost::system::error_code& ec, const std::string& reason) override;
  bool delivering_here() const noexcept override { return channel_->delivering_here(); }
  const std::shared_ptr<transport::Channel>& channel() const noexcept override { return channel_; }

  // The channel's events (its strand), from Handler.
  void on_frame(transport::Channel& channel, transport::Frame& frame);
  void on_close(transport::Channel& channel, const boost::system::error_code& ec, const std::string& reason);
  void on_frames_delivered();
  std::size_t open_streams() const override { return streams_->size(); }

 private:
  /// A stream's frame: routed to its stream. True if it is the answer to an
  /// OPEN (then a reply for its call, too).
  bool on_stream_frame(transport::Channel& channel, transport::Frame& frame);
  /// A compressed reply decoded in place; one that cannot be becomes the
  /// call's failure (RESOURCE_EXHAUSTED, DATA_LOSS, INVALID_ARGUMENT).
  void decompress_reply(IncomingReply& reply, std::uint8_t encoding);
  /// The channel's handler: holds the transport weakly (the transport owns
  /// the channel, so a strong hold both ways would keep both alive if the
  /// executor stopped before a close ran), strongly for one read's batch.
  class Handler;
  NativeClientTransport(std::shared_ptr<ClientTransportEvents> events,
                        std::shared_ptr<const ClientWireSettings> settings);

  std::shared_ptr<ClientTransportEvents> events_;  // the Subchannel
  const std::shared_ptr<const ClientWireSettings> settings_;
  std::shared_ptr<transport::Channel> channel_;
  /// The server's max_body, from its HELLO (written on the strand, read by senders).
  std::atomic<std::uint32_t> peer_max_body_{transport::kDefaultMaxBody};
  /// The server's stream window, from its HELLO: 0, it speaks no streams.
  std::atomic<std::uint32_t> peer_stream_window_{0};
  /// What the server decodes, from its HELLO (CompressionSet bits): nothing
  /// compressed goes to it before.
  std::atomic<std::uint8_t> peer_accept_{0};
  /// Streams whose OPEN was sent and not answered yet, and the open ones.
  const std::shared_ptr<StreamTable> opens_ = std::make_shared<StreamTable>();
  const std::shared_ptr<StreamTable> streams_ = std::make_shared<StreamTable>();
};

}  // namespace wheelrpc::rpc::detail
