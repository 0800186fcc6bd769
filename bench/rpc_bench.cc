/// RPC echo on wheelrpc, mirroring the peer benchmarks bench/peers/asio_echo.cc
/// (raw Boost.Asio) and bench/peers/grpc_echo.cc (gRPC C++): same command line,
/// same JSON fields, same measurement method, so bench/compare_rpc.sh can put
/// the three side by side.
///
///   rpc_bench server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--threads N] [--tls DIR]
///                    [--typed[=callback]] [--interceptors N] [--compression ALG[:LEVEL]]
///   rpc_bench client --port N [--concurrency 16] [--payload 64] [--warmup 1]
///                    [--duration 10] [--server-pid PID] [--no-deadline] [--host 127.0.0.1] [--tls DIR]
///                    [--typed[=callback]] [--interceptors N] [--compression ALG[:LEVEL]]
///                    [--content fill|json|proto|random|zeros] [--via-proxy-kbps N] [--protocol native|grpc]
///                    [--calls N]
///   rpc_bench client --port N --stream echo|oneway|idle [--streams 1] [--payload 64] [--warmup 1]
///                    [--duration 10] [--server-pid PID] [--host 127.0.0.1]
///   rpc_bench conn_scale [--connections N] [--heartbeat-ms H] [--duration-s S] ...
///   rpc_bench overload [--load 1,2,4] [--no-limiter] [--no-admission] ...
///   rpc_bench codec [--compression zstd:3,...] [--content json,proto] [--payload 4096,65536] ...
///
/// (conn_scale, what idle connections cost, is described in conn_scale.cc;
/// overload, a server offered more than its capacity, in overload.cc;
/// codec, the compression codecs alone, in codec_bench.cc; the
/// client's --stream, streams against gRPC C++'s (workload "stream"), in
/// stream_bench.cc: the server always registers its two stream methods,
/// stream_echo and stream_sink, in the form --stream-handlers names,
/// callback by default.)
///
/// Server: a wheelrpc::rpc::Server with one method, `echo`, on an io_context run
/// by N threads (default 1), sharing one HashedWheelTimer, proposing heartbeats
/// every --heartbeat-ms; it raises its open-file soft limit to the hard limit
/// and runs until killed (or `--lifetime` seconds, a safety net should the run
/// script die).
///
/// Client: one wheelrpc::rpc::Client on an io_context run by one thread (plus
/// the timer's worker); closed loop with C calls in flight; each payload carries
/// its call's sequence number in its first 8 bytes and every reply is checked
/// against it. Every call has a 1 s deadline (workload "echo"). With
/// --no-deadline (workload "echo_no_deadline") calls have no deadline
/// (CallOptions::kNoDeadline: nothing on the timer, no budget on the wire, so
/// no server-side timer either; field "deadline_ms" is 0): the difference is
/// what deadlines cost. One JSON line on stdout; exit status 1 if any call failed,
/// 2 on a usage error.
///
/// --typed (server and client; workload "echo_typed"): the echo goes through
/// protobuf instead, over the gRPC peer's own bench/peers/echo.proto
/// (peers.echo.Echo/Echo, Blob -> Blob): the client calls the generated
/// stub's async_Echo with a callback, the server serves a coroutine-form
/// Echo::Service. --typed=callback (workload "echo_typed_callback"): the
/// server serves the CallbackService form, replying inline; the client is the
/// same (the flag only names its workload). The server keeps its untyped
/// `echo` method either way; without --typed it serves
/// `/peers.echo.Echo/Echo` untyped instead (see --protocol).
///
/// --load-reports (server) serves ORCA load reports (ServerOptions::
/// load_reports, default sampling); --outlier (client) turns on outlier
/// detection with its defaults and --load-aware the load-aware policy:
/// what the gray-failure bookkeeping costs (bench/ab_rpc.sh's
/// B_SERVER_FLAGS and B_CLIENT_FLAGS; fields "outlier", "load_aware").
///
/// --interceptors N (server and client; field "interceptors"): N no-op
/// interceptors in the server's chain and in the client's per-call chain,
/// each proceeding at once: what a chain costs (0, the default: none).
///
/// --compression ALG[:LEVEL] (identity or none, zstd, lz4, gzip, deflate;
/// field "compression": "zstd:3", or "zstd" at its default level): the
/// client sets CallOptions::compression and compression_level on every call
/// (the server needs nothing: its replies mirror the call's algorithm);
/// given to the server, it sets ServerOptions::compression.reply and
/// reply_level instead, for a one-sided test. Payloads under the default
/// threshold (1024 bytes) go uncompressed either way. --content (field
/// "content"; payload_gen.h) picks what the payloads hold: `fill` ('x'
/// bytes, what rpc_bench always sent: the default), or the generator's
/// `json`, `proto`, `random` or `zeros` of --payload bytes (seed 42); the
/// call's sequence number still takes its first 8 bytes. Fields from the
/// client's method stats (MethodStats::sent and received, over the whole
/// run): "wire_bytes_per_call" (payload bytes on the wire, request and
/// reply), "ratio" (payload bytes / wire bytes), "request_ratio" and
/// "reply_ratio"; -1 with --no-metrics.
///
/// --via-proxy-kbps N (client; field "link_kbps", 0 without): the client
/// connects through an in-process FaultProxy in front of the server with a
/// `bandwidth` toxic of N KB/s on both directions (link_proxy.h), a slow
/// link on loopback. The proxy's thread counts in "client_cpu_s".
///
/// --protocol grpc (client; field "protocol", "native" by default): the
/// client speaks gRPC over HTTP/2 (ClientOptions::protocol) and calls
/// `/peers.echo.Echo/Echo` of bench/peers/echo.proto with a serialized
/// `Blob` whose payload field holds the --payload bytes (the sequence
/// number over its first 8), exactly the request gRPC C++'s echo client
/// sends, so it can call `grpc_echo server` as well as a wheelrpc server;
/// the reply must be those bytes. With --typed the generated stub calls the
/// same method. The server needs no flag: it serves both protocols on its
/// port, and registers its `echo` handler also as `/peers.echo.Echo/Echo`
/// (echoing the serialized Blob is a valid reply), so `grpc_echo client`
/// can call it (with --typed the typed service serves that path instead).
/// bench/compare_grpc.sh puts them side by side.
///
/// --calls N (client): exactly N calls instead of a time window: no warm-up,
/// --duration ignored, every call measured, and "duration_s" is how long
/// the N calls took. A fixed amount of work, for counting instructions per
/// call (bench/callgrind_per_call.sh, bench/callgrind_guard.sh).
///
/// --tls DIR: TLS on both ends (field "tls": "on"). The server makes throw-away
/// certificates in DIR (support/test_certs.h: a CA and a certificate for
/// 127.0.0.1) unless DIR/ca.pem exists; the client trusts DIR/ca.pem. Give
/// both the same DIR; the client connects once per run, so the handshake is
/// outside the measured window and the figures are the cost of the record
/// layer, with the cipher OpenSSL negotiates (TLS 1.3: AES-256-GCM by default).

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/client_interceptor.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/server_interceptor.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/connector.h>

