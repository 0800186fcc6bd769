// wheelrpc_protobuf_generate's outputs: protoc's C++ for the golden inputs,
// the (wheelrpc.method) option readable through them, and the plugin's
// headers beside them for the files with services, with the descriptors
// they embed (the file's and its imports', as protoc's own).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <wheelrpc/options.pb.h>

#include "app/route.pb.h"
#include "app/route.wheelrpc.h"
#include "policies.pb.h"
#include "policies.wheelrpc.h"

#if !__has_include("policies.wheelrpc.h") || !__has_include("app/route.wheelrpc.h")
#error "protoc-gen-wheelrpc wrote no header for a file with services"
#endif
#if __has_include("common/types.wheelrpc.h")
#error "protoc-gen-wheelrpc wrote a header for a file without services"
#endif

namespace {

const google::protobuf::MethodDescriptor* tuned_method(const std::string& name) {
  const auto* service = policies::Req::descriptor()->file()->FindServiceByName("Tuned");
  return service == nullptr ? nullptr : service->FindMethodByName(name);
}

TEST(ProtobufGenerate, MethodOptionReadsBack) {
  const auto* all = tuned_method("All");
  ASSERT_NE(all, nullptr);
  const wheelrpc::MethodPolicy& policy = all->options().GetExtension(wheelrpc::method);
  EXPECT_EQ(policy.timeout_ms(), 1500u);
  EXPECT_TRUE(policy.idempotent());
  EXPECT_EQ(policy.retries(), 16u);
  EXPECT_EQ(policy.attempt_timeout_ms(), 400u);
  EXPECT_EQ(policy.hedge_delay_ms(), 50u);
  EXPECT_TRUE(policy.has_wait_for_ready());
  EXPECT_FALSE(policy.wait_for_ready());
  EXPECT_FALSE(policy.has_compression());

  const auto* compressed = tuned_method("Compressed");
  ASSERT_NE(compressed, nullptr);
  const wheelrpc::MethodPolicy& compressed_policy = compressed->options().GetExtension(wheelrpc::method);
  EXPECT_EQ(compressed_policy.compression(), "zstd");
  EXPECT_EQ(compressed_policy.compression_level(), 3);

  const auto* none = tuned_method("None");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->options().HasExtension(wheelrpc::method));
}

TEST(ProtobufGenerate, ImportedTypesAcrossPackages) {
  app::Route route;
  other::types::Point* point = route.add_points();
  point->set_x(3);
  other::types::Box_Corner corner;
  *corner.mutable_at() = *point;
  EXPECT_EQ(corner.at().x(), 3);
}

/// The names of the embedded files, each checked to parse and to equal
/// what protobuf's generated pool holds for that file (FileDescriptor::CopyTo).
std::vector<std::string> embedded_files(std::span<const std::string_view> embedded) {
  std::vector<std::string> names;
  for (const std::string_view bytes : embedded) {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    names.push_back(file.name());
    const auto* source = google::protobuf::DescriptorPool::generated_pool()->FindFileByName(file.name());
    EXPECT_NE(source, nullptr) << file.name();
    if (source == nullptr) continue;
    google::protobuf::FileDescriptorProto expected;
    source->CopyTo(&expected);
    EXPECT_EQ(file.SerializeAsString(), expected.SerializeAsString()) << file.name();
    EXPECT_EQ(std::string(bytes), expected.SerializeAsString()) << file.name();
  }
  return names;
}

TEST(ProtobufGenerate, TheHeadersEmbedTheFileAndItsImportsAsProtocDescribesThem) {
  EXPECT_EQ(embedded_files(app::Router::file_descriptors),
            (std::vector<std::string>{"app/route.proto", "common/types.proto"}));
  EXPECT_EQ(embedded_files(policies::Tuned::file_descriptors),
            (std::vector<std::string>{"policies.proto", "wheelrpc/options.proto", "google/protobuf/descriptor.proto"}));
}

/// The service bases hand them to rpc::Service.
class Router : public app::Router::Service {};
class CallbackRouter : public app::Router::CallbackService {};

TEST(ProtobufGenerate, TheServiceBasesCarryTheEmbeddedDescriptors) {
  Router coroutine;
  CallbackRouter callback;
  for (const wheelrpc::rpc::Service* service :
       {static_cast<wheelrpc::rpc::Service*>(&coroutine), static_cast<wheelrpc::rpc::Service*>(&callback)}) {
    ASSERT_EQ(service->file_descriptors().size(), 2u);
    EXPECT_EQ(service->file_descriptors().data(), app::Router::file_descriptors.data());
  }
}

}  // namespace
