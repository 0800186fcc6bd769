#pragma once
/// What a Client or a Server shows of itself while it runs: per-method call
/// counts and latency distributions, one row per connection, and the calls
/// that ended in a timeout lately. Plain snapshots (copies): the admin pages
/// (wheelrpc::admin) and tests read them; nothing here points into the live
/// objects.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/setting.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/rpc/stream_info.h>

namespace wheelrpc::rpc {

/// How a call ended, as the metrics count it: one value per pair of a gRPC
/// status code (call_status: the `code` label of `*_handled_total`,
/// "DEADLINE_EXCEEDED") and the detail the framework adds to it
/// (call_code_name: the `reason` label, "server_timeout"). The details:
/// `ok`; an errc name (`timeout`, `server_timeout`, `connection_lost`,
/// `unavailable`, `method_not_found`, `bad_request`, `server_error`,
/// `cancelled`, `too_many_pending`, `resource_exhausted`; a stream's timers
/// count as `timeout`); `aborted` (cancelled through the completion token's
/// slot); `stream_misuse` (a stream read or write out of turn: never a
/// call's end); `other` (an error of no wheelrpc category: UNKNOWN); and
/// `application`, a status the framework adds nothing to: one a handler or
/// an interceptor chose (on a client: the server's), or a gRPC peer's bare
/// status. The values up to `other` keep the numbers they always had.
enum class CallCode : std::uint8_t {
  ok,                  ///< OK
  timeout,             ///< DEADLINE_EXCEEDED: this side's deadline (errc::timeout, a stream's timers)
  server_timeout,      ///< DEADLINE_EXCEEDED: the server's (errc::server_timeout)
  connection_lost,     ///< UNAVAILABLE
  unavailable,         ///< UNAVAILABLE
  method_not_found,    ///< UNIMPLEMENTED
  bad_request,         ///< INVALID_ARGUMENT
  server_error,        ///< UNKNOWN
  cancelled,           ///< CANCELLED (errc::cancelled: the client was closed; a server: the caller cancelled)
  too_many_pending,    ///< RESOURCE_EXHAUSTED
  resource_exhausted,  ///< RESOURCE_EXHAUSTED
  aborted,             ///< CANCELLED: through the completion token's cancellation slot
  other,               ///< UNKNOWN: an error of no wheelrpc category
  stream_misuse,       ///< FAILED_PRECONDITION: errc::stream_closed and the other stream misuses
  // A status the application chose (reason "application"), one per code but OK, in StatusCode's order.
  app_cancelled,
  app_unknown,
  app_invalid_argument,
  app_deadline_exceeded,
  app_not_found,
  app_already_exists,
  app_permission_denied,
  app_resource_exhausted,
  app_failed_precondition,
  app_aborted,
  app_out_of_range,
  app_unimplemented,
  app_internal,
  app_unavailable,
  app_data_loss,
  app_unauthenticated,
};
inline constexpr std::size_t kCallCodes = 30;
/// The detail (the `reason` label): "ok", "timeout", ..., "application".
std::string_view call_code_name(CallCode code) noexcept;
/// The gRPC status code (its name, to_string(), is the `code` label).
StatusCode call_status(CallCode code) noexcept;
/// The code a status the application chose counts under (ok for OK).
CallCode application_code(StatusCode code) noexcept;
/// The code a completion's error counts under (empty: ok). Always
/// call_status(call_code(ec)) == status_code_of(ec).
CallCode call_code(const boost::system::error_code& ec) noexcept;

/// A latency distribution: counts per bucket (not cumulative), in seconds.
struct LatencyHistogram {
  std::vector<double> bounds;         ///< upper bounds (seconds), increasing; +Inf not included
  std::vector<std::uint64_t> counts;  ///< bounds.size() + 1 entries, the last above every bound
  double sum = 0;                     ///< seconds, of every observation
  std::uint64_t count = 0;            ///< observations (the sum of `counts`)

