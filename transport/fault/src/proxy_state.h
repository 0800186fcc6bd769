#pragma once
// What a FaultProxy shares with its connection pairs: the listening socket,
// the toxics, the pairs and the counters. Pairs hold it, so it outlives the
// FaultProxy object until the last pair has gone.

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/fault/fault_proxy.h>

#include "counters.h"

namespace wheelrpc::fault::detail {

class ConnectionPair;

/// Every public method is safe from any thread; `mu_` guards everything but
/// the counters (atomics) and the constants.
class ProxyState : public std::enable_shared_from_this<ProxyState> {
 public:
  ProxyState(boost::asio::any_io_executor ex, boost::asio::ip::tcp::endpoint listen,
             boost::asio::ip::tcp::endpoint upstream, FaultProxyOptions options);

  boost::system::error_code start();
  void stop();
  void down();
  boost::system::error_code up();
  bool is_up() const;
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  const boost::asio::ip::tcp::endpoint& upstream() const { return upstream_; }
  const FaultProxyOptions& options() const { return options_; }

  boost::system::error_code add_toxic(Toxic toxic);
  boost::system::error_code remove_toxic(std::string_view name);
  std::vector<ToxicInfo> toxics() const;
  ProxyStats stats() const;

  Counters& counters() { return counters_; }
  /// A pair has closed: drop it from the registry. From the pair's strand,
  /// by a caller that holds the pair (so it is not destroyed under `mu_`).
  void forget(std::uint64_t id);

 private:
  boost::system::error_code open_locked() WHEELRPC_REQUIRES(mu_);
  void close_locked() WHEELRPC_REQUIRES(mu_);
  void accept_locked() WHEELRPC_REQUIRES(mu_);
  void on_accept(std::uint64_t generation, const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  /// Posts `f(pair)` to each open pair's strand. Posting under `mu_` orders it
  /// after the start of every pair registered before, and before anything
  /// posted later.
  template <class F>
  void post_to_pairs_locked(F f) WHEELRPC_REQUIRES(mu_);

  const boost::asio::any_io_executor ex_;
  const boost::asio::ip::tcp::endpoint upstream_;
  const FaultProxyOptions options_;
  Counters counters_;

  mutable common::Mutex mu_;
  boost::asio::ip::tcp::endpoint listen_ WHEELRPC_GUARDED_BY(mu_);  // the real port once bound
  boost::asio::ip::tcp::acceptor acceptor_ WHEELRPC_GUARDED_BY(mu_);
  boost::asio::steady_timer accept_pause_ WHEELRPC_GUARDED_BY(mu_);
  // Bumped at each open and close; stale accepts see a different one.
  std::uint64_t generation_ WHEELRPC_GUARDED_BY(mu_) = 0;
  bool started_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool up_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  std::vector<ToxicEntry> toxics_ WHEELRPC_GUARDED_BY(mu_);
  std::uint64_t next_pair_id_ WHEELRPC_GUARDED_BY(mu_) = 1;
  // The open pairs, owned here: a pair may have no I/O pending at all and
  // still be open (a blackhole holding the end of both directions), and it
  // must stay reachable by remove_toxic(), down() and stop() until it closes.
  // A pair leaves in forget(), when it closes, or in close_locked(), which
  // hands each one to the close it posts. (Until then pair and state hold
  // each other; every way out goes through one of those two.)
  std::unordered_map<std::uint64_t, std::shared_ptr<ConnectionPair>> pairs_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::fault::detail
