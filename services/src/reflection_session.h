#pragma once
/// ReflectionSession: the answers of one server reflection stream.

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "descriptor_index.h"
#include "grpc/reflection/v1/reflection.pb.h"

namespace wheelrpc::services::detail {

/// Answers the requests of one ServerReflectionInfo stream (in v1's
/// messages; v1alpha's have the same fields and numbers), each as gRPC
/// does, and remembers which files the stream was sent: a file's imports
/// go once per stream, the file asked for every time (gRPC-Go's rule).
/// The decisions only: no socket, so the tests call it directly.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (one per stream, used by
/// its handler).
class ReflectionSession {
 public:
  /// `list_services`: the names a `list_services` request answers, asked
  /// at each one. `index` outlives the session.
  ReflectionSession(DescriptorIndex& index, std::function<std::vector<std::string>()> list_services);

  ::grpc::reflection::v1::ServerReflectionResponse answer(
      const ::grpc::reflection::v1::ServerReflectionRequest& request);

 private:
  /// The file and the imports not yet sent, breadth first, into `response`.
  void add_file(const google::protobuf::FileDescriptor* file,
                ::grpc::reflection::v1::ServerReflectionResponse& response);

  DescriptorIndex& index_;
  std::function<std::vector<std::string>()> list_services_;
  std::set<std::string> sent_;  // names of the files this stream was sent
};

}  // namespace wheelrpc::services::detail
