#pragma once
/// Throw-away certificates for tests and benchmarks, made with OpenSSL's API
/// (EC P-256 keys, SHA-256 signatures) and written as PEM files into a
/// directory: a CA, then leaves it signs (a server certificate with IP and
/// DNS names, a client certificate, an expired one...). Never for production.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace wheelrpc::support {

/// What a leaf certificate says.
struct LeafSpec {
  std::string common_name = "wheelrpc test";
  std::vector<std::string> dns_names;  ///< subject alternative names (DNS)
  std::vector<std::string> ip_names;   ///< subject alternative names (IP addresses)
  /// Validity, relative to now: from not_before to not_after. Default: an
  /// hour ago until a day from now. Both in the past: an expired certificate.
  std::chrono::seconds not_before{-3600};
  std::chrono::seconds not_after{86400};
};

/// PEM files in one directory: `<name>.pem` (certificate) and `<name>.key`
/// (private key) per certificate made.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class TestCerts {
 public:
  /// Writes into `dir` (created if missing; not removed).
  explicit TestCerts(std::filesystem::path dir);

  /// A self-signed CA certificate named `name`.
  void make_ca(const std::string& name);
  /// A leaf signed by the CA `ca` (made before by make_ca), for server and
  /// client authentication.
  void make_leaf(const std::string& name, const std::string& ca, const LeafSpec& spec);

  std::string cert(const std::string& name) const { return (dir_ / (name + ".pem")).string(); }
  std::string key(const std::string& name) const { return (dir_ / (name + ".key")).string(); }
  const std::filesystem::path& dir() const noexcept { return dir_; }

 private:
  std::filesystem::path dir_;
};

/// The usual set for TLS tests under `dir`: CA "ca" and "other-ca"; signed by
/// "ca": "server" (127.0.0.1, localhost), "expired" (same names, validity
/// over), "wrong-name" (only "elsewhere.example"), "client"; signed by
/// "other-ca": "foreign" (127.0.0.1, localhost).
TestCerts make_test_pki(const std::filesystem::path& dir);

}  // namespace wheelrpc::support
