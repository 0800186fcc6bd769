#pragma once
/// How a Server announces itself to a registry (implemented by
/// wheelrpc::registry; rpc knows only this interface).

#include <functional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace wheelrpc::rpc {

/// Announces a server's listen address and withdraws it. Set in
/// ServerOptions::announcer.
///
/// @par Thread Safety
/// Both methods may be called from any thread; `done` runs exactly once, on
/// any thread but the timer's worker, possibly inline.
class ServiceAnnouncer {
 public:
  /// `ec` empty: done (announced, or, for an announcer that retries in the
  /// background, accepted); else why it failed, in `message`.
  using Done = std::function<void(boost::system::error_code ec, std::string message)>;

  virtual ~ServiceAnnouncer() = default;
  /// Called by Server::listen once the socket is bound, with the address
  /// clients should use. Server::listen waits for `done` and fails with its
  /// error: an announcer must complete by its own deadline.
  virtual void announce(const boost::asio::ip::tcp::endpoint& endpoint, Done done) = 0;
  /// Called first by a graceful shutdown (and, without waiting, by stop()).
  /// `done` must run by the announcer's own deadline.
  virtual void withdraw(Done done) = 0;
  /// Whether the announcement is in force now: for an announcer that
  /// accepts at once and retries in the background, whether the registry
  /// confirmed it (and has not lost it since). Server::state() (and the
  /// admin server's /ready) report ready only then. Default: true. Any thread.
  virtual bool in_force() const noexcept { return true; }
};

}  // namespace wheelrpc::rpc
