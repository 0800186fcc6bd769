#pragma once
// One client connection and its upstream connection, on a strand of their own.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/fault/fault_proxy.h>

#include "counters.h"
#include "pipe.h"

namespace wheelrpc::fault::detail {

class ProxyState;

/// Every method below the constructor runs only on `executor()` (a strand):
/// post to it from elsewhere.
///
/// Lifetime: the proxy's registry owns an open pair (it may be open with no
/// I/O pending: a blackhole holding the end of both directions) and lets go
/// of it when it closes; handlers hold it through `self`. Closing cancels what
/// is pending, so a closed pair goes away once they have run.
///
/// Accounting: a pair is counted in `connections_active` from accept and
/// counted down exactly once, in `finish()`, however it closes.
class ConnectionPair : public std::enable_shared_from_this<ConnectionPair> {
 public:
  /// `client`'s executor must be a strand; the pair uses it for everything.
  ConnectionPair(std::uint64_t id, boost::asio::ip::tcp::socket client, std::shared_ptr<ProxyState> state);
  ConnectionPair(const ConnectionPair&) = delete;
  ConnectionPair& operator=(const ConnectionPair&) = delete;

  std::uint64_t id() const { return id_; }
  boost::asio::any_io_executor executor() const { return ex_; }

  /// Applies the toxics active at accept, then connects upstream.
  void start(const std::vector<ToxicEntry>& toxics);
  void add_toxic(const ToxicEntry& entry);
  void remove_toxic(const std::string& name);
  /// Closes both sides with a FIN (and an RST where unread bytes remain). Idempotent.
  void close();
  /// Closes both sides with an RST (SO_LINGER 0). Idempotent.
  void reset();

  // For the pipes.
  void on_pipe_finished();
  void on_limit_reached();
  void on_pipe_error(Stream direction, const boost::system::error_code& ec);
  Counters& counters();
  const FaultProxyOptions& options() const;

 private:
  void on_connect(const boost::system::error_code& ec);
  void schedule_reset(const ToxicEntry& entry);
  void apply_reset(const ToxicEntry& entry);
  void finish(bool abortive);

  const std::uint64_t id_;
  const std::shared_ptr<ProxyState> state_;
  boost::asio::any_io_executor ex_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket server_;
  boost::asio::steady_timer connect_timer_;
  Pipe upstream_;    // client → server
  Pipe downstream_;  // server → client
  // reset_peer toxics waiting for their timeout, by toxic name.
  std::map<std::string, std::shared_ptr<boost::asio::steady_timer>> reset_timers_;
  bool connected_ = false;
  bool closed_ = false;
};

}  // namespace wheelrpc::fault::detail
