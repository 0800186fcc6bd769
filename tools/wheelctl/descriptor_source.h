#pragma once
/// DescriptorSource: where wheelctl finds services, methods and messages:
/// the server's reflection (ReflectionSource) or .proto files given with
/// --proto (ProtoFileSource). DescriptorFlags are the flags that choose.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "failure.h"
#include "method_path.h"
#include "verb_flags.h"

namespace wheelrpc::wheelctl {

class Session;

/// A descriptor pool and the list of services. Distinct objects: safe;
/// shared objects: unsafe (one thread).
class DescriptorSource {
 public:
  virtual ~DescriptorSource() = default;
  /// The services' full names, sorted.
  virtual std::optional<Failure> list_services(std::vector<std::string>& out) = 0;
  /// The pool symbols are looked up in; it may fetch what it lacks as it is asked.
  virtual const google::protobuf::DescriptorPool& pool() = 0;
  /// Why the last lookup that found nothing could not look (a failed
  /// reflection stream), or std::nullopt when the symbol is simply unknown.
  virtual std::optional<Failure> fetch_failure() const { return std::nullopt; }
  /// Ends any conversation with the server; the descriptors found stay valid.
  virtual void close() {}
  /// Where symbols come from, for messages: "the server's reflection", "the --proto files".
  virtual std::string origin() const = 0;
};

/// --proto FILE (repeatable) and --import-path DIR (repeatable).
struct DescriptorFlags {
  std::vector<std::string> protos;
  std::vector<std::string> import_paths;

  static void declare(VerbFlags& flags);
  void read(const VerbFlags& flags);
  /// A ProtoFileSource when --proto was given (`session` may be null), a
  /// ReflectionSource over `session` otherwise. Null and `failure` set when
  /// the files do not compile (kExitUsage).
  std::unique_ptr<DescriptorSource> make_source(Session* session, Failure& failure) const;
};

/// What a symbol names: one of the four, or none.
struct Symbol {
  const google::protobuf::ServiceDescriptor* service = nullptr;
  const google::protobuf::MethodDescriptor* method = nullptr;
  const google::protobuf::Descriptor* message = nullptr;
  const google::protobuf::EnumDescriptor* enumeration = nullptr;
};

/// Finds `name` (a service, a method as "pkg.Service.Method", a message or
/// an enum; a leading '.' ignored). kExitUnknownSymbol when it names
/// nothing, or the source's fetch failure.
std::optional<Failure> find_symbol(DescriptorSource& source, std::string name, Symbol& out);

/// Finds the method `path` names: kExitUnknownSymbol naming what is missing
/// (the service, or the method and the service's methods).
std::optional<Failure> find_method(DescriptorSource& source, const MethodPath& path,
                                   const google::protobuf::MethodDescriptor*& out);

}  // namespace wheelrpc::wheelctl
