// TLS on a real server and client over loopback, with certificates made for
// each test: round trips, mTLS, every handshake failure with its reason, the
// two mismatches of plaintext and TLS, a peer that never answers the
// handshake, and reconnects (a fresh handshake each time).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/transport/errc.h>

#include "support/log_capture.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"
#include "tls/tls_fixture.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::test::call_and_wait;
using wheelrpc::test::LogCapture;
using wheelrpc::test::Outcome;
using wheelrpc::test::RpcFixture;
using wheelrpc::test::TlsTest;
using wheelrpc::test::wait_until;
using wheelrpc::transport::TlsContext;
using wheelrpc::transport::TlsOptions;
using wheelrpc::transport::TlsRole;
using Clock = std::chrono::steady_clock;

namespace {

ServerOptions server_with(TlsOptions tls) {
  ServerOptions o;
  o.tls = std::move(tls);
  return o;
}

/// A connect timeout far above what a failed handshake takes: the failures
/// below must come from the handshake, fast, not from a timeout.
ClientOptions client_with(TlsOptions tls) {
  ClientOptions o;
  o.tls = std::move(tls);
  o.connect_timeout = 5000ms;
  return o;
}

/// One attempt, not waiting for ready: a failed connect fails it with unavailable.
Outcome call_once(Client& client, const std::string& payload = "x", std::chrono::milliseconds timeout = 4000ms) {
  CallOptions o;
  o.timeout = timeout;
  o.retries = 0;
  return call_and_wait(client, "echo", payload, o);
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

/// Expects the call to fail fast (well before the connect timeout) with
/// unavailable and a message holding `reason`.
void expect_refused(Client& client, const std::string& reason) {
  const auto t0 = Clock::now();
  auto r = call_once(client);
  EXPECT_EQ(r.ec, errc::unavailable) << r.ec.message() << ": " << r.response.error_message;
  EXPECT_TRUE(contains(r.response.error_message, reason)) << r.response.error_message;
  EXPECT_LT(Clock::now() - t0, 3000ms) << "a failed handshake fails the call fast";
  EXPECT_GE(client.stats().connect_failures, 1u);
}

}  // namespace

TEST_F(TlsTest, RoundTripOverTlsCarriesSmallAndLargePayloads) {
  RpcFixture fx(server_with(server_tls()), client_with(client_tls()));
  auto r = call_once(*fx.client, "hello");
  ASSERT_FALSE(r.ec) << r.response.error_message;
  EXPECT_EQ(r.response.payload, "hello");
  const std::string big(3 << 20, 'b');  // many TLS records each way
  // Generous: 3 MiB each way through TLS under ThreadSanitizer, with the
  // other suites running beside it, took over 4 s.
  r = call_once(*fx.client, big, 30s);
  ASSERT_FALSE(r.ec) << r.response.error_message;
  EXPECT_EQ(r.response.payload, big);
  std::vector<std::future<Outcome>> calls;
  CallOptions many;
  many.timeout = 30s;  // 200 at once under a sanitizer on a loaded machine
  for (int i = 0; i < 200; ++i) calls.push_back(wheelrpc::test::start(*fx.client, "echo", std::to_string(i), many));
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(calls[static_cast<std::size_t>(i)].wait_for(30s), std::future_status::ready);
    auto o = calls[static_cast<std::size_t>(i)].get();
    ASSERT_FALSE(o.ec) << o.response.error_message;
    EXPECT_EQ(o.response.payload, std::to_string(i));
  }
  EXPECT_EQ(fx.client->stats().connects, 1u);
  EXPECT_EQ(fx.server.stats().accepted, 1u);
}

TEST_F(TlsTest, HeartbeatsKeepAnIdleTlsConnectionOpen) {
  auto so = server_with(server_tls());
  so.keepalive.heartbeat = 30ms;
  so.keepalive.idle_timeout = 600ms;  // a heartbeat late by half a second on a loaded machine still counts
  auto co = client_with(client_tls());
  co.heartbeat = 30ms;
  co.idle_timeout = 600ms;
  RpcFixture fx(so, co);
  ASSERT_FALSE(call_once(*fx.client).ec);
  // At least 900 ms without a call, longer than either side's idle timeout.
  ASSERT_TRUE(wait_until([&] { return fx.client->stats().heartbeats_sent >= 30; }, 20s));
  EXPECT_EQ(fx.client->stats().connects, 1u) << "heartbeats over TLS keep the connection";
  EXPECT_EQ(fx.server.stats().idle_closes, 0u);
  EXPECT_FALSE(call_once(*fx.client).ec);
}

