// The load generator's flags (Config) and usage text.
#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/frame.h>

#include "load/config.h"
#include "support/flags.h"
#include "support/host_port.h"
#include "support/tls_flags.h"

namespace wheelrpc::examples::load {

namespace {

namespace asio = boost::asio;

/// The usage text (--help).
constexpr const char* kUsage =
    "usage: echo_client (--server HOST:PORT[,HOST:PORT...] | --registry etcd://HOST:PORT[,...] --service NAME)\n"
    "                   (--calls N | --duration-s S)\n"
    "                   [--concurrency C] [--timeout-ms T] [--payload-bytes B]\n"
    "                   [--method echo|sleep|count|sum|chat] [--sleep-ms X] [--report-interval-ms I]\n"
    "                   [--streams N] [--count N] [--interval-ms I] [--stream-timeout-ms T]\n"
    "                   [--message-timeout-ms T] [--stall-timeout-ms T]\n"
    "                   [--json] [--heartbeat-ms H] [--idle-timeout-ms I]\n"
    "                   [--retries N] [--idempotent] [--lb round_robin|least_active|p2c|load_aware]\n"
    "                   [--outlier] [--outlier-interval-ms I] [--outlier-base-ms B] [--outlier-max-ms M]\n"
    "                   [--outlier-max-percent P] [--outlier-consecutive N] [--outlier-failure-percent P]\n"
    "                   [--outlier-relative-floor P] [--outlier-factor F] [--outlier-latency-gap-ms G]\n"
    "                   [--outlier-min-requests N] [--retry-budget-ratio R] [--no-tcp-user-timeout]\n"
    "                   [--warmup-s W]\n"
    "                   [--hedge-ms H] [--fail-on-error] [--admin-port A]\n"
    "                   [--tls-ca F [--tls-cert F --tls-key F] [--tls-server-name N]]\n"
    "                   [--protocol native|grpc] [--compression none|zstd|lz4|gzip|deflate[:LEVEL]]\n"
    "                   [--bearer-token T] [--application NAME] [--tag NAME[,NAME...]]...\n"
    "  --server          servers to call, chosen per attempt by --lb\n"
    "                    (e.g. 127.0.0.1:7001,127.0.0.1:7002); host names are resolved,\n"
    "                    every address a name has is a server, and names are resolved\n"
    "                    again every 30 s and after a failed connect\n"
    "  --registry URL    follow the providers of --service in etcd instead\n"
    "                    (etcd://127.0.0.1:2379[,HOST:PORT...])\n"
    "  --service NAME    the service to follow (with --registry), and its runtime rules\n"
    "                    (<root>/NAME/rules/ in etcd: overrides of timeouts, retries, ...)\n"
    "  --application NAME  this client's name for the rules' scopes (default echo_client)\n"
    "  --tag NAME[,NAME...]  this client's tags for the rules' scopes (repeatable); the\n"
    "                    first is also the routing tag its calls carry (baggage\n"
    "                    wheelrpc-tag; tag rules send them to providers with that tag)\n"
    "  --calls N         issue N calls in total, or\n"
    "  --duration-s S    keep issuing for S seconds (decimals allowed)\n"
    "  --concurrency C   calls in flight at once (default 1)\n"
    "  --timeout-ms T    deadline of each call (default 1000)\n"
    "  --payload-bytes B size of an echo payload (default 64; at most the request\n"
    "                    body limit, 8 MiB, less the method and framing)\n"
    "  --method M        echo (default) or sleep (payload = --sleep-ms); or a stream:\n"
    "                    count (the server sends --count messages, --interval-ms apart),\n"
    "                    sum (the client sends --count numbers, the server answers their sum),\n"
    "                    chat (the client sends --count messages, the server echoes each)\n"
    "  --streams N       streams at once (default 1); each runs once, or, with\n"
    "                    --duration-s, is opened again until the time is up (a stream\n"
    "                    running then runs to its end); --timeout-ms bounds each opening\n"
    "  --count N         messages per stream (default 10)\n"
    "  --interval-ms I   between a stream's messages (count: the server's; sum, chat:\n"
    "                    the client's writes; default 0)\n"
    "  --stream-timeout-ms T   the whole stream's deadline (default 0 = none)\n"
    "  --message-timeout-ms T  end a stream that received no message for T ms (default 0 = off)\n"
    "  --stall-timeout-ms T    end a stream whose write waited T ms for credit (default 0 = off)\n"
    "                    (--streams, --count, --interval-ms and these three are for\n"
    "                    streams: a usage error with --method echo or sleep)\n"
    "  --sleep-ms X      how long the server sleeps per sleep call (default 0)\n"
    "  --report-interval-ms I  progress every I ms (default 1000)\n"
    "  --json            JSON lines instead of text\n"
    "  --heartbeat-ms H  heartbeat interval proposed to the server (default 15000);\n"
    "                    each connection agrees on the LARGER of the client's and\n"
    "                    the server's proposals in its HELLO, so a server's shorter\n"
    "                    --heartbeat-ms is raised to this one; the summary prints the\n"
    "                    agreed interval\n"
    "  --idle-timeout-ms I  reconnect a connection that read nothing for I ms\n"
    "                    (default 0 = 3 x the agreed heartbeat; else at least 2 x H)\n"
    "  --retries N       further attempts after a failed one, 0..16 (default 2)\n"
    "  --idempotent      calls may run more than once: timeouts are retried, hedging allowed\n"
    "  --lb P            how each attempt picks its server: round_robin (default),\n"
    "                    least_active, p2c, or load_aware (weighted round robin by each\n"
    "                    server's capacity: its load reports, echo_server --load-reports,\n"
    "                    blended with this client's latency to it; docs/load_balancing.md)\n"
    "  --outlier         eject servers that fail or lag behind their peers\n"
    "                    (ClientOptions::outlier_detection, its defaults; any --outlier-*\n"
    "                    flag implies it): judged every --outlier-interval-ms (1000),\n"
    "                    ejected for --outlier-base-ms (30000) doubling on repeat up to\n"
    "                    --outlier-max-ms (300000), at most --outlier-max-percent (50) of\n"
    "                    the servers at once; ejected after --outlier-consecutive (5)\n"
    "                    failures in a row, at --outlier-failure-percent (50) failed in an\n"
    "                    interval, at --outlier-relative-floor (10) percent failed and\n"
    "                    --outlier-factor (3.0) times its peers' median, or a mean latency\n"
    "                    --outlier-factor times its peers' and --outlier-latency-gap-ms (10)\n"
    "                    above it; with at least --outlier-min-requests (10) attempts\n"
    "                    in the interval. 0 turns a check off\n"
    "  --warmup-s W      with --duration-s: the first W seconds are a warm-up; the latencies\n"
    "                    count only the calls after it, and the JSON summary's\n"
    "                    after_warmup has the rate and each server's attempts after it\n"
    "  --retry-budget-ratio R  retries and hedges allowed per call over 10 s, 0..10\n"
    "                    (default 0.2; RetryOptions::budget_ratio)\n"
    "  --no-tcp-user-timeout   leave TCP_USER_TIMEOUT unset (ClientOptions::tcp_user_timeout)\n"
    "  --hedge-ms H      with --idempotent: start a backup attempt on another server\n"
    "                    when no reply came within H ms (default 0 = off)\n"
    "  --fail-on-error   exit 1 if any call failed (timed out, failed, wrong reply);\n"
    "                    without it, only a run in which no call succeeded exits 1\n"
    "  --admin-port A    serve the admin pages and /metrics of this client on\n"
    "                    http://127.0.0.1:A while it runs (0 = pick a free port);\n"
    "                    prints \"admin on http://127.0.0.1:PORT\"\n"
    "  --tls-ca F        speak TLS; verify the server's certificate against the PEM\n"
    "                    CA certificates in F\n"
    "  --tls-cert F      present the PEM client certificate F (with --tls-key; mTLS)\n"
    "  --tls-key F       the PEM private key of --tls-cert\n"
    "  --tls-server-name N  the name the server's certificate must carry (a DNS name\n"
    "                    or an IP address; default: each server's IP address)\n"
    "  --protocol P      native (default: wheelrpc's framed protocol) or grpc (gRPC over\n"
    "                    HTTP/2, which echo_server serves on the same port; docs/grpc.md)\n"
    "  --compression C   compress what the client sends, each request's payload and\n"
    "                    each stream message (CallOptions::compression): none (default;\n"
    "                    or identity), zstd, lz4, gzip or deflate, with :LEVEL for a level\n"
    "                    (e.g. zstd:9; default the algorithm's own). Only payloads of at\n"
    "                    least 1024 bytes that shrink go compressed (see --payload-bytes),\n"
    "                    and echo_server answers in kind on the native wire; with\n"
    "                    --protocol grpc, gzip and deflate only (replies: docs/grpc.md).\n"
    "                    echo_server's /metrics count them\n"
    "                    (wheelrpc_server_payloads_compressed_total)\n"
    "  --bearer-token T  send the metadata \"authorization: Bearer T\" with every call and\n"
    "                    stream (rpc::BearerTokenInterceptor), for echo_server\n"
    "                    --bearer-token; a refused one fails with UNAUTHENTICATED\n"
    "  -h, --help        print this text and exit 0\n"
    "  --version         print the version (\"echo_client (wheelrpc) X.Y.Z\") and exit 0\n"
    "Flags take their value as --flag V or --flag=V.\n"
    "SIGINT or SIGTERM: stop issuing, wait for the calls in flight, print the summary;\n"
    "a second one exits at once with status 128 + the signal (130 for SIGINT).\n"
    "Exit status: 0 if at least one call succeeded (failed calls are reported, not\n"
    "fatal, unless --fail-on-error); 1 if no call succeeded, a call was lost or\n"
    "completed twice, or (--fail-on-error) any call failed; 2 usage error; 130 on\n"
    "a second SIGINT. Streams (count, sum, chat): 1 if any stream failed (an error,\n"
    "wrong data), was lost or ended twice, else 0.\n";

/// A number in [0, hi], decimals allowed.
std::optional<double> parse_ratio(const std::string& text, double hi) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !(v >= 0) || v > hi) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// --outlier and --outlier-*: ClientOptions::outlier_detection (any of them
/// turns it on).
void add_outlier_flags(wheelrpc::examples::FlagParser& flags, Config& cfg) {
  constexpr long long kDay = 86'400'000;
  auto& o = cfg.outlier;
  auto ms = [&o](std::chrono::milliseconds& field) {
    return [&o, &field](long long v) {
      o.enabled = true;
      field = std::chrono::milliseconds(v);
    };
  };
  auto count = [&o](unsigned& field) {
    return [&o, &field](long long v) {
      o.enabled = true;
      field = static_cast<unsigned>(v);
    };
  };
  flags.add_switch("--outlier", [&o] { o.enabled = true; })
      .add_number("--outlier-interval-ms", 1, kDay, ms(o.interval))
      .add_number("--outlier-base-ms", 1, kDay, ms(o.base_ejection_time))
      .add_number("--outlier-max-ms", 1, kDay, ms(o.max_ejection_time))
      .add_number("--outlier-latency-gap-ms", 0, kDay, ms(o.latency_gap), "0 = no latency check")
      .add_number("--outlier-max-percent", 0, 100, count(o.max_ejection_percent))
      .add_number("--outlier-consecutive", 0, 1'000'000, count(o.consecutive_failures), "0 = off")
      .add_number("--outlier-failure-percent", 0, 100, count(o.failure_percentage), "0 = off")
      .add_number("--outlier-relative-floor", 0, 100, count(o.relative_failure_floor), "0 = off")
      .add_number("--outlier-min-requests", 1, 1'000'000, count(o.minimum_requests))
      .add_value("--outlier-factor", [&o](const std::string& value) -> std::optional<std::string> {
        const auto f = parse_ratio(value, 1000.0);
        if (!f || *f < 1.5) return "expected a number 1.5..1000, got '" + value + "'";
        o.enabled = true;
        o.relative_factor = *f;
        return std::nullopt;
      });
}

/// A positive number of seconds, decimals allowed, at most a day.
std::optional<double> parse_seconds(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !(v > 0) || v > 86'400) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// "a:1,b:2" -> endpoints (IP literals and localhost) and `targets` (every
/// item as given, for resolution when one is a host name); the bad entry in
/// `bad` on failure.
bool parse_servers(const std::string& list, std::vector<asio::ip::tcp::endpoint>& out,
                   std::vector<std::string>& targets, std::string& bad) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    asio::ip::tcp::endpoint ep;
    if (wheelrpc::transport::parse_endpoint(item, ep) && ep.port() != 0) {
      out.push_back(ep);
    } else if (!is_host_port(item)) {
      bad = item;
      return false;
    }
    targets.push_back(item);
    start = comma + 1;
  }
  return !targets.empty();
}

