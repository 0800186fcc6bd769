// ServerRules' bodies (<wheelrpc/rpc/server_rules.h>): what a provider rule
// overrides of one method.

#include <wheelrpc/rpc/server_rules.h>

namespace wheelrpc::rpc {

void ServerMethodOverrides::merge(const ServerMethodOverrides& more) {
  if (more.timeout) timeout = more.timeout;
  if (more.max_concurrency) max_concurrency = more.max_concurrency;
}

ServerMethodOverrides ServerRules::for_method(std::string_view method) const {
  ServerMethodOverrides out = service;
  if (const auto it = methods.find(method); it != methods.end()) out.merge(it->second);
  return out;
}

}  // namespace wheelrpc::rpc
