#pragma once
/// The wire format (docs/protocol.md): a fixed 24-byte big-endian header and a
/// body of method name, attachments and payload; encoding and an incremental
/// decoder that checks every length before allocating anything.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/attachments.h>

namespace wheelrpc::transport {

inline constexpr std::uint16_t kMagic = 0x5752;  // "WR"
inline constexpr std::uint8_t kProtocolVersion = 1;
inline constexpr std::size_t kHeaderSize = 24;
/// Default limit on a frame's body (8 MiB, like Dubbo's payload limit).
inline constexpr std::uint32_t kDefaultMaxBody = 8u << 20;
/// Longest method name, attachment key (bytes).
inline constexpr std::size_t kMaxNameSize = 255;

/// Bits of FrameHeader::flags.
enum FrameFlag : std::uint8_t {
  kFlagRequest = 0x01,  ///< a request (else a response)
  kFlagTwoWay = 0x02,   ///< the request expects a response
  kFlagEvent = 0x04,    ///< a protocol event (HELLO, heartbeat), not an application call
  kFlagStream = 0x08,   ///< a frame of a stream; `stream_op` says which (docs/protocol.md, "Streams")
};

struct FrameHeader {
  std::uint8_t version = kProtocolVersion;
  std::uint8_t flags = 0;
  std::uint8_t status = 0;  ///< responses: 0 = success; the values belong to the layer above (rpc::Status)
  /// Stream frames (kFlagStream): what the frame does to its stream; the
  /// values belong to the layer above. 0 otherwise (sent as 0, and a peer
  /// without streams ignores the byte).
  std::uint8_t stream_op = 0;
  /// How the payload is compressed (a transport::Compression value,
  /// wheelrpc/transport/compression.h; docs/protocol.md, "Compression"):
  /// 0 = as it is. Only the payload: method and attachments never are. The
  /// codec carries the byte as is; the layer above checks it against what
  /// it announced. A peer without compression sends 0 and ignores the byte.
  std::uint8_t encoding = 0;
  /// Requests and stream OPENs: the compression the caller chose for the
  /// call (a transport::Compression value), even when this payload went as
  /// it is (too small): a server that mirrors it answers in it. 0 otherwise.
  std::uint8_t reply_encoding = 0;
  std::uint64_t request_id = 0;
  std::uint32_t deadline_ms = 0;  ///< remaining budget of the caller; 0 = none
  std::uint32_t body_len = 0;     ///< filled in by encode_frame

  bool is_request() const noexcept { return flags & kFlagRequest; }
  bool is_two_way() const noexcept { return flags & kFlagTwoWay; }
  bool is_event() const noexcept { return flags & kFlagEvent; }
  bool is_stream() const noexcept { return flags & kFlagStream; }
};

struct Frame {
  FrameHeader header;
  std::string method;  ///< requests: the method; responses and heartbeats: empty
  Attachments attachments;
  std::string payload;
  /// One more attachment, encoded after `attachments` without being copied
  /// into them (the rpc layer's traceparent, from a buffer of its own); absent
  /// while `lent_key` is empty. Encoding only: the views must outlive the
  /// `encode_frame` call, and a decoder puts every attachment it reads in
  /// `attachments`. Dropped if `attachments` already hold the most a frame
  /// can carry.
  std::string_view lent_key, lent_value;
};

/// Bytes `encode_frame` appends for `f` (header included).
std::size_t encoded_size(const Frame& f) noexcept;

/// Appends the frame to `out`; body_len is computed, the header's is ignored.
/// Method names and attachment keys longer than kMaxNameSize are a caller bug
/// (asserted in debug builds, truncated otherwise).
void encode_frame(const Frame& f, std::string& out);

/// Decodes frames from the front of a byte buffer, one at a time, checking magic,
/// version and the body limit from the header alone, before any allocation.
/// Not thread-safe; one decoder per connection.
class FrameDecoder {
 public:
  enum class Result { need_more, frame, error };

  explicit FrameDecoder(std::uint32_t max_body = kDefaultMaxBody) noexcept : max_body_(max_body) {}

  /// On `frame`: fills `out` and sets `consumed` to the frame's size. On
  /// `need_more`: `consumed` is 0 and `needed()` says how many bytes the frame
  /// needs in all (known once the header is in). On `error`: `error()` and
  /// `error_message()` say why; the stream cannot be resynchronised.
  Result decode(const std::uint8_t* data, std::size_t size, Frame& out, std::size_t& consumed);

  std::size_t needed() const noexcept { return needed_; }
  boost::system::error_code error() const noexcept { return error_; }
  const std::string& error_message() const noexcept { return message_; }
  std::uint32_t max_body() const noexcept { return max_body_; }

 private:
  Result fail(boost::system::error_code ec, std::string message);

  std::uint32_t max_body_;
  std::size_t needed_ = kHeaderSize;
  boost::system::error_code error_;
  std::string message_;
};

}  // namespace wheelrpc::transport
