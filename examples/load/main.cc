// echo_client, a load generator for echo_server: keeps C calls in flight
// (closed loop) and reports what happened to every one of them; or, with
// --method count|sum|chat, keeps N streams going (stream_load.h) and
// reports what happened to every stream.
//
//   echo_client (--server HOST:PORT[,HOST:PORT...] | --registry etcd://H:P[,...] --service NAME
//                [--application NAME] [--tag NAME[,NAME...]]...)
//               (--calls N | --duration-s S)
//               [--concurrency C] [--timeout-ms T] [--payload-bytes B]
//               [--method echo|sleep|count|sum|chat] [--sleep-ms X] [--report-interval-ms I]
//               [--streams N] [--count N] [--interval-ms I] [--stream-timeout-ms T]
//               [--message-timeout-ms T] [--stall-timeout-ms T]
//               [--json] [--heartbeat-ms H] [--idle-timeout-ms I]
//               [--retries N] [--idempotent] [--lb round_robin|least_active|p2c]
//               [--hedge-ms H] [--fail-on-error] [--protocol native|grpc]
//               [--compression none|zstd|lz4|gzip|deflate[:LEVEL]] [--bearer-token T]
//   echo_client --help            (the usage text, on stdout)
//
// --server takes IP literals (a fixed list) or host names (resolved, every
// address a provider, resolved again periodically and after failed
// connects); --registry follows --service's providers in etcd as they come
// and go, and its runtime rules (<root>/<service>/rules/, docs/governance.md)
// as this consumer sees them: --application (default "echo_client") and
// --tag name it for the rules' scopes.
//
// Before its clock and its first call start, it connects and waits until each
// server is ready or failed a connect attempt, or the provider source has
// failed or reported no provider (at most 10 s; "echo_client: no server ready
// after N ms: <why>" on stderr if none is, and the calls then fail with their
// own errors): a deadline measures the call, not the connect and HELLO.
//
// Every call has a deadline of T ms (the client's wheel timer). Each attempt
// goes to a ready server chosen by --lb; a failed attempt is retried (up to
// --retries more, within the deadline and the client's retry budget), and with
// --idempotent --hedge-ms H a call with no reply after H ms gets a backup
// attempt on another server (first reply wins). Outcomes are
// counted by error code; each call must complete exactly once: "lost" counts
// calls that never completed (within T + 5 s after the last one was issued) and
// "completed_twice" calls that completed more than once. Both must be 0: the
// exit status is 1 otherwise, and 1 when no call succeeded; 2 on a usage error
// (one line on stderr, ending "(see --help)"); 0 else: failed calls are
// reported, not fatal, unless --fail-on-error makes any failed call exit
// status 1.
//
// SIGINT or SIGTERM stops issuing; the calls in flight are waited for and the
// summary printed as usual. A second one exits at once, without a summary,
// with status 128 + the signal (130 for SIGINT).
//
// With --json, one line per interval {"t_ms":..,"ok":..,"errors":{..},
// "providers_now":N} (cumulative) and a final summary line, which also
// carries the client's attempts, retries, hedges, budget refusals and
// attempts with no provider, the load balancing policy, for every provider
// ever in the set {"peer","attempts","failures","removed","ok","cancelled",
// "in_flight"}, one example message per error code and the agreed heartbeat;
// otherwise readable progress lines, a summary (the same counters, which add
// up with each other), one example message per error code and a one-line
// histogram of the ok calls' latencies ("latency histogram (ms): ...").
//
// The files: config.h and flags.cc (the flags), connect_wait.h/.cc (the wait
// for the connections), load.h/.cc (the loop of calls), stream_load.h/.cc
// (the streams) and stream_exchange.h/.cc (what each streaming method
// writes and checks), tally.h/.cc (counting outcomes), report.h/.cc (the
// output), text_histogram.h/.cc (the histogram line).
#include <cstdio>
#include <stdexcept>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <memory>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/bearer_token_interceptor.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/provider_source.h>
#include <optional>

#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "load/config.h"
#include "load/load.h"
#include "load/stream_load.h"
#include "support/admin_registry.h"
#include "support/logging.h"
#include "support/run_main.h"

namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using wheelrpc::examples::load::Config;

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers(
      {"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer", "wheelrpc.registry", "wheelrpc.admin"});
  asio::io_context io(1);
  wheelrpc::timer::HashedWheelTimer timer;  // must outlive the client and the registry
  rpc::ClientOptions options;
  options.heartbeat = cfg.heartbeat;
  options.idle_timeout = cfg.idle_timeout;
  options.load_balance = cfg.load_balance;
  options.outlier_detection = cfg.outlier;
  options.retry.budget_ratio = cfg.retry_budget_ratio;
  options.tcp_user_timeout = cfg.tcp_user_timeout;
  options.tls = cfg.tls;
  options.protocol = cfg.protocol;
  if (!cfg.tags.empty()) options.tag = cfg.tags.front();  // the routing tag its calls carry
  if (cfg.compression != wheelrpc::transport::Compression::identity) {
    options.call_defaults.compression = cfg.compression;  // calls and streams alike
    options.call_defaults.compression_level = cfg.compression_level;
  }
  if (!cfg.bearer_token.empty()) {
    options.interceptors.push_back(std::make_shared<rpc::BearerTokenInterceptor>(cfg.bearer_token));
  }
  std::shared_ptr<wheelrpc::registry::EtcdRegistry> registry;
  std::shared_ptr<rpc::ProviderSource> source;
  if (!cfg.registry.empty()) {
    try {
      registry = wheelrpc::registry::EtcdRegistry::create(io.get_executor(), timer, cfg.registry);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "echo_client: --registry: %s\n", e.what());
      return 2;
    }
    source = wheelrpc::registry::provider_source(registry, cfg.service);
    options.rules =
        wheelrpc::registry::rule_source(registry, cfg.service, {.application = cfg.application, .tags = cfg.tags});
  } else if (cfg.servers.empty()) {
    source = rpc::resolved_providers(io.get_executor(), timer, cfg.server_targets);
  } else {
    source = rpc::static_providers(cfg.servers);
  }
  rpc::Client client(io.get_executor(), timer, source, options);
  std::optional<wheelrpc::admin::AdminServer> admin;
  if (cfg.admin_port >= 0) {
    wheelrpc::admin::AdminOptions ao;
    ao.process_name = "echo_client";
    admin.emplace(io.get_executor(), timer, ao);
    admin->add_client("echo_client", client);
    if (registry) wheelrpc::examples::show_registry(*admin, registry);
    if (const auto ec = admin->listen(static_cast<unsigned short>(cfg.admin_port))) {
      std::fprintf(stderr, "echo_client: cannot serve the admin port %d: %s\n", cfg.admin_port, ec.message().c_str());
      return 1;
    }
    std::printf("admin on http://127.0.0.1:%u\n", static_cast<unsigned>(admin->local_endpoint().port()));
    std::fflush(stdout);
  }
  auto after_close = [&registry, &admin] {
    if (admin) admin->stop();
    if (registry) registry->close();
  };
  if (cfg.streaming()) {
    wheelrpc::examples::load::StreamLoad streams(cfg, io, client, after_close);
    asio::post(io, [&streams] { streams.start(); });
    io.run();
    return streams.exit_status();
  }
  wheelrpc::examples::load::Load load(cfg, io, client, after_close);
  asio::post(io, [&load] { load.start(); });
  io.run();
  return load.exit_status();
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("echo_client", argc, argv, wheelrpc::examples::load::parse_args, run);
}
