#pragma once
/// The client copy of a .proto: what other languages' gRPC clients compile,
/// with no wheelrpc file.

#include <string>

#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/descriptor.h>

namespace wheelrpc::protobuf::compiler {

/// Writes `<name>.proto` (the same path protoc names `file` by) into the
/// output directory: `file` as protobuf's own printer writes it
/// (FileDescriptor::DebugString, with the source's comments), less every
/// option wheelrpc/options.proto defines (`(wheelrpc.method)`) and less
/// the import of wheelrpc/options.proto. Package, imports, messages, enums,
/// field numbers and types, services and methods are the same, so a client
/// built from the copy speaks the same wire; a gRPC client's paths are the
/// same too (`/package.Service/Method`). Fails, naming the file, when the
/// file uses wheelrpc/options.proto beyond its options (a field of type
/// wheelrpc.MethodPolicy): the copy would still need it.
bool write_client_proto(const google::protobuf::FileDescriptor* file,
                        google::protobuf::compiler::GeneratorContext* context, std::string* error);

}  // namespace wheelrpc::protobuf::compiler
