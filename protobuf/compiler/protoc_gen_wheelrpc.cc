/// protoc-gen-wheelrpc: protoc's plugin that writes `<name>.wheelrpc.h` (typed
/// stubs and service bases) for each .proto with services.
///   protoc --plugin=protoc-gen-wheelrpc=PATH --cpp_out=OUT --wheelrpc_out=OUT x.proto
/// and, for other languages' clients, x.proto without wheelrpc's options:
///   protoc --plugin=protoc-gen-wheelrpc=PATH --wheelrpc_out=client_proto:DIR x.proto
#include <google/protobuf/compiler/plugin.h>

#include "wheelrpc_generator.h"

int main(int argc, char* argv[]) {
  wheelrpc::protobuf::compiler::WheelrpcGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
