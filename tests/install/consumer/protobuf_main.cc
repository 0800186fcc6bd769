// Generated from greeter.proto with the installed protoc-gen-wheelrpc: protoc's
// C++ links against wheelrpc::protobuf, and the (wheelrpc.method) option reads
// back through the installed <wheelrpc/options.pb.h>.
#include <cstdio>

#include <wheelrpc/options.pb.h>

#include "greeter.pb.h"

#if !__has_include("greeter.wheelrpc.h")
#error "protoc-gen-wheelrpc wrote no greeter.wheelrpc.h"
#endif

int main() {
  const auto* method = consumer::HelloRequest::descriptor()->file()->FindServiceByName("Greeter")->method(0);
  const wheelrpc::MethodPolicy& policy = method->options().GetExtension(wheelrpc::method);
  std::printf("%s: timeout_ms %u, retries %u\n", method->full_name().c_str(), policy.timeout_ms(), policy.retries());
  return policy.timeout_ms() == 200 && policy.idempotent() && policy.retries() == 2 ? 0 : 1;
}
