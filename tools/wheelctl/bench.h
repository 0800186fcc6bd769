#pragma once
/// `wheelctl bench`: the load-test engine (ghz's job). Calls one method of one
/// server (or of several providers, balanced) over and over for a while,
/// closed loop (C calls in flight) or open loop (R calls per second on a
/// schedule), and reports calls/s, errors by status and a latency histogram
/// with its percentiles.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/transport/tls.h>

namespace wheelrpc::wheelctl {

/// One more provider of BenchTarget: a host and a port, as BenchTarget's own.
struct BenchAddress {
  std::string host;        ///< an IP address or a host name (resolved once; its first address)
  std::uint16_t port = 0;  ///< 1 .. 65535
};

/// What to call: one method of one server (or of several providers of it:
/// `more_servers`), always with the same request.
struct BenchTarget {
  /// The server: an IP address or a host name (resolved once, before the
  /// run; the first address is used). Default "127.0.0.1".
  std::string host = "127.0.0.1";
  /// Its port. Required (1 .. 65535).
  std::uint16_t port = 0;
  /// Further providers of the same method (`wheelctl bench HOST:PORT,HOST:PORT`
  /// after the first): the client of each I/O thread connects to every one and
  /// balances its calls over them (`load_balance`), as rpc::Client does over
  /// a list of endpoints. Default none (one server).
  std::vector<BenchAddress> more_servers;
  /// How each call picks its provider among the ready ones
  /// (ClientOptions::load_balance; --lb round_robin|least_active|p2c).
  /// Default round robin. Matters only with `more_servers`.
  rpc::LoadBalance load_balance = rpc::LoadBalance::round_robin;
  /// Client-side health checking (ClientOptions::health_check; --health-check,
  /// --health-service NAME): each connection watches its provider's
  /// grpc.health.v1.Health, and a provider that is not SERVING gets no new
  /// calls (e.g. one that began a graceful shutdown). Off by default.
  rpc::HealthCheckOptions health_check;
  /// The wire: native (wheelrpc servers) or grpc (any gRPC server, wheelrpc's
  /// included). Default native.
  rpc::WireProtocol protocol = rpc::WireProtocol::native;
  /// TLS of the connections, as echo_client's flags fill it (--tls-ca,
  /// --tls-cert, --tls-key, --tls-server-name; examples/support/tls_flags.h).
  /// Off by default.
  transport::TlsOptions tls;
  /// The method: a gRPC path ("/pkg.Service/Method") or the name of a method
  /// without a service ("echo", which the gRPC wire sends as "/echo").
  /// Required.
  std::string method_path;
  /// The request, already serialized (e.g. protobuf bytes made from JSON by
  /// the caller): sent as it is on every call. May be empty.
  std::string request;
  /// Metadata sent with every call (native attachments / gRPC headers). Keys
  /// at most 255 bytes. Default none.
  std::vector<std::pair<std::string, std::string>> metadata;
  /// Each call's deadline (CallOptions::timeout); a call that has no reply
  /// by then fails with DEADLINE_EXCEEDED. Also bounds the wait for the calls
  /// in flight at the end of the run. Default 1000 ms; > 0.
  std::chrono::milliseconds timeout{1000};
};

/// How to call it. The flags of `wheelctl bench` map one to one onto these
/// fields: --concurrency, --duration-s, --rate, --max-in-flight, --json,
/// --threads, --no-progress.
struct BenchOptions {
  /// Closed loop: calls in flight at once (each completion starts the next
  /// call). Open loop: ignored except as the least in-flight cap. Default 1;
  /// 1 .. 100000.
  unsigned concurrency = 1;
  /// How long calls are started for; the run then waits for the calls still
  /// in flight (each at most `BenchTarget::timeout`). Default 10 s; > 0.
  std::chrono::seconds duration{10};
  /// Open loop: calls started per second on a fixed schedule, whatever the
  /// server does; each call's latency is counted from its intended start
  /// (coordinated omission corrected, as wrk2 and ghz --rps do). The
  /// schedule runs on the shared timer with a 100 us tick: calls due within
  /// a tick start when it ends. 0 (default) = closed loop. At most
  /// 10,000,000.
  double rate = 0;
  /// Open loop: most calls in flight at once. A call due while the cap is
  /// reached waits for a free slot (its latency still counts from its
  /// intended start) and is counted in `cap_hits`. 0 (default) = 10000, or
  /// `concurrency` when that is larger.
  unsigned max_in_flight = 0;
  /// Print exactly one JSON line on `out` instead of the text report
  /// (fields: docs of run_bench). Default false.
  bool json = false;
  /// I/O threads, each with its own io_context, connection and share of the
  /// calls (closed loop: at most `concurrency` threads are used). 0 (default):
  /// closed loop, one per 128 calls in flight, up to one per core; open loop,
  /// one per core (std::thread::hardware_concurrency()). At most 64.
  unsigned threads = 0;
  /// A progress line on `err` once a second: seconds elapsed, calls, calls/s
  /// over the last second, errors. Default true.
  bool progress = true;
  /// Catch SIGINT (Ctrl-C) while running: the first stops starting calls and
  /// the run ends as at the end of its duration (report included); a second
  /// fails the calls still in flight at once (CANCELLED). Default true.
  bool handle_sigint = true;
};

/// Runs the benchmark and writes its report on `out`: the text report (calls,
/// calls/s, errors by status name, percentiles p50/p90/p99/p99.9/max and a
/// histogram with ASCII bars), or with `options.json` exactly one JSON line:
///   calls          calls that completed (succeeded or failed)
///   ok             of which succeeded
///   calls_per_s    calls / duration_s
///   errors         calls that failed
///   errors_by_status  {"DEADLINE_EXCEEDED": n, ...}: failed calls by gRPC
///                  status name (rpc::to_string(rpc::status_code_of(ec)))
///   p50_us p90_us p99_us p999_us max_us   latency of the calls that
///                  succeeded, in microseconds (within 0.4 %; 0 when none)
///   concurrency    BenchOptions::concurrency
///   duration_s     seconds from the first call's start to the last
///                  completion (the drain at the end included)
///   rate           BenchOptions::rate (0: closed loop)
///   protocol       "native" or "grpc"
///   threads, max_in_flight, cap_hits (open-loop calls delayed by the cap),
///   unsent (open-loop calls due but not started when the run ended),
///   interrupted (stopped early by SIGINT)
/// Progress lines and problems go to `err`.
///
/// Returns the exit status: 0 when every call succeeded, 1 when at least one
/// failed (or none completed), 2 when the target or options are invalid
/// (nothing is called; `err` says why).
///
/// Blocks the calling thread, which runs one of the I/O threads.
/// Thread safety: run one at a time per process when `handle_sigint` is on.
int run_bench(const BenchTarget& target, const BenchOptions& options, std::ostream& out, std::ostream& err);

/// The problem with `target` and `options` ("--rate must be ..."), or "" when
/// they are valid (every server's host and port included). run_bench checks
/// this first.
std::string bench_problem(const BenchTarget& target, const BenchOptions& options);

}  // namespace wheelrpc::wheelctl
