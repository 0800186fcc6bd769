#pragma once
/// BearerTokenInterceptor: a client interceptor that sends a bearer token.

#include <functional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client_interceptor.h>

namespace wheelrpc::rpc {

/// The metadata key of a bearer token: "authorization" (value "Bearer <token>").
inline constexpr std::string_view kAuthorizationKey = "authorization";

/// Adds `authorization: Bearer <token>` to each call's metadata (replacing
/// one the caller set), for a server's BearerAuthInterceptor. The token is a
/// fixed string, or comes from a provider asked once per call, which answers
/// when it likes (e.g. from its cache, or after refreshing it over the
/// network): the call waits without blocking any thread, within its deadline.
/// A provider that answers with an error fails the call with
/// StatusCode::unauthenticated, naming the error, before anything is sent.
/// Use it in ClientOptions::interceptors (once per call) or
/// attempt_interceptors (a fresh token per attempt).
///
/// @par Thread Safety
/// Safe: one instance serves every call of a client. The provider is called
/// on the thread running the chain (the caller's, or the client's executor)
/// and may be called again before it answered an earlier call: it must be
/// thread-safe and answer each callback exactly once, from any thread.
class BearerTokenInterceptor final : public ClientInterceptor {
 public:
  /// Called with the token, or with an error (the token then ignored).
  using TokenCallback = std::function<void(boost::system::error_code, std::string)>;
  /// Asked for a token for each call; answers through the callback, now or later.
  using TokenProvider = std::function<void(TokenCallback)>;

  /// A fixed token (not empty; throws std::invalid_argument otherwise).
  explicit BearerTokenInterceptor(std::string token);
  /// A token from `provider` (not empty; throws std::invalid_argument otherwise).
  explicit BearerTokenInterceptor(TokenProvider provider);

  void intercept(ClientCall& call, InterceptorNext next) override;
  std::string_view name() const noexcept override { return "bearer_token"; }

 private:
  std::string token_;
  TokenProvider provider_;
};

}  // namespace wheelrpc::rpc
