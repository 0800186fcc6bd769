#pragma once
/// Where a Client's providers come from: a fixed list, host names resolved
/// asynchronously (and again periodically and after failed connects), or a
/// registry subscription (wheelrpc::registry). A source reports full sets,
/// never diffs; the client adds channels for new providers and drains and
/// closes the ones that left.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/timer/timer.h>

namespace wheelrpc::rpc {

/// One provider as a source describes it: where it is, and what its
/// registry record says of it (a source without records reports only the
/// endpoint, at the default weight).
struct ProviderInfo {
  ProviderInfo() = default;
  ProviderInfo(boost::asio::ip::tcp::endpoint e) : endpoint(std::move(e)) {}  // NOLINT: a bare endpoint is a provider
  boost::asio::ip::tcp::endpoint endpoint;
  /// Relative weight, 0..10000 (default 100): the balancers send it calls in
  /// proportion; 0 sends it none (it drains without an error). A runtime
  /// rule (CallRules::weights) beats it.
  std::uint32_t weight = 100;
  std::string zone;                         ///< free-form, may be empty
  std::map<std::string, std::string> tags;  ///< free-form
  /// Changes when the provider registers anew (the registry's: the etcd
  /// create revision of its key); 0 when the source does not know. A
  /// provider reported with a new epoch, or reported again after it left,
  /// has its reconnect backoff reset: the next call connects at once.
  std::uint64_t epoch = 0;
  friend bool operator==(const ProviderInfo&, const ProviderInfo&) = default;
};

/// A source of provider sets for a Client.
///
/// @par Thread Safety
/// `start`, `stop` and `connect_failed` may be called from any thread. The
/// listener may be called from any thread (never the timer's worker), but
/// never concurrently with itself.
class ProviderSource {
 public:
  /// One report: with no error, the full current set (possibly empty: every
  /// provider left); with an error, why the source could not produce a set
  /// now (`endpoints` empty): the client keeps the set it has, and a client
  /// that has never had one fails calls that do not wait for ready with
  /// errc::unavailable naming `why`.
  using Listener = std::function<void(boost::system::error_code ec,
                                      std::vector<boost::asio::ip::tcp::endpoint> endpoints, std::string why)>;

  virtual ~ProviderSource() = default;

  /// As Listener, with what the source knows of each provider.
  using InfoListener =
      std::function<void(boost::system::error_code ec, std::vector<ProviderInfo> providers, std::string why)>;

  /// Starts reporting to `listener`, at once or later. Called once (or
  /// start_with_info instead).
  virtual void start(Listener listener) = 0;
  /// Starts reporting with each provider's description; the Client calls
  /// this. The default reports start()'s endpoints at the default weight; a
  /// source that knows weights, zones or tags (the registry's) overrides it.
  virtual void start_with_info(InfoListener listener);
  /// Stops reporting; the listener may still run once if a report was under
  /// way. Idempotent.
  virtual void stop() = 0;
  /// A hint from the client: connecting to `endpoint` failed. A source that
  /// resolves names re-resolves soon (rate-limited), so a provider that came
  /// back on a new address is found. Default: nothing.
  virtual void connect_failed(const boost::asio::ip::tcp::endpoint& endpoint) { (void)endpoint; }
  /// What messages name when there is no provider: "127.0.0.1:7001",
  /// "dns:example.com:80", "etcd service 'echo'".
  virtual std::string describe() const = 0;
  /// What messages say when the source reported an empty set: "service 'echo'
  /// has no providers registered in etcd at 127.0.0.1:2379". Default:
  /// "<describe()> has no providers".
  virtual std::string why_empty() const { return describe() + " has no providers"; }
};

/// A fixed set: reported once, at start.
std::shared_ptr<ProviderSource> static_providers(std::vector<boost::asio::ip::tcp::endpoint> endpoints);

/// Options of resolved_providers.
struct ResolveOptions {
  /// Names are resolved again this often (on the shared timer). Default 30 s; > 0.
  std::chrono::milliseconds refresh{30000};
  /// After a failed connect, a name is re-resolved, but not more often than
  /// this. Default 1 s; > 0.
  std::chrono::milliseconds min_interval{1000};
};

/// Host names resolved asynchronously on `ex`: each of `targets` is
/// "host:port" ("[v6]:port" for an IPv6 literal); a name that resolves to
/// several addresses gives several providers. The set is the union over all
/// targets. A target that fails to resolve keeps its last addresses (a
/// transient DNS failure never empties the set); if none has ever resolved,
/// the listener gets the error. Throws std::invalid_argument for an empty
/// list or a target without a valid port.
std::shared_ptr<ProviderSource> resolved_providers(boost::asio::any_io_executor ex, timer::Timer& timer,
                                                   std::vector<std::string> targets, ResolveOptions options = {});

}  // namespace wheelrpc::rpc
