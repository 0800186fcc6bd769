// ServerCore's registration: the methods a server serves (calls, streams,
// the methods of typed services), fixed once listen() was called.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <wheelrpc/rpc/server_rules.h>

#include "base/health_codec.h"
#include "base/log.h"
#include "server/health_service.h"
#include "server/server_core.h"

namespace wheelrpc::rpc::detail {

void ServerCore::check_registration_open(const char* what) const {
  if (listened_.load(std::memory_order_acquire)) {
    throw std::logic_error(fmt::format("Server::{} after listen(): register every method before listening", what));
  }
}

void ServerCore::register_builtins() {
  if (options_.health_service) {
    // A path the application registered (either kind) is its own: ours stays out.
    const auto taken = [&](std::string_view path) {
      const std::string p(path);
      return admission_.has_method(p) || stream_methods_.contains(p);
    };
    auto registry = health_.impl_;
    if (!taken(kHealthCheckPath)) handle(std::string(kHealthCheckPath), HealthService::check(registry), {});
    if (!taken(kHealthWatchPath)) {
      if (options_.metrics) methods_.get(std::string(kHealthWatchPath));
      stream_methods_.add(std::string(kHealthWatchPath), HealthService::watch(registry), MethodKind::server_streaming);
    }
  }
  // The services the health service knows: those of gRPC-style paths.
  auto paths = admission_.method_names();
  for (auto& name : stream_methods_.names()) paths.push_back(std::move(name));
  health_registry().set_registered(paths);
  if (options_.load_reports.enabled) load_reporter_->start(*this);  // samples from the first listen on
}

void ServerCore::handle(std::string method, Server::Handler handler, MethodOptions options) {
  check_registration_open("handle");
  common::LockGuard lock(rules_mu_);
  admission_.add_method(std::move(method), std::move(handler), options);
  admission_.apply_rules(rules_.get());
}

void ServerCore::handle_stream(std::string method, StreamHandler handler, MethodOptions options,
                               std::optional<MethodKind> kind) {
  check_registration_open("handle_stream");
  if (options.timeout.count() < 0) {
    throw std::invalid_argument(
        fmt::format("MethodOptions::timeout of stream method '{}' must be 0 (none) or "
                    "positive, got {} ms",
                    method, options.timeout.count()));
  }
  if (options_.metrics) methods_.get(method);  // listed (at zero) from the start, like a call's method
  common::LockGuard lock(rules_mu_);
  stream_methods_.add(std::move(method), std::move(handler), options, kind);
  stream_methods_.apply_rules(rules_.get());
}

void ServerCore::apply_rules(std::shared_ptr<const ServerRules> rules) {
  common::LockGuard lock(rules_mu_);
  admission_.apply_rules(rules.get());
  stream_methods_.apply_rules(rules.get());
  shutdown_.set_disabled_by_rule(rules && rules->is_disabled());
  if (rules) {
    logger()->info("provider rules of revision {} in force ({}){}", rules->revision,
                   rules->source.empty() ? "applied in process" : rules->source,
                   rules->is_disabled() ? ": disabled" : "");
  } else {
    logger()->info("provider rules lifted");
  }
  rules_ = std::move(rules);
}

std::shared_ptr<const ServerRules> ServerCore::rules() const {
  common::LockGuard lock(rules_mu_);
  return rules_;
}

void ServerCore::add_service(const Service& service) {
  check_registration_open("add_service");
  // All or nothing: a path already served (the same service twice, two of
  // one name) registers none of the service's methods.
  std::string taken;
  const auto check = [&](const std::string& path) {
    if (admission_.has_method(path) || stream_methods_.contains(path))
      taken += (taken.empty() ? "'" : ", '") + path + "'";
  };
  for (const ServiceMethod& m : service.methods()) check(m.path);
  for (const ServiceStreamMethod& m : service.stream_methods()) check(m.path);
  if (!taken.empty()) {
    throw std::invalid_argument(
        fmt::format("Server::add_service({}): {} registered already", service.full_name(), taken));
  }
  for (const ServiceMethod& m : service.methods()) {
    handle(m.path, m.handler, m.options);
    common::LockGuard lock(mu_);
    service_methods_[m.path] = &m;
  }
  for (const ServiceStreamMethod& m : service.stream_methods()) handle_stream(m.path, m.handler, m.options, m.kind);
  common::LockGuard lock(mu_);
  services_.push_back(&service);
}

std::vector<const Service*> ServerCore::services() const {
  common::LockGuard lock(mu_);
  return services_;
}

const ServiceMethod* ServerCore::service_method(std::string_view path) const {
  common::LockGuard lock(mu_);
  auto it = service_methods_.find(std::string(path));
  return it == service_methods_.end() ? nullptr : it->second;
}

}  // namespace wheelrpc::rpc::detail
