#pragma once
/// BearerAuthInterceptor: a server interceptor that admits only known bearer tokens.

#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/rpc/server_interceptor.h>

namespace wheelrpc::rpc {

/// Checks each request's `authorization` metadata ("Bearer <token>", as
/// BearerTokenInterceptor sends it) against a set of accepted tokens, in
/// constant time (OpenSSL's CRYPTO_memcmp; every accepted token is compared
/// in full, whatever matches: the time depends on their lengths only). A request without one, or with another,
/// fails with StatusCode::unauthenticated, "missing or invalid bearer token
/// for '<method>'", before its handler runs; the token is never logged nor
/// echoed. The authorization entry stays in the metadata the handler sees.
///
/// @par Thread Safety
/// Safe: the set is fixed at construction; intercept() runs synchronously.
class BearerAuthInterceptor final : public ServerInterceptor {
 public:
  /// `tokens`: at least one, none empty (throws std::invalid_argument otherwise).
  explicit BearerAuthInterceptor(std::vector<std::string> tokens);

  void intercept(ServerCall& call, InterceptorNext next) override;
  std::string_view name() const noexcept override { return "bearer_auth"; }

 private:
  std::vector<std::string> tokens_;
};

}  // namespace wheelrpc::rpc
