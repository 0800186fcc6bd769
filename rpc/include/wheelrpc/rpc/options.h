#pragma once
/// Options of calls, clients and servers. Every field states its meaning, unit,
/// default and who may override it.

#include <chrono>
#include <memory>
#include <cstddef>
#include <optional>
#include <string_view>

#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/rpc/backoff.h>
#include <wheelrpc/rpc/concurrency_limit.h>
#include <wheelrpc/rpc/announcer.h>
#include <wheelrpc/rpc/setting.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/channel_options.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>
#include <wheelrpc/transport/tls.h>

namespace wheelrpc::rpc {

class ClientInterceptor;
class ServerInterceptor;

/// What a typed call's completion does not carry: CallOptions::reply_info.
struct ReplyInfo {
  transport::Attachments metadata;  ///< the reply's initial metadata (Response::attachments)
  transport::Attachments trailers;  ///< the reply's trailing metadata (Response::trailers)
  bool compressed = false;          ///< the reply's payload came compressed (Response::compressed)
  std::string error_message;        ///< the full error text on failure (Response::error_message)
};

/// Per call; passed to every `Client::async_call`. The policy fields
/// (timeout, wait_for_ready, retries, idempotent, attempt_timeout,
/// hedge_delay) are Settings: one a call leaves alone takes the typed
/// method's IDL option (`wheelrpc.method`), then ClientOptions::
/// call_defaults, then the default stated here (docs/timeouts.md,
/// "Precedence").
struct CallOptions {
  /// `timeout` value for a call without a deadline: it is neither scheduled on
  /// the timer nor bounded on the server, and ends only with a reply, a lost
  /// connection or a cancellation. Meant for measuring what deadlines cost and
  /// for the rare call that must not time out; prefer a generous timeout.
  static constexpr std::chrono::milliseconds kNoDeadline = std::chrono::milliseconds::max();

  /// The call's whole budget, from `async_call` to completion: the deadline is
  /// now + timeout, scheduled on the shared HashedWheelTimer, and travels to the
  /// server as the remaining budget. Default 1000 ms. Zero or negative: the call
  /// fails at once with errc::timeout, without being sent. kNoDeadline: none.
  /// Longer than 4294967295 ms (about 49.7 days, the wire's limit) otherwise:
  /// the call fails at once with errc::bad_request.
  Setting<std::chrono::milliseconds> timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(1000));

  /// What an attempt does when no provider's connection is ready (gRPC's
  /// semantics):
  /// - false (default): it waits while a provider's connection is being made
  ///   (connecting, or about to: the first call starts the connects), but
  ///   fails at once with errc::unavailable, naming the connect errors, when
  ///   every provider is in backoff after a failed connect attempt; calls
  ///   already waiting fail the moment the last provider's attempt fails. An
  ///   unavailable attempt is retried like any other (after the retry backoff,
  ///   up to `retries`), so a call to servers that are all down ends within
  ///   a few tens of milliseconds, not at its deadline.
  /// - true: it waits for a ready connection (through reconnect attempts)
  ///   until the deadline; if none could be made by then the call fails with
  ///   errc::unavailable naming the last connect error, otherwise with
  ///   errc::timeout ("not sent").
  /// Either way an attempt goes to a ready provider at once when there is one.
  Setting<bool> wait_for_ready = Setting<bool>::by_default(false);

  /// Sent with the request; the handler sees them in `Request::attachments`.
  /// Keys at most 255 bytes. Default none.
  transport::Attachments attachments;

  /// Further attempts after a failed one (Dubbo's failover): default 2, i.e. up
  /// to 3 attempts, each on another ready provider than the one that just
  /// failed when there is one. 0 .. kMaxRetries; more fails the call at once
  /// with errc::bad_request. Retried: connection failures, calls never sent or
  /// refused unprocessed (unavailable, overloaded). Timeouts and server_timeout
  /// only when `idempotent`. Application errors (method_not_found, bad_request,
  /// server_error) never. Every attempt fits inside the one deadline, and
  /// retries are subject to the client's retry budget (ClientOptions::retry).
  Setting<int> retries = Setting<int>::by_default(2);
  static constexpr int kMaxRetries = 16;

  /// The call may safely run more than once (a read, or a write the server
  /// deduplicates): its timeouts may be retried, and it may be hedged.
  /// Default false.
  Setting<bool> idempotent = Setting<bool>::by_default(false);

