#pragma once
/// The TLS flags of echo_server and echo_client, into a TlsOptions:
///   server: --tls-cert F --tls-key F [--tls-ca F] [--tls-require-client-cert]
///   client: --tls-ca F [--tls-cert F --tls-key F] [--tls-server-name N]

#include <optional>
#include <string>

#include <wheelrpc/transport/tls.h>

#include "support/flags.h"

namespace wheelrpc::examples {

/// Adds the flags of `role` to `flags`; they fill `tls`.
void add_tls_flags(FlagParser& flags, transport::TlsOptions& tls, transport::TlsRole role);

/// After parsing: turns TLS on if any TLS flag was given, and checks the
/// flags together and the files they name (read and checked now, so a bad
/// file is a usage error naming it). The problem, or std::nullopt.
std::optional<std::string> finish_tls_flags(transport::TlsOptions& tls, transport::TlsRole role);

}  // namespace wheelrpc::examples
