// The gateway's rule for which HTTP headers become call metadata
// (admin/src/gateway_metadata.h): authorization, a valid traceparent, x-*
// but the gateway's own, grpc-metadata-* with the prefix stripped; never a
// hop-by-hop or framing header, nor a key gRPC reserves.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gateway_metadata.h"

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;
using wheelrpc::admin::detail::gateway_metadata;

TEST(GatewayMetadata, PassesAuthorizationXHeadersAndGrpcMetadataInOrder) {
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const Headers in = {{"host", "127.0.0.1:9100"}, {"authorization", "Bearer T"},
                      {"x-tenant", "acme"},       {"grpc-metadata-region", "eu"},
                      {"traceparent", tp},        {"x-tenant", "second"},
                      {"user-agent", "curl/8"},   {"accept", "*/*"}};
  const Headers want = {{"authorization", "Bearer T"},
                        {"x-tenant", "acme"},
                        {"region", "eu"},
                        {"traceparent", tp},
                        {"x-tenant", "second"}};
  EXPECT_EQ(gateway_metadata(in), want);
}

TEST(GatewayMetadata, NeverPassesHopByHopFramingOrReservedHeaders) {
  const Headers in = {{"connection", "close"},
                      {"keep-alive", "timeout=5"},
                      {"te", "trailers"},
                      {"trailer", "x-checksum"},
                      {"transfer-encoding", "chunked"},
                      {"upgrade", "h2c"},
                      {"proxy-authorization", "Basic eA=="},
                      {"proxy-connection", "keep-alive"},
                      {"host", "example"},
                      {"content-length", "3"},
                      {"content-type", "application/json"},
                      // the same smuggled through grpc-gateway's prefix
                      {"grpc-metadata-connection", "close"},
                      {"grpc-metadata-content-type", "text/plain"},
                      {"grpc-metadata-proxy-authorization", "Basic eA=="},
                      {"grpc-metadata-grpc-timeout", "1S"},
                      {"grpc-metadata-", "empty key"},
                      {"grpc-timeout", "1S"},
                      // the gateway's own controls
                      {"x-wheelrpc-timeout-ms", "50"},
                      {"x-wheelrpc-anything", "1"},
                      // outside gRPC's key alphabet, a control character, a malformed traceparent
                      {"x-we!rd", "1"},
                      {"x-bell", std::string("a\x07"
                                             "b")},
                      {"traceparent", "00-not-a-trace-01"}};
  EXPECT_TRUE(gateway_metadata(in).empty()) << gateway_metadata(in).size();
}

TEST(GatewayMetadata, ExcludedKeysAreTheDocumentedOnes) {
  using wheelrpc::admin::detail::is_gateway_excluded_key;
  for (const char* k : {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "host",
                        "content-length", "content-type", "proxy-authenticate", "grpc-status"}) {
    EXPECT_TRUE(is_gateway_excluded_key(k)) << k;
  }
  for (const char* k : {"authorization", "x-request-id", "tenant", "traceparent", "terms"}) {
    EXPECT_FALSE(is_gateway_excluded_key(k)) << k;
  }
}

}  // namespace