  /// Idempotent calls only: how long one attempt may wait for its reply before
  /// it is abandoned and retried (the server is told this budget, so it gives
  /// up too). 0 (default) = the remaining budget split evenly over the
  /// attempts left; otherwise at most the remaining budget. The last attempt
  /// always gets all that is left. Ignored for calls that are not idempotent
  /// and for hedged calls (every attempt of those runs until the deadline).
  Setting<std::chrono::milliseconds> attempt_timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));

  /// Hedging (brpc's backup request), idempotent calls only: if no reply has
  /// come this long after the last attempt started, another attempt starts on
  /// another provider while the first keeps running, up to `retries` more;
  /// the first reply wins and the others are cancelled (their replies are
  /// dropped). Each hedge is paid from the retry budget. 0 (default) = off;
  /// set on a call that is not idempotent, the call fails at once with
  /// errc::bad_request.
  Setting<std::chrono::milliseconds> hedge_delay =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));

  /// Deadline propagation: when true (default) and the call starts while a
  /// request is being served on this thread (inside a Server handler, or in
  /// the completion of a call made from one, or under a DeadlineScope), the
  /// call's deadline is the earlier of its own and that request's. A call
  /// whose inherited deadline already passed fails at once with errc::timeout
  /// and is not sent.
  bool inherit_deadline = true;

  /// Streams (Client::async_open_stream; docs/streams.md). Each is a timer
  /// on the shared wheel; 0 (the default of all four) = off. Opening a
  /// stream (until the server accepts it: connect, wait for ready, retries,
  /// admission) is bounded by `timeout` above, or by either of the first two
  /// below when sooner; once open, only these apply.
  /// - stream_timeout: the whole stream's budget from its start, propagated
  ///   to the server as a unary deadline is (errc::timeout);
  /// - message_timeout: no message received for this long (errc::
  ///   message_timeout); not reset by connection heartbeats, off once the
  ///   server ended its side;
  /// - stall_timeout: a write has waited this long for the server's credit
  ///   (it stopped reading, or is frozen with full buffers: errc::write_stall);
  /// - first_message_timeout: no response headers, or no first message, this
  ///   long after the start (errc::first_message_timeout).
  Setting<std::chrono::milliseconds> stream_timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));
  Setting<std::chrono::milliseconds> message_timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));
  Setting<std::chrono::milliseconds> stall_timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));
  Setting<std::chrono::milliseconds> first_message_timeout =
      Setting<std::chrono::milliseconds>::by_default(std::chrono::milliseconds(0));

  /// Compression of what this call sends (docs/compression.md): the
  /// request's payload, or each message the client writes on a stream; the
  /// server answers in it too unless it is set to its own algorithm
  /// (ServerOptions::compression.reply). identity (default): none; zstd,
  /// lz4, gzip or deflate. A payload goes compressed only if the provider
  /// announced it decodes that algorithm (in its HELLO), it has at least
  /// ClientOptions::compression.threshold bytes, and it shrank; otherwise as
  /// it is. Settings with the timeouts' precedence (call > IDL > call_defaults).
  Setting<transport::Compression> compression =
      Setting<transport::Compression>::by_default(transport::Compression::identity);
  /// The level of `compression`: 0 (default) = the algorithm's own default
  /// (zstd 3, lz4's fast mode, zlib 6); otherwise clamped to its range
  /// (transport::compress).
  Setting<int> compression_level = Setting<int>::by_default(0);

  /// Typed calls (whose completion carries the reply message, not a
  /// Response): when set, the reply's metadata (the attachments the handler
  /// replied with) and, on failure, the call's full error message are stored
  /// here before the call completes. Untyped calls have both in Response and
  /// leave this alone. Default none.
  std::shared_ptr<ReplyInfo> reply_info;
};

/// Fills every policy Setting of `call` that was not given from `defaults`
/// (a given one there, or its default): what Client does with ClientOptions::
/// call_defaults. Attachments and the other fields are left as they are.
void fill_defaults(CallOptions& call, const CallOptions& defaults) noexcept;

/// How a client picks the provider for each attempt; providers whose
/// connection is not ready are always skipped.
enum class LoadBalance {
  round_robin,   ///< in turn (default)
  least_active,  ///< fewest attempts in flight; ties broken at random (Dubbo's LeastActive)
  power_of_two,  ///< two at random, the one with fewer attempts in flight (P2C)
  /// Weighted round robin by each provider's capacity, from its load reports
  /// (ServerOptions::load_reports, ORCA) blended with the client's own
  /// latency to it; docs/load_balancing.md.
  load_aware,
};
/// "round_robin", "least_active", "p2c", "load_aware".
const char* to_string(LoadBalance lb) noexcept;
/// Parses the names above ("power_of_two" too); std::nullopt otherwise.
std::optional<LoadBalance> parse_load_balance(std::string_view text) noexcept;

