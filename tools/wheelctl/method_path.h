#pragma once
/// MethodPath: a method named on the command line, as grpcurl accepts it:
/// "/pkg.Service/Method", "pkg.Service/Method" or "pkg.Service.Method".

#include <optional>
#include <string>
#include <string_view>

namespace wheelrpc::wheelctl {

/// A method's service (full name, "pkg.Service") and its simple name.
/// Distinct objects: safe.
struct MethodPath {
  std::string service;  ///< "helloworld.Greeter"
  std::string method;   ///< "SayHello"

  /// The gRPC wire path, "/helloworld.Greeter/SayHello".
  std::string path() const { return "/" + service + "/" + method; }
  /// The protobuf full name, "helloworld.Greeter.SayHello".
  std::string full_name() const { return service + "." + method; }

  /// Parses the three forms above; std::nullopt when `text` is none of them
  /// (empty parts, more slashes, no dot in "Service.Method").
  static std::optional<MethodPath> parse(std::string_view text);
};

}  // namespace wheelrpc::wheelctl
