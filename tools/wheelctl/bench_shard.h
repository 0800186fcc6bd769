#pragma once
/// BenchShard: one I/O thread's part of a `wheelctl bench` run: its
/// io_context, its client (one connection to each server) and its share of
/// the calls.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/timer/timer.h>

#include "bench.h"
#include "histogram.h"

namespace wheelrpc::wheelctl {

/// What one shard does: shard `index` of `shards`.
struct ShardPlan {
  unsigned index = 0;
  unsigned shards = 1;
  /// Closed loop: calls this shard keeps in flight. Unused in an open loop.
  unsigned concurrency = 1;
  /// Open loop: the run's whole rate (calls/s; 0: closed loop). The shard
  /// starts calls index, index + shards, index + 2 shards, ... of the one
  /// schedule, the j-th intended at t0 + j / rate.
  double rate = 0;
  /// Open loop: this shard's cap on calls in flight.
  unsigned max_in_flight = 1;
};

/// Runs its share of the calls on its own io_context (run by one thread, the
/// "shard's thread"). Latencies go into its own Histogram, counters into
/// its own fields: nothing is shared with the other shards while running but
/// the timer and two relaxed atomic counters read by the progress line.
///
/// The sequence: warm_up() (one call, not counted), start() with the run's
/// common t0, then calls until the end, then the drain; once nothing is in
/// flight it closes its client, so that `io().run()` returns.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: the methods marked "any thread"
/// are safe from any thread; the results are read once io().run() returned.
/// Wheel tasks (the schedule, the drain bound) only post to io().
class BenchShard {
 public:
  using Clock = std::chrono::steady_clock;

  /// `servers`: the providers its client balances over (at least one).
  BenchShard(const BenchTarget& target, const std::vector<boost::asio::ip::tcp::endpoint>& servers, timer::Timer& timer,
             ShardPlan plan);
  ~BenchShard();
  BenchShard(const BenchShard&) = delete;
  BenchShard& operator=(const BenchShard&) = delete;

  boost::asio::io_context& io() noexcept { return io_; }

  /// Any thread: makes one call (connecting), not counted; `done` runs on
  /// the shard's thread when it completed, whatever its outcome.
  void warm_up(std::function<void()> done);
  /// Any thread: starts the calls at `t0` (closed loop: `plan.concurrency`
  /// at once; open loop: on the schedule) until `t_end`.
  void start(Clock::time_point t0, Clock::time_point t_end);
  /// Any thread: starts no more calls (the end comes now); the run ends once
  /// the calls in flight completed, each within its timeout.
  void stop_starting();
  /// Any thread: fails the calls in flight at once (CANCELLED) and ends.
  void cancel_all();
  /// Runs on the shard's thread once the shard is done (nothing in flight,
  /// client closed). Set before warm_up().
  void on_finished(std::function<void()> f) { on_finished_ = std::move(f); }

  /// Any thread: calls completed, and failed, so far (for the progress line).
  std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_relaxed); }
  std::uint64_t failed() const noexcept { return failed_.load(std::memory_order_relaxed); }

  /// Once io().run() returned.
  const Histogram& latency() const noexcept { return latency_; }
  std::uint64_t ok() const noexcept { return ok_; }
  const std::array<std::uint64_t, rpc::kStatusCodes>& errors_by_status() const noexcept { return by_status_; }
  std::uint64_t cap_hits() const noexcept { return cap_hits_; }
  std::uint64_t unsent() const noexcept { return unsent_; }
  /// When the last call completed (t0 when none did).
  Clock::time_point last_completion() const noexcept { return last_completion_; }
  const std::string& first_error() const noexcept { return first_error_; }

 private:
  void issue(std::int64_t intended_ns);
  void on_complete(const boost::system::error_code& ec, const rpc::Response& response, std::int64_t intended_ns);
  void pump(std::int64_t now_ns);
  void arm_schedule(std::int64_t delay_ns);
  void arm_drain_bound(std::chrono::nanoseconds delay);
  void force_end();
  void end_window();
  void maybe_finish();
  std::int64_t intended_of(std::uint64_t k) const noexcept;
  std::int64_t now_ns() const noexcept;
  bool in_shard_thread() noexcept;

  boost::asio::io_context io_{1};
  timer::Timer& timer_;
  const ShardPlan plan_;
  const std::string method_;
  const std::string request_;
  const std::chrono::milliseconds timeout_;
  rpc::CallOptions call_options_;
  std::optional<rpc::Client> client_;

  // Only on the shard's thread from here on.
  Clock::time_point epoch_{};  ///< t0: the ns fields below count from it
  std::int64_t end_ns_ = 0;    ///< no call starts at or after it
  bool started_ = false;
  bool window_over_ = false;  ///< end_ns_ passed, or stop_starting()
  bool cancelled_ = false;    ///< cancel_all(): the client is closed
  bool finished_ = false;
  bool schedule_armed_ = false;
  std::uint64_t next_k_ = 0;                    ///< open loop: this shard's next call of the schedule
  std::uint64_t capped_k_ = ~std::uint64_t{0};  ///< open loop: the call last counted in cap_hits_
  unsigned in_flight_ = 0;
  Histogram latency_;
  std::uint64_t ok_ = 0;
  std::array<std::uint64_t, rpc::kStatusCodes> by_status_{};
  std::uint64_t cap_hits_ = 0;
  std::uint64_t unsent_ = 0;
  Clock::time_point last_completion_{};
  std::string first_error_;
  timer::Timeout drain_bound_;
  std::function<void()> on_finished_;
  timer::Timeout schedule_;

  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> failed_{0};
};

}  // namespace wheelrpc::wheelctl
