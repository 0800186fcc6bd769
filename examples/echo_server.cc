// An RPC server with two methods and three streaming methods, for trying
// wheelrpc from a shell (see echo_client and scripts/echo_demo.sh):
//
//   echo   replies with the request's payload;
//   sleep  payload = decimal milliseconds; replies "slept" after that long,
//          without blocking a thread (one boost::asio::steady_timer per call).
//   count  server streaming: the client's one message is "COUNT INTERVAL_MS"
//          (two decimal numbers, one space: "20 5"); the server sends "0",
//          "1", ... "COUNT-1", each INTERVAL_MS after the previous one (a
//          steady_timer per wait, no thread blocked), then ends the stream
//          with success; a cancelled stream stops it within 10 ms;
//   sum    client streaming: adds up the decimal integers it receives and,
//          once the client half-closes, answers with the sum;
//   chat   bidirectional: echoes each message; ends once the client half-closes.
//   (echo_stream_methods.h has the details: the bad requests, the limits.)
//
//   echo_server --port P [--host 127.0.0.1] [--threads N] [--heartbeat-ms H] [--idle-timeout-ms I]
//               [--drain-timeout-ms D] [--max-connections N] [--hello-timeout-ms T]
//               [--max-requests-per-connection R] [--max-write-queue-bytes B]
//               [--drain-timeout-ms D] [--shutdown-grace-ms S]
//               [--tls-cert F --tls-key F [--tls-ca F] [--tls-require-client-cert]]
//               [--bearer-token T]
//               [--registry etcd://HOST:PORT[,...] --service NAME [--lease-ttl-s N]
//                [--registry-check] [--unregister-grace-ms G] [--tag NAME] [--weight W] [--zone Z]]
//   echo_server --help
//
// Port 0 picks a free port. The first line on stdout is exactly
// "listening on HOST:PORT". With --registry it registers NAME at that address
// in etcd (one lease, renewed every N / 3 s) and prints
// "registered NAME at IP:PORT" each time the registration is in etcd, or
// "registration pending: REASON" while it is being retried. SIGINT or SIGTERM
// shuts the server down gracefully (with --shutdown-grace-ms S, first S ms
// of saying NOT_SERVING on its health service while serving on, so clients
// that watch it stop sending; then Server::async_shutdown: unregistered
// first, serving on for G ms so clients see it leave; then new requests and
// streams refused, calls in flight and open streams finish for at most D ms,
// then the streams still open end with UNAVAILABLE and the connections
// close); a second signal closes at once. It
// then prints its counters on stderr and exits 0. With --bearer-token T every
// call and stream must carry the metadata "authorization: Bearer T"
// (rpc::BearerAuthInterceptor); others fail with UNAUTHENTICATED. Exit status 1 when it
// cannot listen (one line on stderr, "echo_server: cannot listen on ..."), 2 on
// a usage error (one line on stderr, ending "(see --help)"). --help prints the
// usage on stdout and exits 0.
#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/provider_rule_follower.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/rpc/bearer_auth_interceptor.h>
#include <wheelrpc/rpc/health.h>
#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/services/server_reflection.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/connector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "echo_stream_methods.h"
#include "support/admin_registry.h"
#include "support/flags.h"
#include "support/tls_flags.h"
#include "support/logging.h"
#include "support/open_files.h"
#include "support/run_main.h"

