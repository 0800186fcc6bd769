#pragma once
// A server's maximum connection age (gRPC's MAX_CONNECTION_AGE and
// MAX_CONNECTION_AGE_GRACE): how old each connection may grow, and the
// steps of its retirement. The wheel's task (ConnectionAgeTask, in
// server_age.cc) only decides that a step is due and posts it to the
// server's executor, where ServerCore::on_age_step asks the connection's
// wire to retire (ServerTransport::retire, posted to its strand) and, once
// the grace has run out, closes it.

#include <atomic>
#include <chrono>
#include <cstdint>

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc {
struct ServerStats;
}  // namespace wheelrpc::rpc

namespace wheelrpc::rpc::detail {

/// The steps of one connection's retirement, each a timeout on the wheel.
enum class AgeStep : std::uint8_t {
  age,    ///< the connection reached its (jittered) age: its drain begins
  check,  ///< while it drains: its wire checks again whether it may close
  grace,  ///< the grace ran out: the connection closes, calls in flight or not
};

/// The policy of ServerKeepaliveOptions::max_connection_age and
/// max_connection_age_grace: each connection's age, drawn with +- 10 %
/// jitter (so the connections accepted together do not all reconnect
/// together), and the counts of retirements. Thread-safe: every member
/// function may be called from any thread.
class ConnectionAge {
 public:
  /// How often a draining connection's wire checks again whether nothing is
  /// open on it any more (the native wire closes then; gRPC's closes itself).
  static constexpr std::chrono::milliseconds kCheckInterval{20};

  explicit ConnectionAge(const ServerKeepaliveOptions& options);

  /// Whether connections have a maximum age at all (max_connection_age > 0).
  bool enabled() const noexcept { return age_.count() > 0; }
  std::chrono::milliseconds age() const noexcept { return age_; }
  std::chrono::milliseconds grace() const noexcept { return grace_; }

  /// `age` with the jitter `unit` stands for: `unit` in [0, 1) maps to
  /// [0.9, 1.1) x `age`, never below 1 ms. Pure.
  static std::chrono::milliseconds jittered(std::chrono::milliseconds age, double unit) noexcept;
  /// The age of a connection accepted now: jittered(age(), a fresh random unit).
  std::chrono::milliseconds draw() noexcept;

  /// A connection reached its age (its drain began); its grace ran out with
  /// a call or stream still open (it was closed).
  void count_aged() noexcept { aged_.fetch_add(1, std::memory_order_relaxed); }
  void count_grace_close() noexcept { grace_closes_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t aged() const noexcept { return aged_.load(std::memory_order_relaxed); }
  std::uint64_t grace_closes() const noexcept { return grace_closes_.load(std::memory_order_relaxed); }
  /// Sets ServerStats::aged_connections and age_grace_closes.
  void add_stats(ServerStats& s) const noexcept;

 private:
  const std::chrono::milliseconds age_;
  const std::chrono::milliseconds grace_;
  std::atomic<std::uint64_t> seed_;  // splitmix64's state: lock-free draws from any thread
  std::atomic<std::uint64_t> aged_{0}, grace_closes_{0};
};

}  // namespace wheelrpc::rpc::detail
