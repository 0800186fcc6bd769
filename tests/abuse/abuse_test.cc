// Hostile and greedy clients against a real server (the echo_server example,
// run as a child process with a 1 s hello timeout and 4 MiB of queued replies
// per connection at most). In every case the abuser is cut off within its
// limit, a well-behaved client calling all along completes every call, and
// once the abusers are gone the server's resident memory comes back to within
// 10 % of what it was before and it holds no more open files than before.
//
// Each abuse runs twice: the first round sizes what the process keeps for
// reuse once it has seen that many connections (Asio keeps each socket's
// reactor state in a pool, the allocator's arenas grow, code pages load),
// and the memory is measured from there. The second round, the same abuse
// again, must leave nothing behind: no growth per abuse.
#include <gtest/gtest.h>

#include <filesystem>

#include "abuse/abuse_support.h"
#include "support/test_certs.h"

namespace {

using namespace wheelrpc::test::abuse;

class Abuse : public ::testing::Test {
 protected:
  void SetUp() override { start(server_args(), {}); }

  void start(const std::vector<std::string>& args, const wheelrpc::rpc::ClientOptions& good) {
    raise_open_file_limit();
    server_.emplace(WHEELRPC_ECHO_SERVER, args);
    ASSERT_TRUE(server_->ok()) << server_->log_tail();
    good_.emplace(server_->port(), good);
    ASSERT_TRUE(good_->start()) << good_->first_error();
  }

  /// Runs `abuse` once to size the process, waits until the server holds no
  /// more files than before it, and takes the memory then as the baseline.
  template <class F>
  void warm_up(F abuse) {
    const long files = server_->open_files();
    abuse();
    ASSERT_TRUE(wheelrpc::test::wait_until([&] { return server_->open_files() <= files; }, 60s));
    std::this_thread::sleep_for(1500ms);  // the trim that follows the closes (ServerOptions::return_memory)
    rss_before_ = server_->rss_kib();
    files_before_ = server_->open_files();
    ASSERT_GT(rss_before_, 0);
    ASSERT_GT(files_before_, 0);
  }

  /// After the abusers left: the good client failed no call, and the server's
  /// memory and open files come back (each within 30 s).
  void expect_recovered() {
    good_->stop();
    EXPECT_EQ(good_->failed(), 0u) << good_->first_error();
    EXPECT_GT(good_->ok(), 200u);
    long rss = 0;
    if (kMemoryChecked) {
      EXPECT_TRUE(wheelrpc::test::wait_until(
          [&] {
            rss = server_->rss_kib();
            return rss <= rss_before_ + rss_before_ / 10;
          },
          30s))
          << "RSS " << rss << " KiB, before the abuse " << rss_before_ << " KiB";
      std::printf("server RSS: %ld KiB before the second round, %ld KiB after\n", rss_before_, rss);
    }
    long files = 0;
    EXPECT_TRUE(wheelrpc::test::wait_until(
        [&] {
          files = server_->open_files();
          return files <= files_before_;
        },
        30s))
        << files << " open files, before the abuse " << files_before_;
    EXPECT_EQ(server_->stop(), 0) << "a graceful shutdown after the abuse\n" << server_->log_tail();
  }

  std::optional<wheelrpc::test::ServerProcess> server_;
  std::optional<GoodClient> good_;
  long rss_before_ = 0, files_before_ = 0;
};

// How long past its limit an abuser may be seen cut off: the timer's tick,
// a loaded machine, a sanitizer.
constexpr auto kSlack = 10s;

TEST_F(Abuse, AThousandSilentConnectionsAreCutOffAtTheHelloTimeout) {
  warm_up([&] { silent_connections(server_->port(), 1000); });
  const auto v = verdict(silent_connections(server_->port(), 1000));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kHelloTimeout + kSlack);
  expect_recovered();
}

TEST_F(Abuse, AHelloSentOneBytePer100msIsCutOffAtTheHelloTimeout) {
  warm_up([&] { slow_hellos(server_->port(), 20); });
  const auto times = slow_hellos(server_->port(), 20);
  const auto v = verdict(times);
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  // The whole HELLO would take about 6 s: cut off long before, at 1 s.
  EXPECT_LE(v.longest, kHelloTimeout + kSlack);
  for (auto t : times) EXPECT_GE(t, kHelloTimeout - 100ms) << "not before its limit";
  expect_recovered();
}

TEST_F(Abuse, GarbageBytesAreCutOffAtOnce) {
  warm_up([&] { garbage(server_->port(), 50, 1); });
  const auto v = verdict(garbage(server_->port(), 50, 20261123));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kSlack);
  expect_recovered();
}

TEST_F(Abuse, AFrameHeaderAnnouncing4GiBIsCutOffBeforeAnythingIsAllocated) {
  warm_up([&] { huge_headers(server_->port(), 50); });
  const auto v = verdict(huge_headers(server_->port(), 50));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kSlack);
  expect_recovered();
}

TEST_F(Abuse, ClientsThatFloodRequestsAndReadNoRepliesAreCutOffAtTheQueueBound) {
  warm_up([&] { floods(server_->port(), 8); });
  const auto v = verdict(floods(server_->port(), 8));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, 60s);
  expect_recovered();
}

/// The same server on a TLS port that requires client certificates (mTLS),
/// with a good client that has one; certificates made at test time.
class AbuseTls : public Abuse {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("wheelrpc-abuse-tls-" + std::to_string(::getpid()) + "-" + std::to_string(seq.fetch_add(1)));
    certs_.emplace(wheelrpc::support::make_test_pki(dir_));
    auto args = server_args();
    args.insert(args.end(), {"--tls-cert", certs_->cert("server"), "--tls-key", certs_->key("server"), "--tls-ca",
                             certs_->cert("ca"), "--tls-require-client-cert"});
    start(args, client_options("client"));
  }
  void TearDown() override {
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  /// Trusts the server's CA and presents `cert` (signed by "ca", or by
  /// "other-ca" for "foreign"; none if empty).
  wheelrpc::rpc::ClientOptions client_options(const std::string& cert) const {
    wheelrpc::rpc::ClientOptions o;
    o.tls.enabled = true;
    o.tls.ca_file = certs_->cert("ca");
    if (!cert.empty()) {
      o.tls.cert_file = certs_->cert(cert);
      o.tls.key_file = certs_->key(cert);
    }
    return o;
  }

  std::filesystem::path dir_;
  std::optional<wheelrpc::support::TestCerts> certs_;
};

TEST_F(AbuseTls, PlaintextClientsOnATlsPortAreCutOffAtOnce) {
  warm_up([&] { plaintext_on_tls(server_->port(), 50); });
  const auto v = verdict(plaintext_on_tls(server_->port(), 50));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kSlack);
  expect_recovered();
}

TEST_F(AbuseTls, ClientsWithAnUntrustedCertificateOrNoneAreRefusedInTheHandshake) {
  warm_up([&] {
    untrusted_tls_clients(server_->port(), 20, client_options("foreign"));
    untrusted_tls_clients(server_->port(), 20, client_options(""));
  });
  const auto foreign = verdict(untrusted_tls_clients(server_->port(), 20, client_options("foreign")));
  EXPECT_TRUE(foreign.all_cut) << "a certificate from another CA\n" << server_->log_tail();
  EXPECT_LE(foreign.longest, kHelloTimeout + kSlack);
  const auto none = verdict(untrusted_tls_clients(server_->port(), 20, client_options("")));
  EXPECT_TRUE(none.all_cut) << "no certificate\n" << server_->log_tail();
  EXPECT_LE(none.longest, kHelloTimeout + kSlack);
  expect_recovered();
}

}  // namespace
