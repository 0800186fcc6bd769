#pragma once
// The server side of heartbeats and idle closes, in one place: the interval
// a HELLO agrees, how long a connection may stay idle (idle_limit.h, the
// client's formula too) and the CloseTimerTask and HeartbeatTimerTask.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/timer/timer.h>

#include "base/channel_timer_task.h"

namespace wheelrpc::rpc {
struct ServerStats;
}

namespace wheelrpc::rpc::detail {

/// Heartbeats and idle closes of one server's connections. agree(),
/// idle_timeout_for() and watch() are const and thread-safe; start(),
/// tasks() and add_stats() run under the ServerCore's `mu_` (which guards the
/// task pointers).
class ServerLiveness {
 public:
  explicit ServerLiveness(const ServerOptions& options) : options_(options) {}

  /// The interval a HELLO agrees: the larger of the client's (ours if it
  /// names none) and ours, so neither side takes a healthy connection for idle.
  std::chrono::milliseconds agree(std::optional<std::chrono::milliseconds> theirs) const;
  /// How long a connection with heartbeat `agreed` may read or write nothing
  /// before it is closed (idle_limit with ServerOptions::keepalive.idle_timeout).
  std::chrono::milliseconds idle_timeout_for(std::chrono::milliseconds agreed) const;
  /// What the tasks check of one connection; `agreed_ms` 0: no HELLO yet (the
  /// server's interval applies, and the hello timeout too).
  WatchedChannel watch(std::shared_ptr<transport::Channel> channel, std::int64_t agreed_ms) const;

  /// Starts the tasks (once listening): they run their checks on `ex` every
  /// heartbeat / 3 and stop when `provider` reports the server gone.
  void start(ChannelProvider provider, const boost::asio::any_io_executor& ex, timer::Timer& timer);
  /// The tasks started (for stop() to cancel, outside the lock).
  std::vector<std::shared_ptr<AbstractTimerTask>> tasks() const { return {close_task_, heartbeat_task_}; }
  /// Heartbeats sent and idle closes.
  void add_stats(ServerStats& s) const;

 private:
  const ServerOptions& options_;  // the ServerCore's, which holds this
  std::shared_ptr<CloseTimerTask> close_task_;
  std::shared_ptr<HeartbeatTimerTask> heartbeat_task_;
};

}  // namespace wheelrpc::rpc::detail
