#pragma once
// StreamCore's handlers gathered under its lock and run once it is released
// (stream_core.cc, stream_timers.cc). Internal to StreamCore (its Pending).

#include <optional>
#include <string>

#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/detail/stream_ops.h>

namespace wheelrpc::rpc::detail {

/// Handlers to run once the lock is released, each dispatched to its
/// associated executor (the stream's by default): inline when already there.
struct StreamPending {
  struct Read {
    StreamReadHandler h;
    boost::system::error_code ec;
    std::optional<std::string> message;
  };
  struct Done {
    StreamDoneHandler h;
    boost::system::error_code ec;
  };
  // Rarely more than one of each (the end completes them all): no allocation.
  boost::container::small_vector<Read, 1> reads;
  boost::container::small_vector<Done, 2> dones;
  bool posted = false;  // started by the user's call: inline only a few deep (complete())
  void read(StreamReadHandler& h, boost::system::error_code ec, std::optional<std::string> m) {
    if (h) reads.push_back({std::move(h), ec, std::move(m)});
  }
  void done(StreamDoneHandler& h, boost::system::error_code ec) {
    if (h) dones.push_back({std::move(h), ec});
  }
};

}  // namespace wheelrpc::rpc::detail
