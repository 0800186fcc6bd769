#pragma once
/// ReflectionSource: descriptors from the server's reflection service,
/// grpc.reflection.v1, or v1alpha when the server answers v1 UNIMPLEMENTED
/// (as grpcurl does), over ServerReflectionInfo streams.

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>

#include "descriptor_source.h"
#include "grpc/reflection/v1/reflection.pb.h"

namespace wheelrpc::wheelctl {

class Session;

/// The two versions' messages are the same on the wire (v1 is v1alpha
/// renamed), so both are spoken with v1's classes; only the path differs.
/// Files are fetched as the pool asks for them (a DescriptorDatabase over
/// the streams) and cached. Every answer is bounded by --timeout-ms (the
/// stream's message timer). One thread; the Session must outlive it.
class ReflectionSource final : public DescriptorSource {
 public:
  explicit ReflectionSource(Session& session);
  ~ReflectionSource() override;

  std::optional<Failure> list_services(std::vector<std::string>& out) override;
  const google::protobuf::DescriptorPool& pool() override { return *pool_; }
  std::optional<Failure> fetch_failure() const override { return failure_; }
  std::string origin() const override;

  /// The FileDescriptorProto named `filename` (from cache or the server).
  bool fetch_file(const std::string& filename, google::protobuf::FileDescriptorProto& out);
  /// The file that defines `symbol` (server: file_containing_symbol).
  bool fetch_symbol(const std::string& symbol, google::protobuf::FileDescriptorProto& out);

 private:
  /// One request, one response, each on a stream of its own (v1 first,
  /// then v1alpha if the server answers UNIMPLEMENTED, as grpcurl does).
  /// A failure is kept in failure_ and returned.
  std::optional<Failure> exchange(const grpc::reflection::v1::ServerReflectionRequest& request,
                                  grpc::reflection::v1::ServerReflectionResponse& response);
  /// The request on `path`; `unimplemented` when the server has no such method.
  std::optional<Failure> ask(const std::string& path, const grpc::reflection::v1::ServerReflectionRequest& request,
                             grpc::reflection::v1::ServerReflectionResponse& response, bool& unimplemented);
  /// Keeps every file of a file_descriptor_response; the first into `first`.
  bool keep_files(const grpc::reflection::v1::ServerReflectionResponse& response,
                  google::protobuf::FileDescriptorProto* first);

  Session& session_;
  std::string version_;  // "v1" or "v1alpha" once the server answered
  std::optional<Failure> failure_;
  std::map<std::string, google::protobuf::FileDescriptorProto> files_;
  std::unique_ptr<google::protobuf::DescriptorDatabase> database_;
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
};

}  // namespace wheelrpc::wheelctl
