#pragma once
// Compression of payloads on the native protocol (docs/compression.md): what
// a sender does with a payload (compress it, or send it as it is) and what a
// receiver does with one (check its algorithm against what it announced,
// then decompress it within its limits). Shared by unary calls and stream
// messages, on both sides. Any thread; no locks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/compression.h>

namespace wheelrpc::rpc::detail {

/// One side's compression settings, as its connections use them.
struct PayloadCoding {
  std::size_t threshold = 1024;      // smaller payloads go as they are
  transport::CompressionSet accept;  // what this side decodes (its HELLO said so)
  std::uint32_t max_ratio = 1024;    // decompressed / compressed beyond 1 MiB; 0: none
};

/// The algorithm to send `payload` with, and its compressed form in `out`:
/// `c` when it is not identity, the peer decodes it (`peer`), the payload has
/// at least `threshold` bytes (and at least one) and it shrank; identity
/// otherwise (`out` then holds nothing of use).
transport::Compression compress_payload(std::string_view payload, transport::Compression c, int level,
                                        std::size_t threshold, transport::CompressionSet peer, std::string& out);

/// A per-thread buffer for compress_payload's output, reused call after
/// call (swapped into a frame for its encoding, then swapped back).
std::string& compression_scratch();

/// Decodes a received payload in place, given the `encoding` byte of its
/// frame. Empty on success (`payload` now holds the decompressed bytes);
/// otherwise a StatusCode error (the call's or the message's outcome) and
/// `why`: INVALID_ARGUMENT for an algorithm unknown or not announced
/// (`accept`), RESOURCE_EXHAUSTED past `max_output` (the body limit this
/// side announced, or a stream's message limit) or the ratio limit,
/// DATA_LOSS for a corrupt payload. `what` names the payload in `why` ("the
/// request", "a message"). The frame's boundary was intact: the connection
/// goes on either way.
boost::system::error_code decompress_payload(std::uint8_t encoding, std::string& payload, const PayloadCoding& coding,
                                             std::size_t max_output, std::string_view what, std::string& why);

/// The algorithm a frame asks its reply in (its reply_encoding byte), if
/// valid and decodable by its sender; identity otherwise.
inline transport::Compression requested_compression(std::uint8_t reply_encoding) noexcept {
  return reply_encoding < transport::kCompressionCount ? static_cast<transport::Compression>(reply_encoding)
                                                       : transport::Compression::identity;
}

}  // namespace wheelrpc::rpc::detail
