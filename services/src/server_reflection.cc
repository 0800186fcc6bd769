#include <wheelrpc/services/server_reflection.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/service.h>

#include "descriptor_index.h"
#include "grpc/health/v1/health.wheelrpc.h"
#include "grpc/reflection/v1/reflection.wheelrpc.h"
#include "grpc/reflection/v1alpha/reflection.wheelrpc.h"
#include "reflection_service.h"

namespace wheelrpc::services {
namespace {

/// The server's own grpc.health.v1.Health (ServerOptions::health_service)
/// is no typed service: it is known by its Watch stream's path.
bool serves_health(const rpc::Server& server) {
  return server.is_stream_method(std::string("/") + std::string(::grpc::health::v1::Health::service_full_name) +
                                 "/Watch");
}

}  // namespace

struct ServerReflection::Impl {
  explicit Impl(rpc::Server& s)
      : server(s),
        index([this] { return sources(); }),
        v1(index, [this] { return names(); }),
        v1alpha(index, [this] { return names(); }) {}

  /// The typed services' names in registration order, then the health
  /// service's when the server serves it and no typed one has its name.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const rpc::Service* service : server.services()) {
      if (std::find(out.begin(), out.end(), service->full_name()) == out.end()) out.push_back(service->full_name());
    }
    const std::string health(::grpc::health::v1::Health::service_full_name);
    if (serves_health(server) && std::find(out.begin(), out.end(), health) == out.end()) out.push_back(health);
    return out;
  }

  /// Every typed service's files, then health.proto's when the server serves
  /// it (its descriptor from this module's generated health code).
  std::vector<std::string_view> sources() const {
    std::vector<std::string_view> out;
    for (const rpc::Service* service : server.services()) {
      const std::span<const std::string_view> files = service->file_descriptors();
      out.insert(out.end(), files.begin(), files.end());
    }
    if (serves_health(server)) {
      const auto files = ::grpc::health::v1::Health::file_descriptors;
      out.insert(out.end(), files.begin(), files.end());
    }
    return out;
  }

  rpc::Server& server;
  detail::DescriptorIndex index;
  detail::ReflectionService<::grpc::reflection::v1::ServerReflection> v1;
  detail::ReflectionService<::grpc::reflection::v1alpha::ServerReflection> v1alpha;
};

ServerReflection::ServerReflection(rpc::Server& server) : impl_(std::make_unique<Impl>(server)) {
  // Both or neither: were v1alpha refused after v1 was registered, the server
  // would keep a service this constructor's failure destroys.
  using V1alphaInfo = ::grpc::reflection::v1alpha::ServerReflection::Methods::ServerReflectionInfo;
  if (server.is_stream_method(V1alphaInfo::path)) {
    throw std::invalid_argument("ServerReflection: '" + std::string(V1alphaInfo::path) + "' is registered already");
  }
  server.add_service(impl_->v1);
  server.add_service(impl_->v1alpha);
}

ServerReflection::~ServerReflection() = default;

std::vector<std::string> ServerReflection::service_names() const { return impl_->names(); }

}  // namespace wheelrpc::services
