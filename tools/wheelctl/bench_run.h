#pragma once
/// BenchRun: one `wheelctl bench` run: the shards (one per I/O thread), the
/// shared timer, the warm-up barrier, the progress line and SIGINT.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench.h"
#include "bench_result.h"
#include "bench_shard.h"

namespace wheelrpc::wheelctl {

/// Runs a valid target and options (bench_problem() is "") against the
/// resolved `servers` (the target's providers, in order; each shard's client
/// balances over all of them). run() blocks: the calling thread runs shard 0, one
/// std::thread each of the others. Each shard makes one warm-up call (which
/// also connects); the clock starts when every one of them completed, with
/// one t0 for all (the open loop's schedule is one schedule across shards).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: interrupt() from any thread;
/// run() once.
///
/// @par Example
/// @code
/// BenchRun run(target, options, endpoint);
/// BenchResult r = run.run(std::cerr);
/// @endcode
class BenchRun {
 public:
  using Clock = std::chrono::steady_clock;

  /// Throws std::invalid_argument when a client cannot be made of `target`
  /// (e.g. a TLS file that does not load).
  BenchRun(const BenchTarget& target, const BenchOptions& options, std::vector<boost::asio::ip::tcp::endpoint> servers);
  /// One server.
  BenchRun(const BenchTarget& target, const BenchOptions& options, boost::asio::ip::tcp::endpoint server)
      : BenchRun(target, options, std::vector<boost::asio::ip::tcp::endpoint>{server}) {}
  ~BenchRun();
  BenchRun(const BenchRun&) = delete;
  BenchRun& operator=(const BenchRun&) = delete;

  /// Runs to the end (duration, then the drain) and returns the figures.
  /// Progress lines go to `err` (from the calling thread only).
  BenchResult run(std::ostream& err);

  /// Any thread, as SIGINT: the first stops starting calls (the run drains
  /// and ends), the second fails the calls in flight at once.
  void interrupt();

  /// The number of I/O threads (shards) a run of `options` uses.
  static unsigned threads_for(const BenchOptions& options) noexcept;

 private:
  void on_warm();
  void arm_progress();
  void print_progress();
  void on_shard_finished();
  void wait_signal();

  const BenchTarget target_;
  const BenchOptions options_;
  unsigned max_in_flight_ = 0;
  // Declared before the shards: it outlives them, and is stopped (run()) once
  // their threads have ended, before they are destroyed.
  timer::HashedWheelTimer timer_;
  std::vector<std::unique_ptr<BenchShard>> shards_;
  std::optional<boost::asio::signal_set> signals_;  ///< on shard 0's io_context

  std::atomic<unsigned> warmed_{0};
  std::atomic<unsigned> finished_{0};
  std::atomic<unsigned> interrupts_{0};
  Clock::time_point t0_{};  ///< written by the barrier's last shard, read after the threads joined

  std::ostream* err_ = nullptr;  ///< set by run(); written to on shard 0's thread only

  // Shard 0's thread only.
  Clock::time_point progress_t0_{};
  timer::Timeout progress_;
  bool all_finished_ = false;
  std::uint64_t last_completed_ = 0;
  Clock::time_point last_progress_{};
};

}  // namespace wheelrpc::wheelctl
