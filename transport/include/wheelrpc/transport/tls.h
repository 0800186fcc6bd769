#pragma once
/// TLS for channels: the options (file paths and checks) and TlsContext, a
/// validated, shareable handle on the certificates they name. OpenSSL and
/// Asio's SSL headers stay out of this header: channels hold their TLS stream
/// behind a pointer (see Channel::create).

#include <cstdint>
#include <memory>
#include <string>

namespace wheelrpc::transport {

/// Which end of the handshake a context serves.
enum class TlsRole : std::uint8_t { client, server };

/// TLS settings of a server's port or of a client's connections. Off by
/// default; TLS 1.2 is the least version spoken, 1.3 is preferred.
struct TlsOptions {
  /// Speak TLS. Default false (plaintext).
  bool enabled = false;

  /// PEM certificate chain (leaf first) this end presents. Server: required.
  /// Client: optional (with key_file), for servers that require client
  /// certificates (mTLS). Default none.
  std::string cert_file;

  /// PEM private key of cert_file; both or neither. Default none.
  std::string key_file;

  /// PEM file of the CA certificates trusted to sign the peer's certificate.
  /// Client: verifies the server against it; empty = the system's default
  /// trust store. Server: verifies client certificates against it (needed
  /// for require_client_cert). Default none.
  std::string ca_file;

  /// Server only: a client must present a certificate signed by a CA of
  /// ca_file, or the handshake fails (mTLS). Default false: a client
  /// certificate, if sent, is verified against ca_file when there is one.
  bool require_client_cert = false;

  /// Client only: the name the server's certificate must carry (a DNS name
  /// or an IP address among its subject alternative names; a DNS name is
  /// also sent as SNI). Empty (default) = the IP address of each provider's
  /// endpoint.
  std::string server_name;
};

/// The certificates and keys of a TlsOptions, loaded and checked once, shared
/// by every connection that uses it (a fresh handshake per connection; no
/// session resumption).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (immutable once made).
///
/// @par Example
/// @code
/// TlsOptions o;
/// o.enabled = true;
/// o.cert_file = "server.pem"; o.key_file = "server.key";
/// auto ctx = TlsContext::make(o, TlsRole::server);  // throws on a bad file
/// auto ch = Channel::create(std::move(socket), handler, {}, &ctx);
/// @endcode
class TlsContext {
 public:
  /// Loads and checks the files of `options` for `role`. Throws
  /// std::invalid_argument naming the file and the problem: a file missing
  /// or unreadable, not PEM, a key that does not match its certificate, a
  /// key without a certificate (or the reverse), a server without a
  /// certificate, require_client_cert without ca_file.
  static TlsContext make(const TlsOptions& options, TlsRole role);

  TlsRole role() const noexcept;
  const TlsOptions& options() const noexcept;

  /// Internals (asio's ssl::context); defined in transport/src only.
  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  explicit TlsContext(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// Checks the shape of `options` for `role` without reading files: the
/// problem, or an empty string when there is none. TlsContext::make checks
/// this first, then the files.
std::string tls_options_problem(const TlsOptions& options, TlsRole role);

}  // namespace wheelrpc::transport
