#pragma once
// The protocol seam, client side: one connection to a provider as the call
// engine sees it, whatever its wire protocol. A Subchannel owns one per
// connection it makes and drives it: start (the protocol's handshake), send
// a request, cancel one, close; the transport reports the handshake's
// outcome, replies, the end of each read's batch and its close through
// ClientTransportEvents. NativeClientTransport (the framed protocol of
// docs/protocol.md over a transport::Channel) is one implementation; a
// second protocol (HTTP/2 carrying gRPC, streams with their own flow
// control) implements the same two interfaces, and nothing above the
// Subchannel (retries, load balancing, deadlines, the registry) changes.
//
// Threads: events are reported on the connection's strand; send_request and
// cancel_request may be called from any thread but the timer's worker.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/compression.h>

#include "wire/wire_settings.h"

namespace wheelrpc::rpc::detail {

class StreamCore;

/// A reply as the call engine sees it, whatever protocol carried it. The
/// engine may move from the payload and attachments.
struct IncomingReply {
  std::uint64_t id;
  Status status;
  std::string& payload;
  transport::Attachments& attachments;
  /// The payload's bytes as they came (before decompression), and whether
  /// it was compressed: for the method's metrics.
  std::size_t wire_size = 0;
  bool compressed = false;
};

/// A request to send. The payload and attachments are lent to the transport
/// and given back (a retry or hedge may need them again); `extra_key` /
/// `extra_value` is one more attachment (the traceparent), lent too.
struct OutgoingRequest {
  std::uint64_t id;
  std::string_view method;
  std::string& payload;
  transport::Attachments& attachments;
  std::string_view extra_key;
  std::string_view extra_value;
  /// The budget the server is given for it (0: none).
  std::chrono::milliseconds budget{0};
  /// The stream this request opens (the OPEN of docs/protocol.md, "Streams"),
  /// or null: a unary request.
  const std::shared_ptr<StreamCore>* stream = nullptr;
  /// The call's compression (CallOptions::compression, compression_level):
  /// used if the provider decodes it and the payload is worth it.
  transport::Compression compression = transport::Compression::identity;
  int compression_level = 0;
  /// Set by send_request once sent: the payload's bytes on the wire, and
  /// whether they are compressed.
  std::size_t wire_size = 0;
  bool compressed = false;
};

/// What a transport tells its owner (the Subchannel), on its strand.
class ClientTransportEvents {
 public:
  /// The handshake completed: the heartbeat the peer proposed (none: it did
  /// not say) and the largest request body it accepts.
  virtual void on_handshake(std::optional<std::chrono::milliseconds> heartbeat, std::uint32_t max_body) = 0;
  /// A reply; `received`: when the read that brought it completed.
  virtual void on_transport_reply(IncomingReply& reply, std::chrono::steady_clock::time_point received) = 0;
  /// The connection closed (once; nothing follows).
  virtual void on_transport_closed(const boost::system::error_code& ec, const std::string& reason) = 0;
  /// The events of one read were delivered.
  virtual void on_batch_end() = 0;
  /// The server refused our heartbeats as too frequent (gRPC's GOAWAY
  /// too_many_pings): the next connection pings less often. Any thread.
  virtual void on_too_many_pings() {}
  /// The server said it takes no new calls on this connection (gRPC's
  /// GOAWAY: a drain, a maximum connection age): the calls in flight finish
  /// on it, new ones wait for the next connection. Its strand.
  virtual void on_goaway() {}

 protected:
  ~ClientTransportEvents() = default;
};

class ClientTransport {
 public:
  /// unsupported: a stream, and the peer speaks none (its handshake said so).
  enum class SendResult : std::uint8_t { sent, too_big, queue_full, closed, unsupported };
  virtual ~ClientTransport() = default;

  /// Starts reading and the protocol's handshake, proposing `heartbeat` and
  /// our `max_body`; `hello_id` identifies the handshake on the wire.
  virtual void start(std::uint64_t hello_id, std::chrono::milliseconds heartbeat, std::uint32_t max_body) = 0;
  /// Encodes and writes `request`. On too_big (over our limit or the
  /// peer's, from its handshake), `body` and `limit` say by how much.
  virtual SendResult send_request(OutgoingRequest& request, std::size_t& body, std::uint32_t& limit) = 0;
  /// Tells the server the request `id` is abandoned (it drops the reply).
  virtual void cancel_request(std::uint64_t id) = 0;
  /// Closes the connection: on_transport_closed follows with `ec`.
  virtual void close(const boost::system::error_code& ec, const std::string& reason) = 0;
  /// True while the calling thread is inside this transport's own delivery
  /// of events (it stays alive meanwhile without another reference).
  virtual bool delivering_here() const noexcept = 0;
  /// The byte stream under it: what the heartbeat, idle and close tasks
  /// watch, and what /connections shows.
  virtual const std::shared_ptr<transport::Channel>& channel() const noexcept = 0;
  /// Streams open on it now. Any thread.
  virtual std::size_t open_streams() const = 0;
};

/// Makes the transport of a connection made to `peer` ("host:port") on
/// `socket`, of the wire `settings->protocol` names; `events` is told what
/// happens (and is held until the connection closes). Runs where the connect
/// completes (the client's executor). The wire factory (wires.h, the one
/// place that names every wire) is the implementation: the client holds a
/// pointer to it (ClientContext::make_transport) and names no wire.
using ClientWireFactory = std::shared_ptr<ClientTransport> (*)(boost::asio::ip::tcp::socket socket,
                                                               std::shared_ptr<ClientTransportEvents> events,
                                                               std::shared_ptr<const ClientWireSettings> settings,
                                                               const std::string& peer);

}  // namespace wheelrpc::rpc::detail
