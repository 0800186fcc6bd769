#include <wheelrpc/rpc/bearer_auth_interceptor.h>

#include <cstddef>
#include <stdexcept>
#include <utility>

#include <openssl/crypto.h>

#include <wheelrpc/rpc/bearer_token_interceptor.h>

namespace wheelrpc::rpc {
namespace {

// Equal in a time that depends on the accepted token's length only
// (OpenSSL's CRYPTO_memcmp: no early exit). A token of another length is
// compared with the accepted one itself, and refused.
bool equal_in_constant_time(std::string_view given, std::string_view accepted) noexcept {
  const bool same_size = given.size() == accepted.size();
  const char* probe = same_size ? given.data() : accepted.data();
  const int diff = CRYPTO_memcmp(probe, accepted.data(), accepted.size());
  return same_size && diff == 0;
}

// The token of "Bearer <token>" (the scheme's case ignored); empty otherwise.
std::string_view bearer_token(std::string_view value) noexcept {
  constexpr std::string_view scheme = "bearer ";
  if (value.size() <= scheme.size()) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i]) return {};
  }
  return value.substr(scheme.size());
}

}  // namespace

BearerAuthInterceptor::BearerAuthInterceptor(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  if (tokens_.empty()) throw std::invalid_argument("BearerAuthInterceptor: at least one token is needed");
  for (const auto& t : tokens_) {
    if (t.empty()) throw std::invalid_argument("BearerAuthInterceptor: a token must not be empty");
  }
}

void BearerAuthInterceptor::intercept(ServerCall& call, InterceptorNext next) {
  std::string_view token;
  for (const auto& [key, value] : call.metadata()) {
    if (key == kAuthorizationKey) {
      token = bearer_token(value);
      break;
    }
  }
  bool accepted = false;
  if (!token.empty()) {
    for (const auto& t : tokens_) accepted = equal_in_constant_time(token, t) || accepted;  // every one compared
  }
  if (accepted) {
    next.proceed();
  } else {
    next.reject(StatusCode::unauthenticated, "missing or invalid bearer token for '" + call.method() + "'");
  }
}

}  // namespace wheelrpc::rpc
