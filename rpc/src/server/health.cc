// Health's bodies (the public face of HealthRegistry) and to_string(ServingStatus).
#include <wheelrpc/rpc/health.h>

#include <utility>

#include "server/health_registry.h"

namespace wheelrpc::rpc {

std::string_view to_string(ServingStatus status) noexcept {
  switch (status) {
    case ServingStatus::unknown: return "UNKNOWN";
    case ServingStatus::serving: return "SERVING";
    case ServingStatus::not_serving: return "NOT_SERVING";
    case ServingStatus::service_unknown: return "SERVICE_UNKNOWN";
  }
  return "UNKNOWN";
}

Health::Health(std::shared_ptr<detail::HealthRegistry> impl) noexcept : impl_(std::move(impl)) {}
Health::~Health() = default;

void Health::set(std::string_view service, ServingStatus status) { impl_->set(service, status); }
void Health::clear(std::string_view service) { impl_->clear(service); }
ServingStatus Health::status(std::string_view service) const { return impl_->status(service); }
std::vector<std::string> Health::services() const { return impl_->services(); }

}  // namespace wheelrpc::rpc
