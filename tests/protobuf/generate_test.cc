// wheelrpc_protobuf_generate's outputs: protoc's C++ for the golden inputs,
// the (wheelrpc.method) option readable through them, and the plugin's
// headers beside them for the files with services.
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include <wheelrpc/options.pb.h>

#include "app/route.pb.h"
#include "policies.pb.h"

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

}  // namespace