TEST_F(TlsTest, MutualTlsServesAClientWithACertificate) {
  RpcFixture fx(server_with(mtls_server()), client_with(client_tls("client")));
  auto r = call_once(*fx.client, "mtls");
  ASSERT_FALSE(r.ec) << r.response.error_message;
  EXPECT_EQ(r.response.payload, "mtls");
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(server_with(mtls_server()), client_with(client_tls()));
  expect_refused(*fx.client, "missing client certificate");
  ASSERT_TRUE(wait_until([&] { return log.count("missing client certificate") >= 2; }, 10s)) << "both ends log it";
  // The server goes on with a client that has one.
  Client good(fx.threads.io.get_executor(), fx.timer,
              std::vector<boost::asio::ip::tcp::endpoint>{fx.server.local_endpoint()},
              client_with(client_tls("client")));
  EXPECT_FALSE(call_once(good).ec);
  good.close();
}

TEST_F(TlsTest, MutualTlsRefusesAClientCertificateFromAnotherCa) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(server_with(mtls_server()), client_with(client_tls("foreign")));
  expect_refused(*fx.client, "unknown CA: the peer does not trust the CA of this end's certificate");
  ASSERT_TRUE(wait_until(
      [&] { return log.count("unknown CA: the client's certificate is not signed by a trusted CA") >= 1; }, 10s));
}

TEST_F(TlsTest, AServerCertificateFromAnUnknownCaIsRefused) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(server_with(server_tls("foreign")), client_with(client_tls()));
  expect_refused(*fx.client, "unknown CA: the server's certificate is not signed by a trusted CA");
  ASSERT_TRUE(wait_until(
      [&] { return log.count("unknown CA: the peer does not trust the CA of this end's certificate") >= 1; }, 10s));
}

TEST_F(TlsTest, AServerCertificateForAnotherNameIsRefused) {
  RpcFixture fx(server_with(server_tls("wrong-name")), client_with(client_tls()));
  expect_refused(*fx.client, "name mismatch: the server's certificate does not name '127.0.0.1'");
}

TEST_F(TlsTest, AnExpiredServerCertificateIsRefused) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(server_with(server_tls("expired")), client_with(client_tls()));
  expect_refused(*fx.client, "expired certificate: the server's certificate has expired");
  ASSERT_TRUE(wait_until(
      [&] { return log.count("expired certificate: the peer refused this end's certificate as expired") >= 1; }, 10s));
}

TEST_F(TlsTest, AServerLoadingAnExpiredCertificateWarnsAtOnce) {
  {
    LogCapture log("wheelrpc.transport");
    (void)TlsContext::make(server_tls("expired"), TlsRole::server);
    EXPECT_EQ(log.count("[warning]"), 1u);
    EXPECT_EQ(log.count("the certificate in '" + certs().cert("expired") + "' expired on "), 1u);
  }
  LogCapture log("wheelrpc.transport");
  (void)TlsContext::make(server_tls("server"), TlsRole::server);
  EXPECT_EQ(log.count("[warning]"), 0u) << "a valid certificate is loaded silently";
}

TEST_F(TlsTest, AServerNameThatIsNeitherADnsNameNorAnAddressIsRefused) {
  for (const char* bad : {"bad name!", "-lead.example", "trail-.example", "a..b", "under_score.example"}) {
    auto o = client_tls();
    o.server_name = bad;
    try {
      (void)TlsContext::make(o, TlsRole::client);
      ADD_FAILURE() << "accepted server_name '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), std::string("server_name '") + bad + "' is neither a DNS name")) << e.what();
    }
  }
  for (const char* good : {"localhost", "svc-1.example.com", "example.com.", "127.0.0.1", "::1"}) {
    auto o = client_tls();
    o.server_name = good;
    EXPECT_NO_THROW((void)TlsContext::make(o, TlsRole::client)) << good;
  }
}

