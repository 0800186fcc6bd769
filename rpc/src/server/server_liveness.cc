#include "server/server_liveness.h"

#include <algorithm>

#include <wheelrpc/rpc/server.h>

#include "base/idle_limit.h"

namespace wheelrpc::rpc::detail {

std::chrono::milliseconds ServerLiveness::agree(std::optional<std::chrono::milliseconds> theirs) const {
  return std::max(theirs.value_or(options_.keepalive.heartbeat), options_.keepalive.heartbeat);
}

std::chrono::milliseconds ServerLiveness::idle_timeout_for(std::chrono::milliseconds agreed) const {
  return idle_limit(options_.keepalive.idle_timeout, agreed);
}

WatchedChannel ServerLiveness::watch(std::shared_ptr<transport::Channel> channel, std::int64_t agreed_ms) const {
  std::chrono::milliseconds agreed(agreed_ms);
  if (agreed.count() == 0) agreed = options_.keepalive.heartbeat;  // before HELLO (hello_timeout applies too)
  return {std::move(channel), agreed, idle_timeout_for(agreed), {}, std::chrono::steady_clock::time_point::max()};
}

void ServerLiveness::start(ChannelProvider provider, const boost::asio::any_io_executor& ex, timer::Timer& timer) {
  // Idle connections are closed (and, if configured, heartbeats sent) every
  // heartbeat / 3. The checks walk every connection under the core's mu_:
  // they run on the executor.
  const auto tick = std::max(options_.keepalive.heartbeat / 3, std::chrono::milliseconds(1));
  close_task_ = std::make_shared<CloseTimerTask>(provider, tick, ex);
  close_task_->start(timer);
  if (options_.keepalive.send_heartbeats) {
    heartbeat_task_ = std::make_shared<HeartbeatTimerTask>(std::move(provider), tick, ex);
    heartbeat_task_->start(timer);
  }
}

void ServerLiveness::add_stats(ServerStats& s) const {
  if (heartbeat_task_) s.heartbeats_sent = heartbeat_task_->heartbeats_sent();
  if (close_task_) s.idle_closes = close_task_->closed();
}

}  // namespace wheelrpc::rpc::detail