#include "support/test_certs.h"

#include "bench_flags.h"
#include "bench_util.h"
#include "codec_bench.h"
#include "compression_flag.h"
#include "conn_scale.h"
#include "echo.wheelrpc.h"  // bench/peers/echo.proto, the gRPC peer's service
#include "link_proxy.h"
#include "overload.h"
#include "payload_gen.h"
#include "stream_bench.h"

namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace wb = wheelrpc::bench;
using boost::system::error_code;
using namespace std::chrono_literals;

#ifndef WHEELRPC_BENCH_VERSION
#define WHEELRPC_BENCH_VERSION "0.1.0"
#endif

constexpr std::string_view kSystem = "wheelrpc";
constexpr std::string_view kVersion = WHEELRPC_BENCH_VERSION;
/// The gRPC path of bench/peers/echo.proto's one method, which the server
/// also serves untyped and the client calls on the gRPC wire.
constexpr std::string_view kGrpcEchoPath = "/peers.echo.Echo/Echo";
/// The peers' per-call deadline (gRPC: 1 s).
constexpr std::chrono::milliseconds kDeadline = 1s;
/// "No deadline" with the current API: one that never fires during a run.
constexpr std::chrono::milliseconds kNoDeadline = wheelrpc::rpc::CallOptions::kNoDeadline;

