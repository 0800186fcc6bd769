#pragma once
// What a FaultProxy shares with its connection pairs: the listening socket,
// the toxics, the pairs and the counters. Pairs hold it, so it outlives the
// FaultProxy object until the last pair has gone.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

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
  boost::system::error_code open_locked();
  void close_locked();
  void accept_locked();
  void on_accept(std::uint64_t generation, const boost::system::error_code& ec,
                 boost::asio::ip::tcp::socket socket);
  /// Posts `f(pair)` to each open pair's strand. Posting under `mu_` orders it
  /// after the start of every pair registered before, and before anything
  /// posted later.
  template <class F>
  void post_to_pairs_locked(F f);

  const boost::asio::any_io_executor ex_;
  const boost::asio::ip::tcp::endpoint upstream_;
  const FaultProxyOptions options_;
  Counters counters_;

  mutable std::mutex mu_;
  boost::asio::ip::tcp::endpoint listen_;  // the real port once bound
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_pause_;
  std::uint64_t generation_ = 0;  // bumped at each open and close; stale accepts see a different one
  bool started_ = false, up_ = false, stopped_ = false;
  std::vector<ToxicEntry> toxics_;
  std::uint64_t next_pair_id_ = 1;
  // The open pairs, owned here: a pair may have no I/O pending at all and
  // still be open (a blackhole holding the end of both directions), and it
  // must stay reachable by remove_toxic(), down() and stop() until it closes.
  // A pair leaves in forget(), when it closes, or in close_locked(), which
  // hands each one to the close it posts. (Until then pair and state hold
  // each other; every way out goes through one of those two.)
  std::unordered_map<std::uint64_t, std::shared_ptr<ConnectionPair>> pairs_;
};

}  // namespace wheelrpc::fault::detail
