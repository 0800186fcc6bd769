#pragma once
// Throw-away certificates per test (support/test_certs.h) in a directory of
// its own under the system's temp directory, removed afterwards; and the TLS
// options that use them.

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/transport/tls.h>

#include "support/test_certs.h"

namespace wheelrpc::test {

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("wheelrpc-tls-" + std::to_string(::getpid()) + "-" + std::to_string(seq.fetch_add(1)) + "-" + info->name());
    certs_.emplace(support::make_test_pki(dir_));
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  const support::TestCerts& certs() const { return *certs_; }

  /// A server presenting `name` (signed by "ca" unless it is "foreign").
  transport::TlsOptions server_tls(const std::string& name = "server") const {
    transport::TlsOptions o;
    o.enabled = true;
    o.cert_file = certs_->cert(name);
    o.key_file = certs_->key(name);
    return o;
  }
  /// A server requiring client certificates signed by "ca".
  transport::TlsOptions mtls_server() const {
    auto o = server_tls();
    o.ca_file = certs_->cert("ca");
    o.require_client_cert = true;
    return o;
  }
  /// A client trusting "ca" (and presenting `cert`, when given).
  transport::TlsOptions client_tls(const std::string& cert = {}) const {
    transport::TlsOptions o;
    o.enabled = true;
    o.ca_file = certs_->cert("ca");
    if (!cert.empty()) {
      o.cert_file = certs_->cert(cert);
      o.key_file = certs_->key(cert);
    }
    return o;
  }

  std::filesystem::path dir_;
  std::optional<support::TestCerts> certs_;
};

}  // namespace wheelrpc::test
