#include "bench.h"

#include <cmath>
#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "bench_report.h"
#include "bench_run.h"

namespace wheelrpc::wheelctl {
namespace {

constexpr unsigned kMaxConcurrency = 100000;
constexpr double kMaxRate = 1e7;
constexpr std::chrono::hours kMaxTimeout{1};

}  // namespace

std::string bench_problem(const BenchTarget& target, const BenchOptions& options) {
  if (target.host.empty()) return "the target's host is empty";
  if (target.port == 0) return "the target's port must be 1 .. 65535";
  for (const auto& more : target.more_servers) {
    if (more.host.empty()) return "a server's host is empty";
    if (more.port == 0) return "the port of server '" + more.host + "' must be 1 .. 65535";
  }
  if (target.method_path.empty()) return "no method to call";
  if (target.timeout <= std::chrono::milliseconds::zero() || target.timeout > kMaxTimeout) {
    return "--timeout must be 1 ms .. 1 h, got " + std::to_string(target.timeout.count()) + " ms";
  }
  for (const auto& [key, value] : target.metadata) {
    if (key.empty() || key.size() > 255) return "metadata key '" + key + "' must be 1 .. 255 bytes";
  }
  if (target.tls.enabled) {
    if (auto p = transport::tls_options_problem(target.tls, transport::TlsRole::client); !p.empty()) return p;
  }
  if (options.concurrency < 1 || options.concurrency > kMaxConcurrency) {
    return "--concurrency must be 1 .. 100000, got " + std::to_string(options.concurrency);
  }
  if (options.duration <= std::chrono::seconds::zero()) {
    return "--duration must be > 0, got " + std::to_string(options.duration.count()) + " s";
  }
  if (!std::isfinite(options.rate) || options.rate < 0 || options.rate > kMaxRate) {
    return "--rate must be 0 (closed loop) .. 10000000 calls/s, got " + std::to_string(options.rate);
  }
  if (options.threads > 64) return "--threads must be 0 (the default) .. 64, got " + std::to_string(options.threads);
  return {};
}

int run_bench(const BenchTarget& target, const BenchOptions& options, std::ostream& out, std::ostream& err) {
  if (auto problem = bench_problem(target, options); !problem.empty()) {
    err << "wheelctl bench: " << problem << "\n";
    return 2;
  }
  // Every provider resolved once, before the run: its first address.
  std::vector<BenchAddress> addresses{BenchAddress{target.host, target.port}};
  addresses.insert(addresses.end(), target.more_servers.begin(), target.more_servers.end());
  std::vector<boost::asio::ip::tcp::endpoint> servers;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    for (const auto& address : addresses) {
      boost::system::error_code ec;
      auto results = resolver.resolve(address.host, std::to_string(address.port), ec);
      if (ec || results.empty()) {
        err << "wheelctl bench: host name '" << address.host << "' does not resolve: " << ec.message() << "\n";
        return 2;
      }
      servers.push_back(results.begin()->endpoint());
    }
  }
  BenchResult result;
  try {
    BenchRun run(target, options, std::move(servers));
    result = run.run(err);
  } catch (const std::invalid_argument& e) {
    err << "wheelctl bench: " << e.what() << "\n";
    return 2;
  }
  if (options.json) {
    out << bench_json_line(result) << "\n" << std::flush;
    // The line has the counts; what the first failure said goes beside it.
    if (!result.first_error.empty()) err << "wheelctl bench: first error: " << result.first_error << "\n";
  } else {
    print_bench_text(result, out);
  }
  return result.errors == 0 && result.calls > 0 ? 0 : 1;
}

}  // namespace wheelrpc::wheelctl
