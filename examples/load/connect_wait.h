#pragma once
/// ConnectWait: the load generator's wait for its connections, before its
/// clock and its first call start.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>

namespace wheelrpc::examples::load {

/// True when the calls may start: either the source has no provider and has
/// said why (it failed: "host name 'x' does not resolve: ...", "etcd at ...
/// refused the connection"; or it reported an empty set: "service 'echo' has
/// no providers registered in etcd at ..."), known within milliseconds; or the
/// client knows at least one server and every server in the set is ready or
/// has failed a connect attempt (it is being retried, and a call that waited
/// for it would only measure the wait).
bool connections_settled(const std::vector<rpc::ProviderStats>& providers, const rpc::SourceState& source);

/// Why no server is ready: the source's reason when it has no provider, else
/// each server's last connect error ("cannot connect to ..."), or "<peer>:
/// still connecting", joined by "; ".
std::string not_ready_text(const std::vector<rpc::ProviderStats>& providers, const rpc::SourceState& source);

/// Makes the client connect, then looks at `client.source_state()` and
/// `client.providers()` every kPoll on a steady timer until
/// connections_settled() or kBound passed, whatever
/// the calls' deadline is: so that a call's deadline measures the call, not a
/// connect and a HELLO on a loaded machine. If no server is ready when it
/// ends it says so on stderr ("echo_client: no server ready after N ms:
/// <why>") and the calls start anyway (and fail with their own errors).
///
/// Thread safety: everything runs on the one thread that runs `io`.
class ConnectWait {
 public:
  /// The longest wait.
  static constexpr std::chrono::milliseconds kBound{10'000};
  /// How often the providers are looked at.
  static constexpr std::chrono::milliseconds kPoll{5};

  ConnectWait(boost::asio::io_context& io, rpc::Client& client) : client_(client), timer_(io) {}

  /// Starts the wait; `done` runs once, when it ends (maybe from inside start()).
  void start(std::function<void()> done);
  /// Ends the wait now: `done` runs, unless it ran already.
  void cancel() { end(); }

 private:
  void poll();
  void end();

  rpc::Client& client_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point started_;
  std::function<void()> done_;  // empty once it ran
};

}  // namespace wheelrpc::examples::load