namespace {

using wheelrpc::transport::endpoint_text;

/// Large buffers (a flooder's queued replies, a big request) straight from
/// the kernel and back to it when freed. glibc otherwise raises its mmap
/// threshold each time such a buffer is freed, and later ones then come from
/// a thread's arena, whose top it never gives back: a few floods would leave
/// the server megabytes larger for good. (GLIBC_TUNABLES=glibc.malloc.
/// mmap_threshold=262144 does the same for any program.)
void fix_mmap_threshold() noexcept {
#if defined(__GLIBC__)
  ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

using wheelrpc::examples::FlagParser;
using wheelrpc::examples::parse_int;

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using boost::system::error_code;

struct Config {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
  bool port_given = false;
  int threads = 1;
  std::chrono::milliseconds heartbeat{15000};
  std::chrono::milliseconds idle_timeout{0};
  std::chrono::milliseconds drain_timeout{5000};
  std::chrono::milliseconds shutdown_grace{0};  // --shutdown-grace-ms: NOT_SERVING, serving on, before the shutdown
  std::string registry;                         // etcd endpoints, or empty
  std::string service;
  std::string tag;   // --tag: the routing tag in its registry record ("tags": {"tag": ...})
  int weight = 100;  // --weight: its registry record's weight
  std::string zone;  // --zone: its registry record's zone (provider rules choose by it)
  std::chrono::seconds lease_ttl{10};
  bool registry_check = false;
  std::chrono::milliseconds unregister_grace{2000};
  int admin_port = -1;  // -1: no admin server
  // Limits against greedy and hostile clients (ServerOptions; docs/security.md).
  std::size_t max_connections = 0;
  std::chrono::milliseconds hello_timeout{10000};
  std::size_t max_requests_per_connection = 1024;
  std::size_t max_write_queue_bytes = std::size_t{64} << 20;
  wheelrpc::transport::TlsOptions tls;  // --tls-*
  std::string bearer_token;             // --bearer-token: required of every call and stream, or empty
  bool reflection = true;               // --no-reflection turns gRPC server reflection off
  // Load balancing (docs/load_balancing.md).
  int fail_percent = 0;                                 // --fail-percent: echo fails this share (RESOURCE_EXHAUSTED)
  bool load_reports = false;                            // --load-reports (ServerOptions::load_reports)
  std::chrono::milliseconds load_report_interval{100};  // --load-report-interval-ms
  std::chrono::milliseconds max_connection_age{0};      // --max-connection-age-ms
  std::chrono::milliseconds max_connection_age_grace{30000};  // --max-connection-age-grace-ms
};

/// The usage text (--help).
constexpr const char* kUsage =
    "usage: echo_server --port P [--host 127.0.0.1] [--threads N] [--heartbeat-ms H] [--idle-timeout-ms I]\n"
    "                   [--drain-timeout-ms D] [--shutdown-grace-ms S]\n"
    "                   [--registry etcd://HOST:PORT[,HOST:PORT...] --service NAME [--lease-ttl-s N]\n"
    "                    [--registry-check] [--unregister-grace-ms G] [--tag NAME] [--weight W] [--zone Z]]\n"
    "                   [--admin-port A]\n"
    "                   [--max-connections N] [--hello-timeout-ms T] [--max-requests-per-connection R]\n"
    "                   [--max-write-queue-bytes B]\n"
    "                   [--tls-cert F --tls-key F [--tls-ca F] [--tls-require-client-cert]]\n"
    "                   [--bearer-token T] [--no-reflection]\n"
    "                   [--load-reports [--load-report-interval-ms I]] [--fail-percent P]\n"
    "                   [--max-connection-age-ms A [--max-connection-age-grace-ms G]]\n"
    "  --port P          TCP port to listen on, 0..65535 (0 = pick a free one)\n"
    "  --host A          address to bind (IPv4/IPv6 literal or localhost; default 127.0.0.1)\n"
    "  --threads N       threads running the io_context, 1..256 (default 1)\n"
    "  --heartbeat-ms H  heartbeat interval proposed to clients (default 15000); each\n"
    "                    connection agrees on the LARGER of this and the client's\n"
    "                    proposal in its HELLO (echo_client proposes 15000 unless its\n"
    "                    --heartbeat-ms says otherwise), so this flag alone can raise\n"
    "                    the interval but not lower it\n"
    "  --idle-timeout-ms I  close connections idle (no read or no write) for I ms\n"
    "                    (default 0 = 3 x the agreed heartbeat; never below 2 x it)\n"
    "  --drain-timeout-ms D  on SIGINT/SIGTERM, let calls in flight and open streams\n"
    "                    finish for at most D ms (streams still open then end with\n"
    "                    UNAVAILABLE), 0..3600000 (default 5000; 0 = close at once)\n"
    "  --shutdown-grace-ms S  on SIGINT/SIGTERM, first say NOT_SERVING on the health\n"
    "                    service and serve on for S ms, so clients that watch it\n"
    "                    (client-side health checking) stop sending before anything\n"
    "                    is refused; then the shutdown above, 0..600000 (default 0 = none)\n"
    "  --registry URL    register in etcd (etcd://127.0.0.1:2379[,HOST:PORT...])\n"
    "  --service NAME    the service name to register (with --registry)\n"
    "  --tag NAME        the routing tag its registry record carries (\"tags\":{\"tag\":NAME}):\n"
    "                    calls tagged NAME go to it under a tag rule; untagged calls do not\n"
    "  --weight W        its registry record's weight, 0..10000 (default 100; 0 = no new calls)\n"
    "  --zone Z          its registry record's zone\n"
    "  --lease-ttl-s N   lease TTL of the registration, 2..3600 s (default 10)\n"
    "  --registry-check  exit 1 if the registration fails (at its first failure, e.g.\n"
    "                    etcd refused the connection) or is not in etcd within 5 s;\n"
    "                    without it the server serves and keeps retrying\n"
    "  --unregister-grace-ms G  on SIGINT/SIGTERM, serve for G ms after unregistering,\n"
    "                    so clients see it leave, 0..600000 (default 2000)\n"
    "  --admin-port A    serve the admin pages, /metrics, /health, QoS and the HTTP gateway\n"
    "                    on http://127.0.0.1:A (0 = pick a free port); prints\n"
    "                    \"admin on http://127.0.0.1:PORT\"\n"
    "  --max-connections N  connections open at once; more are accepted and closed at\n"
    "                    once, 0..1000000 (default 0 = no limit but the open-file limit)\n"
    "  --hello-timeout-ms T  close a connection that sends no complete HELLO within T ms,\n"
    "                    1..3600000 (default 10000)\n"
    "  --max-requests-per-connection R  requests in flight per connection before the\n"
    "                    server stops reading it, 0..1000000 (default 1024; 0 = no limit)\n"
    "  --max-write-queue-bytes B  replies queued per connection before a client that\n"
    "                    reads none is closed, 1024..17179869184 (default 67108864)\n"
    "  --tls-cert F      serve TLS with the PEM certificate chain F (with --tls-key)\n"
    "  --tls-key F       the PEM private key of --tls-cert\n"
    "  --tls-ca F        PEM CA certificates that sign client certificates: a client\n"
    "                    certificate, if sent, must verify against them\n"
    "  --tls-require-client-cert  refuse clients without a certificate signed by\n"
    "                    --tls-ca (mTLS)\n"
    "  --bearer-token T  require the metadata \"authorization: Bearer T\" on every call\n"
    "                    and stream (rpc::BearerAuthInterceptor); without it, or with\n"
    "                    another token, they fail with UNAUTHENTICATED before any\n"
    "                    handler runs. T is visible to local users in the process list.\n"
    "  --no-reflection   do not serve gRPC server reflection (grpc.reflection.v1 and v1alpha,\n"
    "                    served by default; it lists itself and grpc.health.v1.Health, not\n"
    "                    echo's methods, which are untyped: no .proto describes them)\n"
    "  --load-reports    replies carry the server's load (ORCA: CPU, calls in flight,\n"
    "                    the queue's wait; the endpoint-load-metrics-bin trailer on the\n"
    "                    gRPC wire), at most once per connection per\n"
    "                    --load-report-interval-ms I (10..86400000, default 100), for\n"
    "                    load-aware clients (echo_client --lb load_aware)\n"
    "  --fail-percent P  echo fails P percent of calls (0..100, default 0) with\n"
    "                    RESOURCE_EXHAUSTED (unprocessed: clients may retry it), spread\n"
    "                    evenly: a sick instance, for outlier detection (echo_client --outlier)\n"
    "  --max-connection-age-ms A  drain a connection older than A ms (+- 10 %) so its\n"
    "                    client reconnects, perhaps elsewhere (a GOAWAY on the gRPC\n"
    "                    wire), 100..86400000 (default 0 = no limit); calls then have\n"
    "                    --max-connection-age-grace-ms G (default 30000) to end\n"
    "  -h, --help        print this text and exit 0\n"
    "  --version         print the version (\"echo_server (wheelrpc) X.Y.Z\") and exit 0\n"
    "Flags take their value as --flag V or --flag=V.\n"
    "Methods: echo (returns the payload), sleep (payload = milliseconds; replies \"slept\").\n"
    "Streams: count (the one request is \"COUNT INTERVAL_MS\": answers \"0\" .. \"COUNT-1\",\n"
    "INTERVAL_MS apart), sum (answers the sum of the decimal integers it read once the\n"
    "client half-closed), chat (echoes each message; ends when the client half-closes).\n"
    "With --registry: prints \"registered NAME at IP:PORT\" once the registration is in\n"
    "etcd, \"registration pending: REASON\" while it is retried, and follows the provider\n"
    "rules of NAME in etcd that choose it by address, zone or tag (docs/governance.md).\n"
    "SIGINT or SIGTERM shuts down gracefully: NOT_SERVING for S ms (--shutdown-grace-ms),\n"
    "then unregistered (then G ms of grace),\n"
    "then no new connections, new requests refused\n"
    "(clients retry them elsewhere), calls in flight finish (up to --drain-timeout-ms);\n"
    "a second signal closes at once.\n"
    "Exit status: 0 after SIGINT or SIGTERM, 1 if it cannot listen, 2 usage error.\n";

/// Parses the command line; returns the exit status when the program is to
/// end now (--help, a usage error).
std::optional<int> parse_args(int argc, char** argv, Config& cfg) {
  FlagParser flags("echo_server", kUsage);
  flags
      .add_number("--port", 0, 65535,
                  [&](long long v) {
                    cfg.port = static_cast<unsigned short>(v);
                    cfg.port_given = true;
                  })
      .add_value("--host",
                 [&](const std::string& value) -> std::optional<std::string> {
                   asio::ip::tcp::endpoint ignored;
                   if (!wheelrpc::transport::parse_endpoint(value + ":0", ignored)) {
                     return "invalid address '" + value + "': expected an IPv4/IPv6 literal or localhost";
                   }
                   cfg.host = value;
                   return std::nullopt;
                 })
      .add_number("--threads", 1, 256, [&](long long v) { cfg.threads = static_cast<int>(v); })
      .add_number("--heartbeat-ms", 1, 86'400'000, [&](long long v) { cfg.heartbeat = std::chrono::milliseconds(v); })
      .add_number("--idle-timeout-ms", 1, 86'400'000,
                  [&](long long v) { cfg.idle_timeout = std::chrono::milliseconds(v); })
      .add_number("--drain-timeout-ms", 0, 3'600'000,
                  [&](long long v) { cfg.drain_timeout = std::chrono::milliseconds(v); })
      .add_number("--shutdown-grace-ms", 0, 600'000,
                  [&](long long v) { cfg.shutdown_grace = std::chrono::milliseconds(v); })
      .add_value("--registry",
                 [&](const std::string& value) -> std::optional<std::string> {
                   if (value.empty()) return "expected etcd://HOST:PORT[,HOST:PORT...]";
                   cfg.registry = value;
                   return std::nullopt;
                 })
      .add_value("--service",
                 [&](const std::string& value) -> std::optional<std::string> {
                   wheelrpc::registry::ServiceInstance probe;
                   probe.service = value;
                   probe.endpoint = "127.0.0.1:1";
                   if (auto why = probe.invalid_reason(); !why.empty()) return why;
                   cfg.service = value;
                   return std::nullopt;
                 })
      .add_value("--tag",
                 [&](const std::string& value) -> std::optional<std::string> {
                   if (value.empty() || !wheelrpc::rpc::RoutingTag::make(value)) {
                     return "'" + value + "' is not a tag: 1..64 characters of [A-Za-z0-9._-]";
                   }
                   cfg.tag = value;
                   return std::nullopt;
                 })
      .add_number("--weight", 0, 10000, [&](long long v) { cfg.weight = static_cast<int>(v); })
      .add_value("--zone",
                 [&](const std::string& value) -> std::optional<std::string> {
                   if (value.empty()) return "a zone is not empty";
                   cfg.zone = value;
                   return std::nullopt;
                 })
      .add_number("--lease-ttl-s", 2, 3600, [&](long long v) { cfg.lease_ttl = std::chrono::seconds(v); })
      .add_switch("--registry-check", [&] { cfg.registry_check = true; })
      .add_number("--unregister-grace-ms", 0, 600'000,
                  [&](long long v) { cfg.unregister_grace = std::chrono::milliseconds(v); })
      .add_number("--admin-port", 0, 65535, [&](long long v) { cfg.admin_port = static_cast<int>(v); })
      .add_number("--max-connections", 0, 1'000'000,
                  [&](long long v) { cfg.max_connections = static_cast<std::size_t>(v); })
      .add_number("--hello-timeout-ms", 1, 3'600'000,
                  [&](long long v) { cfg.hello_timeout = std::chrono::milliseconds(v); })
      .add_number("--max-requests-per-connection", 0, 1'000'000,
                  [&](long long v) { cfg.max_requests_per_connection = static_cast<std::size_t>(v); })
      .add_number("--max-write-queue-bytes", 1024, 17'179'869'184LL,
                  [&](long long v) { cfg.max_write_queue_bytes = static_cast<std::size_t>(v); })
      .add_value("--bearer-token",
                 [&](const std::string& value) -> std::optional<std::string> {
                   if (value.empty()) return "expected a token, got an empty one";
                   cfg.bearer_token = value;
                   return std::nullopt;
                 })
      .add_switch("--no-reflection", [&] { cfg.reflection = false; })
      .add_switch("--load-reports", [&] { cfg.load_reports = true; })
      .add_number("--load-report-interval-ms", 10, 86'400'000,
                  [&](long long v) { cfg.load_report_interval = std::chrono::milliseconds(v); })
      .add_number("--fail-percent", 0, 100, [&](long long v) { cfg.fail_percent = static_cast<int>(v); })
      .add_number("--max-connection-age-ms", 100, 86'400'000,
                  [&](long long v) { cfg.max_connection_age = std::chrono::milliseconds(v); })
      .add_number("--max-connection-age-grace-ms", 0, 86'400'000,
                  [&](long long v) { cfg.max_connection_age_grace = std::chrono::milliseconds(v); });
  wheelrpc::examples::add_tls_flags(flags, cfg.tls, wheelrpc::transport::TlsRole::server);
  if (const auto status = flags.parse(argc, argv)) return status;
  if (!cfg.port_given) return flags.usage_error("--port is required");
  if (auto problem = wheelrpc::examples::finish_tls_flags(cfg.tls, wheelrpc::transport::TlsRole::server)) {
    return flags.usage_error(*problem);
  }
  if (!cfg.registry.empty() && cfg.service.empty()) return flags.usage_error("--registry needs --service");
  if (cfg.registry.empty() && !cfg.service.empty()) return flags.usage_error("--service needs --registry");
  return std::nullopt;
}

/// The timers of pending `sleep` calls, so that shutdown can cancel them
/// instead of waiting for them.
class SleepTimers {
 public:
  /// Starts a wait of `delay`; `done` runs when it ends or is cancelled.
  /// Returns false (and does nothing) once `cancel_all` was called.
  template <class Done>
  bool start(asio::io_context& io, std::chrono::milliseconds delay, Done done) {
    std::lock_guard lock(mu_);
    if (stopped_) return false;
    auto t = std::make_shared<asio::steady_timer>(io, delay);
    timers_.insert(t);
    // Under the lock: cancel_all must not touch the timer while async_wait
    // sets it up (a steady_timer is not thread-safe).
    t->async_wait([this, t, done = std::move(done)](const error_code& ec) mutable {
      {
        std::lock_guard l(mu_);
        timers_.erase(t);
      }
      done(ec);
    });
    return true;
  }

  void cancel_all() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    for (const auto& t : timers_) t->cancel();
  }

 private:
  std::mutex mu_;
  bool stopped_ = false;
  std::unordered_set<std::shared_ptr<asio::steady_timer>> timers_;
};

void register_methods(rpc::Server& server, asio::io_context& io, SleepTimers& sleeps, int fail_percent) {
  wheelrpc::examples::register_stream_methods(server);  // count, sum, chat
  if (fail_percent == 0) {
    server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  } else {
    // --fail-percent: P of every 100 calls fail, spread evenly (Bresenham).
    auto n = std::make_shared<std::atomic<std::uint64_t>>(0);
    server.handle("echo", [n, fail_percent](rpc::Request req, rpc::Responder r) {
      const auto k = n->fetch_add(1, std::memory_order_relaxed);
      const auto p = static_cast<std::uint64_t>(fail_percent);
      if ((k + 1) * p / 100 != k * p / 100) {
        r.fail(rpc::errc::resource_exhausted, "echo_server --fail-percent: failed on purpose");
      } else {
        r.reply(std::move(req.payload));
      }
    });
  }
  server.handle("sleep", [&io, &sleeps](rpc::Request req, rpc::Responder r) {
    const auto ms =
        parse_int(req.payload.empty() ? std::string_view("0") : std::string_view(req.payload), 0, 86'400'000);
    if (!ms) {
      r.fail(rpc::errc::bad_request, "sleep: the payload must be a decimal number of milliseconds (0..86400000)");
      return;
    }
    // The Responder is move-only; keep it in a shared_ptr so the wait's
    // handler stays copyable whatever steady_timer requires.
    auto responder = std::make_shared<rpc::Responder>(std::move(r));
    const bool started = sleeps.start(io, std::chrono::milliseconds(*ms), [responder](const error_code& ec) {
      if (ec) {
        responder->fail(rpc::errc::unavailable, "server shutting down");
      } else {
        responder->reply("slept");
      }
    });
    if (!started) responder->fail(rpc::errc::unavailable, "server shutting down");
  });
}

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers(
      {"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer", "wheelrpc.registry", "wheelrpc.admin"});

