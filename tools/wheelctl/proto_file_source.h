#pragma once
/// ProtoFileSource: descriptors from .proto files on disk (--proto,
/// --import-path), for servers without reflection: protobuf's compiler
/// front end (DiskSourceTree), with the well-known types and the other
/// files compiled into wheelctl as a fallback for imports.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor_database.h>

#include "descriptor_source.h"

namespace wheelrpc::wheelctl {

/// One thread. Every file is compiled in load(); nothing is fetched later.
class ProtoFileSource final : public DescriptorSource {
 public:
  /// Compiles `protos`, each a name under one of `import_paths`
  /// ("grpc/testing/test.proto", as protoc takes it) or a path on disk
  /// under one (each file's own directory, then ".", when none is given). Null and
  /// `failure` (kExitUsage, protoc-like "file:line:column: problem" lines)
  /// when a file cannot be read or does not compile.
  static std::unique_ptr<ProtoFileSource> load(const std::vector<std::string>& protos,
                                               const std::vector<std::string>& import_paths, Failure& failure);

  ~ProtoFileSource() override;

  std::optional<Failure> list_services(std::vector<std::string>& out) override;
  const google::protobuf::DescriptorPool& pool() override { return *pool_; }
  std::string origin() const override { return "the --proto files"; }

 private:
  class Errors;
  ProtoFileSource();

  google::protobuf::compiler::DiskSourceTree tree_;
  google::protobuf::DescriptorPoolDatabase compiled_in_;
  std::unique_ptr<Errors> errors_;
  std::unique_ptr<google::protobuf::compiler::SourceTreeDescriptorDatabase> database_;
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
  std::vector<const google::protobuf::FileDescriptor*> files_;
};

}  // namespace wheelrpc::wheelctl
