#pragma once
/// Options of calls, clients and servers. Every field states its meaning, unit,
/// default and who may override it.

#include <chrono>
#include <cstddef>

#include <wheelrpc/rpc/backoff.h>
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

  /// When no connection is ready: true (default) = wait for one (through
  /// reconnect attempts) until the deadline; if none could be made by then the
  /// call fails with errc::unavailable naming the last connect error, otherwise
  /// with errc::timeout ("not sent"). false = fail at once with
  /// errc::unavailable.
  bool wait_for_ready = true;

  /// Sent with the request; the handler sees them in `Request::attachments`.
  /// Keys at most 255 bytes. Default none.
  transport::Attachments attachments;
};

/// Per client; fixed at construction.
struct ClientOptions {
  /// Limit on one connect attempt: the TCP connect, and then again the HELLO
  /// exchange (a peer that accepts but never answers is dropped after it).
  /// Default 3000 ms.
  std::chrono::milliseconds connect_timeout{3000};

  /// Heartbeat interval this client proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's (the
  /// "agreed" interval). A connection idle in reads or writes for that long
  /// gets a heartbeat; checks run every heartbeat / 3. Default 15 s; > 0.
  std::chrono::milliseconds heartbeat{15000};

  /// A connection that has read nothing (no reply, no heartbeat reply) for this
  /// long is closed and reconnected: it catches half-open peers. 0 (default) =
  /// 3 x the agreed heartbeat. Otherwise at least 2 x `heartbeat` (the
  /// constructor rejects less: one lost heartbeat must not close a connection).
  std::chrono::milliseconds idle_timeout{0};

  /// Delays between reconnect attempts to a server, after a connection is lost
  /// or an attempt fails; reset after a successful connection. Defaults as
  /// gRPC: a fast first attempt, then 1 s x 1.6 per attempt +- 20 %, at most 120 s.
  BackoffOptions reconnect;

  /// Most calls in flight at once (waiting or sent); beyond it a call fails at
  /// once with errc::too_many_pending. Default 65536.
  std::size_t max_pending_calls = 65536;

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;
};

/// Per server; fixed at construction.
struct ServerOptions {
  /// Heartbeat interval this server proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's. Default 15 s; > 0.
  std::chrono::milliseconds heartbeat{15000};

  /// A connection that has not completed the HELLO exchange within this time
  /// is closed. Default 10 s.
  std::chrono::milliseconds hello_timeout{10000};

  /// Connections idle (no read or no write) for longer than this are closed by
  /// the server's CloseTimerTask (checked every heartbeat / 3). 0 (default) =
  /// 3 x the connection's agreed heartbeat; a set value below 2 x the agreed
  /// heartbeat is raised to that, so healthy clients are never closed.
  std::chrono::milliseconds close_timeout{0};

  /// Whether the server also sends heartbeats on connections idle for an
  /// agreed interval (clients always do). Default false.
  bool send_heartbeats = false;

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;
};

}  // namespace wheelrpc::rpc