/// Retries of calls, per client.
struct RetryOptions {
  /// Delay before each retry of a call: `first` before the first retry, then
  /// `initial`, x `multiplier` per retry, at most `max`, each +- `jitter`. A
  /// retry that could not start before the call's deadline is not made: the
  /// call completes at once with its last error. Default 10 ms, then 20 ms x 2
  /// +- 20 %, at most 1 s.
  BackoffOptions backoff{std::chrono::milliseconds(10), std::chrono::milliseconds(20), 2.0, 0.2,
                         std::chrono::milliseconds(1000)};

  /// Retry budget (Finagle's and Envoy's): over the last `budget_window`,
  /// retries and hedges may number at most `budget_ratio` x the calls started
  /// plus `budget_min_per_second` x the window's seconds. Beyond it a call
  /// completes with its own error instead of retrying (counted in
  /// ClientStats::budget_refusals), so retries cannot multiply the load on a
  /// failing service. Defaults 0.2, 10 per second, 10 s. Ratio 0 .. 10;
  /// window 1 .. 600 s.
  double budget_ratio = 0.2;
  unsigned budget_min_per_second = 10;
  std::chrono::seconds budget_window{10};
};

/// Failback (Dubbo's FailbackClusterInvoker): `Client::send_failback`.
struct FailbackOptions {
  /// Delay between a failed delivery and its next try. Default 5000 ms; > 0.
  std::chrono::milliseconds interval{5000};
  /// Tries after the first, before giving up. Default 3.
  unsigned retries = 3;
  /// Most deliveries waiting for a retry at once; a failure beyond it is
  /// dropped (counted in ClientStats::failback_dropped and logged). Default 100.
  std::size_t max_pending = 100;
};

/// What one side compresses and decodes (docs/compression.md, "Limits").
struct CompressionOptions {
  /// Payloads (and stream messages) smaller than this many bytes go as they
  /// are, whatever the call asks: compressing them costs more than it saves.
  /// Default 1024; 0 = compress every non-empty payload.
  std::size_t threshold = 1024;
  /// The algorithms this side decodes, announced in its HELLO
  /// (`accept_encoding`); the peer never sends it another. Default all
  /// four; empty: this side takes nothing compressed.
  transport::CompressionSet accept = transport::CompressionSet::all();
  /// Largest ratio of a payload's decompressed size to its compressed size,
  /// once the output passes 1 MiB: a payload that inflates further fails
  /// with RESOURCE_EXHAUSTED naming this limit, as one past the body limit
  /// (ChannelOptions::max_body, the limit announced in the HELLO) does.
  /// Default 1024; 0 = only the body limit.
  std::uint32_t max_ratio = 1024;
};

/// Outlier ejection (docs/load_balancing.md): every `interval` the client
/// looks at what each provider did in it (its own attempts, no extra
/// traffic) and ejects the ones that fail or lag behind their peers. An
/// ejected provider gets no attempts while a provider that is not ejected can
/// take them; when its ejection ends it is on probation: one probe attempt at
/// a time, back to its full share after `probe_successes` good ones, ejected
/// again (for twice as long, at most `max_ejection_time`) after a bad one.
/// Every timer runs on the client's HashedWheelTimer. Zero turns a check off.
struct OutlierDetectionOptions {
  /// Off by default.
  bool enabled = false;
  /// How often the providers are judged. Default 1 s; > 0.
  std::chrono::milliseconds interval{1000};
  /// The first ejection's length; each ejection in a row doubles it, up to
  /// `max_ejection_time`. Defaults 30 s and 300 s.
  std::chrono::milliseconds base_ejection_time{30000};
  std::chrono::milliseconds max_ejection_time{300000};
  /// At most this share of the providers (rounded down) is ejected at once.
  /// Default 50; 0..100.
  unsigned max_ejection_percent = 50;
  /// Ejected after this many failed attempts in a row (at once, not at the
  /// interval's end). Default 5; 0 = off.
  unsigned consecutive_failures = 5;
  /// Ejected when at least this percentage of its attempts in an interval
  /// failed, whatever its peers do. Default 50; 0 = off; 1..100.
  unsigned failure_percentage = 50;
  /// Ejected when its failure rate in an interval is at least
  /// `relative_failure_floor` percent and `relative_factor` times the median
  /// failure rate of its peers. Default 10; 0 = off.
  unsigned relative_failure_floor = 10;
  /// Ejected when its mean latency in an interval is at least
  /// `relative_factor` times its peers' median, and `latency_gap` above it.
  /// Defaults 3.0 (>= 1.5) and 10 ms; a gap of 0 turns the latency check off.
  double relative_factor = 3.0;
  std::chrono::milliseconds latency_gap{10};
  /// An interval's failure and latency checks judge a provider only with at
  /// least this many attempts ended on it. Default 10; > 0.
  unsigned minimum_requests = 10;
  /// Good probe attempts in a row that end a probation. Default 3; > 0.
  unsigned probe_successes = 3;
};

