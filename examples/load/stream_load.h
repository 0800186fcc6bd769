#pragma once
/// StreamLoad: the load generator's streams (--method count|sum|chat).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>

#include "load/config.h"
#include "load/connect_wait.h"
#include "load/tally.h"

namespace wheelrpc::examples::load {

/// Waits for the client's connections (ConnectWait), then keeps
/// `cfg.streams` streams going at once, each running `cfg.method`'s
/// exchange (stream_exchange.h) once, or, with --duration-s, opened again
/// until the time is up (a stream running then runs to its end); prints
/// progress every --report-interval-ms and the summary (text, or JSON lines
/// with --json), then closes the client, so that `io.run()` returns.
///
/// Each stream counts once: ok (it ended with success and its data was
/// right) or under an error name: its opening's or its end's error
/// (error_name), kDataLoss when its data came back wrong or short, kNoEnd
/// when its end did not come within kEndBound after the exchange. Its end
/// (async_finish) must complete exactly once: a per-stream atomic counter
/// of completions makes a stream whose end never completed by the end of
/// the run `lost`, and each further completion `completed_twice`.
///
/// A first SIGINT / SIGTERM stops opening streams and cancels the open
/// ones (they fail with "aborted"); a second ends the process at once
/// (std::_Exit) with status 128 + the signal.
///
/// Thread safety: everything runs on the one thread that runs `io` (the
/// client's executor; the ends' handlers are bound to it); `start()` must be
/// called there too.
class StreamLoad {
 public:
  /// How long a stream's end may take to come once its exchange is over
  /// (the server ends it then, or already has).
  static constexpr std::chrono::seconds kEndBound{5};

  /// `after_close` (optional) runs once the client is closed.
  StreamLoad(const Config& cfg, boost::asio::io_context& io, rpc::Client& client,
             std::function<void()> after_close = {});

  /// Starts connecting; the clock and the streams start once the
  /// connections are ready (or ConnectWait::kBound passed).
  void start();
  /// 1 if a stream failed (any error name), was lost or ended twice, or
  /// none succeeded; else 0 (once `io.run()` returned).
  int exit_status() const { return exit_status_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct End;  // one stream's end, shared with its async_finish handler

  void wait_for_signal();
  void begin();
  boost::asio::awaitable<void> worker();
  boost::asio::awaitable<void> run_stream();
  rpc::CallOptions call_options() const;
  void schedule_report();
  void finish();

  const Config& cfg_;
  boost::asio::io_context& io_;
  rpc::Client& client_;
  std::function<void()> after_close_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer report_timer_;
  ConnectWait connect_wait_;

  Clock::time_point start_, end_at_;
  bool stopping_ = false;  // a signal came: open no more, cancel the open ones
  bool finished_ = false;
  std::size_t workers_left_ = 0;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, rpc::ClientStream> live_;  // open now, by our own id
  std::uint64_t unended_ = 0;                        // streams whose end has not completed yet
  StreamTally tally_;
  int exit_status_ = 0;
};

}  // namespace wheelrpc::examples::load
