// wheelctl health: grpc.health.v1.Health/Check (or Watch) of a server or
// one of its services; the exit status says SERVING or not, so it serves as
// a container probe (as grpc_health_probe does).
#include <atomic>
#include <iostream>
#include <memory>

#include <boost/asio/signal_set.hpp>

#include <wheelrpc/rpc/status_code.h>

#include "connection_flags.h"
#include "grpc/health/v1/health.pb.h"
#include "session.h"
#include "utc_time.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;
namespace health = grpc::health::v1;

namespace {

constexpr const char* kCheckPath = "/grpc.health.v1.Health/Check";
constexpr const char* kWatchPath = "/grpc.health.v1.Health/Watch";

constexpr const char* kUsage =
    "usage: wheelctl health HOST:PORT [SERVICE] [--watch] [flags]\n"
    "Asks grpc.health.v1.Health/Check for SERVICE (default \"\": the server as a whole)\n"
    "and prints the status: SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN.\n"
    "With --watch, follows Health/Watch instead: one line per status the server sends,\n"
    "\"2026-01-31T12:00:00.123Z SERVING\" (UTC), until SIGINT or SIGTERM or the stream\n"
    "ends; --timeout-ms then bounds opening the watch only.\n"
    "Exit status: 0 SERVING (with --watch: the last status received), 1 the health call\n"
    "failed (e.g. UNIMPLEMENTED: no health service), 2 usage, 3 cannot resolve or\n"
    "connect, 4 answered and not SERVING (NOT_SERVING, UNKNOWN, SERVICE_UNKNOWN, or\n"
    "Check's NOT_FOUND for an unknown service).\n";

int status_exit(health::HealthCheckResponse::ServingStatus s) {
  return s == health::HealthCheckResponse::SERVING ? kExitOk : kExitNotServing;
}

int check(Session& session, const std::string& request, Io& io) {
  rpc::Response response;
  const auto outcome = session.call(kCheckPath, request, response);
  if (!outcome) {
    Failure f = session.failure(outcome);
    if (rpc::status_code_of(outcome.ec) == rpc::StatusCode::not_found) f.exit_code = kExitNotServing;
    return report(io, "health", f);
  }
  health::HealthCheckResponse reply;
  if (!reply.ParseFromString(response.payload)) {
    return report(io, "health", Failure{kExitFailed, "the answer is not a HealthCheckResponse"});
  }
  io.out << health::HealthCheckResponse::ServingStatus_Name(reply.status()) << std::endl;
  return status_exit(reply.status());
}

int watch(Session& session, const std::string& request, Io& io) {
  auto stream = std::make_shared<rpc::ClientStream>();
  if (auto outcome = session.open_stream(kWatchPath, session.stream_options(false), *stream); !outcome) {
    return report(io, "health", session.failure(outcome));
  }
  // SIGINT/SIGTERM end the watch: the handler (on the session's thread)
  // cancels the stream, which ends the read below.
  auto interrupted = std::make_shared<std::atomic<bool>>(false);
  boost::asio::signal_set signals(session.io(), SIGINT, SIGTERM);
  signals.async_wait([stream, interrupted](boost::system::error_code ec, int) {
    if (ec) return;
    interrupted->store(true);
    stream->cancel();
  });
  std::optional<int> last;
  Session::Outcome outcome = session.write(*stream, request);
  if (outcome) (void)session.writes_done(*stream);
  while (outcome) {
    std::optional<std::string> bytes;
    outcome = session.read(*stream, bytes);
    if (!outcome || !bytes) break;
    health::HealthCheckResponse reply;
    if (!reply.ParseFromString(*bytes)) {
      stream->cancel();
      return report(io, "health", Failure{kExitFailed, "an answer is not a HealthCheckResponse"});
    }
    io.out << utc_now() << " " << health::HealthCheckResponse::ServingStatus_Name(reply.status()) << std::endl;
    last = status_exit(reply.status());
  }
  signals.cancel();
  if (interrupted->load()) return last.value_or(kExitFailed);
  if (outcome) outcome = session.finish(*stream);
  if (!outcome) return report(io, "health", session.failure(outcome));
  return last.value_or(kExitFailed);
}

}  // namespace

int run_health(const Args& args, Io& io) {
  VerbFlags flags("health", kUsage);
  ConnectionFlags::declare(flags, true);
  flags.options().add_options()("watch", po::bool_switch(), "follow Health/Watch until interrupted");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.empty() || words.size() > 2) return flags.usage_error(io, "expected HOST:PORT [SERVICE]");
  ConnectionFlags connection;
  if (auto problem = connection.read(flags, words[0])) return flags.usage_error(io, *problem);
  health::HealthCheckRequest request;
  if (words.size() == 2) request.set_service(words[1]);

  Failure failure;
  auto session = Session::open(connection, failure);
  if (!session) return report(io, "health", failure);
  if (flags.values()["watch"].as<bool>()) return watch(*session, request.SerializeAsString(), io);
  return check(*session, request.SerializeAsString(), io);
}

}  // namespace wheelrpc::wheelctl
