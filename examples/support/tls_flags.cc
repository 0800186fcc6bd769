#include "support/tls_flags.h"

#include <stdexcept>

namespace wheelrpc::examples {

void add_tls_flags(FlagParser& flags, transport::TlsOptions& tls, transport::TlsRole role) {
  auto file = [](std::string& into) {
    return [&into](const std::string& value) -> std::optional<std::string> {
      if (value.empty()) return std::string("expected a file name");
      into = value;
      return std::nullopt;
    };
  };
  flags.add_value("--tls-cert", file(tls.cert_file))
      .add_value("--tls-key", file(tls.key_file))
      .add_value("--tls-ca", file(tls.ca_file));
  if (role == transport::TlsRole::server) {
    flags.add_switch("--tls-require-client-cert", [&tls] { tls.require_client_cert = true; });
  } else {
    flags.add_value("--tls-server-name", file(tls.server_name));
  }
}

std::optional<std::string> finish_tls_flags(transport::TlsOptions& tls, transport::TlsRole role) {
  const bool server = role == transport::TlsRole::server;
  tls.enabled = !tls.cert_file.empty() || !tls.key_file.empty() || !tls.ca_file.empty() || tls.require_client_cert ||
                !tls.server_name.empty();
  if (!tls.enabled) return std::nullopt;
  if (tls.cert_file.empty() != tls.key_file.empty()) return std::string("--tls-cert and --tls-key go together");
  if (server && tls.cert_file.empty()) {
    return std::string(tls.require_client_cert ? "--tls-require-client-cert" : "--tls-ca") +
           " needs --tls-cert and --tls-key";
  }
  if (server && tls.require_client_cert && tls.ca_file.empty()) {
    return std::string("--tls-require-client-cert needs --tls-ca (the CA of the client certificates)");
  }
  if (!server && tls.ca_file.empty()) {
    return std::string(!tls.server_name.empty() ? "--tls-server-name" : "--tls-cert") + " needs --tls-ca";
  }
  try {
    (void)transport::TlsContext::make(tls, role);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace wheelrpc::examples
