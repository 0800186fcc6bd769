#pragma once
/// StreamLoad: the load generator's streams (--method count|sum|chat).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <wheelrpc/rpc/client.h>

#include "load/config.h"

namespace wheelrpc::examples::load {

/// Keeps `cfg.streams` streams going at once, each running `cfg.method` once
/// (or, with --duration-s, opened again until the time is up), then prints
/// the summary (text, or one JSON line with --json) and closes the client,
/// so that `io.run()` returns. Every stream must end exactly once: a stream
/// whose end (async_finish) never completed is `lost`, one that completed
/// twice is counted in `completed_twice`. A stream whose data came back
/// wrong (an echo or a sum that differs, a count out of order) counts as an
/// error "data_loss".
///
/// Thread safety: everything runs on the one thread that runs `io`
/// (the client's executor); `start()` must be called there too.
class StreamLoad {
 public:
  StreamLoad(const Config& cfg, boost::asio::io_context& io, rpc::Client& client,
             std::function<void()> after_close = {});
  void start();
  /// 1 if a stream failed, was lost or ended twice; else 0.
  int exit_status() const { return exit_status_; }

 private:
  using Clock = std::chrono::steady_clock;
  /// One stream's part of the run (ends: completions of its async_finish).
  struct Ends {
    int n = 0;
    boost::system::error_code ec;  // of the first
  };
  boost::asio::awaitable<void> worker();
  boost::asio::awaitable<void> run_stream();
  /// The method's exchange on an open stream; false with `why` on a data error.
  boost::asio::awaitable<bool> exchange(rpc::ClientStream& s, Clock::time_point opened, std::string& why);
  void note_received(Clock::time_point& last);
  void note_error(const std::string& name, const std::string& message);
  void finish();
  void print_summary() const;

  const Config& cfg_;
  boost::asio::io_context& io_;
  rpc::Client& client_;
  std::function<void()> after_close_;
  boost::asio::signal_set signals_;
  Clock::time_point start_, end_at_;
  bool stopping_ = false;
  std::size_t workers_left_ = 0;
  std::vector<std::shared_ptr<Ends>> ends_;  // one per stream started
  std::vector<rpc::ClientStream> live_;      // open now (cancelled on a signal)

  std::uint64_t streams_ = 0, streams_ok_ = 0, messages_sent_ = 0, messages_received_ = 0;
  Clock::duration max_gap_{0};
  std::map<std::string, std::uint64_t> errors_;
  std::map<std::string, std::string> examples_;
  std::uint64_t lost_ = 0, completed_twice_ = 0;
  double elapsed_s_ = 0;
  int exit_status_ = 0;
};

}  // namespace wheelrpc::examples::load
