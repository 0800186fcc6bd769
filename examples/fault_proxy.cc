// A fault-injecting TCP proxy for trying wheelrpc (or anything on TCP) under
// latency, bandwidth limits, blackholes, resets, ... (docs/fault_proxy.md).
//
//   fault_proxy --listen HOST:PORT --upstream HOST:PORT [--control-port P]
//   fault_proxy --help
//
// Port 0 picks a free port. The first line on stdout is exactly
// "listening on HOST:PORT"; with --control-port the second is
// "control on 127.0.0.1:PORT", the HTTP/1.1 JSON control API (always bound to
// 127.0.0.1). SIGINT or SIGTERM stops the proxy: it closes every connection,
// prints its counters on stderr and exits 0. Exit status 1 when it cannot
// listen (one line on stderr, "fault_proxy: cannot ..."), 2 on a usage error
// (one line on stderr, ending "(see --help)"). --help prints the usage on
// stdout and exits 0.
#include <wheelrpc/fault/control_server.h>
#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/transport/connector.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "support/flags.h"
#include "support/logging.h"

namespace {

namespace asio = boost::asio;
namespace fault = wheelrpc::fault;
using boost::system::error_code;
using wheelrpc::examples::FlagParser;
using wheelrpc::transport::endpoint_text;

struct Config {
  asio::ip::tcp::endpoint listen;
  asio::ip::tcp::endpoint upstream;
  bool listen_given = false, upstream_given = false;
  std::optional<unsigned short> control_port;
};

/// The usage text (--help).
constexpr const char* kUsage =
    "usage: fault_proxy --listen HOST:PORT --upstream HOST:PORT [--control-port P]\n"
    "  --listen HOST:PORT    where clients connect (port 0 = pick a free one)\n"
    "  --upstream HOST:PORT  the server the proxy forwards to (port 1..65535)\n"
    "  --control-port P      serve the HTTP control API on 127.0.0.1:P, 0..65535 (0 = pick one)\n"
    "  -h, --help            print this text and exit 0\n"
    "  --version             print the version (\"fault_proxy (wheelrpc) X.Y.Z\") and exit 0\n"
    "Flags take their value as --flag V or --flag=V.\n"
    "Control API: GET/POST /toxics, GET/DELETE /toxics/NAME, POST /down, POST /up, GET /stats.\n"
    "Toxic types: latency, bandwidth, blackhole, reset_peer, limit_data, slicer.\n"
    "Exit status: 0 after SIGINT or SIGTERM, 1 if it cannot listen, 2 usage error.\n";

/// Parses the command line; returns the exit status when the program is to
/// end now (--help, a usage error).
std::optional<int> parse_args(int argc, char** argv, Config& cfg) {
  auto endpoint = [](asio::ip::tcp::endpoint& out, bool& given) {
    return [&out, &given](const std::string& value) -> std::optional<std::string> {
      if (!wheelrpc::transport::parse_endpoint(value, out)) {
        return "'" + value + "' is not HOST:PORT (IPv4/IPv6 literal or localhost, port 0..65535)";
      }
      given = true;
      return std::nullopt;
    };
  };
  FlagParser flags("fault_proxy", kUsage);
  flags.add_value("--listen", endpoint(cfg.listen, cfg.listen_given))
      .add_value("--upstream", endpoint(cfg.upstream, cfg.upstream_given))
      .add_number("--control-port", 0, 65535, [&](long long v) { cfg.control_port = static_cast<unsigned short>(v); });
  if (const auto status = flags.parse(argc, argv)) return status;
  if (!cfg.listen_given) return flags.usage_error("--listen is required");
  if (!cfg.upstream_given) return flags.usage_error("--upstream is required");
  if (cfg.upstream.port() == 0) return flags.usage_error("--upstream needs a port other than 0");
  return std::nullopt;
}

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers({"wheelrpc.fault", "wheelrpc.transport", "wheelrpc.timer"});
  asio::io_context io(1);
  fault::FaultProxy proxy(io.get_executor(), cfg.listen, cfg.upstream);
  // The one report of these errors: the library returns them without
  // logging them.
  if (const error_code ec = proxy.start()) {
    std::fprintf(stderr, "fault_proxy: cannot listen on %s: %s\n", endpoint_text(cfg.listen).c_str(),
                 ec.message().c_str());
    return 1;
  }
  std::optional<fault::ControlServer> control;
  if (cfg.control_port) {
    control.emplace(io.get_executor(), proxy, *cfg.control_port);
    if (const error_code ec = control->start()) {
      std::fprintf(stderr, "fault_proxy: cannot serve the control API on 127.0.0.1:%u: %s\n",
                   static_cast<unsigned>(*cfg.control_port), ec.message().c_str());
      return 1;
    }
  }
  std::printf("listening on %s\n", endpoint_text(proxy.local_endpoint()).c_str());
  if (control) std::printf("control on %s\n", endpoint_text(control->local_endpoint()).c_str());
  std::fflush(stdout);

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const error_code& ec, int signo) {
    if (ec) return;
    std::fprintf(stderr, "fault_proxy: signal %d, stopping\n", signo);
    if (control) control->stop();
    proxy.stop();
  });
  // Runs until the signal's handler has stopped everything and the
  // connections have closed: then the io_context runs out of work.
  io.run();

  const fault::ProxyStats s = proxy.stats();
  std::fprintf(
      stderr,
      "fault_proxy: stopped. accepted=%llu upstream_connect_failures=%llu bytes_upstream=%llu/%llu "
      "bytes_downstream=%llu/%llu bytes_dropped=%llu toxics_applied=%llu resets=%llu limit_closes=%llu\n",
      static_cast<unsigned long long>(s.connections_accepted),
      static_cast<unsigned long long>(s.upstream_connect_failures),
      static_cast<unsigned long long>(s.bytes_upstream_in), static_cast<unsigned long long>(s.bytes_upstream_out),
      static_cast<unsigned long long>(s.bytes_downstream_in), static_cast<unsigned long long>(s.bytes_downstream_out),
      static_cast<unsigned long long>(s.bytes_dropped), static_cast<unsigned long long>(s.toxics_applied),
      static_cast<unsigned long long>(s.resets), static_cast<unsigned long long>(s.limit_closes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (const auto status = parse_args(argc, argv, cfg)) return *status;
  try {
    return run(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_proxy: %s\n", e.what());
    return 1;
  }
}
