#pragma once
/// The load generator's side of echo_server's streaming methods: what a
/// count, sum or chat stream writes, what it expects back, and the checks.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include <wheelrpc/rpc/client_stream.h>

#include "load/config.h"
#include "load/tally.h"

namespace wheelrpc::examples::load {

/// What one stream's exchange did and saw.
struct Exchange {
  using Clock = std::chrono::steady_clock;

  std::uint64_t sent = 0;      ///< writes that completed
  std::uint64_t received = 0;  ///< messages read
  /// The run's totals, counted here too as each message goes (its
  /// messages_sent and messages_received), so that progress lines show a
  /// long stream's messages while it runs; none when null.
  StreamTally* totals = nullptr;
  /// The longest wait between two consecutive messages read (for count also
  /// from `last`'s first value, the opening, to the first message).
  Clock::duration max_gap{0};
  /// When the last message was read (count: starts at the opening).
  std::optional<Clock::time_point> last;
  /// Data that came back wrong: the exchange then cancelled the stream, so
  /// this, not the stream's end, is what counts (kDataLoss).
  std::string wrong;
  /// The exchange stopped short: an operation failed (the stream's end then
  /// says why) or the server ended the stream with success too early (then
  /// this counts as kDataLoss).
  std::string incomplete;

  /// Counts a write that completed.
  void note_sent();
  /// Counts a message read at `now`.
  void note_received(Clock::time_point now);
};

/// Runs `cfg.method`'s exchange on the open stream `s`, counting into `x`:
///
/// - count: writes "COUNT INTERVAL_MS" (--count, --interval-ms; the request
///   echo_server's count reads), half-closes, reads "0", "1", ... until the
///   end and checks their order and number;
/// - sum: writes "1" .. "COUNT", --interval-ms apart, half-closes, reads the
///   one answer and checks it is their sum;
/// - chat: writes "m0" .. "m<COUNT-1>", --interval-ms apart, each followed by
///   a read of its echo, which it checks; then half-closes and reads the end.
///
/// Completes when the exchange is over: everything checked, an operation
/// failed (`x.incomplete`), or data came back wrong (`x.wrong`; the stream
/// is then cancelled). It does not wait for the stream's end (async_finish).
/// Runs on the calling coroutine's executor.
boost::asio::awaitable<void> exchange(rpc::ClientStream& s, const Config& cfg, Exchange& x);

}  // namespace wheelrpc::examples::load
