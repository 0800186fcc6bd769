#pragma once
/// Client: calls methods on one or more servers; every call has a deadline on
/// the shared HashedWheelTimer and completes exactly once.

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/detail/throwing_handler.h>
#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/rpc/response.h>
#include <wheelrpc/timer/timer.h>

namespace wheelrpc::rpc {

namespace detail {
class ClientCore;
}

/// Counters of one client (monotonic).
struct ClientStats {
  std::uint64_t calls = 0;         ///< async_call invocations
  std::uint64_t ok = 0;            ///< calls that completed with a reply
  std::uint64_t failed = 0;        ///< calls that completed with an error (timeouts included)
  std::uint64_t timeouts = 0;      ///< of which errc::timeout
  std::uint64_t late_replies = 0;  ///< replies dropped for arriving after their call's deadline (after it
                                   ///< completed, or before its deadline's timer ran: then it times out)
  std::uint64_t connects = 0;      ///< connections established (HELLO done)
  std::uint64_t connect_failures = 0;
  std::uint64_t pending = 0;             ///< calls in flight now
  std::uint64_t attempts = 0;            ///< attempts started (first attempts, retries and hedges): those
                                         ///< sent to a provider (ProviderStats::attempts) plus attempts_unplaced
  std::uint64_t attempts_unplaced = 0;   ///< attempts that found no provider to go to (none known, or every one
                                         ///< in backoff) and failed at once with errc::unavailable
  std::uint64_t retries = 0;             ///< retries started after a failed attempt
  std::uint64_t hedges = 0;              ///< hedged attempts started while another was in flight
  std::uint64_t budget_refusals = 0;     ///< retries and hedges the retry budget refused
  std::uint64_t attempts_cancelled = 0;  ///< attempts abandoned in flight: a hedge won, the call completed
  std::uint64_t attempt_timeouts =
      0;  ///< attempts of idempotent calls that timed out and were retried or ended the call
  std::uint64_t failback_pending = 0;    ///< send_failback deliveries waiting for a retry now
  std::uint64_t failback_delivered = 0;  ///< send_failback calls that got a reply
  std::uint64_t failback_retries = 0;    ///< retry tasks that ran
  std::uint64_t failback_given_up = 0;   ///< deliveries abandoned: out of retries, or an error retrying cannot fix
  std::uint64_t failback_dropped = 0;    ///< failures not retried because max_pending retry tasks were waiting
  std::uint64_t heartbeats_sent = 0;     ///< heartbeats sent on idle connections (HeartbeatTimerTask)
  std::uint64_t idle_closes = 0;         ///< connections closed for reading nothing for the idle timeout
  std::uint64_t provider_sets = 0;       ///< provider sets applied (the first one included)
  std::uint64_t providers_added = 0;     ///< providers that joined the set (the first ones included)
  std::uint64_t providers_removed = 0;   ///< providers that left the set
  std::uint64_t empty_sets_ignored = 0;  ///< empty sets not applied (ClientOptions::empty_protection)
  std::uint64_t rule_updates = 0;        ///< rule sets put in force (ClientOptions::rules)
  std::uint64_t rule_errors = 0;         ///< failed reports of the rule source (the last good rules stood)
  std::uint64_t ejections = 0;           ///< providers ejected by outlier detection (re-ejections included)
  std::uint64_t ejected_now = 0;         ///< providers ejected or on probation now
  std::uint64_t load_reports = 0;        ///< load reports (ORCA) read from replies
  StreamStats streams;                   ///< streams opened, open, messages, ends by cause
};

/// One provider (server) of a client, as `Client::providers()` reports it.
struct ProviderStats {
  std::string peer;                    ///< "ip:port"
  bool ready = false;                  ///< its connection is ready for calls
  std::uint64_t active = 0;            ///< attempts in flight on it now
  std::uint64_t attempts = 0;          ///< attempts sent to it so far
  std::uint64_t failures = 0;          ///< of which failed (errors, lost, timed out, not sent)
  std::string last_error;              ///< why the last connect attempt failed; "" once connected
  bool removed = false;                ///< it left the provider set (its calls in flight may still be draining)
  std::uint64_t ok = 0;                ///< attempts answered with a reply (not an error status)
  std::uint64_t cancelled = 0;         ///< attempts abandoned in flight (another attempt won, or the call completed)
  std::uint64_t connect_attempts = 0;  ///< connect attempts made to it (the first one included)
  std::uint32_t weight = 100;          ///< its load-balancing weight now, 0..10000 (0: takes no new calls)
  /// Where `weight` comes from: "registry" (its provider source's record),
  /// "rule <origin>" (a runtime rule, CallRules::weights), "default"; "" once it left.
  std::string weight_from{};
  /// Outlier detection (ClientOptions::outlier_detection): "" (not ejected),
  /// "ejected" or "probation"; why it was ejected last ("failed 31 of 100
  /// attempts (31 %), its peers' median 0 %"); how long until its ejection
  /// ends (ms; -1 when not ejected); how often it was ejected so far.
  std::string ejection{};
  std::string ejected_why{};
  std::int64_t ejected_for_ms = -1;
  std::uint64_t ejections = 0;
  /// Load-aware balancing (LoadBalance::load_aware): the share of its weight
  /// it gets now, 1..1000 (per mille; 1000 = full), from its load reports
  /// and the client's latency to it; its last load report's utilization
  /// (0..1; -1: none) and the mean latency the client saw (us; 0: none).
  std::uint32_t load_factor = 1000;
  double reported_utilization = -1;
  std::uint64_t mean_latency_us = 0;
};

/// What a client's provider source has told it so far (`Client::source_state()`):
/// enough to tell "still waiting for the source" from "the source answered and
/// there is nothing to call", which a caller may want to know at once instead
/// of waiting for a connection that cannot come.
struct SourceState {
  std::string source;         ///< ProviderSource::describe(): "127.0.0.1:7001", "dns:h:80", "etcd service 'echo'"
  bool reported = false;      ///< the source reported a set (possibly empty)
  std::size_t providers = 0;  ///< providers in the current set
  /// Why there is no provider to call, when that is known: the source's error
  /// while it has never reported a set ("host name 'x' does not resolve: ...",
  /// "etcd at 127.0.0.1:2379 refused the connection"), or, for a reported
  /// empty set, ProviderSource::why_empty(). "" otherwise.
  std::string error;
};

/// A client of one or more servers ("providers"): each has its own connection,
/// kept alive and reconnected by the client's HeartbeatTimerTask and
/// ReconnectTimerTask. Each attempt of a call goes to a provider with a ready
/// connection, chosen by ClientOptions::load_balance; a failed attempt is
/// retried on another provider within the call's deadline (see
/// CallOptions::retries). Connects lazily, on the first call (or `connect()`).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe; every method may be called
/// from any thread, and calls on different connections share no lock.
/// Completion handlers run on their associated executor (by default the
/// client's): inline on the I/O thread that read the reply, posted otherwise.
/// The shared timer's worker never runs client work: a deadline, an attempt
/// timeout, a hedge or the end of a retry backoff only posts to the executor.
/// The client holds outstanding work on its executor until `close()`, so the
/// io_context's `run()` does not return before.
///
/// Shutdown order: close clients and stop servers, then stop the threads that
/// run the executor, then destroy the timer: the timer must outlive every
/// handler that may still run on the executor.
///
/// @par Example
/// @code
/// wheelrpc::rpc::Client client(io.get_executor(), timer, {server_endpoint});
/// wheelrpc::rpc::CallOptions opts;
/// opts.timeout = std::chrono::milliseconds(200);
/// auto reply = co_await client.async_call("echo", "hi", opts, boost::asio::use_awaitable);
/// @endcode
class Client {
 public:
  using executor_type = boost::asio::any_io_executor;
  /// Completion signature of a call: an error (empty on success) and the response.
  using Signature = void(boost::system::error_code, Response);