  /// Quantile q (0..1) by linear interpolation inside its bucket (seconds);
  /// 0 when empty; the last bucket reports its lower bound. Interpolation
  /// may land above the slowest observation (or below the fastest): what is
  /// shown clamps it to them (MethodStats::latency_quantile, quantile(q, lo, hi)).
  double quantile(double q) const noexcept;
  /// quantile(q), clamped to [lo, hi]: the fastest and slowest observations
  /// known (or bounds known to hold them).
  double quantile(double q, double lo, double hi) const noexcept;
  /// The upper bound of the highest non-empty bucket (seconds): what "max"
  /// is known to be at most; 0 when empty.
  double max_bound() const noexcept;
  /// This histogram less `earlier` (same bounds): the observations between two snapshots.
  LatencyHistogram since(const LatencyHistogram& earlier) const;
};

/// One method, as a Client or Server has counted it so far.
/// The payloads of a method in one direction (docs/compression.md): their
/// bytes as the application sees them (before compression, after
/// decompression) and as they crossed the wire, so `bytes / wire_bytes` is
/// what compression saved (1 without it). Unary payloads and stream messages.
struct PayloadTraffic {
  std::uint64_t messages = 0;    ///< payloads counted
  std::uint64_t compressed = 0;  ///< of which went compressed
  std::uint64_t bytes = 0;       ///< their size to the application
  std::uint64_t wire_bytes = 0;  ///< their size on the wire
  /// bytes / wire_bytes; 1 when nothing was counted.
  double ratio() const noexcept {
    return wire_bytes == 0 ? 1.0 : static_cast<double>(bytes) / static_cast<double>(wire_bytes);
  }
};

struct MethodStats {
  std::string method;
  /// Completed calls by outcome, indexed by CallCode (every code present, zeros included).
  std::array<std::uint64_t, kCallCodes> handled{};
  /// Calls started and not yet completed (now).
  std::int64_t in_flight = 0;
  /// Server: requests answered server_timeout because their deadline passed
  /// before the handler replied. Client: 0.
  std::uint64_t deadline_exceeded = 0;
  /// Server: requests answered server_timeout without running the handler,
  /// their deadline passed before it could start (ServerOptions::
  /// deadline_admission). Client: 0.
  std::uint64_t shed = 0;
  /// Latency (client: call start to completion; server: request read to reply
  /// queued) over the Prometheus buckets .0005 .001 .0025 .005 .01 .025 .05
  /// .1 .25 .5 1 2.5 5 10 (seconds).
  LatencyHistogram latency;
  /// The same calls over finer buckets (a quarter-power of two apart, 1 µs to
  /// ~70 s): for quantiles.
  LatencyHistogram latency_fine;
  /// The slowest and the fastest call so far (seconds; 0 before any).
  double max_s = 0;
  double min_s = 0;
  /// Payloads this side sent (client: requests; server: replies) and
  /// received, with their compression.
  PayloadTraffic sent, received;

  /// The streams of the method (a stream method's; zeros for a unary one):
  /// opened, open now, messages in and out, ends by cause.
  StreamStats streams;
  /// How they ended, by cause and status code: the `cause` and `code` labels
  /// of `*_streams_ended_total`. Every cause with its usual code (zeros
  /// included: `ok` OK, `error` UNKNOWN, `cancelled` CANCELLED, the four
  /// timers DEADLINE_EXCEEDED, `connection_lost`, `refused` and `shutdown`
  /// UNAVAILABLE, `protocol` INTERNAL), then every other pair that occurred.
  struct StreamEndCount {
    std::string_view cause;  ///< "ok", "error", "message_idle", ... (static storage)
    StatusCode code = StatusCode::ok;
    std::uint64_t count = 0;
  };
  std::vector<StreamEndCount> stream_ends;

