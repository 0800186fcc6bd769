#pragma once
// How a server gets the wire of a connection it accepted without naming
// one: the factory (wires.h at the root, the one place that names every
// wire) makes the connection's handler and channel; the server registers
// the channel and starts it.

#include <atomic>
#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/tls.h>

#include "wire/server_conn_context.h"

namespace wheelrpc::rpc::detail {

class ServerEvents;

/// A connection the server accepted, as its wire made it.
struct AcceptedConnection {
  /// Its channel, not started yet (the server starts it once registered).
  std::shared_ptr<transport::Channel> channel;
  /// The heartbeat interval its handshake agreed (ms; 0 before it): read by
  /// the liveness tasks and /connections, from any thread.
  std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms;
  /// Its record (its requests in flight: a graceful shutdown waits for them).
  ConnContextPtr context;
};

/// Makes the wire of a connection accepted on `socket` (TLS with `tls`, if
/// not null), reporting to `events`, its handshake timeout armed on
/// `timer`. Runs where the acceptor delivers (the server's executor).
using ServerWireFactory = AcceptedConnection (*)(boost::asio::ip::tcp::socket socket,
                                                 const std::shared_ptr<ServerEvents>& events, timer::Timer& timer,
                                                 const transport::TlsContext* tls);

}  // namespace wheelrpc::rpc::detail
