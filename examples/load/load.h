#pragma once
/// Load: the load generator's closed loop of calls.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>

#include "load/config.h"
#include "load/connect_wait.h"
#include "load/tally.h"

namespace wheelrpc::examples::load {

/// Waits for the client's connections (ConnectWait), then keeps
/// `cfg.concurrency` calls in flight until `--calls` were issued or
/// `--duration-s` passed (or SIGINT / SIGTERM), waits (bounded) for those in
/// flight, prints progress every `--report-interval-ms` and the summary, then
/// closes the client, so that `io.run()` returns. A second SIGINT / SIGTERM
/// while it waits ends the process at once (std::_Exit) with status 128 + the
/// signal: 130 for SIGINT.
///
/// Every call must complete exactly once: a call still in flight T + 5 s
/// after the last one was issued, or when nothing completed for T + 5 s, is
/// lost; a second completion is counted (completed_twice).
///
/// Thread safety: everything runs on the one thread that runs `io`; `start()`
/// must be called there too.
class Load {
 public:
  /// `after_close` (optional) runs once the client is closed (e.g. closes the
  /// registry the client followed).
  Load(const Config& cfg, boost::asio::io_context& io, rpc::Client& client, std::function<void()> after_close = {});

  /// Starts connecting; the clock and the calls start once the connections
  /// are ready (or ConnectWait::kBound passed).
  void start();
  /// 1 if a call was lost or completed twice, or with --fail-on-error if a
  /// call failed; else 0 (once `io.run()` returned).
  int exit_status() const { return exit_status_; }

 private:
  using Clock = std::chrono::steady_clock;

  void wait_for_signal();
  void begin();
  bool may_issue();
  std::string make_payload(std::uint64_t id) const;
  void issue();
  void on_complete(std::uint64_t id, Clock::time_point issued_at, const std::string& expected,
                   const boost::system::error_code& ec, rpc::Response r);
  void stop_issuing();
  void schedule_report();
  void report();
  void finish();

  const Config& cfg_;
  boost::asio::io_context& io_;
  rpc::Client& client_;
  std::function<void()> after_close_;
  boost::asio::steady_timer report_timer_, end_timer_, drain_timer_;
  boost::asio::signal_set signals_;
  ConnectWait connect_wait_;

  Clock::time_point start_, last_progress_, last_completion_, last_report_at_;
  bool issuing_ = true;
  bool finished_ = false;
  bool interrupted_ = false;  // a first SIGINT / SIGTERM came
  std::size_t in_flight_ = 0;
  std::vector<std::uint8_t> completions_;  // per call id: how many times it completed
  std::uint64_t last_report_ok_ = 0;
  // --warmup-s: when it ended, the ok calls and providers' counts then.
  bool warm_ = false;
  Clock::time_point warm_at_;
  std::uint64_t warm_ok_ = 0;
  std::vector<rpc::ProviderStats> warm_providers_;
  Tally tally_;
  int exit_status_ = 0;
};

}  // namespace wheelrpc::examples::load
