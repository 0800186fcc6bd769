#pragma once
/// Shows an EtcdRegistry on an AdminServer: a "registry" section on /status
/// and wheelrpc_registry_* families on /metrics (the examples' --registry
/// with --admin-port).

#include <memory>
#include <string>

#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/admin/exposition.h>
#include <wheelrpc/registry/etcd_registry.h>

namespace wheelrpc::examples {

inline void show_registry(admin::AdminServer& admin, std::shared_ptr<registry::EtcdRegistry> reg) {
  admin.add_section("Registry", [reg] {
    const auto s = reg->stats();
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    return admin::AdminServer::Values{{"registrations in force", n(s.registered_now)},
                                      {"subscriptions", n(s.subscriptions_now)},
                                      {"registrations", n(s.registrations)},
                                      {"unregistrations", n(s.unregistrations)},
                                      {"lease grants", n(s.lease_grants)},
                                      {"lease renewals", n(s.lease_renewals)},
                                      {"lease losses", n(s.lease_losses)},
                                      {"watch restarts", n(s.watch_restarts)},
                                      {"etcd requests", n(s.requests)},
                                      {"etcd request failures", n(s.request_failures)},
                                      {"retry tasks pending", n(s.retry_tasks_pending)}};
  });
  admin.add_metrics([reg](admin::TextExposition& out) {
    const auto s = reg->stats();
    auto counter = [&](const char* name, const char* help, std::uint64_t v) {
      out.begin(name, admin::MetricType::counter, help);
      out.sample({}, static_cast<double>(v));
    };
    auto gauge = [&](const char* name, const char* help, std::uint64_t v) {
      out.begin(name, admin::MetricType::gauge, help);
      out.sample({}, static_cast<double>(v));
    };
    gauge("wheelrpc_registry_registered", "Registrations in force in the registry.", s.registered_now);
    gauge("wheelrpc_registry_retry_tasks_pending", "Failed registry operations waiting on the wheel for a retry.",
          s.retry_tasks_pending);
    counter("wheelrpc_registry_lease_renewals_total", "Lease keepalives answered with a live lease.", s.lease_renewals);
    counter("wheelrpc_registry_lease_losses_total", "Keepalives that found the lease gone.", s.lease_losses);
    counter("wheelrpc_registry_requests_total", "Requests sent to etcd.", s.requests);
    counter("wheelrpc_registry_request_failures_total", "Requests to etcd that failed.", s.request_failures);
    counter("wheelrpc_registry_rules_accepted_total", "Rule versions taken (runtime rules in etcd).", s.rules_accepted);
    counter("wheelrpc_registry_rules_refused_total", "Rule versions refused as invalid; the last good one stays.",
            s.rules_refused);
  });
}

}  // namespace wheelrpc::examples
