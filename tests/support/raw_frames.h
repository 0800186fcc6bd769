#pragma once
// Frames as bytes, for tests that speak the protocol on a raw socket.

#include <cstdint>
#include <string>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::test {

/// One encoded frame.
inline std::string frame_bytes(std::uint8_t flags, std::uint64_t id, std::string method,
                               transport::Attachments attachments, std::string payload) {
  transport::Frame f;
  f.header.flags = flags;
  f.header.request_id = id;
  f.method = std::move(method);
  f.attachments = std::move(attachments);
  f.payload = std::move(payload);
  std::string out;
  transport::encode_frame(f, out);
  return out;
}

/// A client's HELLO (request id 1) proposing `heartbeat_ms`.
inline std::string hello_bytes(const std::string& heartbeat_ms = "15000") {
  using namespace transport;
  return frame_bytes(kFlagEvent | kFlagRequest | kFlagTwoWay, 1, "hello",
                     {{"version", "1"}, {"heartbeat_ms", heartbeat_ms}}, "");
}

/// A two-way request.
inline std::string request_bytes(std::uint64_t id, std::string method, std::string payload = {}) {
  return frame_bytes(transport::kFlagRequest | transport::kFlagTwoWay, id, std::move(method), {}, std::move(payload));
}

}  // namespace wheelrpc::test
