#include <wheelrpc/transport/tls.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <wheelrpc/transport/errc.h>

#include "log.h"
#include "tls_stream.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;

namespace {

const char* role_name(TlsRole role) { return role == TlsRole::server ? "server" : "client"; }

// A clear "missing or unreadable" before OpenSSL's own words for a bad file.
void check_readable(const char* what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument(fmt::format("TLS {} '{}' cannot be read: {}", what, path, std::strerror(errno)));
  }
}

// A DNS name as a certificate can carry it: labels of letters, digits and
// '-' (not at either end), 1..63 bytes each, 253 in all, an optional final dot.
bool is_dns_name(const std::string& name) {
  std::string n = name;
  if (!n.empty() && n.back() == '.') n.pop_back();
  if (n.empty() || n.size() > 253) return false;
  std::size_t start = 0;
  while (start <= n.size()) {
    const std::size_t dot = std::min(n.find('.', start), n.size());
    const std::string_view label(n.data() + start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (const char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    start = dot + 1;
  }
  return true;
}

// "Jan  1 00:00:00 2025 GMT", as OpenSSL prints a certificate time.
std::string asn1_time_text(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return "?";
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n > 0 ? n : 0));
  BIO_free(bio);
  return out;
}

// A certificate this end presents that peers will refuse: said once, at
// load, instead of in every handshake's failure on the other side.
void warn_if_not_valid_now(SSL_CTX* native, const std::string& file, TlsRole role) {
  X509* cert = SSL_CTX_get0_certificate(native);
  if (!cert) return;
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    detail::logger()->warn(
        "TLS {}: the certificate in '{}' expired on {}: peers that verify it will refuse every handshake",
        role_name(role), file, asn1_time_text(X509_get0_notAfter(cert)));
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    detail::logger()->warn(
        "TLS {}: the certificate in '{}' is not valid before {}: peers that verify it will refuse every "
        "handshake until then",
        role_name(role), file, asn1_time_text(X509_get0_notBefore(cert)));
  }
}

std::string openssl_reason(const error_code& ec) {
  // Asio's words for an SSL error are OpenSSL's reason string ("key values
  // mismatch (X509 routines)"); a system error (a missing file) has its own.
  return ec.message();
}

}  // namespace

TlsContext::Impl::Impl(TlsOptions o, TlsRole r)
    : options(std::move(o)), role(r), ssl(r == TlsRole::server ? ssl::context::tls_server : ssl::context::tls_client) {}

std::string tls_options_problem(const TlsOptions& o, TlsRole role) {
  if (!o.enabled) return {};
  if (o.cert_file.empty() != o.key_file.empty()) {
    return fmt::format("TLS {}: cert_file and key_file go together (got {} without {})", role_name(role),
                       o.cert_file.empty() ? "key_file" : "cert_file", o.cert_file.empty() ? "cert_file" : "key_file");
  }
  if (role == TlsRole::server && o.cert_file.empty()) {
    return "TLS server: cert_file and key_file are required";
  }
  if (role == TlsRole::server && o.require_client_cert && o.ca_file.empty()) {
    return "TLS server: require_client_cert needs ca_file (the CA that signs client certificates)";
  }
  if (role == TlsRole::client && o.require_client_cert) {
    return "TLS client: require_client_cert is a server option";
  }
  if (role == TlsRole::server && !o.server_name.empty()) {
    return "TLS server: server_name is a client option";
  }
  if (!o.server_name.empty()) {
    error_code ec;
    asio::ip::make_address(o.server_name, ec);
    if (ec && !is_dns_name(o.server_name)) {
      return fmt::format(
          "TLS client: server_name '{}' is neither a DNS name (letters, digits, '-' and '.') nor an IP "
          "address",
          o.server_name);
    }
  }
  return {};
}

