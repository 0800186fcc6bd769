#pragma once
/// ConnectionFlags: how every verb that talks to a server reaches it:
/// HOST:PORT, --protocol, the TLS flags (echo_client's names), --timeout-ms
/// and -H metadata.

#include <chrono>
#include <optional>
#include <string>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/tls.h>

#include "verb_flags.h"

namespace wheelrpc::wheelctl {

/// Distinct objects: safe; shared objects: unsafe.
struct ConnectionFlags {
  /// Every verb's --timeout-ms default.
  static constexpr std::chrono::milliseconds kDefaultTimeout{5000};

  std::string target;  ///< "HOST:PORT": an IPv4 or [IPv6] literal, localhost, or a host name
  /// --protocol: grpc (default: every gRPC server speaks it, and a wheelrpc
  /// server serves both on one port) or native.
  rpc::WireProtocol protocol = rpc::WireProtocol::grpc;
  transport::TlsOptions tls;                            ///< --tls-ca, --tls-cert, --tls-key, --tls-server-name
  std::chrono::milliseconds timeout = kDefaultTimeout;  ///< --timeout-ms; 0 = none (call's streams only)
  transport::Attachments metadata;                      ///< -H 'key: value', keys lower-cased

  /// Declares the flags on `flags` (with -H when `with_metadata`).
  static void declare(VerbFlags& flags, bool with_metadata);
  /// Reads the declared flags and `target` from a parsed `flags`: the
  /// problem (for VerbFlags::usage_error), or std::nullopt. TLS files are
  /// read and checked now, so a bad one is a usage error naming it.
  std::optional<std::string> read(const VerbFlags& flags, std::string target_word);
};

/// "key: value" (-H) into `out`: key lower-cased, blanks around both trimmed.
/// The problem, or std::nullopt.
std::optional<std::string> parse_header(const std::string& text, transport::Attachments& out);

}  // namespace wheelrpc::wheelctl
