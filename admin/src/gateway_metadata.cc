#include "gateway_metadata.h"

#include <array>

#include <wheelrpc/rpc/bearer_token_interceptor.h>
#include <wheelrpc/rpc/trace.h>

namespace wheelrpc::admin::detail {
namespace {

constexpr std::string_view kGrpcMetadataPrefix = "grpc-metadata-";
constexpr std::string_view kGatewayPrefix = "x-wheelrpc-";

bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

// gRPC's metadata keys: 0-9 a-z - _ . (HTTP/2 lower-cases them).
bool valid_key(std::string_view key) noexcept {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Printable ASCII, space and tab: what an HTTP/1.1 field value may hold
// besides obs-text, which is passed as is.
bool valid_value(std::string_view value) noexcept {
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

}  // namespace

bool is_gateway_excluded_key(std::string_view key) noexcept {
  constexpr std::array<std::string_view, 9> kHopByHop = {"connection", "keep-alive",        "te",
                                                         "trailer",    "transfer-encoding", "upgrade",
                                                         "host",       "content-length",    "content-type"};
  for (auto h : kHopByHop) {
    if (key == h) return true;
  }
  return starts_with(key, "proxy-") || starts_with(key, "grpc-");
}

transport::Attachments gateway_metadata(const std::vector<std::pair<std::string, std::string>>& headers) {
  transport::Attachments out;
  for (const auto& [name, value] : headers) {
    std::string_view key = name;
    if (starts_with(key, kGrpcMetadataPrefix)) {
      key.remove_prefix(kGrpcMetadataPrefix.size());
    } else if (key != rpc::kAuthorizationKey && key != rpc::kTraceparentKey &&
               (!starts_with(key, "x-") || starts_with(key, kGatewayPrefix))) {
      continue;
    }
    // A malformed traceparent would hide the trace the call otherwise starts.
    if (key == rpc::kTraceparentKey && !rpc::TraceContext::parse(value)) continue;
    if (!valid_key(key) || is_gateway_excluded_key(key) || !valid_value(value)) continue;
    out.emplace_back(std::string(key), value);
  }
  return out;
}

}  // namespace wheelrpc::admin::detail