namespace {
// A server's ALPN choice: `h2` (HTTP/2, gRPC) when offered, else `wheelrpc`
// (the framed protocol); a client that offers neither goes on without ALPN
// (its first bytes then tell the protocol).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                void*) {
  const unsigned char* native = nullptr;
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    const std::string_view proto(reinterpret_cast<const char*>(in + i + 1), len);
    if (proto == "h2") {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    if (proto == "wheelrpc") native = in + i + 1;
    i += 1 + len;
  }
  if (!native) return SSL_TLSEXT_ERR_NOACK;
  *out = native;
  *outlen = 8;
  return SSL_TLSEXT_ERR_OK;
}
}  // namespace

TlsContext TlsContext::make(const TlsOptions& o, TlsRole role) {
  if (!o.enabled) throw std::invalid_argument(fmt::format("TLS {}: TlsOptions::enabled is false", role_name(role)));
  if (auto problem = tls_options_problem(o, role); !problem.empty()) throw std::invalid_argument(problem);
  auto impl = std::make_shared<Impl>(o, role);
  SSL_CTX* native = impl->ssl.native_handle();
  // TLS 1.2 at least; OpenSSL prefers 1.3 when both ends speak it.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  impl->ssl.set_options(ssl::context::default_workarounds | ssl::context::no_compression | ssl::context::single_dh_use);
  if (role == TlsRole::server) SSL_CTX_set_alpn_select_cb(native, &select_alpn, nullptr);
  error_code ec;
  if (!o.cert_file.empty()) {
    check_readable("certificate file", o.cert_file);
    check_readable("key file", o.key_file);
    impl->ssl.use_certificate_chain_file(o.cert_file, ec);
    if (ec) {
      throw std::invalid_argument(fmt::format("TLS certificate file '{}' is not a usable PEM certificate chain: {}",
                                              o.cert_file, openssl_reason(ec)));
    }
    impl->ssl.use_private_key_file(o.key_file, ssl::context::pem, ec);
    if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
      throw std::invalid_argument(
          fmt::format("TLS key file '{}' does not match the certificate in '{}'", o.key_file, o.cert_file));
    }
    if (ec) {
      throw std::invalid_argument(fmt::format("TLS key file '{}' is not a usable PEM private key for '{}': {}",
                                              o.key_file, o.cert_file, openssl_reason(ec)));
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      ERR_clear_error();
      throw std::invalid_argument(
          fmt::format("TLS key file '{}' does not match the certificate in '{}'", o.key_file, o.cert_file));
    }
    warn_if_not_valid_now(native, o.cert_file, role);
  }
  if (!o.ca_file.empty()) {
    check_readable("CA file", o.ca_file);
    impl->ssl.load_verify_file(o.ca_file, ec);
    if (ec) {
      throw std::invalid_argument(
          fmt::format("TLS CA file '{}' holds no usable PEM certificate: {}", o.ca_file, openssl_reason(ec)));
    }
  }
  if (role == TlsRole::client) {
    if (o.ca_file.empty()) {
      impl->ssl.set_default_verify_paths(ec);
      if (ec) {
        throw std::invalid_argument("TLS client: no ca_file and the system's trust store cannot be loaded: " +
                                    openssl_reason(ec));
      }
    }
    impl->ssl.set_verify_mode(ssl::verify_peer);
  } else if (o.require_client_cert) {
    impl->ssl.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  } else if (!o.ca_file.empty()) {
    impl->ssl.set_verify_mode(ssl::verify_peer);  // a certificate, if sent, must verify
  } else {
    impl->ssl.set_verify_mode(ssl::verify_none);
  }
  if (role == TlsRole::server && !o.ca_file.empty()) {
    // Tells clients which CAs it accepts (the CertificateRequest's list).
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);
    }
    ERR_clear_error();
  }
  return TlsContext(std::move(impl));
}

TlsRole TlsContext::role() const noexcept { return impl_->role; }
const TlsOptions& TlsContext::options() const noexcept { return impl_->options; }

