#pragma once
// The protocol seam, server side: one accepted connection as the server's
// call engine sees it, whatever its wire protocol. The transport decodes
// what the client sends and hands each request to its server as an
// IncomingRequest (ServerEvents::on_request, server_events.h); the server
// answers through send_reply. The native
// framed protocol is one implementation (ServerConnection: HELLO, heartbeat
// answers, CANCEL, requests and replies over a transport::Channel); HTTP/2
// carrying gRPC implements the same, and admission, deadlines, metrics and
// shutdown stay as they are.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

/// A request as the call engine sees it. The engine may move from the
/// method, payload and attachments.
struct IncomingRequest {
  std::uint64_t id;
  bool two_way;
  std::string& method;
  std::string& payload;
  transport::Attachments& attachments;
  /// The budget the client gave it (0: none), counted from `received`.
  std::chrono::milliseconds budget;
  /// When the read that brought it completed.
  std::chrono::steady_clock::time_point received;
  /// The payload's bytes as they came, and whether they were compressed.
  std::size_t wire_size = 0;
  bool compressed = false;
  /// The algorithm the client asked its reply in (identity: none).
  transport::Compression reply_compression = transport::Compression::identity;
  /// The payload could not be decoded (a StatusCode error; `payload` holds
  /// why): the request is answered so without running its handler.
  boost::system::error_code decode_error;
};

/// How a reply's payload is to be compressed, and what it became.
struct ReplyCoding {
  /// In: the algorithm, used if the client decodes it and the payload is
  /// worth it (the threshold; it shrinks); the level (0: its default).
  transport::Compression compression = transport::Compression::identity;
  int level = 0;
  /// Out, once sent: the payload's bytes on the wire; compressed or not.
  std::size_t wire_size = 0;
  bool compressed = false;
};

class ServerTransport {
 public:
  /// Encodes and writes the reply to request `id` of `method` (the payload
  /// and attachments may be moved from), compressed as `coding` says. `delivering`: called from inside
  /// the transport's own delivery of that request (no reference needed).
  /// False if it was not written: the connection is gone, or the client
  /// reads no replies (the connection is then closed). Any thread.
  virtual bool send_reply(std::uint64_t id, Status status, std::string& payload, transport::Attachments& attachments,
                          std::string_view method, ReplyCoding& coding, bool delivering) = 0;
  /// The connection may read again (after its limit of requests in flight
  /// paused it). Any thread.
  virtual void resume_reading() = 0;
  /// The client's address, for logs and records.
  virtual std::string remote() const = 0;
  /// The connection's id (as /connections shows it).
  virtual std::uint64_t id() const noexcept = 0;
  /// Where its requests are delivered (the channel's strand): where a
  /// handler runs inline. Empty once the connection is gone. Any thread.
  virtual boost::asio::any_io_executor executor() const = 0;
  /// A graceful shutdown began: a protocol that can tell its client to stop
  /// sending new calls does (gRPC: the two-step GOAWAY). Any thread.
  virtual void drain() {}
  /// The connection reached its maximum age (ServerKeepaliveOptions::
  /// max_connection_age): its client is to take its next calls elsewhere,
  /// and the connection closes once no call nor stream is open on it. A
  /// protocol that can tell its client does (the default: drain(); gRPC's
  /// session then closes the connection once its last stream ends); the
  /// native protocol cannot, and closes the connection (after the replies
  /// queued) the first time it finds nothing open, dropping what it reads
  /// from then on (its client retries those calls on a new connection).
  /// Called again every ConnectionAge::kCheckInterval while the connection
  /// drains; the server closes it when the grace runs out. On the
  /// connection's strand (executor()).
  virtual void retire() { drain(); }

 protected:
  ~ServerTransport() = default;
};

}  // namespace wheelrpc::rpc::detail
