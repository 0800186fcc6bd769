// wheelctl bench: the command line of the load test (ghz's job). The method
// and its request are resolved as `call` does (reflection or --proto, JSON
// to bytes), through the first of the providers; the engine is run_bench
// (bench.h).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "connection_flags.h"
#include "descriptor_source.h"
#include "message_codec.h"
#include "method_path.h"
#include "request_feed.h"
#include "session.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: wheelctl bench HOST:PORT[,HOST:PORT...] METHOD [JSON] --concurrency C --duration-s D\n"
    "                      [--rate R] [--protocol grpc|native] [--json] [--health-check] [flags]\n"
    "Calls the unary METHOD (as `wheelctl call` names it) with the one request JSON\n"
    "(default {}) for D seconds: closed loop with C calls in flight, or with --rate R\n"
    "open loop at R calls/s (latency counted from each call's intended start). Prints\n"
    "calls/s, errors by status and the latency percentiles and histogram (--json: one\n"
    "JSON line). --timeout-ms is each call's deadline (default 1000 here). Calls are\n"
    "never retried. Several providers (comma-separated) share the calls (--lb); the\n"
    "method is resolved through the first. --health-check: a provider whose\n"
    "grpc.health.v1.Health says NOT_SERVING gets no new calls. METHOD /NAME (no\n"
    "service: a wheelrpc server's untyped method, e.g. echo_server's /echo) is called\n"
    "as it is: nothing is resolved, and JSON is instead the request's bytes (default\n"
    "none).\n"
    "Exit status: 0 every call succeeded, 1 a call failed or none completed, 2 usage or\n"
    "a malformed request, 3 cannot resolve or connect (resolving the method), 5 unknown\n"
    "method or no reflection (give --proto).\n";

/// "HOST:PORT" (checked by ConnectionFlags::read) as host and port: an IPv6
/// literal loses its brackets.
BenchAddress split_host_port(const std::string& target) {
  BenchAddress a;
  const auto colon = target.rfind(':');
  a.host = target.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[') a.host = a.host.substr(1, a.host.size() - 2);
  a.port = static_cast<std::uint16_t>(std::stoul(target.substr(colon + 1)));
  return a;
}

/// "a,b,c" as {"a", "b", "c"} (empty words kept: they fail as HOST:PORT).
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> words;
  std::string::size_type from = 0;
  for (;;) {
    const auto comma = text.find(',', from);
    words.push_back(text.substr(from, comma - from));
    if (comma == std::string::npos) return words;
    from = comma + 1;
  }
}

/// "/NAME": a method without a service (letters, digits, '_', '-'), or
/// std::nullopt.
std::optional<std::string> untyped_method(const std::string& word) {
  if (word.size() < 2 || word.front() != '/') return std::nullopt;
  for (std::size_t i = 1; i < word.size(); ++i) {
    const char c = word[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return std::nullopt;
  }
  return word.substr(1);
}

}  // namespace

