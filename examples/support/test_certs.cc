#include "support/test_certs.h"

#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace wheelrpc::support {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;
using File = std::unique_ptr<std::FILE, FileClose>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test certificate: ") + what + " failed");
}

Key new_key() {
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  check(key != nullptr, "EC key generation");
  return key;
}

File open_for_write(const std::string& path) {
  File f(std::fopen(path.c_str(), "w"));
  check(f != nullptr, "opening a file to write");
  return f;
}

void write_pair(const TestCerts& certs, const std::string& name, X509* cert, EVP_PKEY* key) {
  auto cf = open_for_write(certs.cert(name));
  check(PEM_write_X509(cf.get(), cert) == 1, "writing a certificate");
  auto kf = open_for_write(certs.key(name));
  check(PEM_write_PrivateKey(kf.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1, "writing a key");
}

// One PEM object of `path` (the CA's certificate or key), read by `read`.
template <class Owner, class Read>
Owner read_pem(const std::string& path, Read read, const char* what) {
  File f(std::fopen(path.c_str(), "r"));
  check(f != nullptr, what);
  Owner object(read(f.get(), nullptr, nullptr, nullptr));
  check(object != nullptr, what);
  return object;
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "making an extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, valid [now + from, now + to]; issuer set by the caller.
Cert new_cert(EVP_PKEY* key, const std::string& cn, std::chrono::seconds from, std::chrono::seconds to) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  static std::mt19937_64 rng{std::random_device{}()};
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert.get()), rng() >> 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(from.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(to.count()));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

}  // namespace

TestCerts::TestCerts(std::filesystem::path dir) : dir_(std::move(dir)) { std::filesystem::create_directories(dir_); }

void TestCerts::make_ca(const std::string& name) {
  auto key = new_key();
  auto cert = new_cert(key.get(), name, std::chrono::hours(-1), std::chrono::hours(24 * 30));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  add_ext(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "signing the CA");
  write_pair(*this, name, cert.get(), key.get());
}

void TestCerts::make_leaf(const std::string& name, const std::string& ca, const LeafSpec& spec) {
  auto ca_cert = read_pem<Cert>(cert(ca), PEM_read_X509, "reading the CA certificate");
  auto ca_key = read_pem<Key>(key(ca), PEM_read_PrivateKey, "reading the CA key");
  auto key = new_key();
  auto leaf = new_cert(key.get(), spec.common_name, spec.not_before, spec.not_after);
  X509_set_issuer_name(leaf.get(), X509_get_subject_name(ca_cert.get()));
  add_ext(leaf.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(leaf.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(leaf.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  add_ext(leaf.get(), ca_cert.get(), NID_authority_key_identifier, "keyid");
  std::string san;
  for (const auto& d : spec.dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + d;
  for (const auto& ip : spec.ip_names) san += (san.empty() ? "IP:" : ",IP:") + ip;
  if (!san.empty()) add_ext(leaf.get(), ca_cert.get(), NID_subject_alt_name, san);
  check(X509_sign(leaf.get(), ca_key.get(), EVP_sha256()) > 0, "signing a leaf");
  write_pair(*this, name, leaf.get(), key.get());
}

TestCerts make_test_pki(const std::filesystem::path& dir) {
  TestCerts certs(dir);
  certs.make_ca("ca");
  certs.make_ca("other-ca");
  LeafSpec server;
  server.common_name = "wheelrpc test server";
  server.dns_names = {"localhost"};
  server.ip_names = {"127.0.0.1"};
  certs.make_leaf("server", "ca", server);
  LeafSpec expired = server;
  expired.not_before = std::chrono::hours(-48);
  expired.not_after = std::chrono::hours(-24);
  certs.make_leaf("expired", "ca", expired);
  LeafSpec wrong;
  wrong.common_name = "elsewhere.example";
  wrong.dns_names = {"elsewhere.example"};
  certs.make_leaf("wrong-name", "ca", wrong);
  LeafSpec client;
  client.common_name = "wheelrpc test client";
  certs.make_leaf("client", "ca", client);
  certs.make_leaf("foreign", "other-ca", server);
  return certs;
}

}  // namespace wheelrpc::support
