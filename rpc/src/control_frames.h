#pragma once
// The protocol's control frames (docs/protocol.md): the HELLO exchange,
// heartbeats and their replies, and CANCEL events.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

inline constexpr const char* kHelloMethod = "hello";
inline constexpr const char* kVersionKey = "version";
inline constexpr const char* kHeartbeatKey = "heartbeat_ms";

inline transport::Frame make_hello(std::uint64_t id, std::chrono::milliseconds heartbeat, bool request) {
  transport::Frame f;
  f.header.flags = transport::kFlagEvent | (request ? transport::kFlagRequest | transport::kFlagTwoWay : 0);
  f.header.request_id = id;
  if (request) f.method = kHelloMethod;
  f.attachments = {{kVersionKey, std::to_string(transport::kProtocolVersion)},
                   {kHeartbeatKey, std::to_string(heartbeat.count())}};
  return f;
}

inline bool is_hello(const transport::Frame& f) {
  return f.header.is_event() && f.header.is_request() && f.method == kHelloMethod;
}

/// A heartbeat: an event request with an empty body.
inline bool is_heartbeat(const transport::Frame& f) {
  return f.header.is_event() && f.header.is_request() && f.method.empty() &&
         f.attachments.empty() && f.payload.empty();
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

/// The heartbeat_ms attachment of a HELLO, if present and valid.
inline std::optional<std::chrono::milliseconds> hello_heartbeat(const transport::Frame& f) {
  for (const auto& [k, v] : f.attachments) {
    if (k != kHeartbeatKey || v.empty() || v.size() > 10) continue;
    std::uint64_t ms = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return std::nullopt;
      ms = ms * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
  }
  return std::nullopt;
}

}  // namespace wheelrpc::rpc::detail
