#pragma once
// The protocol's control frames (docs/protocol.md): the HELLO exchange,
// heartbeats and their replies, and CANCEL events.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

#include "wire/native/native_stream_frames.h"

namespace wheelrpc::rpc::detail {

inline constexpr const char* kHelloMethod = "hello";
inline constexpr const char* kVersionKey = "version";
inline constexpr const char* kHeartbeatKey = "heartbeat_ms";
/// The largest body the sender accepts (its ChannelOptions::max_body): each
/// side learns the other's limit before it sends anything over it.
inline constexpr const char* kMaxBodyKey = "max_body";

/// The algorithms the sender decodes (docs/compression.md): a peer that
/// does not say gets nothing compressed.
inline constexpr const char* kAcceptEncodingKey = "accept_encoding";

/// `stream_window`: the credit the sender grants each stream (its
/// stream_window attachment, which says it speaks streams); 0: none.
/// `accept`: what it decodes (no attachment when empty).
inline transport::Frame make_hello(std::uint64_t id, std::chrono::milliseconds heartbeat, bool request,
                                   std::uint32_t max_body, std::uint32_t stream_window = 0,
                                   transport::CompressionSet accept = {}) {
  transport::Frame f;
  f.header.flags = transport::kFlagEvent | (request ? transport::kFlagRequest | transport::kFlagTwoWay : 0);
  f.header.request_id = id;
  if (request) f.method = kHelloMethod;
  f.attachments = {{kVersionKey, std::to_string(transport::kProtocolVersion)},
                   {kHeartbeatKey, std::to_string(heartbeat.count())},
                   {kMaxBodyKey, std::to_string(max_body)}};
  if (stream_window != 0) f.attachments.emplace_back(kStreamWindowKey, std::to_string(stream_window));
  if (!accept.empty()) f.attachments.emplace_back(kAcceptEncodingKey, accept.to_string());
  return f;
}

inline bool is_hello(const transport::Frame& f) {
  return f.header.is_event() && f.header.is_request() && f.method == kHelloMethod;
}

/// A heartbeat: an event request with an empty body.
inline bool is_heartbeat(const transport::Frame& f) {
  return f.header.is_event() && f.header.is_request() && f.method.empty() && f.attachments.empty() && f.payload.empty();
}

/// Queues a heartbeat on `channel` (what a native ChannelHandler's
/// send_heartbeat does); true if queued. The channel's strand.
inline bool send_heartbeat_frame(transport::Channel& channel) {
  static std::atomic<std::uint64_t> next_id{1};
  // One frame per thread, made once: a heartbeat differs from the last
  // only in its id (no strings built and freed per heartbeat).
  thread_local transport::Frame f = [] {
    transport::Frame hb;
    hb.header.flags = transport::kFlagRequest | transport::kFlagTwoWay | transport::kFlagEvent;
    return hb;
  }();
  f.header.request_id = next_id.fetch_add(1, std::memory_order_relaxed);
  return !channel.send(f);
}

inline transport::Frame make_heartbeat_reply(std::uint64_t id) {
  transport::Frame f;
  f.header.flags = transport::kFlagEvent;
  f.header.request_id = id;
  return f;
}

inline constexpr const char* kCancelMethod = "cancel";

/// CANCEL: a one-way event request naming, by its request_id, a request the
/// client no longer waits for (a hedge that lost, a call cancelled by its
/// caller). The server drops that request's reply; there is no response.
inline transport::Frame make_cancel(std::uint64_t id) {
  transport::Frame f;
  f.header.flags = transport::kFlagEvent | transport::kFlagRequest;
  f.header.request_id = id;
  f.method = kCancelMethod;
  return f;
}

inline bool is_cancel(const transport::Frame& f) {
  return f.header.is_event() && f.header.is_request() && !f.header.is_two_way() && f.method == kCancelMethod;
}

/// A decimal attachment of a HELLO of at most 10 digits, if present and valid.
inline std::optional<std::uint64_t> hello_number(const transport::Frame& f, std::string_view key) {
  for (const auto& [k, v] : f.attachments) {
    if (k != key || v.empty() || v.size() > 10) continue;
    std::uint64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
  }
  return std::nullopt;
}

/// The heartbeat_ms attachment of a HELLO, if present and valid.
inline std::optional<std::chrono::milliseconds> hello_heartbeat(const transport::Frame& f) {
  const auto ms = hello_number(f, kHeartbeatKey);
  if (!ms) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(*ms));
}

/// The peer's body limit from its HELLO; a peer that does not say (or says
/// something out of range) is held to the protocol's default, 8 MiB.
inline std::uint32_t hello_max_body(const transport::Frame& f) {
  const auto n = hello_number(f, kMaxBodyKey);
  if (!n || *n == 0 || *n > 0xffffffffu) return transport::kDefaultMaxBody;
  return static_cast<std::uint32_t>(*n);
}

/// The stream window of a peer's HELLO: 0 if it speaks no streams (or
/// says something out of range).
inline std::uint32_t hello_stream_window(const transport::Frame& f) {
  const auto n = hello_number(f, kStreamWindowKey);
  if (!n || *n < kMinStreamWindow || *n > kMaxStreamWindow) return 0;
  return static_cast<std::uint32_t>(*n);
}

/// What the peer decodes, from its HELLO: empty (identity only) if it
/// does not say; names this build does not know are skipped.
inline transport::CompressionSet hello_accept(const transport::Frame& f) {
  for (const auto& [k, v] : f.attachments) {
    if (k == kAcceptEncodingKey) return transport::CompressionSet::parse(v);
  }
  return {};
}

}  // namespace wheelrpc::rpc::detail
