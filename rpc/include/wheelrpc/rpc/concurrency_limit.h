#pragma once
/// ConcurrencyLimit: how many requests a Server processes at once
/// (ServerOptions::overload.max_concurrency).

#include <chrono>
#include <cstddef>

namespace wheelrpc::rpc {

/// The settings of an adaptive (gradient) concurrency limit: see
/// ConcurrencyLimit::automatic().
struct AutoLimitOptions {
  /// The limit before the first measurement. Default 16; within
  /// [min_limit, max_limit].
  std::size_t initial_limit = 16;
  /// The limit never goes below this (requests). Default 2; >= 1.
  std::size_t min_limit = 2;
  /// The limit never goes above this (requests). Default 1000.
  std::size_t max_limit = 1000;
  /// How far the average latency of a window may rise above the no-load
  /// latency before the limit shrinks: the limit shrinks by the ratio
  /// `tolerance * no_load / average` (at most by half a window) once that is
  /// below 1, and grows by about its square root a window while it is not.
  /// Default 2.0 (brpc's auto limiter uses 1 + alpha with alpha 0.3..1);
  /// >= 1.
  double tolerance = 2.0;
  /// Queueing that never reads as congestion: the latency the limit aims
  /// under is `tolerance * no_load + latency_allowance`. Without it, the
  /// scheduling noise of a busy machine (a time slice is a few ms) would look
  /// like a backlog to a fast method and hold its limit at a handful of
  /// requests, refusing bursts it could serve well within any deadline.
  /// Default 2 ms; >= 0.
  std::chrono::nanoseconds latency_allowance = std::chrono::milliseconds(2);
  /// A window of samples ends once it is this long and holds `min_samples`,
  /// or at `max_samples`; then the limit is recomputed. Defaults 100 ms, 20,
  /// 500.
  std::chrono::nanoseconds window = std::chrono::milliseconds(100);
  std::size_t min_samples = 20;
  std::size_t max_samples = 500;
  /// How often the no-load latency is measured again: the limit is halved
  /// for one window, so the queue drains and the latency measured in it is
  /// the no-load one again (it may have risen, e.g. after a deploy; it only
  /// ever falls otherwise). Default 5 s; 0 = never.
  std::chrono::nanoseconds probe_interval = std::chrono::seconds(5);
};

/// A server-wide bound on the requests processed at once (read, admitted and
/// not yet answered, queued for the handler executor included). A request
/// beyond it is answered at once, unprocessed, with Status::overloaded: the
/// caller sees errc::resource_exhausted, which clients retry on another
/// provider. A value type; cheap to copy.
///
/// @par Example
/// @code
/// ServerOptions o;
/// o.overload.max_concurrency = ConcurrencyLimit::automatic();  // brpc's "auto"
/// o.overload.max_concurrency = ConcurrencyLimit::fixed(64);     // Dubbo's executes, server-wide
/// @endcode
class ConcurrencyLimit {
 public:
  enum class Kind { none, fixed, automatic };

  /// No limit (the default).
  ConcurrencyLimit() = default;
  static ConcurrencyLimit none() noexcept { return {}; }
  /// At most `n` (>= 1) requests at once.
  static ConcurrencyLimit fixed(std::size_t n) noexcept {
    ConcurrencyLimit l;
    l.kind_ = Kind::fixed;
    l.fixed_ = n;
    return l;
  }
  /// An adaptive limit in the spirit of brpc's auto concurrency limiter and
  /// Netflix's gradient2: driven by the latency of each request from its
  /// receipt to its reply (queueing included), it grows while that stays
  /// near the no-load latency and shrinks when it rises. It needs a place
  /// where requests can queue to see a backlog: use it with
  /// ServerOptions::handler_executor.
  static ConcurrencyLimit automatic(AutoLimitOptions options = {}) noexcept {
    ConcurrencyLimit l;
    l.kind_ = Kind::automatic;
    l.auto_ = options;
    return l;
  }

  Kind kind() const noexcept { return kind_; }
  /// The bound of a fixed limit (0 otherwise).
  std::size_t fixed_limit() const noexcept { return kind_ == Kind::fixed ? fixed_ : 0; }
  const AutoLimitOptions& auto_options() const noexcept { return auto_; }

 private:
  Kind kind_ = Kind::none;
  std::size_t fixed_ = 0;
  AutoLimitOptions auto_;
};

}  // namespace wheelrpc::rpc
