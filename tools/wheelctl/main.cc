// wheelctl: the operator's command-line tool for wheelrpc and any gRPC
// server. `wheelctl VERB ...`; each verb has --help. The verbs are in
// verb_*.cc (library wheelctl_core).
#include <iostream>
#include <string>
#include <vector>

#include "failure.h"
#include "verbs.h"

namespace {

using namespace wheelrpc::wheelctl;

constexpr const char* kUsage =
    "usage: wheelctl VERB [ARGS] [FLAGS]     (wheelctl VERB --help for each)\n"
    "\n"
    "Verbs:\n"
    "  list HOST:PORT                       the services a server offers (server reflection or --proto)\n"
    "  describe HOST:PORT [SYMBOL]          a service, method, message or enum as .proto-like text\n"
    "  call HOST:PORT METHOD [JSON]         call a method, unary or streaming, with protobuf JSON\n"
    "  health HOST:PORT [SERVICE] [--watch] grpc.health.v1 Check (or Watch): exit 0 when SERVING\n"
    "  registry etcd://HOST:PORT [SERVICE]  the providers the registry holds, as a table (--watch)\n"
    "  rules get|put|delete etcd://HOST:PORT SERVICE [NAME] [JSON|@FILE]\n"
    "                                       a service's runtime rules in etcd (put validates first)\n"
    "  explain ADMIN_HOST:PORT METHOD       which value of each call setting wins, and who set it\n"
    "  bench HOST:PORT METHOD [JSON] ...    load test: calls/s, errors, latency percentiles\n"
    "\n"
    "HOST:PORT is a host name, localhost, an IPv4 or a [IPv6] literal, and a port. The\n"
    "wire is gRPC by default (any gRPC server; a wheelrpc server serves both): --protocol\n"
    "native for wheelrpc's own. TLS: --tls-ca F [--tls-cert F --tls-key F]\n"
    "[--tls-server-name N]. --timeout-ms T bounds every wait (default 5000).\n"
    "\n"
    "Exit status:\n"
    "  0  success (health: SERVING)\n"
    "  1  the call or check failed: \"STATUS: message\" on stderr\n"
    "  2  usage error, malformed JSON request, a --proto file that does not compile,\n"
    "     an invalid rule (rules put: nothing written)\n"
    "  3  cannot resolve the host or connect (refused, TLS handshake, no answer in time)\n"
    "  4  health: the server answered, and not SERVING\n"
    "  5  unknown service, method or symbol; or no server reflection (give --proto);\n"
    "     no such rule (rules get NAME, rules delete)\n"
    "\n"
    "  -h, --help     this text\n"
    "  --version      \"wheelctl (wheelrpc) X.Y.Z\"\n";

}  // namespace

int main(int argc, char** argv) {
  // The library logs through named loggers that fall back to a null sink:
  // wheelctl installs none, so its output is only its own.
  std::ios::sync_with_stdio(true);
  if (argc < 2) {
    std::cerr << "wheelctl: expected a verb (see wheelctl --help)\n";
    return kExitUsage;
  }
  const std::string verb = argv[1];
  if (verb == "-h" || verb == "--help" || verb == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (verb == "--version") {
    std::cout << "wheelctl (wheelrpc) " << WHEELRPC_VERSION << "\n";
    return kExitOk;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  Io io{std::cin, std::cout, std::cerr};
  if (verb == "list") return run_list(args, io);
  if (verb == "describe") return run_describe(args, io);
  if (verb == "call") return run_call(args, io);
  if (verb == "health") return run_health(args, io);
  if (verb == "registry") return run_registry(args, io);
  if (verb == "rules") return run_rules(args, io);
  if (verb == "explain") return run_explain(args, io);
  if (verb == "bench") return run_bench_verb(args, io);
  std::cerr << "wheelctl: unknown verb '" << verb << "' (see wheelctl --help)\n";
  return kExitUsage;
}