/// Per client; fixed at construction.
/// The wire protocol a client speaks to its providers (docs/grpc.md).
enum class WireProtocol : std::uint8_t {
  native,  ///< wheelrpc's framed protocol (docs/protocol.md)
  grpc,    ///< gRPC over HTTP/2: any gRPC server, or a wheelrpc server (which serves both on one port)
};

/// Client-side health checking (gRPC's `healthCheckConfig`): each connection
/// to a provider watches that provider's `grpc.health.v1.Health/Watch`
/// stream, and a provider that says anything but SERVING gets no new calls
/// (its calls in flight finish) until it says SERVING again. A connection
/// takes calls once its watch's first answer is SERVING: calls wait for it
/// as for a connection being made (within their deadlines; they are not
/// failed fast meanwhile). A provider that answers the watch UNIMPLEMENTED
/// is taken as serving (as gRPC does; logged once at info). A watch that
/// ends otherwise is opened again after a backoff (ClientOptions::reconnect's
/// initial, multiplier, jitter and max; at once if it had answered), waited
/// on the client's timer. The watch is not a call: not in the metrics, never
/// retried or hedged, no deadline. docs/operations.md.
struct HealthCheckOptions {
  bool enabled = false;  ///< off by default
  std::string service;   ///< the service name watched; "" (default): the server as a whole
};

class RuleSource;

struct ClientOptions {
  /// The protocol to every provider (WireProtocol). Every client feature
  /// (deadlines, retries, hedging, heartbeats, reconnects, the registry)
  /// works the same on either. Default native.
  WireProtocol protocol = WireProtocol::native;

  /// Limit on one connect attempt: the TCP connect, and then again the HELLO
  /// exchange (a peer that accepts but never answers is dropped after it).
  /// Default 3000 ms.
  std::chrono::milliseconds connect_timeout{3000};

  /// Heartbeat interval this client proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's (the
  /// "agreed" interval). A connection idle in reads or writes for that long
  /// gets a heartbeat; checks run every heartbeat / 3. Default 15 s; > 0.
  std::chrono::milliseconds heartbeat{15000};

  /// A connection that has read nothing (no reply, no heartbeat reply) for this
  /// long is closed and reconnected: it catches half-open peers. 0 (default) =
  /// 3 x the agreed heartbeat. Otherwise at least 2 x `heartbeat` (the
  /// constructor rejects less: one lost heartbeat must not close a connection).
  std::chrono::milliseconds idle_timeout{0};

  /// Sets TCP_USER_TIMEOUT on each connection to its idle timeout (above,
  /// from the agreed heartbeat), so data the peer never acknowledges cannot
  /// keep a dead connection open for the kernel's ~15 minutes of
  /// retransmissions (gRFC A18). Linux only; ignored elsewhere. Default true.
  bool tcp_user_timeout = true;

  /// Delays between reconnect attempts to a server, after a connection is lost
  /// or an attempt fails; reset after a successful connection, and when the
  /// provider source reports the provider again (docs/load_balancing.md). Defaults as
  /// gRPC: a fast first attempt, then 1 s x 1.6 per attempt +- 20 %, at most 120 s.
  BackoffOptions reconnect;

  /// Most calls in flight at once (waiting or sent); beyond it a call fails at
  /// once with errc::too_many_pending. Default 65536.
  std::size_t max_pending_calls = 65536;

  /// Most attempts in flight on one provider at once (Dubbo's `actives`): a
  /// provider at its limit gets no new attempt, and when every ready one is,
  /// the attempt waits for a slot until the deadline. 0 (default) = no limit;
  /// docs/security.md, below its table of limits.
  std::size_t max_active_per_provider = 0;

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;

  /// How each attempt picks its provider. Default round robin.
  LoadBalance load_balance = LoadBalance::round_robin;

  /// Ejects providers that fail or lag behind their peers. Default off.
  OutlierDetectionOptions outlier_detection;

  /// Runtime rules this client follows (call_rules.h; the registry's
  /// rule_source follows them in etcd): overrides of each method's policy
  /// between the call's own options and the IDL, the load-balancing policy
  /// and provider weights, applied within a report of a change. Default none.
  std::shared_ptr<RuleSource> rules;

