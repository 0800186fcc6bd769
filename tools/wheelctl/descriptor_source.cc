#include "descriptor_source.h"

#include "proto_file_source.h"
#include "reflection_source.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;
namespace gpb = google::protobuf;

void DescriptorFlags::declare(VerbFlags& flags) {
  flags.options().add_options()("proto", po::value<std::vector<std::string>>()->composing()->value_name("FILE"),
                                "a .proto describing the service, repeatable: used instead of server reflection")(
      "import-path", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "where --proto files and their imports are found, repeatable (default: each file's directory and .)");
}

void DescriptorFlags::read(const VerbFlags& flags) {
  const auto& vm = flags.values();
  if (vm.count("proto")) protos = vm["proto"].as<std::vector<std::string>>();
  if (vm.count("import-path")) import_paths = vm["import-path"].as<std::vector<std::string>>();
}

std::unique_ptr<DescriptorSource> DescriptorFlags::make_source(Session* session, Failure& failure) const {
  if (!protos.empty()) return ProtoFileSource::load(protos, import_paths, failure);
  return std::make_unique<ReflectionSource>(*session);
}

std::optional<Failure> find_symbol(DescriptorSource& source, std::string name, Symbol& out) {
  if (!name.empty() && name.front() == '.') name.erase(0, 1);
  const auto& pool = source.pool();
  out = {};
  if ((out.service = pool.FindServiceByName(name))) return std::nullopt;
  if (auto f = source.fetch_failure()) return f;
  if ((out.message = pool.FindMessageTypeByName(name))) return std::nullopt;
  if ((out.enumeration = pool.FindEnumTypeByName(name))) return std::nullopt;
  if (auto f = source.fetch_failure()) return f;
  // A method: its service first (a reflection server need not index methods).
  if (const auto dot = name.rfind('.'); dot != std::string::npos) {
    if (const auto* service = pool.FindServiceByName(name.substr(0, dot))) {
      if ((out.method = service->FindMethodByName(name.substr(dot + 1)))) return std::nullopt;
    }
  }
  if (auto f = source.fetch_failure()) return f;
  return Failure{kExitUnknownSymbol, "symbol '" + name + "' not found in " + source.origin()};
}

std::optional<Failure> find_method(DescriptorSource& source, const MethodPath& path,
                                   const gpb::MethodDescriptor*& out) {
  out = nullptr;
  const auto* service = source.pool().FindServiceByName(path.service);
  if (!service) {
    if (auto f = source.fetch_failure()) return f;
    return Failure{kExitUnknownSymbol, "service '" + path.service + "' not found in " + source.origin()};
  }
  if ((out = service->FindMethodByName(path.method))) return std::nullopt;
  std::string methods;
  for (int i = 0; i < service->method_count(); ++i) methods += (i ? ", " : "") + service->method(i)->name();
  return Failure{kExitUnknownSymbol, "service '" + path.service + "' has no method '" + path.method +
                                         "' (its methods: " + (methods.empty() ? "none" : methods) + ")"};
}

}  // namespace wheelrpc::wheelctl
