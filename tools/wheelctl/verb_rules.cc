// wheelctl rules: the runtime rules of a service in etcd (docs/governance.md)
// read, put and deleted. A put is validated with the registry's own
// validate_rule() first: an invalid document is refused and nothing written.
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include <wheelrpc/registry/rules.h>

#include "connection_flags.h"
#include "etcd_scan.h"
#include "failure.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: wheelctl rules get etcd://HOST:PORT[,HOST:PORT...] SERVICE [NAME] [flags]\n"
    "       wheelctl rules put etcd://HOST:PORT[,HOST:PORT...] SERVICE NAME JSON|@FILE|- [flags]\n"
    "       wheelctl rules delete etcd://HOST:PORT[,HOST:PORT...] SERVICE NAME [flags]\n"
    "The runtime rules of SERVICE, keys <root>/SERVICE/rules/NAME (NAME: [A-Za-z0-9._-],\n"
    "1..128 characters), each a JSON rule document (docs/governance.md).\n"
    "  get     prints every rule (or NAME's): a line \"KEY rev MOD_REVISION\" (and\n"
    "          \" refused: WHY\" when the document is invalid, as clients refuse it),\n"
    "          then the document as stored; a blank line between rules.\n"
    "  put     validates the document (JSON, @FILE, or - for stdin), then writes it:\n"
    "          \"put KEY rev N\". An invalid document is refused with the reason, and\n"
    "          nothing is written (exit 2).\n"
    "  delete  removes NAME: \"deleted KEY\".\n"
    "Exit status: 0 done, 2 usage or an invalid rule, 3 etcd did not answer within\n"
    "--timeout-ms, 5 no such rule (get NAME, delete).\n";

/// Reads the document argument: inline JSON, @FILE, or - (stdin).
std::optional<std::string> read_document(const std::string& arg, Io& io, std::string& problem) {
  if (arg == "-") return std::string(std::istreambuf_iterator<char>(io.in), {});
  if (arg.empty() || arg[0] != '@') return arg;
  std::ifstream file(arg.substr(1), std::ios::binary);
  if (!file) {
    problem = "cannot read " + arg.substr(1);
    return std::nullopt;
  }
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void print_rule(std::ostream& out, const EtcdKey& k) {
  out << k.key << " rev " << k.mod_revision;
  const auto name = k.key.substr(k.key.rfind('/') + 1);
  std::string why = registry::validate_rule_name(name);
  if (why.empty()) why = registry::validate_rule(k.value);
  if (!why.empty()) out << " refused: " << why;
  out << "\n" << k.value;
  if (k.value.empty() || k.value.back() != '\n') out << "\n";
}

}  // namespace

int run_rules(const Args& args, Io& io) {
  VerbFlags flags("rules", kUsage);
  flags.options().add_options()("timeout-ms", po::value<long long>()->value_name("T"),
                                "bound of each etcd request, in ms (default 5000)")(
      "root", po::value<std::string>()->value_name("PREFIX"), "the registry's key root (default /wheelrpc)");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.empty()) return flags.usage_error(io, "expected get, put or delete");
  const std::string& action = words[0];
  const std::size_t need = action == "put" ? 5 : action == "delete" ? 4 : 3;
  const std::size_t most = action == "get" ? 4 : need;
  if (action != "get" && action != "put" && action != "delete") {
    return flags.usage_error(io, "unknown action '" + action + "': expected get, put or delete");
  }
  if (words.size() < need || words.size() > most) {
    return flags.usage_error(io, action == "put"      ? "expected put etcd://HOST:PORT SERVICE NAME JSON|@FILE|-"
                                 : action == "delete" ? "expected delete etcd://HOST:PORT SERVICE NAME"
                                                      : "expected get etcd://HOST:PORT SERVICE [NAME]");
  }
  std::chrono::milliseconds timeout = ConnectionFlags::kDefaultTimeout;
  if (flags.values().count("timeout-ms")) {
    const auto t = flags.values()["timeout-ms"].as<long long>();
    if (t < 1 || t > 3'600'000) return flags.usage_error(io, "--timeout-ms: expected 1..3600000");
    timeout = std::chrono::milliseconds(t);
  }
  std::string root = "/wheelrpc";
  if (flags.values().count("root")) root = flags.values()["root"].as<std::string>();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root[0] != '/') return flags.usage_error(io, "--root: '" + root + "' must start with '/'");
  const std::string& service = words[2];
  if (service.empty() || service.find_first_of("/ ") != std::string::npos) {
    return flags.usage_error(io, "service name '" + service + "' must be non-empty, without '/' or spaces");
  }
  const std::string prefix = root + "/" + service + "/rules/";
  std::string name;
  if (words.size() > 3) {
    name = words[3];
    if (auto why = registry::validate_rule_name(name); !why.empty()) return flags.usage_error(io, why);
  }
  const std::string key = prefix + name;

  std::unique_ptr<EtcdScan> scan;
  try {
    scan = std::make_unique<EtcdScan>(words[1], timeout);
  } catch (const std::invalid_argument& e) {
    return flags.usage_error(io, e.what());
  }

  if (action == "put") {
    std::string problem;
    const auto document = read_document(words[4], io, problem);
    if (!document) return flags.usage_error(io, problem);
    if (auto why = registry::validate_rule(*document); !why.empty()) {
      return report(io, "rules", Failure{kExitUsage, "rule " + key + " refused, nothing written: " + why});
    }
    std::int64_t revision = 0;
    if (auto p = scan->put(key, *document, revision)) return report(io, "rules", Failure{kExitUnreachable, *p});
    io.out << "put " << key << " rev " << revision << "\n" << std::flush;
    return kExitOk;
  }
  if (action == "delete") {
    std::int64_t deleted = 0;
    if (auto p = scan->remove(key, deleted)) return report(io, "rules", Failure{kExitUnreachable, *p});
    if (deleted == 0) return report(io, "rules", Failure{kExitUnknownSymbol, "no rule " + key});
    io.out << "deleted " << key << "\n" << std::flush;
    return kExitOk;
  }
  std::vector<EtcdKey> keys;
  if (auto p = scan->range(name.empty() ? prefix : key, keys))
    return report(io, "rules", Failure{kExitUnreachable, *p});
  std::size_t shown = 0;
  for (const auto& k : keys) {
    if (!name.empty() && k.key != key) continue;  // the range of "slow" also holds "slow2"
    if (shown++ != 0) io.out << "\n";
    print_rule(io.out, k);
  }
  if (shown == 0) {
    if (!name.empty()) return report(io, "rules", Failure{kExitUnknownSymbol, "no rule " + key});
    io.out << "(no rules)\n";
  }
  io.out << std::flush;
  return kExitOk;
}

}  // namespace wheelrpc::wheelctl