  /// The routing tag this client's calls carry (routing_tag.h; the W3C
  /// baggage entry wheelrpc-tag) when none is in force already: a call made
  /// while serving a request carries that request's tag, and a call with a
  /// baggage attachment of its own carries that. It also names this
  /// consumer to rule scopes. 1..64 characters of [A-Za-z0-9._-]; default
  /// "" (none). The Client's constructor throws std::invalid_argument for
  /// another.
  std::string tag;

  /// Backoff between retries of a call, and the retry budget.
  RetryOptions retry;

  /// Delayed redelivery of fire-and-forget calls.
  FailbackOptions failback;

  /// The time source of deadlines, attempt timeouts, hedges and retry
  /// backoffs: pass the clock the shared timer reads (e.g. a ManualClock
  /// driving a HashedWheelTimer in `manual_drive` mode) so tests move time
  /// by hand. nullptr (default) = std::chrono::steady_clock. Not owned; must
  /// outlive the client.
  const timer::Clock* clock = nullptr;

  /// Empty protection (Dubbo's): when the provider source reports an empty
  /// set, keep the last non-empty one and log why, so an unreachable or
  /// emptied registry never leaves the client with nothing to call. false:
  /// an empty set is applied (every provider really left), and calls that
  /// do not wait for ready fail at once with errc::unavailable. Default true.
  bool empty_protection = true;

  /// A provider that leaves the set gets no new attempts; its calls in flight
  /// run on, and its channel is closed once they are done, or by its
  /// CloseTimerTask this long after it left (then the calls still on it
  /// fail with connection_lost and are retried elsewhere). Until then it
  /// heartbeats as before, so a slow call is not taken for an idle connection. Default 10 s; > 0.
  std::chrono::milliseconds removal_grace{10000};

  /// Policy defaults of this client's calls: each policy Setting (timeout,
  /// retries, idempotent, ...) set here applies to a call that leaves it
  /// alone, below the typed method's IDL option (call > IDL > this > built-in
  /// default; docs/timeouts.md, "Precedence"). Its other fields are ignored.
  /// Checked by the constructor as CallOptions are. Default: none set.
  CallOptions call_defaults;

  /// Per-method metrics (Client::method_stats(): calls by outcome, latency
  /// histograms, in flight) and the recent timeouts (Client::
  /// recent_timeouts()). They cost a few relaxed atomic adds per call on
  /// per-thread cache lines. Default true.
  bool metrics = true;

  /// TLS on every connection (off by default), verifying the server's
  /// certificate against `tls.ca_file` (or the system's trust store). The
  /// handshake fits in `connect_timeout`; a failed one is a failed connect.
  /// The files are checked by the constructor. docs/security.md, "TLS".
  transport::TlsOptions tls;

  /// Streams this client opens: the credit window it grants each (bytes the
  /// server may send ahead of what the application read; default 64 KiB,
  /// 1 KiB .. 1 GiB) and the largest message it takes on one (default
  /// 4 MiB; a larger one ends that stream with errc::resource_exhausted).
  std::uint32_t stream_window = 64 * 1024;
  std::uint32_t max_stream_message = 4u << 20;

  /// The threshold, what this client decodes and its ratio limit. Which
  /// algorithm its calls use is a call policy: CallOptions::compression,
  /// and `call_defaults.compression` for every call of this client.
  CompressionOptions compression;
  /// Client-side health checking (off by default).
  HealthCheckOptions health_check;

  /// Interceptors run once per call, in this order, before load balancing,
  /// retries and hedging; their on_complete in the reverse order
  /// (ClientInterceptor, docs/interceptors.md). Not null. Default none: the
  /// call path is then exactly the one without interceptors (no allocation).
  std::vector<std::shared_ptr<ClientInterceptor>> interceptors;
  /// Interceptors run once per attempt, after its provider was picked (they
  /// see it and the attempt's number). Not null. Default none.
  std::vector<std::shared_ptr<ClientInterceptor>> attempt_interceptors;
};

/// A server's heartbeats and its limits on silent connections.
struct ServerKeepaliveOptions {
  /// Heartbeat interval this server proposes in the HELLO exchange; the
  /// connection uses the larger of the client's and the server's. Default 15 s; > 0.
  std::chrono::milliseconds heartbeat{15000};

  /// A connection that has not completed the HELLO exchange (and, with TLS,
  /// its handshake) within this time is closed. Default 10 s; > 0.
  std::chrono::milliseconds hello_timeout{10000};

  /// Connections idle (no read or no write) for longer than this are closed by
  /// the CloseTimerTask. 0 (default) = 3 x the agreed heartbeat; a value set
  /// below 2 x the agreed heartbeat is raised to that. The same meaning as
  /// ClientOptions::idle_timeout; docs/timeouts.md, "Heartbeats keep
  /// connections honest".
  std::chrono::milliseconds idle_timeout{0};

