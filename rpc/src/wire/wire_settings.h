#pragma once
// What a client's wires read of its options (ClientOptions), gathered once
// by the client: a client transport sees these values, never the client.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/channel_options.h>
#include <wheelrpc/transport/tls.h>

#include "base/payload_coding.h"

namespace wheelrpc::rpc::detail {

/// A client's settings for its transports. Fixed once the client is made,
/// read from any thread without a lock. Shared (std::shared_ptr): each
/// transport holds them until it is destroyed, which may be after the client.
struct ClientWireSettings {
  /// ClientOptions::protocol: the wire the factory makes (wires.h).
  WireProtocol protocol = WireProtocol::native;
  /// ClientOptions::channel (buffers, write queue, max_body: our limit on a
  /// request body, and on a reply's).
  transport::ChannelOptions channel;
  /// ClientOptions::tls, loaded (std::nullopt: plaintext).
  std::optional<transport::TlsContext> tls;
  /// ClientOptions::tls.server_name: the name the server's certificate is
  /// checked against; the gRPC wire's :authority when not empty.
  std::string server_name;
  /// ClientOptions::stream_window (bytes): what a handshake announces.
  std::uint32_t stream_window = 0;
  /// ClientOptions::compression, as the connections use it.
  PayloadCoding coding;
  /// ClientOptions::clock (null: the steady clock).
  const timer::Clock* clock = nullptr;

  /// When the latest read of `ch` completed (on a manual clock: now).
  std::chrono::steady_clock::time_point receipt_time(const transport::Channel& ch) const noexcept {
    return clock ? clock->now() : ch.last_read();
  }
};

}  // namespace wheelrpc::rpc::detail
