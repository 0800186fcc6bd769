#include "server/health_service.h"

#include <string>
#include <utility>

#include "base/health_codec.h"
#include "server/health_registry.h"
#include "server/health_watch_stream.h"

namespace wheelrpc::rpc::detail {

bool HealthService::is_health_method(std::string_view method) noexcept {
  return method == kHealthCheckPath || method == kHealthWatchPath;
}

Server::Handler HealthService::check(std::shared_ptr<HealthRegistry> registry) {
  return [registry = std::move(registry)](Request req, Responder r) {
    std::string service;
    if (!decode_health_request(req.payload, service) || service.size() > kMaxHealthServiceName) {
      r.fail(StatusCode::invalid_argument, "could not parse request");
      return;
    }
    const ServingStatus status = registry->status(service);
    if (status == ServingStatus::service_unknown) {
      r.fail(StatusCode::not_found, "service name unknown");
      return;
    }
    r.reply(encode_health_response(static_cast<std::uint32_t>(status)));
  };
}

CoreStreamHandler HealthService::watch(std::shared_ptr<HealthRegistry> registry) {
  // The watches hold the registry weakly (it holds them); this handler,
  // in the server's method table, holds it.
  return [registry = std::move(registry)](const std::shared_ptr<StreamCore>& stream) {
    std::weak_ptr<HealthRegistry> weak = registry;
    HealthWatchStream::Keeper keeper{[weak](const std::shared_ptr<HealthWatchStream>& watch) {
                                       auto r = weak.lock();
                                       return r && r->add(watch);
                                     },
                                     [weak](const HealthWatchStream* watch) {
                                       if (auto r = weak.lock()) r->remove(watch);
                                     }};
    std::make_shared<HealthWatchStream>(stream, std::move(keeper))->start();
  };
}

}  // namespace wheelrpc::rpc::detail
