#pragma once
// A server's lifecycle around its connections: listening, online/offline,
// the announcement (announce, withdraw) and the graceful shutdown (withdraw,
// grace, drain, the shutdown handler).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/timer.h>

namespace wheelrpc::rpc::detail {

class ServerHost;

/// The lifecycle of one server (it reaches the server through its
/// ServerHost). The flags are atomics, read from any thread
/// (admission reads draining(), offline(), listening() on the request path).
/// `shutdown_mu_` guards the shutdown handler and the grace or drain timeout;
/// it is taken before the server's `mu_`, never after it. Unless noted, a
/// function runs on any thread but the timer's worker; the grace and drain
/// timeouts only post to the executor.
class ServerShutdown {
 public:
  explicit ServerShutdown(ServerHost& host) : host_(host) {}

  bool listening() const noexcept { return listening_.load(); }
  /// Set by ServerCore::listen, cleared by stop (under the server's mu_).
  void set_listening(bool listening) noexcept { listening_.store(listening); }
  bool offline() const noexcept { return offline_.load(std::memory_order_relaxed); }
  /// New requests are refused (the drain phase of a graceful shutdown).
  bool draining() const noexcept { return draining_.load(); }
  /// Listening, online, and no graceful shutdown begun (what the health
  /// service reports as SERVING; ServerState::serving()).
  bool serving() const noexcept { return listening_.load() && !offline_.load() && !started_.load(); }
  ServerState state() const;

  /// Announces the server listening at `endpoint` and waits for the
  /// announcer's answer; on failure stops the server and returns why. The
  /// thread that calls Server::listen.
  boost::system::error_code announce(const boost::asio::ip::tcp::endpoint& endpoint, std::string& message);
  /// Server::set_online: withdraws or announces again (unless a provider
  /// rule keeps the server disabled).
  void set_online(bool online);
  /// A provider rule's `disabled` (Server::apply_rules): offline while it
  /// holds, whatever set_online says; back to set_online's state after.
  void set_disabled_by_rule(bool disabled);

  /// Server::async_shutdown: withdraw, serve on for the grace, then drain;
  /// `handler` completes when the calls in flight are done (or the drain
  /// timeout passes, or stop() comes first: aborted).
  void start(std::chrono::milliseconds drain_timeout,
             boost::asio::any_completion_handler<Server::ShutdownSignature> handler);
  /// The drain phase (after the withdraw and its grace): stops accepting,
  /// refuses new requests, waits for the calls in flight up to `drain_timeout`.
  void begin_drain(std::chrono::milliseconds drain_timeout);
  /// Ends a graceful shutdown (once): stop, then the handler with `ec`. On the executor.
  void finish(boost::system::error_code ec);
  /// While shutting down: ends it if no open connection has a request in
  /// flight (requests of closed connections can no longer be answered). On the executor.
  void check_drained();
  /// Posts check_drained() if draining: a connection closed, or the last
  /// request in flight of one was answered.
  void recheck_drained();
  /// The tail of ServerCore::stop: withdraws the announcement (not waited
  /// for) and completes a shutdown in progress, aborted.
  void on_stopped();

 private:
  /// Who keeps the server offline (offline_reasons_).
  static constexpr std::uint8_t kOfflineByCall = 1;  // set_online(false)
  static constexpr std::uint8_t kOfflineByRule = 2;  // set_disabled_by_rule(true)
  /// Adds or removes `reason`; on a change of offline(), tells the health
  /// service, and withdraws or announces again.
  void set_offline_reason(std::uint8_t reason, bool on);
  /// Asks the announcer to withdraw the server (`done` may be empty).
  void withdraw(std::function<void()> done);
  /// The shutdown's handler, taken, with its drain timeout cancelled.
  boost::asio::any_completion_handler<Server::ShutdownSignature> take_handler();

  ServerHost& host_;  // holds this
  std::atomic<bool> listening_{false};
  std::atomic<bool> offline_{false};  // offline_reasons_ != 0, for the request path
  common::Mutex offline_mu_;          // the reasons and the flag change together
  std::uint8_t offline_reasons_ WHEELRPC_GUARDED_BY(offline_mu_) = 0;
  std::atomic<bool> disabled_by_rule_{false};
  std::atomic<bool> started_{false};   // a graceful shutdown began (withdraw, grace, drain)
  std::atomic<bool> draining_{false};  // new requests are refused
  std::atomic<bool> finished_{false};
  std::atomic<bool> announced_{false};  // the announcer announced us and was not asked to withdraw
  common::Mutex shutdown_mu_;
  boost::asio::any_completion_handler<Server::ShutdownSignature> handler_ WHEELRPC_GUARDED_BY(shutdown_mu_);
  timer::Timeout drain_timeout_ WHEELRPC_GUARDED_BY(shutdown_mu_);  // the grace, then the drain timeout
};

}  // namespace wheelrpc::rpc::detail