  /// `servers`: at least one endpoint; throws std::invalid_argument otherwise.
  Client(executor_type ex, timer::Timer& timer, std::vector<boost::asio::ip::tcp::endpoint> servers,
         ClientOptions options = {});
  /// Follows `source` (not null): host names (rpc::resolved_providers), a
  /// registry subscription (wheelrpc::registry::provider_source), or your
  /// own. Each set it reports replaces the providers: new ones get a
  /// connection with its own heartbeat and reconnect tasks (connected at
  /// once if the client is in use), ones that left get no new attempts and
  /// are closed once their calls in flight are done (ClientOptions::
  /// removal_grace at most); an empty set is ignored under ClientOptions::
  /// empty_protection. Until the first set arrives, calls wait as for a
  /// connection being made (a source that fails first fails the calls that
  /// do not wait for ready). The source is started here and stopped by close().
  Client(executor_type ex, timer::Timer& timer, std::shared_ptr<ProviderSource> source, ClientOptions options = {});
  /// Closes the client (see `close()`).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Calls `method` with `payload`. Completes exactly once, with:
  /// - success and the reply;
  /// - errc::timeout when the deadline (options.timeout) passes first; the
  ///   message names the phase (not sent / sent and waiting), elapsed time,
  ///   server and method; a reply arriving later is counted and dropped;
  /// - errc::server_timeout, method_not_found, bad_request, server_error from
  ///   the server;
  /// - errc::bad_request at once, nothing sent, for invalid CallOptions or a
  ///   body over ChannelOptions::max_body (the message names which);
  /// - errc::connection_lost when the connection closed with the call sent;
  ///   (retried on another provider first, up to CallOptions::retries: the
  ///   error is that of the last attempt, and the message counts attempts);
  /// - errc::unavailable when no connection could be made: at once when every
  ///   provider is in backoff after a failed connect (CallOptions::
  ///   wait_for_ready off, the default), else at the deadline;
  ///   errc::too_many_pending at the client's limit,
  ///   errc::cancelled when the client is closed first;
  /// - boost::asio::error::operation_aborted when cancelled through the token's
  ///   cancellation slot (any cancellation type), which frees the call at once.
  /// Works with any completion token: callbacks, use_future, use_awaitable,
  /// as_tuple(...), deferred. The handler is never invoked from inside async_call.
  /// With `use_awaitable` and `use_future` a failure throws CallError, whose
  /// what() is the full message; `as_tuple(use_awaitable)` gives
  /// (error_code, Response) instead.
  template <class Token>
  auto async_call(std::string method, std::string payload, CallOptions options, Token&& token) {
    if constexpr (detail::throws_on_error<std::decay_t<Token>>::value) {
      return boost::asio::async_initiate<Token, void(std::exception_ptr, Response)>(
          [this](auto handler, std::string m, std::string p, CallOptions o) {
            start_call(std::move(m), std::move(p), std::move(o),
                       boost::asio::any_completion_handler<Signature>(
                           detail::ThrowingHandler<decltype(handler)>{std::move(handler)}));
          },
          token, std::move(method), std::move(payload), std::move(options));
    } else {
      return boost::asio::async_initiate<Token, Signature>(
          [this](auto handler, std::string m, std::string p, CallOptions o) {
            start_call(std::move(m), std::move(p), std::move(o),
                       boost::asio::any_completion_handler<Signature>(std::move(handler)));
          },
          token, std::move(method), std::move(payload), std::move(options));
    }
  }

