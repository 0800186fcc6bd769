#pragma once
// What channel.cc and channel_write.cc share of a Channel's insides.

#include <memory>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/channel.h>

namespace wheelrpc::transport {

/// A graceful close waiting for the write queue to drain (close_after_flush).
struct Channel::PendingClose {
  boost::system::error_code ec;
  std::string reason;
  std::unique_ptr<boost::asio::steady_timer> limit;  // closes it if the peer never takes the bytes
};

namespace detail {

/// The channel whose send_heartbeat() runs on this thread (on its strand):
/// a send() from its handler that needs the write started leaves it to
/// send_heartbeat, which starts it inline instead of posting to the strand it
/// already runs on. `kicked` says one did.
struct InlineKick {
  const Channel* channel = nullptr;
  bool kicked = false;
};
inline thread_local InlineKick t_inline_kick;

/// The timer's cheap steady clock: one read per read and per write completion.
inline Channel::Clock::rep now_rep() { return timer::fast_steady_now().time_since_epoch().count(); }

}  // namespace detail
}  // namespace wheelrpc::transport
