#pragma once
/// The code generator behind protoc-gen-wheelrpc.

#include <cstdint>
#include <string>

#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/descriptor.h>

namespace wheelrpc::protobuf::compiler {

/// Writes `<name>.wheelrpc.h` beside protoc's `<name>.pb.h` for a .proto with
/// at least one service (nothing for a file without services): per service a
/// class holding a struct per method (types, wire path `/<package>.<Service>/
/// <Method>`, its MethodKind, the `(wheelrpc.method)` policy), a client
/// Stub, and coroutine and callback service bases; `stream` methods (client,
/// server, bidi) are typed streams over wheelrpc's streams. Fails, naming the
/// place in the file and the method, on a `(wheelrpc.method)` option that
/// cannot work (check_policies, policy_check.h).
///
/// With the parameter `client_proto` (`--wheelrpc_out=client_proto:DIR`) it
/// writes instead, for every file, its client copy `DIR/<name>.proto`: the
/// file less wheelrpc's options and their import (write_client_proto,
/// client_proto.h), for gRPC clients in other languages.
class WheelrpcGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context, std::string* error) const override;

  /// proto3 `optional` fields are protoc's concern (in .pb.h); nothing here
  /// depends on them.
  std::uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }
};

}  // namespace wheelrpc::protobuf::compiler