namespace detail {

void prepare_tls(Channel::Tls& tls, TlsRole role, const std::string& server_name, const asio::ip::tcp::endpoint& peer,
                 bool http2) {
  if (role != TlsRole::client) return;
  SSL* ssl = tls.stream.native_handle();
  static const unsigned char kH2[] = {2, 'h', '2'};
  static const unsigned char kNative[] = {8, 'w', 'h', 'e', 'e', 'l', 'r', 'p', 'c'};
  if (http2) {
    SSL_set_alpn_protos(ssl, kH2, sizeof kH2);
  } else {
    SSL_set_alpn_protos(ssl, kNative, sizeof kNative);
  }
  tls.verified_name = server_name.empty() ? peer.address().to_string() : server_name;
  error_code ec;
  asio::ip::make_address(tls.verified_name, ec);
  if (!ec) {
    // An address: the certificate must carry it as an IP subject alternative name.
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), tls.verified_name.c_str());
  } else {
    SSL_set1_host(ssl, tls.verified_name.c_str());
    // SNI (SSL_set_tlsext_host_name, without its C cast).
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(tls.verified_name.c_str()));
  }
}

namespace {

// Words for a failed certificate verification (this end judged the peer's).
std::string verify_failure(long result, const Channel::Tls& tls, TlsRole role) {
  const char* peer = role == TlsRole::client ? "the server's" : "the client's";
  const std::string detail = X509_verify_cert_error_string(result);
  switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return fmt::format("unknown CA: {} certificate is not signed by a trusted CA ({})", peer, detail);
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return fmt::format("name mismatch: {} certificate does not name '{}' ({})", peer, tls.verified_name, detail);
    case X509_V_ERR_CERT_HAS_EXPIRED: return fmt::format("expired certificate: {} certificate has expired", peer);
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return fmt::format("certificate not yet valid: {} certificate is not valid yet", peer);
    default: return fmt::format("{} certificate failed verification: {}", peer, detail);
  }
}

}  // namespace

TlsFailure describe_tls_failure(const error_code& ec, Channel::Tls& tls, TlsRole role, bool in_handshake) {
  const auto failed = make_error_code(errc::tls_handshake_failed);
  const char* phase = in_handshake ? "TLS handshake failed" : "TLS failed after the handshake";
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated || ec == asio::error::connection_reset) {
    if (!in_handshake) return {ec, "closed by peer"};
    return {failed, fmt::format("{}: the peer closed the connection during the handshake ({}; a plaintext peer or one "
                                "that refused this end's certificate does)",
                                phase, ec.message())};
  }
  if (ec.category() != asio::error::get_ssl_category()) return {ec, fmt::format("{}: {}", phase, ec.message())};
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  switch (reason) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return {failed, fmt::format("{}: {}", phase,
                                  verify_failure(SSL_get_verify_result(tls.stream.native_handle()), tls, role))};
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_HTTP_REQUEST:
      return {make_error_code(errc::tls_not_spoken),
              fmt::format("{}: the {} does not speak TLS (it sent bytes that are not a TLS record: {})", phase,
                          role == TlsRole::client ? "server" : "client", ec.message())};
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return {failed, fmt::format("{}: missing client certificate: the client presented none and this server "
                                  "requires one (mTLS)",
                                  phase)};
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return {failed, fmt::format("{}: missing client certificate: the server requires one (mTLS) and this "
                                  "client presented none",
                                  phase)};
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      return {failed, fmt::format("{}: unknown CA: the peer does not trust the CA of this end's certificate", phase)};
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
      return {failed,
              fmt::format("{}: expired certificate: the peer refused this end's certificate as expired", phase)};
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
      return {failed, fmt::format("{}: the peer refused this end's certificate ({})", phase, ec.message())};
    default: return {failed, fmt::format("{}: {}", phase, ec.message())};
  }
}

std::string tls_record_reason(const std::uint8_t* data, std::size_t n) {
  if (n < 2 || data[1] != 0x03) return {};
  if (data[0] == kTlsAlertRecord) {
    return "the peer requires TLS: it answered with a TLS alert record where a wheelrpc frame was expected "
           "(this end speaks plaintext)";
  }
  if (data[0] == kTlsHandshakeRecord) {
    return "the peer speaks TLS: a TLS handshake record arrived where a wheelrpc frame was expected (this end "
           "speaks plaintext)";
  }
  return {};
}

}  // namespace detail
}  // namespace wheelrpc::transport
