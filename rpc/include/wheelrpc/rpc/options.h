#pragma once
/// Options of calls, clients and servers. Every field states its meaning, unit,
/// default and who may override it.

#include <chrono>
#include <cstddef>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

/// Per call; passed to every `Client::async_call`.
struct CallOptions {
  /// `timeout` value for a call without a deadline: it is neither scheduled on
  /// the timer nor bounded on the server, and ends only with a reply, a lost
  /// connection or a cancellation. Meant for measuring what deadlines cost and
  /// for the rare call that must not time out; prefer a generous timeout.
  static constexpr std::chrono::milliseconds kNoDeadline = std::chrono::milliseconds::max();

  /// The call's whole budget, from `async_call` to completion: the deadline is
  /// now + timeout, scheduled on the shared HashedWheelTimer, and travels to the
  /// server as the remaining budget. Default 1000 ms. Zero or negative: the call
  /// fails at once with errc::timeout, without being sent. kNoDeadline: none.
  std::chrono::milliseconds timeout{1000};

  /// When no connection is ready: true (default) = wait (within the deadline)
  /// for a connection being established; false = fail at once with
  /// errc::unavailable.
  bool wait_for_ready = true;

  /// Sent with the request; the handler sees them in `Request::attachments`.
  /// Keys at most 255 bytes. Default none.
  transport::Attachments attachments;
};

/// Per client; fixed at construction.
struct ClientOptions {
  /// Limit on one TCP connect attempt. Default 3000 ms.
  std::chrono::milliseconds connect_timeout{3000};

  /// Heartbeat interval this client proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's. Default 15 s.
  std::chrono::milliseconds heartbeat{15000};

  /// Most calls in flight at once (waiting or sent); beyond it a call fails at
  /// once with errc::too_many_pending. Default 65536.
  std::size_t max_pending_calls = 65536;

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;
};

/// Per server; fixed at construction.
struct ServerOptions {
  /// Heartbeat interval this server proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's. Default 15 s.
  std::chrono::milliseconds heartbeat{15000};

  /// A connection that has not completed the HELLO exchange within this time
  /// is closed. Default 10 s.
  std::chrono::milliseconds hello_timeout{10000};

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;
};

}  // namespace wheelrpc::rpc
