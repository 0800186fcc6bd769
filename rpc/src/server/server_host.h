#pragma once
// What a server's parts (admission, the interceptor chain, the lifecycle)
// ask of the server that owns them: a narrow host, so that they never see
// ServerCore (server_core.h includes them, not the other way) and can be
// tested with a fake one.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/timer.h>

#include "server/reply_slot.h"

namespace wheelrpc::rpc::detail {

struct ServerMethod;
class HealthRegistry;
class ServerShutdown;

/// The server as its parts see it (ServerCore implements it). A part holds
/// a reference to it for the server's lifetime, or a shared_host() /
/// weak_host() reference where a task or a posted job may outlive the call
/// that made it. Thread-safe unless a function says where it runs.
class ServerHost {
 public:
  /// Who answers a slot: the server itself (a refusal), the handler (through
  /// its Responder: checked against a deadline not on the wheel) or the
  /// deadline (posted from the timer's worker).
  enum class Answer : std::uint8_t { server, handler, deadline };

  // ---- requests
  /// Completes `slot` (once; a later answer is dropped and counted): false
  /// if the answer was dropped or could not be queued. Any thread but the
  /// timer's worker.
  virtual bool finish(ReplySlot& slot, Status status, std::string payload, transport::Attachments attachments,
                      Answer by) = 0;
  /// Runs the handler of an admitted request (`method`: its entry), or its
  /// interceptors first. Where the request is to run (the channel's strand,
  /// the handler executor, the executor for an in-process call).
  virtual void run_handler(const ServerMethod& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id) = 0;

  // ---- what the parts read
  /// The options the server runs with (resolved, validated). Fixed.
  virtual const ServerOptions& options() const noexcept = 0;
  /// The server's executor: where in-process calls, deadlines and the
  /// shutdown's steps run.
  virtual const boost::asio::any_io_executor& executor() const noexcept = 0;
  /// Where handlers run: ServerOptions::handler_executor, else executor().
  virtual const boost::asio::any_io_executor& handler_executor() const noexcept = 0;
  virtual timer::Timer& timer() const noexcept = 0;
  /// Entered by a timer callback before it posts (closed by stop()).
  virtual common::WorkGate& timer_work() noexcept = 0;
  /// The server, held (for a part that must keep it alive) or watched.
  virtual std::shared_ptr<ServerHost> shared_host() = 0;
  virtual std::weak_ptr<ServerHost> weak_host() = 0;
  /// The server's lifecycle (ServerShutdown).
  virtual ServerShutdown& shutdown() noexcept = 0;
  /// The server's grpc.health.v1 state (told when the lifecycle changes).
  virtual HealthRegistry& health_registry() noexcept = 0;

  // ---- the lifecycle's levers (ServerShutdown)
  /// True once stop() ran (takes the server's lock).
  virtual bool stopped() const = 0;
  /// Closes every connection and stops; `flush`: once their queued replies
  /// are written. Any thread but the timer's worker.
  virtual void stop(bool flush) = 0;
  /// Stops accepting connections.
  virtual void close_acceptor() = 0;
  /// Tells each connection whose protocol can say so that no new call is taken (gRPC's GOAWAY).
  virtual void announce_drain() = 0;
  /// Requests not yet answered, on the open connections and in process.
  virtual std::uint64_t in_flight() const = 0;
  /// Streams open now.
  virtual std::uint64_t open_streams() const = 0;
  /// Not stopped, and nothing in flight (a graceful shutdown may end).
  virtual bool drained() const = 0;
  /// Where the server listens (as announced).
  virtual boost::asio::ip::tcp::endpoint local_endpoint() const = 0;

 protected:
  ~ServerHost() = default;
};

/// The server's time: ServerOptions::clock's, else the timer's fast steady
/// clock. What deadlines and admission measure with. Any thread.
inline std::chrono::steady_clock::time_point server_now(const ServerOptions& options) noexcept {
  return options.clock ? options.clock->now() : timer::fast_steady_now();
}

}  // namespace wheelrpc::rpc::detail