int run_bench_verb(const Args& args, Io& io) {
  VerbFlags flags("bench", kUsage);
  ConnectionFlags::declare(flags, true);
  DescriptorFlags::declare(flags);
  flags.options().add_options()("concurrency", po::value<unsigned>()->value_name("C"),
                                "calls in flight at once (closed loop); default 1")(
      "duration-s", po::value<unsigned>()->value_name("D"), "seconds to start calls for; default 10")(
      "rate", po::value<double>()->value_name("R"), "open loop: calls started per second")(
      "max-in-flight", po::value<unsigned>()->value_name("N"), "open loop: most calls in flight (default 10000)")(
      "threads", po::value<unsigned>()->value_name("N"),
      "I/O threads (default: closed loop one per 128 calls in flight, up to one per core; open loop one per core)")(
      "json", po::bool_switch(), "one JSON line instead of the text report")("no-progress", po::bool_switch(),
                                                                             "no progress line on stderr each second")(
      "lb", po::value<std::string>()->value_name("round_robin|least_active|p2c"),
      "how each call picks its provider (default round_robin)")(
      "health-check", po::bool_switch(),
      "watch each provider's grpc.health.v1.Health: one not SERVING gets no new calls")(
      "health-service", po::value<std::string>()->value_name("NAME"),
      "with --health-check: the service watched (default \"\": the server as a whole)");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.size() < 2 || words.size() > 3) {
    return flags.usage_error(io, "expected HOST:PORT[,HOST:PORT...] METHOD [JSON]");
  }
  const auto servers = split_commas(words[0]);
  ConnectionFlags connection;  // the first provider's: it resolves the method
  if (auto problem = connection.read(flags, servers[0])) return flags.usage_error(io, *problem);
  for (std::size_t i = 1; i < servers.size(); ++i) {
    ConnectionFlags other;  // checks the word as the first's was
    if (auto problem = other.read(flags, servers[i])) return flags.usage_error(io, *problem);
  }
  const auto untyped = untyped_method(words[1]);
  const std::optional<MethodPath> path = untyped ? std::nullopt : MethodPath::parse(words[1]);
  if (!untyped && !path) {
    return flags.usage_error(io,
                             "expected METHOD as /pkg.Service/Method, pkg.Service/Method, "
                             "pkg.Service.Method or /NAME, got '" +
                                 words[1] + "'");
  }
  DescriptorFlags descriptors;
  descriptors.read(flags);
  const auto& vm = flags.values();
  if (untyped && (!descriptors.protos.empty() || !descriptors.import_paths.empty())) {
    return flags.usage_error(io, "--proto describes typed methods: " + words[1] + " is called untyped");
  }

  BenchTarget target;
  const auto first = split_host_port(connection.target);
  target.host = first.host;
  target.port = first.port;
  for (std::size_t i = 1; i < servers.size(); ++i) target.more_servers.push_back(split_host_port(servers[i]));
  if (vm.count("lb")) {
    const auto lb = rpc::parse_load_balance(vm["lb"].as<std::string>());
    if (!lb) {
      return flags.usage_error(
          io, "--lb: expected round_robin, least_active or p2c, got '" + vm["lb"].as<std::string>() + "'");
    }
    target.load_balance = *lb;
  }
  target.health_check.enabled = vm["health-check"].as<bool>();
  if (vm.count("health-service")) {
    if (!target.health_check.enabled) return flags.usage_error(io, "--health-service needs --health-check");
    target.health_check.service = vm["health-service"].as<std::string>();
  }
  target.protocol = connection.protocol;
  target.tls = connection.tls;
  target.method_path = untyped ? *untyped : path->path();
  target.metadata = connection.metadata;
  target.timeout = vm.count("timeout-ms") ? connection.timeout : std::chrono::milliseconds(1000);
  if (target.timeout.count() == 0) return flags.usage_error(io, "--timeout-ms: bench needs a deadline (> 0)");
  BenchOptions options;
  if (vm.count("concurrency")) options.concurrency = vm["concurrency"].as<unsigned>();
  if (vm.count("duration-s")) options.duration = std::chrono::seconds(vm["duration-s"].as<unsigned>());
  if (vm.count("rate")) options.rate = vm["rate"].as<double>();
  if (vm.count("max-in-flight")) options.max_in_flight = vm["max-in-flight"].as<unsigned>();
  if (vm.count("threads")) options.threads = vm["threads"].as<unsigned>();
  options.json = vm["json"].as<bool>();
  options.progress = !vm["no-progress"].as<bool>();
  if (const auto problem = bench_problem(target, options); !problem.empty()) return flags.usage_error(io, problem);

  // The method's descriptors and the request's bytes, as `call` makes them
  // (an untyped method's request is the word as it is).
  if (untyped) {
    if (words.size() == 3) target.request = words[2];
  } else {
    Failure failure;
    auto session = Session::open(connection, failure);
    if (!session) return report(io, "bench", failure);
    auto source = descriptors.make_source(session.get(), failure);
    if (!source) return report(io, "bench", failure);
    const google::protobuf::MethodDescriptor* method = nullptr;
    if (auto f = find_method(*source, *path, method)) return report(io, "bench", *f);
    source->close();
    if (method->client_streaming() || method->server_streaming()) {
      return flags.usage_error(io, path->full_name() + " is a streaming method: bench calls unary methods");
    }
    MessageCodec codec(*method);
    RequestFeed feed(words.size() == 3 ? words[2] : std::string("{}"));
    std::optional<std::string> json;
    if (auto f = feed.next(json)) return report(io, "bench", *f);
    if (auto f = codec.request_bytes(json.value_or("{}"), 1, target.request)) return report(io, "bench", *f);
  }
  return wheelrpc::wheelctl::run_bench(target, options, io.out, io.err);
}

}  // namespace wheelrpc::wheelctl