  /// Completion signature of async_open_stream.
  using StreamSignature = void(boost::system::error_code, ClientStream);
  /// Opens a stream to `method` (docs/streams.md): a provider is picked as
  /// for a call (load balancing, wait_for_ready, the registry, empty
  /// protection) and the stream stays on it. Opening is bounded by
  /// options.timeout (or stream_timeout / first_message_timeout when
  /// sooner); a refusal before anything was delivered (the provider
  /// overloaded, shutting down, its connection lost) is retried on another
  /// provider as a call is, up to options.retries; never hedged. Completes
  /// once the server accepted it, with the stream; or with the error and a
  /// ClientStream whose error_message() says why (use_awaitable and
  /// use_future throw CallError): StatusCode::unimplemented for a server
  /// without streams, errc::method_not_found, errc::resource_exhausted at
  /// its stream limit, errc::timeout, errc::first_message_timeout, ...
  template <class Token>
  auto async_open_stream(std::string method, CallOptions options, Token&& token) {
    auto stream = make_stream(method, options);
    return detail::initiate_stream_op<StreamSignature>(
        stream, std::forward<Token>(token),
        [this, stream, m = std::move(method),
         o = std::move(options)](boost::asio::any_completion_handler<StreamSignature> h) mutable {
          start_stream(std::move(stream), std::move(m), std::move(o), std::move(h));
        });
  }
  /// Blocking convenience: waits for the call and returns the response; throws
  /// CallError on failure. Called from a thread that runs the client's
  /// executor it would wait for itself (the reply and the deadline both need
  /// that thread): it throws CallError(errc::bad_request) at once instead,
  /// nothing sent. Use async_call there.
  Response call(std::string method, std::string payload, CallOptions options = {});

