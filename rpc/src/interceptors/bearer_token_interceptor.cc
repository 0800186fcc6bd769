#include <wheelrpc/rpc/bearer_token_interceptor.h>

#include <memory>
#include <stdexcept>
#include <utility>

namespace wheelrpc::rpc {
namespace {

void set_token(transport::Attachments& metadata, std::string_view token) {
  std::string value = "Bearer ";
  value += token;
  for (auto& [key, v] : metadata) {
    if (key == kAuthorizationKey) {
      v = std::move(value);
      return;
    }
  }
  metadata.emplace_back(std::string(kAuthorizationKey), std::move(value));
}

}  // namespace

BearerTokenInterceptor::BearerTokenInterceptor(std::string token) : token_(std::move(token)) {
  if (token_.empty()) throw std::invalid_argument("BearerTokenInterceptor: the token must not be empty");
}

BearerTokenInterceptor::BearerTokenInterceptor(TokenProvider provider) : provider_(std::move(provider)) {
  if (!provider_) throw std::invalid_argument("BearerTokenInterceptor: the token provider must not be empty");
}

void BearerTokenInterceptor::intercept(ClientCall& call, InterceptorNext next) {
  if (!provider_) {
    set_token(call.metadata(), token_);
    next.proceed();
    return;
  }
  // The callback is copyable (std::function); the next is not: shared. The
  // call stays valid while its next is held.
  auto held = std::make_shared<InterceptorNext>(std::move(next));
  provider_([held, &call](boost::system::error_code ec, std::string token) {
    if (!held->pending()) return;  // answered twice: the first answer counts
    if (ec || token.empty()) {
      held->reject(StatusCode::unauthenticated,
                   "no bearer token for '" + call.method() + "': " + (ec ? ec.message() : "the provider gave none"));
      return;
    }
    set_token(call.metadata(), token);
    held->proceed();
  });
}

}  // namespace wheelrpc::rpc
