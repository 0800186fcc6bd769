#pragma once
/// idle_limit: how long a connection may read nothing before either side
/// takes its peer for dead. One formula for the client's ReconnectTimerTask
/// (ClientOptions::idle_timeout) and the server's CloseTimerTask
/// (ServerOptions::keepalive.idle_timeout); docs/timeouts.md, "Heartbeats keep
/// connections honest".

#include <algorithm>
#include <chrono>

namespace wheelrpc::rpc::detail {

/// `configured` > 0: that limit, but never below two agreed heartbeat
/// intervals (a peer that heartbeats on time is never taken for idle);
/// otherwise (0, the default) three intervals.
constexpr std::chrono::milliseconds idle_limit(std::chrono::milliseconds configured,
                                               std::chrono::milliseconds heartbeat) noexcept {
  return configured.count() > 0 ? std::max(configured, 2 * heartbeat) : 3 * heartbeat;
}

}  // namespace wheelrpc::rpc::detail
