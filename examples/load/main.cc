// echo_client, a load generator for echo_server: keeps C calls in flight
// (closed loop) and reports what happened to every one of them.
//
//   echo_client --server HOST:PORT[,HOST:PORT...] (--calls N | --duration-s S)
//               [--concurrency C] [--timeout-ms T] [--payload-bytes B]
//               [--method echo|sleep] [--sleep-ms X] [--report-interval-ms I]
//               [--json] [--heartbeat-ms H] [--idle-timeout-ms I]
//               [--retries N] [--idempotent] [--lb round_robin|least_active|p2c]
//               [--hedge-ms H] [--fail-on-error]
//   echo_client --help            (the usage text, on stdout)
//
// Before its clock and its first call start, it connects and waits until each
// server is ready or failed a connect attempt (at most 10 s; "echo_client: no
// server ready after N ms: <why>" on stderr if none is, and the calls then
// fail with their own errors): a deadline measures the call, not the connect
// and HELLO.
//
// Every call has a deadline of T ms (the client's wheel timer). Each attempt
// goes to a ready server chosen by --lb; a failed attempt is retried (up to
// --retries more, within the deadline and the client's retry budget), and with
// --idempotent --hedge-ms H a call with no reply after H ms gets a backup
// attempt on another server (first reply wins). Outcomes are
// counted by error code; each call must complete exactly once: "lost" counts
// calls that never completed (within T + 5 s after the last one was issued) and
// "completed_twice" calls that completed more than once. Both must be 0: the
// exit status is 1 otherwise, 2 on a usage error (one line on stderr, ending
// "(see --help)"), 0 else: failed calls are reported, not fatal, unless
// --fail-on-error makes any failed call exit status 1.
//
// SIGINT or SIGTERM stops issuing; the calls in flight are waited for and the
// summary printed as usual. A second one exits at once, without a summary,
// with status 128 + the signal (130 for SIGINT).
//
// With --json, one line per interval {"t_ms":..,"ok":..,"errors":{..}}
// (cumulative) and a final summary line, which also carries the client's
// attempts, retries, hedges and budget refusals, the load balancing policy and
// per server {"peer","attempts","failures"}; otherwise readable progress
// lines, a summary (the same counters included) and the first few distinct
// error messages.
//
// The files: config.h and flags.cc (the flags), connect_wait.h/.cc (the wait
// for the connections), load.h/.cc (the loop of calls), tally.h/.cc (counting
// outcomes), report.h/.cc (the output).
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "load/config.h"
#include "load/load.h"
#include "support/logging.h"
#include "support/run_main.h"

namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using wheelrpc::examples::load::Config;

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers({"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer"});
  asio::io_context io(1);
  wheelrpc::timer::HashedWheelTimer timer;  // must outlive the client
  rpc::ClientOptions options;
  options.heartbeat = cfg.heartbeat;
  options.idle_timeout = cfg.idle_timeout;
  options.load_balance = cfg.load_balance;
  rpc::Client client(io.get_executor(), timer, cfg.servers, options);
  wheelrpc::examples::load::Load load(cfg, io, client);
  asio::post(io, [&load] { load.start(); });
  io.run();
  return load.exit_status();
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("echo_client", argc, argv, wheelrpc::examples::load::parse_args, run);
}