  /// Whether the server also sends heartbeats on connections idle for an
  /// agreed interval (clients always do). Default false.
  bool send_heartbeats = false;

  /// Sets TCP_USER_TIMEOUT on each connection to its idle timeout (as
  /// ClientOptions::tcp_user_timeout). Linux only. Default true.
  bool tcp_user_timeout = true;

  /// A connection older than this (+- 10 % jitter) is drained so its client
  /// reconnects, perhaps elsewhere: native, the drain announcement; gRPC, a
  /// GOAWAY. Calls and streams in flight then have `max_connection_age_grace`
  /// to end before the connection closes. 0 (default) = no limit; otherwise
  /// >= 100 ms. gRPC's MAX_CONNECTION_AGE and MAX_CONNECTION_AGE_GRACE.
  std::chrono::milliseconds max_connection_age{0};
  /// Default 30 s; >= 0.
  std::chrono::milliseconds max_connection_age_grace{30000};
};

/// A server's bounds on what clients may hold of it; the table of limits at
/// the top of docs/security.md says what a client at each one sees.
struct ServerLimits {
  /// Connections open at once; one beyond it is accepted and closed at once
  /// (ServerStats::refused_connections). 0 (default) = no limit but the
  /// process's open-file limit.
  std::size_t max_connections = 0;

  /// Requests in flight (read and not yet answered) on one connection; at the
  /// limit the server stops reading that connection until a reply goes out
  /// (back-pressure in TCP, ServerStats::read_pauses). Default 1024; 0 = no
  /// limit.
  std::size_t max_requests_per_connection = 1024;
};

/// A server's limits on streams (docs/streams.md, "Limits").
struct ServerStreamOptions {
  /// Streams open at once on one connection; one beyond it is refused at
  /// its start with Status::overloaded (errc::resource_exhausted, which the
  /// client retries on another provider). Default 1024; 0 = no streams.
  std::size_t max_per_connection = 1024;
  /// Streams open at once on the whole server; one beyond it is refused at
  /// its start like one over max_per_connection. An open stream holds no
  /// place under overload.max_concurrency (a stream's life is no call's
  /// latency), but a server at that limit refuses new streams too.
  /// Default 0 = no limit.
  std::size_t max_open = 0;
  /// The credit window granted to each stream: bytes the client may send
  /// ahead of what the handler read. Default 64 KiB; 1 KiB .. 1 GiB.
  std::uint32_t window = 64 * 1024;
  /// Largest message taken on a stream; a larger one ends that stream with
  /// RESOURCE_EXHAUSTED, the connection stays. Default 4 MiB.
  std::uint32_t max_message = 4u << 20;
  /// Server-side message-idle timeout: a stream whose client sends no
  /// message for this long (and has not half-closed) is ended with
  /// DEADLINE_EXCEEDED, freeing what it holds. Default 0 = off.
  std::chrono::milliseconds message_timeout{0};
  /// Server-side write-stall timeout: a handler's write that waited this
  /// long for the client's credit ends the stream. Default 0 = off.
  std::chrono::milliseconds stall_timeout{0};
};

/// gRPC over HTTP/2 on a server's port (docs/grpc.md): its HTTP/2 settings
/// and its defences. The server's other options (limits, deadlines,
/// overload, streams, compression, keepalive) apply to gRPC calls as to
/// native ones.
struct GrpcServerOptions {
  /// Serve gRPC beside the native protocol: a connection that opens with
  /// the HTTP/2 preface (or, on TLS, chooses ALPN h2) speaks it. Default true.
  bool enabled = true;
  /// SETTINGS_MAX_CONCURRENT_STREAMS: calls and streams open at once on one
  /// connection; the client's HTTP/2 stack queues the rest. Default 1024.
  std::uint32_t max_concurrent_streams = 1024;
  /// SETTINGS_INITIAL_WINDOW_SIZE (bytes a client may send on one call or
  /// stream ahead of what the server took; a streaming handler's reads give
  /// it back) and the connection's own window. Defaults 1 MiB and 16 MiB.
  std::uint32_t stream_window = 1u << 20;
  std::uint32_t connection_window = 16u << 20;
  /// SETTINGS_MAX_HEADER_LIST_SIZE: bytes of one request's headers, decoded
  /// (HPACK bombs stop here); beyond it the call is refused
  /// (RESOURCE_EXHAUSTED) and its stream reset. Default 16 KiB.
  std::uint32_t max_header_list_bytes = 16u << 10;
  /// Keepalive enforcement (gRPC's): a client's PING sooner than this after
  /// the previous one, with no call's data in between, is a strike; beyond
  /// `max_ping_strikes`, GOAWAY ENHANCE_YOUR_CALM "too_many_pings". Defaults
  /// 1 s and 2 (gRPC servers allow one PING per 5 minutes; wheelrpc clients
  /// ping when a connection is idle for their heartbeat).
  std::chrono::milliseconds min_ping_interval{1000};
  int max_ping_strikes = 2;
  /// Rapid reset (CVE-2023-44487): streams a client may reset, as a token
  /// bucket of `max_resets_burst` refilled by `resets_per_second`; beyond
  /// it, GOAWAY ENHANCE_YOUR_CALM. Defaults 200 and 100.
  std::uint32_t max_resets_burst = 200;
  std::uint32_t resets_per_second = 100;
  /// Requests refused for their headers (bad content-type, malformed
  /// metadata, oversize headers) on one connection before GOAWAY. Default 64.
  std::uint32_t max_bad_requests = 64;
};

