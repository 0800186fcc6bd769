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
/// error with its cause (the client keeps the set it has and names the
/// source, describe(), in front of the cause; the subscription retries). The
/// subscription starts with the client and ends when it closes. describe():
/// "etcd service 'NAME'"; why_empty(): "service 'NAME' has no providers
/// registered in etcd at HOST:PORT".
std::shared_ptr<rpc::ProviderSource> provider_source(std::shared_ptr<Registry> registry, std::string service);

struct AnnounceOptions {
  /// true (Dubbo's check=true): Server::listen fails, with the reason, at the
  /// registration's first failure ("registration of 'echo' at IP:PORT failed:
  /// etcd at 127.0.0.1:2379 refused the connection (...)"), or when the
  /// registry has not answered within `check_timeout` ("... not confirmed
  /// within 5000 ms: no answer from etcd at ..."). false (default, Dubbo's
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
