#pragma once
// A stream a client opens, as a server wire hands it to its engine (the
// server side of the stream seam): what the client asked for, and how the
// stream will be carried. The engine admits or refuses it and answers
// through `wire` (StreamWire::send_open_answer); a stream it accepts is
// bound to `wire`.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/compression.h>

#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

struct StreamOpenRequest {
  std::uint64_t id;
  /// The method and the client's metadata (the engine may move from them).
  std::string& method;
  transport::Attachments& metadata;
  /// The budget the client gave it (0: none), counted from `received`.
  std::chrono::milliseconds budget{0};
  std::chrono::steady_clock::time_point received{};
  /// The algorithm the client asked its messages in (identity: none).
  transport::Compression reply_compression = transport::Compression::identity;
  /// What carries it, the credit the client grants (the stream's unit; 0:
  /// kMinStreamWindow), the window the stream grants (0: the server's
  /// ServerStreamOptions::window), the largest body and the algorithms the
  /// client takes.
  std::shared_ptr<StreamWire> wire{};
  std::uint32_t peer_window = 0;
  std::uint32_t receive_window = 0;
  std::uint32_t peer_max_body = kDefaultPeerMaxBody;
  transport::CompressionSet peer_accept{};
};

}  // namespace wheelrpc::rpc::detail