/// A server's compression (docs/compression.md).
struct ServerCompressionOptions : CompressionOptions {
  /// The algorithm of its replies (and of the messages its stream handlers
  /// write). std::nullopt (default): on the native wire, mirror the call's,
  /// i.e. the one the client's CallOptions::compression named (carried by
  /// each request, even one too small to have been compressed); on the gRPC
  /// wire, uncompressed, as a gRPC server answers unless asked
  /// (docs/compression.md, "On the gRPC wire"). Set: that one for every
  /// reply (identity: never compress). Either way only if the client
  /// announced it decodes it, and under the threshold as for requests.
  std::optional<transport::Compression> reply;
  /// The level of the replies' compression: 0 (default) = the algorithm's own.
  int reply_level = 0;
};

/// Load reports (docs/load_balancing.md): replies carry the server's load in
/// ORCA's OrcaLoadReport (xds.data.orca.v3): CPU utilization, calls in
/// flight, the handler queue's wait and an application-set utilization
/// (Server::set_application_utilization). Native: a reply attachment; gRPC:
/// the `endpoint-load-metrics-bin` trailer, which any ORCA-aware client reads.
struct LoadReportOptions {
  /// Off by default.
  bool enabled = false;
  /// A connection's replies carry a report at most once per this long; the
  /// CPU is sampled as often, on the timer. Default 100 ms; >= 10 ms.
  std::chrono::milliseconds interval{100};
};

/// How a server sheds the work it cannot finish in time; docs/security.md,
/// "Overload".
struct OverloadOptions {
  /// A request whose deadline has passed by the time the server gets to it is
  /// answered Status::server_timeout without running its handler, and counted
  /// as shed (ServerStats::shed). false: it is handled anyway, its late reply
  /// dropped. Default true.
  bool deadline_admission = true;

  /// Controlled delay (CoDel) of the handler executor's queue: once the queue
  /// has not been empty for `queue_interval`, a request that waited longer
  /// than `queue_target` is shed. Only with handler_executor and
  /// deadline_admission. Defaults 5 ms and 100 ms; target 0 = off; the target
  /// must be below the interval.
  std::chrono::milliseconds queue_target{5};
  std::chrono::milliseconds queue_interval{100};

  /// Requests processed at once by the whole server, queued ones included:
  /// none (default), fixed(n) or automatic() (see ConcurrencyLimit). Beyond
  /// it a request is answered Status::overloaded at once (the caller sees
  /// errc::resource_exhausted). Checked after MethodOptions::max_concurrency.
  ConcurrencyLimit max_concurrency;
};

// The deprecated fields below would make every implicit special member of
// ServerOptions (default, copy and move constructors and assignments, the
// destructor) warn where it is first used: GCC and clang place that warning at
// the class's name, which this region covers. Uses of a deprecated field still warn.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/// Per server; fixed at construction.
struct ServerOptions {
#pragma GCC diagnostic pop
  /// Heartbeats, the HELLO deadline and the idle timeout.
  ServerKeepaliveOptions keepalive;

  /// Connections, and requests in flight on one connection.
  ServerLimits limits;

  /// Deadline admission, the queue's controlled delay, the concurrency limit.
  OverloadOptions overload;

  /// Load reports on replies (ORCA). Default off.
  LoadReportOptions load_reports;

  /// Streams (docs/streams.md).
  ServerStreamOptions streams;

  /// gRPC over HTTP/2 on the same port (docs/grpc.md).
  GrpcServerOptions grpc;

  /// What the server decodes, its ratio limit, and how it compresses replies.
  ServerCompressionOptions compression;

  /// Socket-level limits (largest body accepted, write queue bound, buffers).
  transport::ChannelOptions channel;

