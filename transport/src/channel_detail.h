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

/// The timer's cheap steady clock: one read per read and per write completion.
inline Channel::Clock::rep now_rep() { return timer::fast_steady_now().time_since_epoch().count(); }

}  // namespace detail
}  // namespace wheelrpc::transport