  /// Fire-and-forget with delayed redelivery (Dubbo's failback): sends the call
  /// now; if it fails with an error a later try may fix (unavailable,
  /// connection lost, timeout, server_timeout, overloaded), a RetryTimerTask
  /// on the shared timer sends it again after ClientOptions::failback.interval,
  /// up to failback.retries times. At most failback.max_pending deliveries wait
  /// at once; beyond that a failure is dropped. Outcomes are counted in
  /// `stats()` (failback_*) and logged (logger "wheelrpc.rpc"). The reply, if
  /// any, is discarded. close() cancels the waiting retries.
  void send_failback(std::string method, std::string payload, CallOptions options = {});

  /// Starts connecting to every provider now, instead of on the first call.
  /// Returns at once.
  void connect();

  /// Per provider of the current set, in the order given to the constructor
  /// (or reported by the source), then the providers that left the set
  /// (`removed`): those still draining, then those closed (their counters
  /// only; the 1024 that left last). A provider that joins again goes on
  /// counting from where it was.
  std::vector<ProviderStats> providers() const;
  /// What the provider source has reported so far (a fixed list: reported at
  /// construction). Thread-safe.
  SourceState source_state() const;

  /// Fails every pending call with errc::cancelled, cancels waiting failback
  /// deliveries and the channel timer tasks, closes the connections and
  /// releases the executor. Returns once none of the client's callbacks is
  /// still running on the timer's worker, so nothing of the client's posts to
  /// the executor afterwards. Later calls fail with errc::cancelled.
  /// Idempotent. Must not be called from inside a timer task.
  void close();

  ClientStats stats() const;
  /// Per method called so far (in the order first called): calls by
  /// outcome, latency histograms (call start to completion), calls in
  /// flight. Empty with ClientOptions::metrics off. Any thread.
  std::vector<MethodStats> method_stats() const;
  /// The last 256 calls that ended in errc::timeout or server_timeout,
  /// newest first: phase, budget, elapsed, attempts, provider, trace id.
  /// Any thread.
  std::vector<TimeoutRecord> recent_timeouts() const;
  /// One row per provider connection (the current set, then the providers
  /// that left and still drain). Any thread.
  std::vector<ConnectionInfo> connections() const;
  /// Which value of each policy setting a call to `method` that sets none
  /// itself gets now, and from which layer: the rules in force (a forced or
  /// plain override, with its etcd key and revision), the IDL (known once the
  /// method was called through a typed stub), ClientOptions::call_defaults,
  /// the built-in default. Any thread.
  MethodExplanation explain(std::string_view method) const;
  executor_type get_executor() const noexcept;

 private:
  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Signature> handler);
  std::shared_ptr<detail::StreamCore> make_stream(const std::string& method, CallOptions& options);
  void start_stream(std::shared_ptr<detail::StreamCore> stream, std::string method, CallOptions options,
                    boost::asio::any_completion_handler<StreamSignature> handler);

  std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace wheelrpc::rpc
