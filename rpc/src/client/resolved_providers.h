#pragma once
// ResolvedProviders: the ProviderSource behind rpc::resolved_providers(), with
// a seam so tests can stand in for DNS.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/timer/timer.h>

#include <wheelrpc/common/work_gate.h>

namespace wheelrpc::rpc::detail {

/// One parsed target: "host:port" or "[v6]:port".
struct ResolveTarget {
  std::string host;  ///< without brackets
  std::string port;  ///< decimal, 1..65535
  std::string text;  ///< as given, for describe() and messages
};

/// Parses `text`. Throws std::invalid_argument naming `text` when the port is
/// missing or not in 1..65535, or the host is empty.
ResolveTarget parse_resolve_target(const std::string& text);

/// Completion of one resolution: error_code first; the addresses found.
using ResolveDone =
    std::function<void(boost::system::error_code ec, std::vector<boost::asio::ip::tcp::endpoint> endpoints)>;
/// Resolves `host` and `port`; calls `done` exactly once, from any thread
/// (inline too). Called on the source's strand. Test seam: the default (empty)
/// uses an asio tcp::resolver.
using ResolveFunction = std::function<void(std::string host, std::string port, ResolveDone done)>;

/// As rpc::resolved_providers(), resolving through `resolve` (empty: the asio
/// resolver on `ex`).
std::shared_ptr<ProviderSource> resolved_providers(boost::asio::any_io_executor ex, timer::Timer& timer,
                                                   std::vector<std::string> targets, ResolveOptions options,
                                                   ResolveFunction resolve);

/// Resolves every target in rounds: at start, every `refresh` after the last
/// round ended, and after connect_failed() hints, at most one round started
/// per `min_interval` (a hint inside the interval starts one round at its
/// end). Both intervals run on the shared timer, whose task only posts.
///
/// @par Thread Safety
/// The ProviderSource methods are safe from any thread. Everything else runs
/// on a strand of the executor, where the listener is called (never
/// concurrently with itself, never on the timer's worker).
class ResolvedProviders final : public ProviderSource, public std::enable_shared_from_this<ResolvedProviders> {
 public:
  ResolvedProviders(boost::asio::any_io_executor ex, timer::Timer& timer, std::vector<ResolveTarget> targets,
                    ResolveOptions options, ResolveFunction resolve);

  void start(Listener listener) override;
  void stop() override;
  void connect_failed(const boost::asio::ip::tcp::endpoint& endpoint) override;
  std::string describe() const override { return description_; }

 private:
  using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
  /// What a target last gave; `resolved` once it ever succeeded.
  struct TargetState {
    ResolveTarget target;
    bool resolved = false;
    Endpoints endpoints;  // the last successful answer, sorted, unique
    boost::system::error_code last_ec;
    std::string last_error;
  };
  /// Which timeout a timer task belongs to.
  enum class Wake { refresh, quiet_end };

  // All on strand_:
  void start_round();
  void on_resolved(std::uint64_t round, std::size_t index, boost::system::error_code ec, Endpoints endpoints);
  void finish_round();
  void on_hint();
  void on_wake(Wake which, std::uint64_t generation);
  void report(boost::system::error_code ec, Endpoints endpoints, std::string why);
  /// Schedules `which` after `delay` on the timer, replacing any pending one.
  /// Takes mu_; does nothing after stop().
  void schedule(Wake which, std::chrono::milliseconds delay);
  bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  timer::Timer& timer_;
  const ResolveOptions options_;
  const ResolveFunction resolve_;
  const std::string description_;
  std::atomic<bool> stopped_{false};
  common::WorkGate gate_;  // stop() waits for a timer task posting right then
  Listener listener_;      // set by start(), read on strand_ after

  // Guarded by mu_ (stop() cancels them from any thread; the timer must not be
  // touched once stop() returned):
  common::Mutex mu_;
  timer::Timeout refresh_timeout_ WHEELRPC_GUARDED_BY(mu_);
  timer::Timeout quiet_timeout_ WHEELRPC_GUARDED_BY(mu_);
  std::uint64_t refresh_gen_ WHEELRPC_GUARDED_BY(mu_) = 0;  // a stale timeout's task finds a newer generation
  std::uint64_t quiet_gen_ WHEELRPC_GUARDED_BY(mu_) = 0;

  // On strand_ only:
  std::optional<boost::asio::ip::tcp::resolver> resolver_;  // when resolve_ is empty; reset at stop
  std::vector<TargetState> targets_;
  std::uint64_t round_ = 0;      // the current (or last) round
  std::size_t outstanding_ = 0;  // resolutions of the current round not yet done
  bool quiet_ = false;           // within min_interval of the last round's start
  bool hint_pending_ = false;    // a hint arrived while a round ran or during quiet_
  bool reported_ = false;        // the listener was called at least once
  bool last_was_error_ = false;
  Endpoints last_endpoints_;
  std::string last_why_;
};

}  // namespace wheelrpc::rpc::detail