constexpr long long kDayMs = 86'400'000;

/// The largest echo payload whose request fits the body limit
/// (ChannelOptions::max_body, which the client's own options and the
/// server's default share): the client refuses a larger request
/// ("request body of N bytes exceeds the limit"), since the server would
/// close the connection on it. The body is the method name and its framing,
/// then the payload.
long long max_echo_payload() {
  transport::Frame f;
  f.method = "echo";
  const std::size_t overhead = transport::encoded_size(f) - transport::kHeaderSize;
  return static_cast<long long>(rpc::ClientOptions{}.channel.max_body) - static_cast<long long>(overhead);
}

}  // namespace

std::optional<int> parse_args(int argc, char** argv, Config& cfg) {
  using Problem = std::optional<std::string>;
  const long long max_payload = max_echo_payload();
  const long long body_limit = rpc::ClientOptions{}.channel.max_body;
  FlagParser flags("echo_client", kUsage);
  // The stream-only flags given, in order: an error with a method that makes calls.
  std::vector<std::string> stream_flags;
  auto stream_number = [&](const char* name, long long lo, long long hi, std::function<void(long long)> set) {
    flags.add_number(name, lo, hi, [&stream_flags, name, set = std::move(set)](long long v) {
      stream_flags.emplace_back(name);
      set(v);
    });
  };
  flags.add_switch("--json", [&] { cfg.json = true; })
      .add_switch("--idempotent", [&] { cfg.given.idempotent = cfg.idempotent = true; })
      .add_switch("--fail-on-error", [&] { cfg.fail_on_error = true; })
      .add_number("--admin-port", 0, 65535, [&](long long v) { cfg.admin_port = static_cast<int>(v); })
      .add_value("--server",
                 [&](const std::string& value) -> Problem {
                   std::string bad;
                   if (parse_servers(value, cfg.servers, cfg.server_targets, bad)) return std::nullopt;
                   return "invalid server endpoint '" + bad +
                          "': expected HOST:PORT with a host name or an IPv4/IPv6 literal and a port 1..65535, "
                          "e.g. 127.0.0.1:7001, [::1]:7001 or echo.example.com:7001";
                 })
      .add_value("--registry",
                 [&](const std::string& value) -> Problem {
                   if (value.empty()) return "expected etcd://HOST:PORT[,HOST:PORT...]";
                   cfg.registry = value;
                   return std::nullopt;
                 })
      .add_value("--service",
                 [&](const std::string& value) -> Problem {
                   if (value.empty()) return "expected a service name";
                   cfg.service = value;
                   return std::nullopt;
                 })
      .add_number("--calls", 1, 1'000'000'000'000LL, [&](long long v) { cfg.calls = static_cast<std::uint64_t>(v); })
      .add_value("--duration-s",
                 [&](const std::string& value) -> Problem {
                   cfg.duration_s = parse_seconds(value);
                   if (cfg.duration_s) return std::nullopt;
                   return "expected a number of seconds, more than 0 and at most 86400, got '" + value + "'";
                 })
      .add_number("--concurrency", 1, 1'000'000, [&](long long v) { cfg.concurrency = static_cast<std::size_t>(v); })
      .add_number("--timeout-ms", 1, kDayMs,
                  [&](long long v) { cfg.given.timeout = cfg.timeout = std::chrono::milliseconds(v); })
      .add_number(
          "--payload-bytes", 0, max_payload, [&](long long v) { cfg.payload_bytes = static_cast<std::size_t>(v); },
          "a request body is at most " + std::to_string(body_limit) + " bytes (ChannelOptions::max_body), " +
              std::to_string(body_limit - max_payload) + " of them the method name and framing")
      .add_value("--method",
                 [&](const std::string& value) -> Problem {
                   if (value != "echo" && value != "sleep" && value != "count" && value != "sum" && value != "chat") {
                     return "expected echo, sleep, count, sum or chat, got '" + value + "'";
                   }
                   cfg.method = value;
                   return std::nullopt;
                 })
      .add_number("--sleep-ms", 0, kDayMs, [&](long long v) { cfg.sleep_ms = v; })
      .add_number("--report-interval-ms", 1, kDayMs,
                  [&](long long v) { cfg.report_interval = std::chrono::milliseconds(v); })
      .add_number("--heartbeat-ms", 1, kDayMs, [&](long long v) { cfg.heartbeat = std::chrono::milliseconds(v); })
      .add_number("--idle-timeout-ms", 1, kDayMs, [&](long long v) { cfg.idle_timeout = std::chrono::milliseconds(v); })
      .add_number("--retries", 0, rpc::CallOptions::kMaxRetries,
                  [&](long long v) { cfg.given.retries = cfg.retries = static_cast<int>(v); })
      .add_value("--protocol",
                 [&](const std::string& value) -> Problem {
                   if (value == "native") {
                     cfg.protocol = rpc::WireProtocol::native;
                   } else if (value == "grpc") {
                     cfg.protocol = rpc::WireProtocol::grpc;
                   } else {
                     return "expected native or grpc, got '" + value + "'";
                   }
                   return std::nullopt;
                 })
      .add_value("--compression",
                 [&](const std::string& value) -> Problem {
                   if (transport::parse_compression_spec(value, cfg.compression, cfg.compression_level)) {
                     return std::nullopt;
                   }
                   return "expected none, zstd, lz4, gzip or deflate, optionally with :LEVEL (e.g. zstd:9), got '" +
                          value + "'";
                 })
      .add_value("--application",
                 [&](const std::string& value) -> Problem {
                   if (value.empty()) return "expected an application name, got an empty one";
                   cfg.application = value;
                   return std::nullopt;
                 })
      .add_value("--tag",
                 [&](const std::string& value) -> Problem {
                   std::size_t start = 0;
                   while (start <= value.size()) {
                     const auto comma = std::min(value.find(',', start), value.size());
                     if (comma == start) return "expected NAME[,NAME...], got '" + value + "'";
                     if (!wheelrpc::rpc::RoutingTag::make(value.substr(start, comma - start))) {
                       return "'" + value.substr(start, comma - start) +
                              "' is not a tag: 1..64 characters of [A-Za-z0-9._-]";
                     }
                     cfg.tags.push_back(value.substr(start, comma - start));
                     start = comma + 1;
                   }
                   return std::nullopt;
                 })
      .add_value("--bearer-token",
                 [&](const std::string& value) -> Problem {
                   if (value.empty()) return "expected a token, got an empty one";
                   cfg.bearer_token = value;
                   return std::nullopt;
                 })
      .add_value("--lb",
                 [&](const std::string& value) -> Problem {
                   const auto lb = rpc::parse_load_balance(value);
                   if (!lb) return "expected round_robin, least_active, p2c or load_aware, got '" + value + "'";
                   cfg.load_balance = *lb;
                   return std::nullopt;
                 })
      .add_number(
          "--hedge-ms", 0, kDayMs,
          [&](long long v) { cfg.given.hedge_delay = cfg.hedge_delay = std::chrono::milliseconds(v); },
          "0 = no hedging");
  add_outlier_flags(flags, cfg);
  flags.add_value("--warmup-s", [&](const std::string& value) -> Problem {
    cfg.warmup_s = parse_seconds(value);
    if (cfg.warmup_s) return std::nullopt;
    return "expected seconds > 0 (at most 86400), got '" + value + "'";
  });
  flags.add_value("--retry-budget-ratio", [&](const std::string& value) -> Problem {
    const auto r = parse_ratio(value, 10.0);
    if (!r) return "expected a number 0..10, got '" + value + "'";
    cfg.retry_budget_ratio = *r;
    return std::nullopt;
  });
  flags.add_switch("--no-tcp-user-timeout", [&] { cfg.tcp_user_timeout = false; });
  stream_number("--streams", 1, 100'000, [&](long long v) { cfg.streams = static_cast<std::size_t>(v); });
  stream_number("--count", 0, 1'000'000'000, [&](long long v) { cfg.count = static_cast<std::uint64_t>(v); });
  stream_number("--interval-ms", 0, kDayMs, [&](long long v) { cfg.interval = std::chrono::milliseconds(v); });
  stream_number("--stream-timeout-ms", 0, kDayMs,
                [&](long long v) { cfg.given.stream_timeout = cfg.stream_timeout = std::chrono::milliseconds(v); });
  stream_number("--message-timeout-ms", 0, kDayMs,
                [&](long long v) { cfg.given.message_timeout = cfg.message_timeout = std::chrono::milliseconds(v); });
  stream_number("--stall-timeout-ms", 0, kDayMs,
                [&](long long v) { cfg.given.stall_timeout = cfg.stall_timeout = std::chrono::milliseconds(v); });
  add_tls_flags(flags, cfg.tls, transport::TlsRole::client);
  if (const auto status = flags.parse(argc, argv)) return status;
  if (auto problem = finish_tls_flags(cfg.tls, transport::TlsRole::client)) return flags.usage_error(*problem);

  if (cfg.server_targets.empty() && cfg.registry.empty()) return flags.usage_error("--server is required");
  if (!cfg.server_targets.empty() && !cfg.registry.empty()) {
    return flags.usage_error("give only one of --server and --registry");
  }
  if (!cfg.registry.empty() && cfg.service.empty()) return flags.usage_error("--registry needs --service");
  if (cfg.registry.empty() && !cfg.service.empty()) return flags.usage_error("--service needs --registry");
  // Every target an IP literal (or localhost): a fixed list, no resolution.
  if (cfg.servers.size() != cfg.server_targets.size()) cfg.servers.clear();
  if (cfg.streaming()) {
    if (cfg.calls) return flags.usage_error("--calls is for calls; streams take --streams and --count");
  } else if (!stream_flags.empty()) {
    // Checked once --method is known, wherever it stood: silently ignored,
    // a stream timer would look like a deadline the calls never had.
    return flags.usage_error(stream_flags.front() +
                             " is for streams (--method count, sum or chat), not for calls (--method " + cfg.method +
                             ")");
  } else if (cfg.calls.has_value() == cfg.duration_s.has_value()) {
    return flags.usage_error("give exactly one of --calls and --duration-s");
  }
  // zstd and lz4 are wheelrpc's own: the gRPC wire offers neither (docs/grpc.md).
  if (cfg.protocol == rpc::WireProtocol::grpc &&
      (cfg.compression == transport::Compression::zstd || cfg.compression == transport::Compression::lz4)) {
    return flags.usage_error("--compression " + std::string(transport::to_string(cfg.compression)) +
                             ": the gRPC wire (--protocol grpc) carries gzip and deflate only");
  }
  // The library fails every hedged call that is not idempotent (bad_request).
  if (cfg.hedge_delay.count() > 0 && !cfg.idempotent) {
    return flags.usage_error("--hedge-ms needs --idempotent: only idempotent calls may be hedged (run more than once)");
  }
  if (cfg.warmup_s && !cfg.duration_s) return flags.usage_error("--warmup-s needs --duration-s");
  if (cfg.outlier.max_ejection_time < cfg.outlier.base_ejection_time) {
    return flags.usage_error("--outlier-max-ms must be at least --outlier-base-ms (" +
                             std::to_string(cfg.outlier.base_ejection_time.count()) + ")");
  }
  // The client's options refuse it (ClientOptions::idle_timeout).
  if (cfg.idle_timeout.count() > 0 && cfg.idle_timeout < 2 * cfg.heartbeat) {
    return flags.usage_error("--idle-timeout-ms must be at least 2 x --heartbeat-ms (" +
                             std::to_string(2 * cfg.heartbeat.count()) + "), got " +
                             std::to_string(cfg.idle_timeout.count()));
  }
  return std::nullopt;
}

}  // namespace wheelrpc::examples::load