TEST_F(TlsTest, TheServerNameOptionIsWhatTheCertificateMustCarry) {
  auto co = client_with(client_tls());
  co.tls.server_name = "localhost";
  RpcFixture fx(server_with(server_tls()), co);
  EXPECT_FALSE(call_once(*fx.client).ec);
  auto other = client_with(client_tls());
  other.tls.server_name = "elsewhere.example";
  Client wrong(fx.threads.io.get_executor(), fx.timer,
               std::vector<boost::asio::ip::tcp::endpoint>{fx.server.local_endpoint()}, other);
  expect_refused(wrong, "does not name 'elsewhere.example'");
  wrong.close();
}

TEST_F(TlsTest, APlaintextClientOnATlsPortFailsFastAndTheServerGoesOn) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(server_with(server_tls()), client_with(TlsOptions{}));
  expect_refused(*fx.client, "the peer requires TLS");
  ASSERT_TRUE(wait_until([&] { return log.count("plaintext peer on a TLS port") >= 1; }, 10s));
  Client good(fx.threads.io.get_executor(), fx.timer,
              std::vector<boost::asio::ip::tcp::endpoint>{fx.server.local_endpoint()}, client_with(client_tls()));
  auto r = call_once(good, "still here");
  ASSERT_FALSE(r.ec) << r.response.error_message;
  EXPECT_EQ(r.response.payload, "still here");
  good.close();
}

TEST_F(TlsTest, ATlsClientOnAPlaintextPortFailsFastAndTheServerGoesOn) {
  LogCapture log("wheelrpc.transport");
  RpcFixture fx(ServerOptions{}, client_with(client_tls()));
  expect_refused(*fx.client, "the server does not speak TLS");
  ASSERT_TRUE(wait_until([&] { return log.count("the peer speaks TLS") >= 1; }, 10s));
  Client plain(fx.threads.io.get_executor(), fx.timer,
               std::vector<boost::asio::ip::tcp::endpoint>{fx.server.local_endpoint()}, ClientOptions{});
  EXPECT_FALSE(call_once(plain).ec);
  plain.close();
}

TEST_F(TlsTest, APeerThatNeverAnswersTheHandshakeTimesOutAndIsRetriedWithBackoff) {
  // Accepts and reads nothing: the client's handshake waits, the wheel's
  // ReconnectTimerTask closes it at connect_timeout, and it is retried.
  wheelrpc::test::IoThreads io(1);
  boost::asio::ip::tcp::acceptor silent(io.io, wheelrpc::test::loopback0());
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> held;
  std::atomic<int> accepted{0};
  std::function<void()> accept_next = [&] {
    auto s = std::make_shared<boost::asio::ip::tcp::socket>(io.io);
    silent.async_accept(*s, [&, s](const boost::system::error_code& ec) {
      if (ec) return;
      held.push_back(s);
      accepted.fetch_add(1);
      accept_next();
    });
  };
  accept_next();
  wheelrpc::timer::HashedWheelTimer timer;
  auto co = client_with(client_tls());
  co.connect_timeout = 200ms;
  co.reconnect.first = 0ms;
  co.reconnect.initial = 100ms;
  co.reconnect.max = 200ms;
  Client client(io.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{silent.local_endpoint()}, co);
  CallOptions o;
  o.timeout = 1500ms;
  o.retries = 0;
  o.wait_for_ready = true;
  const auto t0 = Clock::now();
  auto r = call_and_wait(client, "echo", "x", o);
  const auto took = Clock::now() - t0;
  EXPECT_EQ(r.ec, errc::unavailable) << r.ec.message() << ": " << r.response.error_message;
  EXPECT_TRUE(contains(r.response.error_message, "during the TLS handshake")) << r.response.error_message;
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 2500ms) << "the call ends at its deadline";
  // Each attempt got connect_timeout (200 ms); the next one starts when the
  // backoff (100..200 ms from the start of the last) allows, not at once.
  EXPECT_GE(accepted.load(), 3);
  EXPECT_LE(accepted.load(), 10);
  client.close();
  boost::asio::post(io.io, [&] {
    silent.close();
    held.clear();
  });
  io.stop();
}

