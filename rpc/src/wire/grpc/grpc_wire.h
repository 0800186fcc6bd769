#pragma once
// gRPC's wire details over HTTP/2 (grpc/grpc doc/PROTOCOL-HTTP2.md), free
// of any connection: the grpc-timeout header, the percent-encoded
// grpc-message, base64 for `-bin` metadata, the statuses both ways, the
// names of grpc-encoding, and the 5-byte prefix of a message. Pure
// functions; thread-safe.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/transport/compression.h>

#include "base/metadata_split.h"
#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

/// The length of a message's prefix: a compressed flag and a 32-bit length.
inline constexpr std::size_t kGrpcPrefix = 5;

/// grpc-timeout: 1 to 8 digits and a unit (H M S m u n). Nothing for
/// anything else. A value that overflows the milliseconds saturates.
std::optional<std::chrono::milliseconds> parse_grpc_timeout(std::string_view value) noexcept;
/// The header's value for a budget (at least 1 ms): milliseconds while they
/// fit in 8 digits, then seconds, minutes, hours (rounded up).
std::string format_grpc_timeout(std::chrono::milliseconds budget);

/// grpc-message: bytes outside 0x20..0x7E and '%' as %XX (upper case).
std::string percent_encode(std::string_view text);
/// Undoes percent_encode; a malformed escape is kept as it is.
std::string percent_decode(std::string_view text);

/// Base64 (RFC 4648, with padding) for a `-bin` key's value.
std::string base64_encode(std::string_view bytes);
/// Decodes padded or unpadded base64; false on a character outside the alphabet.
bool base64_decode(std::string_view text, std::string& out);
inline bool is_binary_key(std::string_view key) noexcept {
  return key.size() > 4 && key.substr(key.size() - 4) == "-bin";
}
/// Headers of the protocol itself, never metadata: pseudo headers,
/// content-type, te, user-agent and the grpc-* ones gRPC reserves.
bool is_reserved_header(std::string_view name) noexcept;
/// The header a wheelrpc client opens a stream with ("stream"): with its
/// user-agent, it tells a wheelrpc server which kind of call the client
/// meant, so that a stream method called as a call (or a call's method
/// opened as a stream) gets the answer the native wire gives. Reserved:
/// never a handler's metadata.
inline constexpr std::string_view kKindHeader = "wheelrpc-kind";
/// The user-agent a wheelrpc client sends.
inline constexpr std::string_view kWheelrpcUserAgent = "wheelrpc";
/// A metadata key gRPC accepts: lower case letters, digits, '-', '_', '.'.
bool valid_metadata_key(std::string_view key) noexcept;

/// The gRPC code a native reply status stands for (docs/grpc.md, "Status codes").
StatusCode grpc_code_of(Status status) noexcept;
/// The native status a grpc-status is read as on the client: the codes the
/// call engine acts on (retries, failover) become its own statuses
/// (DEADLINE_EXCEEDED: server_timeout; UNIMPLEMENTED: method_not_found;
/// RESOURCE_EXHAUSTED: overloaded); the rest stay gRPC codes.
Status status_of_grpc(int code) noexcept;

/// How a gRPC server answers by default: uncompressed, whatever the request's
/// grpc-encoding. grpc-encoding says how the request was compressed, not how
/// the client wants its reply (gRPC has no such header: grpc-accept-encoding
/// only says what it can decode), and a gRPC server compresses a reply only
/// when the server or the call asks for it; gRPC's interop client checks it
/// (client_compressed_unary fails on a compressed reply it did not ask for).
/// On this wire a reply or a stream's messages are compressed only when
/// ServerOptions::compression.reply or the handler (ServerContext::
/// set_compression, ServerStream::set_compression) asks. (The native wire
/// mirrors the call's algorithm instead: its requests say which one their
/// reply may use.)
inline constexpr transport::Compression kGrpcDefaultReplyCompression = transport::Compression::identity;

/// grpc-encoding names: identity, gzip, deflate (the ones gRPC defines and
/// every implementation decodes). Nothing for others.
std::optional<transport::Compression> parse_grpc_encoding(std::string_view name) noexcept;
/// The name of `c` in grpc-encoding (zstd and lz4 are not gRPC's: "identity").
std::string_view grpc_encoding_name(transport::Compression c) noexcept;
/// grpc-accept-encoding ("gzip,deflate", spaces allowed) as a set; identity
/// is always in it.
transport::CompressionSet parse_grpc_accept_encoding(std::string_view value) noexcept;
/// What we decode, as grpc-accept-encoding: the gRPC names in `set`.
std::string grpc_accept_encoding(transport::CompressionSet set);

/// The window a StreamCore grants for an HTTP/2 stream window of
/// `http2_window` bytes: its credit counts a message as kMessageOverhead
/// (27) bytes over it (message_cost), HTTP/2 as 5 bytes over it, so the
/// same messages cost up to 27/5 as much in the stream's units.
inline std::uint32_t stream_receive_window(std::uint32_t http2_window) noexcept {
  const std::uint64_t w = std::uint64_t{http2_window} * kMessageOverhead / kGrpcPrefix + 1;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(w, kMaxStreamWindow));
}

/// The credit a client's stream starts with (the stream's unit): HTTP/2's
/// flow control governs what reaches the server; this only paces the
/// stream's own writes until the server's WINDOW_UPDATEs return credit.
inline constexpr std::uint32_t kGrpcClientStreamCredit = 64 * 1024;

/// Appends a message's prefix (compressed flag, big-endian length).
void append_grpc_prefix(std::string& out, bool compressed, std::size_t length);

/// Splits a stream's DATA into messages. Bytes arrive in any pieces;
/// `on_message(message, compressed)` gets each whole one. A prefix that
/// claims more than `max_message` bytes or a flag other than 0 or 1 is an
/// error (feed returns false, `error()` says why) before anything is
/// buffered. Not thread-safe.
class GrpcMessageReader {
 public:
  explicit GrpcMessageReader(std::uint32_t max_message) noexcept : max_(max_message) {}
  using OnMessage = std::function<void(std::string& message, bool compressed)>;
  bool feed(std::string_view bytes, const OnMessage& on_message);
  /// True when no partial message is buffered (a stream may end here).
  bool at_boundary() const noexcept { return have_ == 0; }
  /// Bytes of the message not yet complete (its prefix included).
  std::size_t partial_bytes() const noexcept { return have_ < kGrpcPrefix ? have_ : kGrpcPrefix + body_.size(); }
  const std::string& error() const noexcept { return error_; }
  /// What the error is, as a status: RESOURCE_EXHAUSTED for a message over
  /// the limit, INTERNAL for a malformed prefix.
  StatusCode error_code() const noexcept { return error_code_; }
  /// Bytes of the partial message buffered now.
  std::size_t buffered() const noexcept { return body_.size(); }

 private:
  std::uint32_t max_;
  unsigned char prefix_[kGrpcPrefix] = {};
  std::size_t have_ = 0;  // prefix bytes read of the current message, then kGrpcPrefix
  std::uint32_t length_ = 0;
  bool compressed_ = false;
  std::string body_;
  std::string error_;
  StatusCode error_code_ = StatusCode::ok;
};

}  // namespace wheelrpc::rpc::detail