  std::uint64_t calls() const noexcept;
  /// latency_fine.quantile(q), clamped to [min_s, max_s]: never a p99 above
  /// the slowest call.
  double latency_quantile(double q) const noexcept { return latency_fine.quantile(q, min_s, max_s); }
};

/// Where a call was when its deadline passed.
enum class TimeoutPhase : std::uint8_t {
  connecting,       ///< client: no connection ready yet (one was being made)
  waiting_to_send,  ///< client: not sent: waiting for a connection, or between attempts
  sent_waiting,     ///< client: sent, waiting for the reply
  server,           ///< client: the server answered server_timeout
  in_handler,       ///< server: the handler did not reply in time
  queued,           ///< server: still waiting for ServerOptions::handler_executor (shed: never run)
  streaming,        ///< either side: an open stream's timer fired (TimeoutRecord::stream_timer says which)
};
std::string_view timeout_phase_name(TimeoutPhase phase) noexcept;

/// A call that ended in `timeout` or `server_timeout`.
struct TimeoutRecord {
  std::chrono::system_clock::time_point time;  ///< when it ended
  bool server_side = false;                    ///< recorded by a Server (else a Client)
  std::string method;
  std::string provider;  ///< client: the provider of its latest attempt ("" if none); server: the caller
                         ///< (/timeouts.json names it "caller" on server rows)
  TimeoutPhase phase = TimeoutPhase::sent_waiting;
  CallCode code = CallCode::timeout;
  std::chrono::microseconds budget{0};   ///< the deadline's budget (0: none)
  std::chrono::microseconds elapsed{0};  ///< from start to the end
  int attempts = 0;                      ///< attempts started (server: 1)
  std::string trace_id;                  ///< 32 hex digits of its traceparent ("" if none)
  /// Client: where its time went, as its error message ends ("timeline:
  /// queued 0.0 ms, sent 0.0, socket wrote 0.1, timer fired 50.3 (0.3
  /// late)"; docs/timeouts.md); "" on the server.
  std::string timeline;
  /// A stream's timeout (phase streaming): the timer that fired, "deadline",
  /// "message-idle", "write-stall" or "first-message"; "" for a call. Its
  /// budget is the timer's setting, its elapsed how long what the timer
  /// watches had lasted when it fired.
  std::string stream_timer;
  /// Client: who set the call's timeout, with its value: "timeout 200 ms
  /// (runtime override /wheelrpc/echo/rules/slow rev 4712)", "timeout 5000
  /// ms (call)" (setting.h's Layer); "" on the server and for streams.
  std::string timeout_source;
};

/// One setting of a method as a client would apply it to a call that sets
/// nothing itself (Client::explain; docs/governance.md, "Which timeout wins").
struct EffectiveSetting {
  /// One layer's value for it.
  struct Candidate {
    Layer layer = Layer::built_in;
    std::string value;   ///< as the rules spell it: "200", "true", "zstd", "none" (no deadline)
    std::string origin;  ///< an override's: "runtime override /wheelrpc/echo/rules/slow rev 4712"; else ""
  };
  std::string name;  ///< the rule field's name: "timeout_ms", "retries", "compression"...
  Candidate winner;  ///< the value in force
  /// Every layer that has a value, highest precedence first (the winner first;
  /// a per-call option would sit between a forced and a plain override).
  std::vector<Candidate> layers;
};

/// Client::explain's answer for one method.
struct MethodExplanation {
  std::string method;
  /// The rules in force: their source ("etcd rules of 'echo'"), the revision
  /// they were read at (0: none yet), and why the last report failed ("": it did not).
  std::string rules_source;
  std::int64_t rules_revision = 0;
  std::string rules_error;
  /// Whether the IDL column is known: a typed stub's method option is seen by
  /// the client on the method's first call.
  bool idl_known = false;
  std::vector<EffectiveSetting> settings;
  /// The load-balancing policy in force and who set it.
  EffectiveSetting load_balance;
};

/// One connection, as gRPC's channelz shows a socket.
struct ConnectionInfo {
  enum class State : std::uint8_t { idle, connecting, ready, backoff, closing };
  bool server_side = false;
  std::string local;   ///< "ip:port"; "" while not connected
  std::string remote;  ///< "ip:port"
  State state = State::idle;
  std::chrono::milliseconds age{0};  ///< since the connection was made (0 while none)
  std::uint64_t bytes_in = 0, bytes_out = 0, frames_in = 0, frames_out = 0;
  std::chrono::milliseconds last_read_age{-1}, last_write_age{-1};  ///< -1: no connection
  std::uint64_t heartbeats_sent = 0;                                ///< on this connection
  bool sends_heartbeats = true;                   ///< this side sends heartbeats on it (a server only with
                                                  ///< ServerOptions::keepalive.send_heartbeats; a client always)
  std::chrono::milliseconds heartbeat{0};         ///< interval agreed in the HELLO exchange (0: not yet)
  std::uint64_t reconnect_attempts = 0;           ///< client: connect attempts to this provider so far
  std::chrono::milliseconds next_attempt_in{-1};  ///< client in backoff: until the next connect attempt; -1 otherwise
  std::uint64_t in_flight = 0;                    ///< calls (client: attempts) waiting for a reply on it
  std::uint64_t streams = 0;                      ///< streams open on it
  /// The wire protocol it speaks: "native" (docs/protocol.md) or "grpc" (HTTP/2, docs/grpc.md).
  std::string protocol = "native";
  /// Client with ClientOptions::health_check, while ready: what its health
  /// watch says: "checking" (no answer yet), "serving", "not_serving"
  /// (or the watch failed and waits to restart), "unimplemented" (no
  /// health service there: taken as serving). "" otherwise.
  std::string health;
  /// Client, while its provider is in the set: its load-balancing weight
  /// (0..10000) and where it comes from ("registry", "rule <origin>",
  /// "default"); weight_from is "" otherwise.
  std::uint32_t weight = 100;
  std::string weight_from{};
  /// Client, outlier detection: "" (not ejected), "ejected" or "probation",
  /// with why and how long until the ejection ends (ms; -1: not ejected).
  std::string ejection{};
  std::string ejected_why{};
  std::int64_t ejected_for_ms = -1;
  /// The socket's TCP_USER_TIMEOUT (0: the kernel's default, or none yet).
  std::chrono::milliseconds user_timeout{0};
  /// Server, with ServerOptions::keepalive.max_connection_age: when it is
  /// drained for its age (ms from now; -1: no limit, or draining already).
  std::chrono::milliseconds max_age_in{-1};
};
std::string_view connection_state_name(ConnectionInfo::State state) noexcept;

}  // namespace wheelrpc::rpc
