#pragma once
/// Session: one wheelctl run's connection to a server: its io_context on a
/// thread of its own, the shared timer, and an rpc::Client to HOST:PORT,
/// with blocking helpers for the verbs' calls and streams.

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "connection_flags.h"
#include "failure.h"

namespace wheelrpc::wheelctl {

/// The blocking helpers wait on futures that the client's handlers fulfil
/// on the session's thread; every operation is bounded by its call's
/// deadline or a stream timer, or ends when the stream is cancelled.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: the blocking helpers from one
/// thread other than the session's (main's); client() from any thread.
class Session {
 public:
  /// The outcome of one blocking operation: an error (empty on success)
  /// and the library's full message for it.
  struct Outcome {
    boost::system::error_code ec;
    std::string message;
    explicit operator bool() const noexcept { return !ec; }
  };

  /// Resolves `flags.target` (a host name through getaddrinfo, now, on
  /// this thread) and makes the client; it connects on the first call.
  /// On failure returns null and sets `failure` (kExitUnreachable for a
  /// name that does not resolve).
  static std::unique_ptr<Session> open(const ConnectionFlags& flags, Failure& failure);
  /// Closes the client, then stops and joins the thread.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  rpc::Client& client() noexcept { return *client_; }
  boost::asio::io_context& io() noexcept { return io_; }
  const ConnectionFlags& flags() const noexcept { return flags_; }

  /// A call's options: --timeout-ms (0: none), the -H metadata, no retries
  /// (an operator's tool sends one attempt), wait_for_ready off (a refused
  /// connection fails at once instead of at the deadline).
  rpc::CallOptions call_options() const;
  /// Options for a stream: opening bounded by --timeout-ms, and the whole
  /// stream by it too when `whole_stream` (0: no bound).
  rpc::CallOptions stream_options(bool whole_stream) const;

  /// A unary call of `path` with `payload`.
  Outcome call(const std::string& path, std::string payload, rpc::Response& response);
  /// Opens a stream to `path`.
  Outcome open_stream(const std::string& path, rpc::CallOptions options, rpc::ClientStream& stream);
  /// The next message into `message` (std::nullopt at a good end).
  Outcome read(rpc::ClientStream& stream, std::optional<std::string>& message);
  Outcome write(rpc::ClientStream& stream, std::string message);
  Outcome writes_done(rpc::ClientStream& stream);
  Outcome finish(rpc::ClientStream& stream);

  /// Whether a connection to the server was ever made.
  bool connected() const { return client_->stats().connects > 0; }
  /// call_failure(outcome, connected()).
  Failure failure(const Outcome& outcome) const;

 private:
  explicit Session(const ConnectionFlags& flags);

  ConnectionFlags flags_;
  timer::HashedWheelTimer timer_;  // outlives the client and every handler on io_
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::unique_ptr<rpc::Client> client_;
  std::thread thread_;
};

}  // namespace wheelrpc::wheelctl
