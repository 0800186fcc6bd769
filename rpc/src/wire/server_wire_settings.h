#pragma once
// What a server's wires read of its options (ServerOptions), gathered once
// by the server: its wires see these values, never the options themselves.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/channel_options.h>
#include <wheelrpc/transport/compression.h>

#include "base/idle_limit.h"
#include "base/payload_coding.h"

namespace wheelrpc::rpc::detail {

/// A server's settings for its wires. Fixed once the server is made (it
/// owns them and outlives every connection's use of them); read from any
/// thread without a lock.
struct ServerWireSettings {
  /// ServerOptions::channel, with accept_http2 set when gRPC is served.
  transport::ChannelOptions channel;
  /// ServerOptions::keepalive.hello_timeout: a native client's HELLO comes
  /// within it, or its connection is closed.
  std::chrono::milliseconds hello_timeout{0};
  /// ServerOptions::limits.max_requests_per_connection (0: none): at it, a
  /// connection reads nothing more until a reply goes out.
  std::size_t max_requests_per_connection = 0;
  /// ServerOptions::streams.max_per_connection (0: no streams) and
  /// streams.window (bytes), as a native HELLO announces them.
  std::size_t max_streams_per_connection = 0;
  std::uint32_t stream_window = 0;
  /// ServerOptions::compression.reply: the algorithm of replies and stream
  /// messages (std::nullopt: the call's).
  std::optional<transport::Compression> reply_compression;
  /// ServerOptions::compression, as connections use it.
  PayloadCoding coding;
  /// ServerOptions::grpc (enabled: an HTTP/2 client is served).
  GrpcServerOptions grpc;
  /// ServerOptions::clock (null: the channel's read time stamps).
  const timer::Clock* clock = nullptr;
  /// ServerOptions::keepalive.idle_timeout (0: 3 x the agreed heartbeat) and
  /// keepalive.tcp_user_timeout (set a connection's TCP_USER_TIMEOUT to its
  /// idle limit once its heartbeat is agreed).
  std::chrono::milliseconds idle_timeout{0};
  bool tcp_user_timeout = false;

  /// The TCP_USER_TIMEOUT for a connection whose heartbeat is `agreed`: its
  /// idle limit (idle_limit, the value ServerLiveness::idle_timeout_for
  /// gives), or 0 with tcp_user_timeout off.
  std::chrono::milliseconds user_timeout_for(std::chrono::milliseconds agreed) const noexcept {
    return tcp_user_timeout ? idle_limit(idle_timeout, agreed) : std::chrono::milliseconds{0};
  }

  /// When a request's bytes were read: the channel's last read (stamped with
  /// the timer's fast steady clock), or the server's clock's now if it has
  /// one. On the channel's strand.
  std::chrono::steady_clock::time_point receipt_time(const transport::Channel& from) const noexcept {
    return clock ? clock->now() : from.last_read();
  }
};

}  // namespace wheelrpc::rpc::detail