using wb::Flags;
using wb::UsageError;
using wb::endpoint_of;

// ---- server --------------------------------------------------------------------

/// Safety net: exits after `secs` seconds (0 = never) even if the run script
/// that started us died. One extra, sleeping thread (as the peers).
void exit_after(double secs) {
  if (secs <= 0) return;
  std::thread([secs] {
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    std::_Exit(0);
  }).detach();
}

/// Writes the listening port for the run script, atomically (tmp + rename).
void write_port_file(const std::string& path, int port) {
  if (path.empty()) return;
  { std::ofstream(path + ".tmp") << port << "\n"; }
  std::filesystem::rename(path + ".tmp", path);
}

/// What --typed selects: off, or the form of the typed echo.
enum class Typed { off, coroutine, callback };

Typed typed_of(const Flags& flags) {
  if (!flags.has("typed")) return Typed::off;
  const std::string form = flags.str("typed", "");
  if (form == "1" || form == "coroutine") return Typed::coroutine;
  if (form == "callback") return Typed::callback;
  throw UsageError("--typed takes no value, or =callback (got '" + form + "')");
}

/// --typed: peers.echo.Echo in the coroutine form. The request is const, so
/// its payload is copied into the reply once (protobuf has no clean way to
/// move out of a const message).
class TypedEcho final : public peers::echo::Echo::Service {
  asio::awaitable<peers::echo::Blob> Echo(rpc::ServerContext&, const peers::echo::Blob& request) override {
    peers::echo::Blob reply;
    reply.set_payload(request.payload());
    co_return reply;
  }
};

/// --typed=callback: the CallbackService form, replying inline. The reply is
/// the request itself (same type): serialized straight from it, no copy.
class TypedCallbackEcho final : public peers::echo::Echo::CallbackService {
  void Echo(rpc::ServerContext&, const peers::echo::Blob& request,
            rpc::TypedResponder<peers::echo::Blob> responder) override {
    responder.reply(request);
  }
};

/// --interceptors N: no-op interceptors (each proceeds at once), what an
/// empty chain's absence saves measured against a chain's cost.
class NoopClientInterceptor final : public rpc::ClientInterceptor {
  void intercept(rpc::ClientCall&, rpc::InterceptorNext next) override { next.proceed(); }
};
class NoopServerInterceptor final : public rpc::ServerInterceptor {
  void intercept(rpc::ServerCall&, rpc::InterceptorNext next) override { next.proceed(); }
};
constexpr long long kMaxInterceptors = 64;

