// ProviderRuleFollower: a provider's rules from a registry subscription
// (Registry::subscribe_provider_rules) into Server::apply_rules.

#include <wheelrpc/registry/provider_rule_follower.h>

#include <spdlog/spdlog.h>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_rules.h>

#include "endpoint_address.h"
#include "log.h"

namespace wheelrpc::registry {

// What the subscription's listener reaches: the server until stop().
struct ProviderRuleFollower::State {
  common::Mutex mu;
  rpc::Server* server WHEELRPC_GUARDED_BY(mu) = nullptr;
  std::uint64_t applied WHEELRPC_GUARDED_BY(mu) = 0;
};

ProviderRuleFollower::ProviderRuleFollower(std::shared_ptr<Registry> registry, rpc::Server& server, std::string service,
                                           ProviderScope self)
    : registry_(std::move(registry)), self_(std::move(self)), state_(std::make_shared<State>()) {
  if (self_.address.empty()) self_.address = detail::format_endpoint(detail::announceable(server.local_endpoint()));
  {
    common::LockGuard l(state_->mu);
    state_->server = &server;
  }
  auto on_rules = [state = state_](std::shared_ptr<const rpc::ServerRules> rules) {
    common::LockGuard l(state->mu);
    if (!state->server) return;
    state->server->apply_rules(std::move(rules));
    ++state->applied;
  };
  auto on_error = [service, address = self_.address](boost::system::error_code, const std::string& why) {
    detail::logger()->warn("provider rules of '{}' for {}: {} (the rules in force stay)", service, address, why);
  };
  id_ = registry_->subscribe_provider_rules(std::move(service), self_, std::move(on_rules), std::move(on_error));
}

ProviderRuleFollower::~ProviderRuleFollower() { stop(); }

void ProviderRuleFollower::stop() {
  {
    common::LockGuard l(state_->mu);
    if (!state_->server) return;
    state_->server = nullptr;
  }
  if (id_ != 0) registry_->unsubscribe(id_);
}

std::uint64_t ProviderRuleFollower::applied() const {
  common::LockGuard l(state_->mu);
  return state_->applied;
}

}  // namespace wheelrpc::registry