TEST_F(TlsTest, AClientStuckInTheHandshakeIsClosedAtTheHelloTimeout) {
  // Opens a TLS record and says no more (a slowloris of the handshake): the
  // server's keepalive.hello_timeout closes it, and the log says where it was stuck.
  LogCapture log("wheelrpc.transport");
  auto so = server_with(server_tls());
  so.keepalive.hello_timeout = 300ms;
  RpcFixture fx(so, client_with(client_tls()));
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket raw(io);
  raw.connect(fx.server.local_endpoint());
  const std::uint8_t partial[] = {0x16, 0x03, 0x01};
  boost::asio::write(raw, boost::asio::buffer(partial));
  const auto t0 = Clock::now();
  std::uint8_t byte = 0;
  boost::system::error_code ec;
  const timeval limit{10, 0};  // a bound on the blocking read below
  ::setsockopt(raw.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  raw.read_some(boost::asio::buffer(&byte, 1), ec);  // until the server closes (or the bound)
  const auto took = Clock::now() - t0;
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset) << ec.message();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3000ms);
  ASSERT_TRUE(
      wait_until([&] { return log.count("no HELLO within the hello timeout (during the TLS handshake)") >= 1; }, 10s));
  EXPECT_FALSE(call_once(*fx.client).ec) << "the server goes on";
}

TEST_F(TlsTest, AConnectionTheServerKillsIsReconnectedWithAFreshHandshake) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io(2);
  auto first = std::make_unique<Server>(io.io.get_executor(), timer, server_with(server_tls()));
  wheelrpc::test::register_test_methods(*first, io.io);
  ASSERT_FALSE(first->listen(wheelrpc::test::loopback0()));
  const auto endpoint = first->local_endpoint();
  auto co = client_with(client_tls());
  co.reconnect.initial = 50ms;
  co.reconnect.max = 200ms;
  Client client(io.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{endpoint}, co);
  ASSERT_FALSE(call_once(client).ec);
  first->stop();  // closes the connection from the server's side
  first.reset();
  // The same port again, once the first server's listening socket is gone.
  std::unique_ptr<Server> second;
  ASSERT_TRUE(wait_until(
      [&] {
        second = std::make_unique<Server>(io.io.get_executor(), timer, server_with(server_tls()));
        wheelrpc::test::register_test_methods(*second, io.io);
        if (!second->listen(endpoint)) return true;
        second.reset();
        return false;
      },
      10s));
  ASSERT_TRUE(wait_until([&] { return client.stats().connects >= 2; }, 10s));
  auto r = call_once(client, "again");
  ASSERT_FALSE(r.ec) << r.response.error_message;
  EXPECT_EQ(r.response.payload, "again");
  EXPECT_EQ(second->stats().accepted, 1u);
  client.close();
  second->stop();
  io.stop();
}

TEST_F(TlsTest, BadFilesAreRefusedUpFrontNamingTheFile) {
  auto expect_invalid = [](const TlsOptions& o, TlsRole role, const std::string& needle) {
    try {
      (void)TlsContext::make(o, role);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), needle)) << e.what();
    }
  };
  auto missing = server_tls();
  missing.cert_file = (dir_ / "nope.pem").string();
  expect_invalid(missing, TlsRole::server, "'" + missing.cert_file + "' cannot be read");
  auto mismatch = server_tls();
  mismatch.key_file = certs().key("client");
  expect_invalid(mismatch, TlsRole::server, "'" + mismatch.key_file + "' does not match the certificate");
  auto not_pem = server_tls();
  not_pem.cert_file = certs().key("server");  // a key where a certificate belongs
  expect_invalid(not_pem, TlsRole::server, "is not a usable PEM certificate chain");
  auto bad_ca = client_tls();
  bad_ca.ca_file = (dir_ / "absent-ca.pem").string();
  expect_invalid(bad_ca, TlsRole::client, "TLS CA file");
  auto no_cert = server_tls();
  no_cert.cert_file.clear();
  no_cert.key_file.clear();
  expect_invalid(no_cert, TlsRole::server, "cert_file and key_file are required");
  auto half = client_tls();
  half.key_file = certs().key("client");
  expect_invalid(half, TlsRole::client, "go together");
  auto no_ca = mtls_server();
  no_ca.ca_file.clear();
  expect_invalid(no_ca, TlsRole::server, "require_client_cert needs ca_file");

  // Server and Client constructors refuse them too.
  wheelrpc::timer::HashedWheelTimer timer;
  boost::asio::io_context io;
  EXPECT_THROW(Server(io.get_executor(), timer, server_with(missing)), std::invalid_argument);
  EXPECT_THROW(Server(io.get_executor(), timer, server_with(no_cert)), std::invalid_argument);
  EXPECT_THROW(Client(io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{}, client_with(half)),
               std::invalid_argument);
}
