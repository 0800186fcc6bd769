#pragma once
// The size of a request's body as the client checks it against
// ChannelOptions::max_body before it picks a connection: the native frame's
// body (docs/protocol.md), measured without encoding it. Inline: it runs on
// every call that adds its own traceparent. Any thread.

#include <cstddef>
#include <cstdint>
#include <string>

#include <wheelrpc/rpc/trace.h>
#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

/// Whether a request of `method`, `payload` and `attachments` keeps its
/// body within `max_body` with a traceparent attachment added (the key
/// kTraceparentKey, a TraceContext::kTraceparentSize-byte value). The
/// strings are lent and given back unchanged.
inline bool fits_with_traceparent(std::uint32_t max_body, std::string& method, std::string& payload,
                                  transport::Attachments& attachments) {
  // Bytes a traceparent attachment adds to a body (55 characters of value).
  static const std::size_t cost = [] {
    transport::Frame with, without;
    with.method = without.method = "m";
    with.lent_key = kTraceparentKey;
    const std::string value(TraceContext::kTraceparentSize, '0');
    with.lent_value = value;
    return transport::encoded_size(with) - transport::encoded_size(without);
  }();
  if (payload.size() + cost < max_body / 2) return true;  // the common case: far below
  transport::Frame probe;  // lent the call's strings to measure the body, then given back
  probe.method.swap(method);
  probe.payload.swap(payload);
  probe.attachments.swap(attachments);
  const std::size_t body = transport::encoded_size(probe) - transport::kHeaderSize;
  probe.method.swap(method);
  probe.payload.swap(payload);
  probe.attachments.swap(attachments);
  return body + cost <= max_body;
}

}  // namespace wheelrpc::rpc::detail