  asio::ip::tcp::endpoint endpoint;  // --host was checked by parse_args
  if (!wheelrpc::transport::parse_endpoint(cfg.host + ":" + std::to_string(cfg.port), endpoint)) {
    throw std::invalid_argument("invalid --host '" + cfg.host + "'");
  }

  wheelrpc::timer::HashedWheelTimer timer;  // the one timer of the process
  asio::io_context io(cfg.threads);
  SleepTimers sleeps;
  rpc::ServerOptions options;
  options.keepalive.heartbeat = cfg.heartbeat;
  options.keepalive.idle_timeout = cfg.idle_timeout;
  options.keepalive.max_connection_age = cfg.max_connection_age;
  options.keepalive.max_connection_age_grace = cfg.max_connection_age_grace;
  options.load_reports.enabled = cfg.load_reports;
  options.load_reports.interval = cfg.load_report_interval;
  options.unregister_grace = cfg.unregister_grace;
  options.limits.max_connections = cfg.max_connections;
  options.keepalive.hello_timeout = cfg.hello_timeout;
  options.limits.max_requests_per_connection = cfg.max_requests_per_connection;
  options.channel.max_write_queue_bytes = cfg.max_write_queue_bytes;
  wheelrpc::examples::raise_open_file_limit();  // a server's connections are files
  fix_mmap_threshold();
  options.tls = cfg.tls;
  if (!cfg.bearer_token.empty()) {
    options.interceptors.push_back(
        std::make_shared<rpc::BearerAuthInterceptor>(std::vector<std::string>{cfg.bearer_token}));
  }
  std::shared_ptr<wheelrpc::registry::EtcdRegistry> registry;
  // Set before listen, which is what starts the registration.
  std::atomic<rpc::Server*> server_ptr{nullptr};
  if (!cfg.registry.empty()) {
    wheelrpc::registry::EtcdRegistryOptions ro;
    ro.lease_ttl = cfg.lease_ttl;
    try {
      registry = wheelrpc::registry::EtcdRegistry::create(io.get_executor(), timer, cfg.registry, ro);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "echo_server: --registry: %s (see --help)\n", e.what());
      return 2;
    }
    wheelrpc::registry::ServiceInstance instance;
    instance.service = cfg.service;  // the endpoint: the address it listens on
    instance.weight = cfg.weight;
    instance.zone = cfg.zone;
    if (!cfg.tag.empty()) instance.tags["tag"] = cfg.tag;
    wheelrpc::registry::AnnounceOptions ao;
    ao.check = cfg.registry_check;
    ao.on_state = [service = cfg.service, &server_ptr](const error_code& ec, const std::string& why) {
      // The contract lines (scripts wait for them).
      if (!ec) {
        // The address registered: where it listens, 127.0.0.1 for "any".
        auto at = server_ptr.load()->local_endpoint();
        if (at.address().is_unspecified()) at.address(asio::ip::make_address("127.0.0.1"));
        std::printf("registered %s at %s\n", service.c_str(), endpoint_text(at).c_str());
      } else {
        std::printf("registration pending: %s\n", why.empty() ? ec.message().c_str() : why.c_str());
      }
      std::fflush(stdout);
    };
    options.announcer = wheelrpc::registry::announcer(registry, std::move(instance), std::move(ao));
  }
  rpc::Server server(io.get_executor(), timer, options);
  server_ptr = &server;
  register_methods(server, io, sleeps, cfg.fail_percent);
  // gRPC server reflection (grpcurl list): before listen. Declared after the
  // server, it goes first: the io threads are joined by then.
  std::optional<wheelrpc::services::ServerReflection> reflection;
  if (cfg.reflection) reflection.emplace(server);

  // The io threads run before listen: an announcer (--registry-check) needs
  // them to reach etcd while listen waits.
  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;
  int threads_running = cfg.threads;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < cfg.threads; ++i) {
    threads.emplace_back([&] {
      io.run();
      std::lock_guard lock(mu);
      --threads_running;
      cv.notify_all();
    });
  }
  auto close_registry = [&] {
    if (registry) registry->close();  // revokes the lease: every key of ours goes at once
  };
  auto join_all = [&] {
    work.reset();
    for (auto& t : threads) t.join();
  };

  // The one report of this error: the library returns it without logging it.
  std::string why;
  if (const error_code ec = server.listen(endpoint, why)) {
    // local_endpoint() is set once the socket listened: then it was the
    // registration (--registry-check) that failed, not the listen.
    const auto bound = server.local_endpoint();
    if (bound.port() != 0) {
      std::fprintf(stderr, "echo_server: listened on %s, but registration failed: %s\n", endpoint_text(bound).c_str(),
                   why.c_str());
    } else {
      std::fprintf(stderr, "echo_server: cannot listen on %s: %s\n", endpoint_text(endpoint).c_str(), why.c_str());
    }
    server.stop();
    close_registry();
    join_all();
    return 1;
  }
  std::printf("listening on %s\n", endpoint_text(server.local_endpoint()).c_str());
  std::fflush(stdout);
  // Its provider rules (a "server" block that chooses it): stopped before
  // the server goes, by its destructor.
  std::optional<wheelrpc::registry::ProviderRuleFollower> provider_rules;
  if (registry)
    provider_rules.emplace(registry, server, cfg.service, wheelrpc::registry::ProviderScope{{}, cfg.zone, cfg.tag});

  // The admin side: pages, /metrics, health, QoS and the gateway (loopback only).
  std::optional<wheelrpc::admin::AdminServer> admin;
  if (cfg.admin_port >= 0) {
    wheelrpc::admin::AdminOptions ao;
    ao.process_name = "echo_server";
    admin.emplace(io.get_executor(), timer, ao);
    admin->add_server(server);
    if (registry) wheelrpc::examples::show_registry(*admin, registry);
    if (const error_code ec = admin->listen(static_cast<unsigned short>(cfg.admin_port))) {
      std::fprintf(stderr, "echo_server: cannot serve the admin port %d: %s\n", cfg.admin_port, ec.message().c_str());
      admin->stop();
      server.stop();
      close_registry();
      join_all();
      return 1;
    }
    std::printf("admin on http://127.0.0.1:%u\n", static_cast<unsigned>(admin->local_endpoint().port()));
    std::fflush(stdout);
  }

  // Shutdown: a graceful stop of the server (see the top), then cancel what
  // sleeps are left; the io threads then run out of work and return.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  auto stopped = [&] {
    if (admin) admin->stop();
    sleeps.cancel_all();
    close_registry();
    error_code ignored;
    signals.cancel(ignored);  // the wait for a second signal: nothing else may hold the io_context
    work.reset();
    std::lock_guard lock(mu);
    stop_requested = true;
    cv.notify_all();
  };
  // The shutdown itself: a stop (--drain-timeout-ms 0) or a graceful one.
  auto shut_down = [&](int signo) {
    if (cfg.drain_timeout.count() == 0) {
      std::fprintf(stderr, "echo_server: signal %d, stopping\n", signo);
      server.stop();
      stopped();
      return;
    }
    std::fprintf(stderr,
                 "echo_server: signal %d, shutting down (calls in flight and open streams have %lld ms to finish)\n",
                 signo, static_cast<long long>(cfg.drain_timeout.count()));
    server.async_shutdown(cfg.drain_timeout, [&](const error_code& shutdown_ec) {
      if (shutdown_ec == rpc::errc::timeout) {
        std::fprintf(stderr, "echo_server: calls or streams still open after %lld ms; closed them\n",
                     static_cast<long long>(cfg.drain_timeout.count()));
      }
      stopped();
    });
  };
  // The signals' handlers and the grace's timer run on one strand (several
  // threads may run the io_context): a second signal cancels the grace.
  auto strand = asio::make_strand(io);
  asio::steady_timer grace(strand);
  signals.async_wait(asio::bind_executor(strand, [&](const error_code& ec, int signo) {
    if (ec) return;
    // A second signal closes at once; the shutdown then completes, aborted.
    signals.async_wait(asio::bind_executor(strand, [&](const error_code& ec2, int signo2) {
      if (ec2) return;
      std::fprintf(stderr, "echo_server: signal %d again, stopping now\n", signo2);
      server.stop();
      grace.cancel();  // the shutdown follows at once, and completes at once
    }));
    if (cfg.shutdown_grace.count() == 0) {
      shut_down(signo);
      return;
    }
    // Kubernetes' preStop sleep, in the server: NOT_SERVING on the health
    // service while serving on, so that the clients that watch it route
    // elsewhere before the drain refuses anything.
    server.health().set("", rpc::ServingStatus::not_serving);
    std::fprintf(stderr, "echo_server: signal %d, NOT_SERVING; serving %lld ms more before shutting down\n", signo,
                 static_cast<long long>(cfg.shutdown_grace.count()));
    grace.expires_after(cfg.shutdown_grace);
    grace.async_wait([&shut_down, signo](const error_code&) { shut_down(signo); });
  }));

  bool forced = false;
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stop_requested || threads_running == 0; });
    // Bounded drain: whatever is still running after 5 s is abandoned.
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return threads_running == 0; })) {
      forced = true;
      io.stop();
    }
  }
  for (auto& t : threads) t.join();
  if (forced) std::fprintf(stderr, "echo_server: the io_context did not drain within 5 s; stopped it\n");

  const rpc::ServerStats s = server.stats();
  std::fprintf(stderr,
               "echo_server: stopped. accepted=%llu requests=%llu replies=%llu errors=%llu "
               "server_timeouts=%llu late_replies=%llu method_not_found=%llu protocol_errors=%llu "
               "connections_open=%llu\n",
               static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.requests),
               static_cast<unsigned long long>(s.replies), static_cast<unsigned long long>(s.errors),
               static_cast<unsigned long long>(s.server_timeouts), static_cast<unsigned long long>(s.late_replies),
               static_cast<unsigned long long>(s.method_not_found), static_cast<unsigned long long>(s.protocol_errors),
               static_cast<unsigned long long>(s.connections));
  const rpc::StreamStats& st = s.streams;
  std::fprintf(
      stderr,
      "echo_server: streams: opened=%llu refused=%llu messages_in=%llu messages_out=%llu ended: ok=%llu "
      "error=%llu cancelled=%llu deadline=%llu message_idle=%llu write_stall=%llu connection_lost=%llu "
      "shutdown=%llu\n",
      static_cast<unsigned long long>(st.opened), static_cast<unsigned long long>(s.streams_refused),
      static_cast<unsigned long long>(st.messages_in), static_cast<unsigned long long>(st.messages_out),
      static_cast<unsigned long long>(st.ends.ok), static_cast<unsigned long long>(st.ends.error),
      static_cast<unsigned long long>(st.ends.cancelled), static_cast<unsigned long long>(st.ends.deadline),
      static_cast<unsigned long long>(st.ends.message_idle), static_cast<unsigned long long>(st.ends.write_stall),
      static_cast<unsigned long long>(st.ends.connection_lost), static_cast<unsigned long long>(st.ends.shutdown));
  // The connections closed for bad input, by reason (each was logged, one
  // line a second at most): a port scanner or a misconfigured client shows here.
  std::fprintf(stderr,
               "echo_server: closed for bad input: %llu (bad_magic=%llu bad_version=%llu oversize_frame=%llu "
               "malformed_frame=%llu no_hello=%llu hello_timeout=%llu)\n",
               static_cast<unsigned long long>(s.protocol_errors), static_cast<unsigned long long>(s.bad_magic),
               static_cast<unsigned long long>(s.bad_version), static_cast<unsigned long long>(s.oversize_frames),
               static_cast<unsigned long long>(s.malformed_frames), static_cast<unsigned long long>(s.no_hello),
               static_cast<unsigned long long>(s.hello_timeouts));
  if (registry) {
    const auto r = registry->stats();
    std::fprintf(stderr,
                 "echo_server: registry: registrations=%llu unregistrations=%llu lease_grants=%llu "
                 "lease_renewals=%llu lease_losses=%llu requests=%llu request_failures=%llu\n",
                 static_cast<unsigned long long>(r.registrations), static_cast<unsigned long long>(r.unregistrations),
                 static_cast<unsigned long long>(r.lease_grants), static_cast<unsigned long long>(r.lease_renewals),
                 static_cast<unsigned long long>(r.lease_losses), static_cast<unsigned long long>(r.requests),
                 static_cast<unsigned long long>(r.request_failures));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("echo_server", argc, argv, parse_args, run);
}