int server(const Flags& flags) {
  flags.check_known({"port", "port-file", "lifetime", "threads", "host", "heartbeat-ms", "no-metrics", "tls", "typed",
                     "interceptors", "stream-handlers", "compression", "load-reports"});
  const Typed typed = typed_of(flags);
  const auto ep = endpoint_of(flags.str("host", "127.0.0.1"), flags.integer("port", 0, 0, 65535));
  const auto threads = static_cast<int>(flags.integer("threads", 1, 1, 64));
  rpc::ServerOptions options;
  options.keepalive.heartbeat = std::chrono::milliseconds(flags.integer("heartbeat-ms", 15000, 1, 3'600'000));
  options.metrics = !flags.has("no-metrics");
  options.load_reports.enabled = flags.has("load-reports");
  for (long long i = flags.integer("interceptors", 0, 0, kMaxInterceptors); i > 0; --i) {
    options.interceptors.push_back(std::make_shared<NoopServerInterceptor>());
  }
  if (flags.has("compression")) {
    const auto reply = wb::parse_compression_flag(flags.str("compression", ""));
    options.compression.reply = reply.algorithm;
    options.compression.reply_level = reply.level;
  }
  if (flags.has("tls")) {
    const std::filesystem::path dir = flags.str("tls", "");
    if (dir.empty()) throw UsageError("--tls needs a directory");
    if (!std::filesystem::exists(dir / "ca.pem")) wheelrpc::support::make_test_pki(dir);
    options.tls.enabled = true;
    options.tls.cert_file = (dir / "server.pem").string();
    options.tls.key_file = (dir / "server.key").string();
  }
  exit_after(flags.seconds("lifetime", 0));
  wb::raise_open_file_limit();  // conn_scale checks the result in /proc/PID/limits

  TypedEcho typed_echo;  // registered only with --typed; they outlive the server
  TypedCallbackEcho typed_callback_echo;
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io(threads);
  rpc::Server srv(io.get_executor(), timer, options);
  const auto echo = [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); };
  srv.handle("echo", echo);
  // gRPC clients of echo.proto (grpc_echo client): their serialized Blob back.
  if (typed == Typed::off) srv.handle(std::string(kGrpcEchoPath), echo);
  if (typed == Typed::coroutine) srv.add_service(typed_echo);
  if (typed == Typed::callback) srv.add_service(typed_callback_echo);
  wb::register_stream_methods(srv, flags.str("stream-handlers", "callback"));  // the client's --stream
  if (const error_code ec = srv.listen(ep)) {
    std::fprintf(stderr, "rpc_bench server: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  write_port_file(flags.str("port-file", ""), srv.local_endpoint().port());
  std::vector<std::thread> extra;
  for (int i = 1; i < threads; ++i) extra.emplace_back([&io] { io.run(); });
  io.run();  // runs until killed (the acceptor always has work)
  for (auto& t : extra) t.join();
  return 0;
}

// ---- client --------------------------------------------------------------------

/// Settings and result of one closed-loop run; printed as one JSON line with
/// the peers' fields (bench/peers/peer_util.h EchoRun) plus "metrics".
struct EchoRun {
  std::string workload = "echo";
  int concurrency = 16;
  int payload = 64;
  double warmup_s = 1;
  double duration_s = 10;
  long long calls_limit = 0;  ///< --calls N: exactly N calls, no warm-up, no time window (0: off)
  long long deadline_ms = kDeadline.count();
  bool metrics = true;                   ///< ClientOptions::metrics (--no-metrics: off)
  bool tls = false;                      ///< --tls
  int interceptors = 0;                  ///< --interceptors N: no-op ones in the client's per-call chain
  bool outlier = false;                  ///< --outlier: ClientOptions::outlier_detection on
  bool load_aware = false;               ///< --load-aware: LoadBalance::load_aware
  std::string compression = "identity";  ///< --compression, as CompressionFlag::label
  std::string content = "fill";          ///< --content
  long long link_kbps = 0;               ///< --via-proxy-kbps (0: direct)
  std::string protocol = "native";       ///< --protocol: ClientOptions::protocol
  /// What crossed the wire (MethodStats::sent and received, whole run); -1: unknown.
  double wire_bytes_per_call = -1, ratio = -1, request_ratio = -1, reply_ratio = -1;
  pid_t server_pid = 0;
  wb::LatencyHistogram hist;  ///< latencies (ns) of successful calls completed inside the window
  std::uint64_t errors = 0;   ///< failed calls over the whole run (warm-up and drain included)
  double client_cpu_s = 0;
  double server_cpu_s = -1;  ///< CPU used during the measured window

  double server_cpu_now() const { return server_pid ? wb::other_process_cpu_s(server_pid) : -1; }
  static double delta(double before, double after) { return before < 0 || after < 0 ? -1 : after - before; }
  long server_threads() const {
    return server_pid ? wb::proc_status_field("/proc/" + std::to_string(server_pid) + "/status", "Threads") : -1;
  }

  /// CPU seconds over the window per call completed in it, in ns (-1: unknown).
  double per_call_ns(double cpu_s) const {
    return cpu_s < 0 || hist.count() == 0 ? -1 : cpu_s * 1e9 / static_cast<double>(hist.count());
  }

  void print() const {
    auto us = [](double ns) { return ns / 1e3; };
    wb::JsonLine()
        .str("system", kSystem)
        .str("version", kVersion)
        .str("workload", workload)
        .num("concurrency", concurrency)
        .num("payload_bytes", payload)
        .num("warmup_s", warmup_s, 1)
        .num("duration_s", duration_s, 1)
        .num("calls", hist.count())
        .num("calls_per_s", static_cast<double>(hist.count()) / duration_s, 0)
        .num("p50_us", us(hist.quantile(0.50)), 1)
        .num("p99_us", us(hist.quantile(0.99)), 1)
        .num("p999_us", us(hist.quantile(0.999)), 1)
        .num("max_us", us(static_cast<double>(hist.max())), 1)
        .num("errors", errors)
        .num("client_cpu_s", client_cpu_s, 2)
        .num("server_cpu_s", server_cpu_s, 2)
        .num("server_threads", server_threads())
        .num("deadline_ms", deadline_ms)
        .num("client_cpu_ns_per_call", per_call_ns(client_cpu_s), 0)
        .num("server_cpu_ns_per_call", per_call_ns(server_cpu_s), 0)
        .str("metrics", metrics ? "on" : "off")
        .str("tls", tls ? "on" : "off")
        .num("interceptors", interceptors)
        .str("outlier", outlier ? "on" : "off")
        .str("load_aware", load_aware ? "on" : "off")
        .str("compression", compression)
        .str("content", content)
        .num("link_kbps", link_kbps)
        .num("wire_bytes_per_call", wire_bytes_per_call, 1)
        .num("ratio", ratio, 3)
        .num("request_ratio", request_ratio, 3)
        .num("reply_ratio", reply_ratio, 3)
        .str("protocol", protocol)
        .print();
  }

  /// The wire fields, from the client's method stats (every method: the
  /// typed echo has its own name).
  void count_traffic(const std::vector<rpc::MethodStats>& stats) {
    rpc::PayloadTraffic sent, received;
    for (const auto& m : stats) {
      sent.messages += m.sent.messages;
      sent.bytes += m.sent.bytes;
      sent.wire_bytes += m.sent.wire_bytes;
      received.bytes += m.received.bytes;
      received.wire_bytes += m.received.wire_bytes;
    }
    if (sent.messages == 0) return;
    const double wire = static_cast<double>(sent.wire_bytes + received.wire_bytes);
    wire_bytes_per_call = wire / static_cast<double>(sent.messages);
    ratio = wire > 0 ? static_cast<double>(sent.bytes + received.bytes) / wire : -1;
    request_ratio = sent.ratio();
    reply_ratio = received.ratio();
  }
};

/// Latency stamps: the timer's cheap steady clock (TSC-based where the kernel
/// trusts the TSC; the same time base as steady_clock), so measuring costs the
/// client little: two readings per call.
inline std::int64_t stamp_ns() noexcept { return wb::to_ns(wheelrpc::timer::fast_steady_now()); }

/// The untyped call's method and request: `echo` with the payload itself,
/// or on the gRPC wire echo.proto's method with the payload as a serialized
/// Blob (its field 1); the sequence number goes at `seq_offset`.
struct UntypedEcho {
  std::string method;
  std::string request;
  std::size_t seq_offset = 0;

  static UntypedEcho native(const std::string& payload) { return {"echo", payload, 0}; }
  /// Blob{payload}: the tag of field 1 (length-delimited), the length as a varint, the bytes.
  static UntypedEcho grpc_blob(const std::string& payload) {
    std::string request(1, '\x0a');
    for (std::size_t n = payload.size();; n >>= 7) {
      if (n < 0x80) {
        request.push_back(static_cast<char>(n));
        break;
      }
      request.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    const std::size_t offset = request.size();
    request += payload;
    return {std::string(kGrpcEchoPath), std::move(request), offset};
  }
};

/// Keeps C calls in flight; all of it runs on the one thread running `io`.
/// kTyped: through the generated stub of bench/peers/echo.proto (--typed),
/// else Client::async_call(untyped.method) as always.
template <bool kTyped>
class LoadClient {
 public:
  /// Every payload is `payload` (typed), or `untyped.request`, with the
  /// call's sequence number over 8 bytes (the first of the payload);
  /// `compression`, when set, goes on every call.
  LoadClient(rpc::Client& client, EchoRun& run, std::chrono::milliseconds deadline, std::int64_t t_measure,
             std::int64_t t_end, const std::string& payload, const UntypedEcho& untyped,
             std::optional<wb::CompressionFlag> compression)
      : client_(client),
        stub_(client),
        run_(run),
        deadline_(deadline),
        t_measure_(t_measure),
        t_end_(t_end),
        method_(untyped.method),
        payload_(kTyped ? payload.size() : untyped.request.size()),
        template_(kTyped ? payload : untyped.request),
        seq_offset_(kTyped ? 0 : untyped.seq_offset),
        compression_(compression),
        limit_(static_cast<std::uint64_t>(run.calls_limit)) {}

  std::function<void()> on_done;

  void start() {
    for (int i = 0; i < run_.concurrency && may_issue(); ++i) issue();
  }

 private:
  /// --calls N: no more than N calls in all.
  bool may_issue() const { return limit_ == 0 || next_seq_ < limit_; }

  void issue() {
    const std::uint64_t seq = next_seq_++;
    if constexpr (kTyped) {
      peers::echo::Blob request;
      std::string& payload = *request.mutable_payload();
      payload.assign(template_);
      std::memcpy(payload.data(), &seq, sizeof seq);
      rpc::CallOptions options;
      options.timeout = deadline_;
      set_compression(options);
      ++outstanding_;
      const std::int64_t sent = stamp_ns();
      // The full error message would need CallOptions::reply_info (an
      // allocation per call): a failure reports the error code's message.
      stub_.async_Echo(request, std::move(options), [this, seq, sent](error_code ec, peers::echo::Blob r) {
        on_reply(seq, sent, ec, r.payload(), kNoMessage);
      });
    } else {
      std::string payload(template_);
      std::memcpy(payload.data() + seq_offset_, &seq, sizeof seq);
      rpc::CallOptions options;
      options.timeout = deadline_;
      set_compression(options);
      ++outstanding_;
      const std::int64_t sent = stamp_ns();
      client_.async_call(
          method_, std::move(payload), std::move(options),
          [this, seq, sent](error_code ec, rpc::Response r) { on_reply(seq, sent, ec, r.payload, r.error_message); });
    }
  }

  void set_compression(rpc::CallOptions& options) const {
    if (!compression_) return;  // left alone: the default path, exactly as before
    options.compression = compression_->algorithm;
    options.compression_level = compression_->level;
  }

  void on_reply(std::uint64_t seq, std::int64_t sent, const error_code& ec, const std::string& payload,
                const std::string& error_message) {
    const std::int64_t now = stamp_ns();
    --outstanding_;
    std::uint64_t got = ~seq;
    if (payload.size() >= seq_offset_ + sizeof got) std::memcpy(&got, payload.data() + seq_offset_, sizeof got);
    if (ec || payload.size() != payload_ || got != seq) {
      if (run_.errors++ == 0) {
        std::fprintf(stderr, "rpc_bench client: first error: %s\n",
                     ec ? (error_message.empty() ? ec.message() : error_message).c_str()
                        : "the reply does not match the request");
      }
    } else if (now >= t_measure_ && now < t_end_) {
      run_.hist.record(static_cast<std::uint64_t>(now - sent));
    }
    if (now < t_end_ && may_issue()) {
      issue();  // closed loop: one new call per completion
    } else if (outstanding_ == 0 && on_done) {
      on_done();  // past the window and fully drained
    }
  }

  inline static const std::string kNoMessage;

  rpc::Client& client_;
  peers::echo::Echo::Stub stub_;
  EchoRun& run_;
  const std::chrono::milliseconds deadline_;
  const std::int64_t t_measure_, t_end_;
  const std::string method_;
  const std::size_t payload_;
  const std::string template_;
  const std::size_t seq_offset_;
  const std::optional<wb::CompressionFlag> compression_;
  const std::uint64_t limit_;  ///< --calls (0: no limit)
  std::uint64_t next_seq_ = 0;
  int outstanding_ = 0;
};

int client(const Flags& flags) {
  if (flags.has("stream")) return wb::stream_client(flags);
  flags.check_known({"port", "concurrency", "payload", "warmup", "duration", "server-pid", "no-deadline", "host",
                     "no-metrics", "tls", "typed", "interceptors", "compression", "content", "via-proxy-kbps",
                     "protocol", "calls", "outlier", "load-aware"});
  EchoRun run;
  run.concurrency = static_cast<int>(flags.integer("concurrency", 16, 1, 65536));
  run.payload = static_cast<int>(flags.integer("payload", 64, 8, 16 << 20));
  run.warmup_s = flags.seconds("warmup", 1);
  run.duration_s = flags.seconds("duration", 10);
  run.calls_limit = flags.integer("calls", 0, 0, 1'000'000'000'000LL);
  if (run.calls_limit > 0) run.warmup_s = 0;  // every call is measured; --duration is ignored
  run.server_pid = static_cast<pid_t>(flags.integer("server-pid", 0, 0, 1 << 30));
  const bool no_deadline = flags.has("no-deadline");
  if (no_deadline) {
    run.workload = "echo_no_deadline";
    run.deadline_ms = 0;
  }
  const Typed typed = typed_of(flags);
  if (typed != Typed::off) {
    run.workload = typed == Typed::callback ? "echo_typed_callback" : "echo_typed";
    if (no_deadline) run.workload += "_no_deadline";
  }
  if (!(run.duration_s > 0)) throw UsageError("--duration must be > 0");
  const auto server_ep = endpoint_of(flags.str("host", "127.0.0.1"), flags.integer("port", 0, 1, 65535));
  std::optional<wb::CompressionFlag> compression;
  if (flags.has("compression")) {
    compression = wb::parse_compression_flag(flags.str("compression", ""));
    run.compression = compression->label();
  }
  const auto content = wb::parse_content(flags.str("content", "fill"));
  if (!content) throw UsageError("--content takes fill|json|proto|random|zeros");
  run.content = std::string(wb::to_string(*content));
  const std::string payload = wb::make_payload(*content, static_cast<std::size_t>(run.payload));
  run.link_kbps = flags.integer("via-proxy-kbps", 0, 0, 100'000'000);
  std::optional<wb::LinkProxy> link;  // --via-proxy-kbps: outlives the client
  if (run.link_kbps > 0) link.emplace(server_ep, static_cast<std::uint64_t>(run.link_kbps));
  const auto ep = link ? link->endpoint() : server_ep;

  asio::io_context io(1);
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the client
  rpc::ClientOptions client_options;
  run.protocol = flags.str("protocol", "native");
  if (run.protocol == "grpc") {
    client_options.protocol = rpc::WireProtocol::grpc;
  } else if (run.protocol != "native") {
    throw UsageError("--protocol takes native|grpc (got '" + run.protocol + "')");
  }
  client_options.metrics = run.metrics = !flags.has("no-metrics");
  client_options.outlier_detection.enabled = run.outlier = flags.has("outlier");
  if (flags.has("load-aware")) client_options.load_balance = rpc::LoadBalance::load_aware;
  run.load_aware = flags.has("load-aware");
  run.interceptors = static_cast<int>(flags.integer("interceptors", 0, 0, kMaxInterceptors));
  for (int i = 0; i < run.interceptors; ++i) {
    client_options.interceptors.push_back(std::make_shared<NoopClientInterceptor>());
  }
  if (flags.has("tls")) {
    run.tls = client_options.tls.enabled = true;
    client_options.tls.ca_file = (std::filesystem::path(flags.str("tls", "")) / "ca.pem").string();
  }
  rpc::Client client(io.get_executor(), timer, {ep}, client_options);

  const std::int64_t t0 = wb::now_ns();
  const std::int64_t t_measure = t0 + static_cast<std::int64_t>(run.warmup_s * 1e9);
  // --calls: no time window; the run ends after its N calls (the watchdog after an hour).
  const std::int64_t t_end = run.calls_limit > 0 ? t0 + static_cast<std::int64_t>(3600e9)
                                                 : t_measure + static_cast<std::int64_t>(run.duration_s * 1e9);
  const auto deadline = no_deadline ? kNoDeadline : kDeadline;
  const UntypedEcho untyped = client_options.protocol == rpc::WireProtocol::grpc ? UntypedEcho::grpc_blob(payload)
                                                                                 : UntypedEcho::native(payload);
  LoadClient<false> load(client, run, deadline, t_measure, t_end, payload, untyped, compression);
  LoadClient<true> typed_load(client, run, deadline, t_measure, t_end, payload, untyped, compression);  // --typed

  // CPU samples at the window's edges; a watchdog stops everything if calls stall.
  double c0 = 0, s0 = -1;
  asio::steady_timer at_measure(io, std::chrono::nanoseconds(t_measure - wb::now_ns()));
  at_measure.async_wait([&](error_code) {
    c0 = wb::process_cpu_s();
    s0 = run.server_cpu_now();
  });
  asio::steady_timer at_end(io, std::chrono::nanoseconds(t_end - wb::now_ns()));
  at_end.async_wait([&](error_code ec) {
    if (ec) return;  // cancelled: --calls ended the run first
    run.client_cpu_s = wb::process_cpu_s() - c0;
    run.server_cpu_s = EchoRun::delta(s0, run.server_cpu_now());
  });
  asio::steady_timer watchdog(io, std::chrono::nanoseconds(t_end - wb::now_ns()) + 5s);
  watchdog.async_wait([&](error_code ec) {
    if (ec) return;
    std::fprintf(stderr, "rpc_bench client: watchdog fired (calls still in flight 5 s after the window)\n");
    ++run.errors;
    io.stop();
  });

  load.on_done = typed_load.on_done = [&] {
    watchdog.cancel();
    if (run.calls_limit > 0) {  // the window was the whole run, ending now
      at_end.cancel();
      run.client_cpu_s = wb::process_cpu_s() - c0;
      run.server_cpu_s = EchoRun::delta(s0, run.server_cpu_now());
      run.duration_s = static_cast<double>(wb::now_ns() - t_measure) / 1e9;
    }
    run.count_traffic(client.method_stats());
    client.close();  // releases the io_context
  };
  asio::post(io, [&] { typed == Typed::off ? load.start() : typed_load.start(); });
  io.run();  // returns once drained, closed and every timer has completed
  run.print();
  return run.errors ? 1 : 0;
}

int usage(const char* problem) {
  if (problem && *problem) std::fprintf(stderr, "rpc_bench: %s\n", problem);
  std::fprintf(stderr,
               "usage: rpc_bench server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--threads N]\n"
               "                        [--heartbeat-ms 15000] [--no-metrics] [--tls DIR] [--typed[=callback]]\n"
               "                        [--interceptors N] [--stream-handlers callback|coroutine]\n"
               "                        [--compression ALG[:LEVEL]]\n"
               "       rpc_bench client --port N [--concurrency 16] [--payload 64] [--warmup 1] [--duration 10]\n"
               "                        [--server-pid PID] [--no-deadline] [--host 127.0.0.1] [--no-metrics]\n"
               "                        [--tls DIR] [--typed[=callback]] [--interceptors N]\n"
               "                        [--compression identity|zstd|lz4|gzip|deflate[:LEVEL]]\n"
               "                        [--content fill|json|proto|random|zeros] [--via-proxy-kbps N]\n"
               "                        [--protocol native|grpc] [--calls N]\n"
               "       rpc_bench client --port N --stream echo|oneway|idle [--streams 1] [--payload 64]\n"
               "                        [--warmup 1] [--duration 10] [--server-pid PID] [--host 127.0.0.1]\n"
               "       rpc_bench conn_scale [--connections 1000] [--heartbeat-ms 1000] [--duration-s 20]\n"
               "                        [--batch 200] [--ready-timeout-s 120] [--port N [--server-pid PID]]\n"
               "                        [--host 127.0.0.1]\n"
               "       rpc_bench overload [--load 1,2,4] [--no-limiter] [--no-admission] [--cost-us 100]\n"
               "                        [--handler-threads 1] [--deadline-ms 100] [--warmup 1] [--duration 5]\n"
               "                        [--capacity CALLS_PER_S]\n"
               "       rpc_bench codec [--compression zstd:1,zstd:3,zstd:9,lz4:1,lz4:9,gzip:1,gzip:6,deflate:6]\n"
               "                        [--content json,proto] [--payload 4096,65536] [--duration 1]\n"
               "                        [--iterations N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "server") return server(Flags(argc, argv, {"no-metrics", "typed", "load-reports"}));
    if (mode == "client")
      return client(Flags(argc, argv, {"no-deadline", "no-metrics", "typed", "outlier", "load-aware"}));
    if (mode == "conn_scale") return wb::conn_scale(Flags(argc, argv, {}));
    if (mode == "overload") return wb::overload(Flags(argc, argv, {"no-limiter", "no-admission"}));
    if (mode == "codec") return wb::codec_bench(Flags(argc, argv, {}));
  } catch (const UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rpc_bench %s: %s\n", std::string(mode).c_str(), e.what());
    return 1;
  }
  return usage("");
}
