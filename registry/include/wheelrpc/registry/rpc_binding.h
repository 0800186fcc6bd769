#pragma once
/// Binds a Registry to rpc: a Client that follows a service, a Server that
/// announces itself.

#include <chrono>
#include <memory>
#include <string>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/rpc/announcer.h>
#include <wheelrpc/rpc/provider_source.h>

namespace wheelrpc::registry {

/// A Client's provider source following `service`: every set the
/// subscription reports, as endpoints (entries whose endpoint is not an
/// "ip:port" are skipped and logged), and each failed read or watch as an
/// error naming the service and the cause (the client keeps the set it has;
/// the subscription retries). The subscription starts with the client and
/// ends when it closes. describe(): "etcd service 'NAME'".
std::shared_ptr<rpc::ProviderSource> provider_source(std::shared_ptr<Registry> registry, std::string service);

struct AnnounceOptions {
  /// true: Server::listen fails (with the reason) when the registration is
  /// not in the registry within `check_timeout`. false (default, Dubbo's
  /// check=false): listen succeeds at once and the registration is retried
  /// in the background.
  bool check = false;
  std::chrono::milliseconds check_timeout{5000};
  /// Hears each state change of the registration (see RegistrationListener).
  RegistrationListener on_state;
};

/// A Server announcer registering `instance` (its endpoint is filled in with
/// the server's listen address when empty; an unspecified address such as
/// 0.0.0.0 is replaced by 127.0.0.1) and unregistering it on shutdown.
std::shared_ptr<rpc::ServiceAnnouncer> announcer(std::shared_ptr<Registry> registry, ServiceInstance instance,
                                                 AnnounceOptions options = {});

}  // namespace wheelrpc::registry