  /// The time source of server-side deadlines (the clock the shared timer
  /// reads; see ClientOptions::clock). nullptr (default) = steady_clock.
  const timer::Clock* clock = nullptr;

  /// Announces the server once it listens, and withdraws it first when it
  /// shuts down (e.g. wheelrpc::registry::announcer). nullptr (default): none.
  std::shared_ptr<ServiceAnnouncer> announcer;

  /// A graceful shutdown of an announced server withdraws it, then serves on
  /// (and accepts) for this long, so clients see it leave before it stops
  /// taking calls. Default 2 s; 0 = none.
  std::chrono::milliseconds unregister_grace{2000};

  /// Per-method metrics and recent timeouts, as ClientOptions::metrics.
  /// Default true.
  bool metrics = true;

  /// Serve grpc.health.v1.Health (`Check` and `Watch`, both wires) under its
  /// standard paths (Server::health, docs/operations.md). Default true.
  bool health_service = true;

  /// After connections close, give the memory they freed back to the
  /// operating system (glibc's malloc_trim, at most once a second). Default
  /// true; docs/security.md, below its table of limits.
  bool return_memory = true;

  /// Where handlers run. Empty (default): inline on the connection's strand.
  /// Set (e.g. a thread_pool's executor): requests are admitted on the I/O
  /// threads, then queued there, where the server sees and sheds a backlog;
  /// no strand (a connection's requests may run at once). How long it must
  /// run and live: docs/security.md, "Overload".
  boost::asio::any_io_executor handler_executor;

  /// TLS on the port (off by default; `tls.cert_file`/`key_file` required).
  /// The handshake counts against `keepalive.hello_timeout`; the files are
  /// checked by the constructor. docs/security.md, "TLS".
  transport::TlsOptions tls;

  /// Deprecated names of the fields above, honoured for one more version: a
  /// value set here applies where the new field is left at its default (the
  /// new field wins when both are set). Same defaults and meanings.
  [[deprecated("use ServerOptions::keepalive.heartbeat")]] std::chrono::milliseconds heartbeat{15000};
  [[deprecated("use ServerOptions::keepalive.hello_timeout")]] std::chrono::milliseconds hello_timeout{10000};
  [[deprecated("use ServerOptions::keepalive.idle_timeout")]] std::chrono::milliseconds close_timeout{0};
  [[deprecated("use ServerOptions::keepalive.send_heartbeats")]] bool send_heartbeats = false;
  [[deprecated("use ServerOptions::limits.max_connections")]] std::size_t max_connections = 0;
  [[deprecated("use ServerOptions::limits.max_requests_per_connection")]] std::size_t max_requests_per_connection =
      1024;
  [[deprecated("use ServerOptions::overload.deadline_admission")]] bool deadline_admission = true;
  [[deprecated("use ServerOptions::overload.queue_target")]] std::chrono::milliseconds queue_target{5};
  [[deprecated("use ServerOptions::overload.queue_interval")]] std::chrono::milliseconds queue_interval{100};
  [[deprecated("use ServerOptions::overload.max_concurrency")]] ConcurrencyLimit max_concurrency{};

  /// Interceptors run around every handler, after admission, in this order;
  /// their on_complete in the reverse order (ServerInterceptor,
  /// docs/interceptors.md). Not null. Default none: requests then take
  /// exactly the path they take without interceptors.
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
};

/// Per method, given to Server::handle.
struct MethodOptions {
  /// Calls of the method running at once (Dubbo's `executes`): a request
  /// beyond it is answered at once, unprocessed, with Status::overloaded
  /// (the caller sees errc::resource_exhausted, which clients retry on
  /// another provider). 0 (default) = no limit. For a stream method
  /// (Server::handle_stream): its streams open at once, one beyond it
  /// refused at its start the same way.
  std::size_t max_concurrency = 0;
  /// The method's own timeout (a typed method's IDL `timeout_ms`): the
  /// server-side deadline of a call or stream that arrives without one (a
  /// foreign gRPC client, the admin gateway), and the smaller of the two
  /// when the caller set one (docs/timeouts.md, "Precedence"). 0 (default) =
  /// the caller's deadline only.
  std::chrono::milliseconds timeout{0};
};

/// Checks a call's options: the problem ("CallOptions::retries must be 0 ..
/// 16, got 20"), or std::nullopt when they are valid. A call with invalid
/// options fails at once with errc::bad_request and this text.
std::optional<std::string> validate(const CallOptions& options);
/// Throw std::invalid_argument naming the first invalid field. Client and
/// Server constructors call them.
void validate(const ClientOptions& options);
void validate(const ServerOptions& options);

}  // namespace wheelrpc::rpc
