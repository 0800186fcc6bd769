// wheelctl describe: a service, method, message or enum as .proto-like
// text (grpcurl's `describe`), through reflection or --proto files.
#include <algorithm>
#include <memory>
#include <ostream>

#include "connection_flags.h"
#include "descriptor_source.h"
#include "proto_printer.h"
#include "session.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace {

constexpr const char* kUsage =
    "usage: wheelctl describe HOST:PORT [SYMBOL] [--proto FILE]... [--import-path DIR]... [flags]\n"
    "Prints SYMBOL (a service \"pkg.Service\", a method \"pkg.Service.Method\" or\n"
    "\"pkg.Service/Method\", a message or an enum, by full name) as .proto-like text,\n"
    "headed \"SYMBOL is a service:\"; without SYMBOL, every service HOST:PORT lists.\n"
    "Descriptors come from the server's reflection, or from --proto files.\n"
    "Exit status: 0 described, 1 the reflection call failed, 2 usage, 3 cannot connect,\n"
    "5 no such symbol, or no reflection on the server (give --proto).\n";

std::optional<Failure> describe_one(DescriptorSource& source, std::string name, std::ostream& out) {
  if (const auto slash = name.find('/', 1); slash != std::string::npos) {
    if (name.front() == '/') name.erase(0, 1);
    std::replace(name.begin(), name.end(), '/', '.');
  }
  Symbol symbol;
  if (auto f = find_symbol(source, name, symbol)) return f;
  if (symbol.service) out << describe_text(*symbol.service);
  if (symbol.method) out << describe_text(*symbol.method);
  if (symbol.message) out << describe_text(*symbol.message);
  if (symbol.enumeration) out << describe_text(*symbol.enumeration);
  return std::nullopt;
}

}  // namespace

int run_describe(const Args& args, Io& io) {
  VerbFlags flags("describe", kUsage);
  ConnectionFlags::declare(flags, true);
  DescriptorFlags::declare(flags);
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.empty() || words.size() > 2) return flags.usage_error(io, "expected HOST:PORT [SYMBOL]");
  ConnectionFlags connection;
  if (auto problem = connection.read(flags, words[0])) return flags.usage_error(io, *problem);
  DescriptorFlags descriptors;
  descriptors.read(flags);

  Failure failure;
  std::unique_ptr<Session> session;
  if (descriptors.protos.empty() && !(session = Session::open(connection, failure))) {
    return report(io, "describe", failure);
  }
  auto source = descriptors.make_source(session.get(), failure);
  if (!source) return report(io, "describe", failure);
  std::vector<std::string> names;
  if (words.size() == 2) {
    names.push_back(words[1]);
  } else if (auto f = source->list_services(names)) {
    return report(io, "describe", *f);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) io.out << "\n";
    if (auto f = describe_one(*source, names[i], io.out)) return report(io, "describe", *f);
  }
  source->close();
  return kExitOk;
}

}  // namespace wheelrpc::wheelctl
