// wheelctl list: the services a server offers, through its reflection or
// --proto files, one full name per line, sorted (grpcurl's `list`).
#include <memory>
#include <ostream>

#include "connection_flags.h"
#include "descriptor_source.h"
#include "session.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace {

constexpr const char* kUsage =
    "usage: wheelctl list HOST:PORT [--proto FILE]... [--import-path DIR]... [flags]\n"
    "Prints the services HOST:PORT serves, one full name per line, sorted: those its\n"
    "server reflection lists (grpc.reflection.v1, or v1alpha when v1 is UNIMPLEMENTED),\n"
    "or, with --proto, those the files define (then nothing is asked of HOST:PORT).\n"
    "Exit status: 0 listed, 1 the reflection call failed, 2 usage, 3 cannot connect,\n"
    "5 no reflection on the server (give --proto).\n";

}  // namespace

int run_list(const Args& args, Io& io) {
  VerbFlags flags("list", kUsage);
  ConnectionFlags::declare(flags, true);
  DescriptorFlags::declare(flags);
  if (auto status = flags.parse(args, io)) return *status;
  if (flags.positional().size() != 1) return flags.usage_error(io, "expected HOST:PORT");
  ConnectionFlags connection;
  if (auto problem = connection.read(flags, flags.positional()[0])) return flags.usage_error(io, *problem);
  DescriptorFlags descriptors;
  descriptors.read(flags);

  Failure failure;
  std::unique_ptr<Session> session;
  if (descriptors.protos.empty() && !(session = Session::open(connection, failure))) return report(io, "list", failure);
  auto source = descriptors.make_source(session.get(), failure);
  if (!source) return report(io, "list", failure);
  std::vector<std::string> services;
  if (auto f = source->list_services(services)) return report(io, "list", *f);
  source->close();
  for (const auto& s : services) io.out << s << "\n";
  return kExitOk;
}

}  // namespace wheelrpc::wheelctl
