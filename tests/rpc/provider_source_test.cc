// Provider sources: resolved_providers()' targets and options, the real
// resolver on IP literals and "localhost", and static_providers().

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/rpc/provider_source.h>

#include "client/resolved_providers.h"
#include "support/fake_dns.h"
#include "support/manual_timer.h"
#include "support/wait.h"

namespace wheelrpc::rpc {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;
using test::FakeDns;
using Recorder = test::ProviderRecorder;

tcp::endpoint ep(const char* address, unsigned short port) { return test::make_endpoint(address, port); }

TEST(ResolveTargetTest, BadTargetsAreRejectedNamingTheTarget) {
  asio::io_context io;
  test::ManualTimer mt;
  auto bad = [&](std::vector<std::string> targets, const std::string& expect_in_message) {
    try {
      resolved_providers(io.get_executor(), mt.timer, targets);
      ADD_FAILURE() << "accepted: " << (targets.empty() ? "(empty list)" : targets.front());
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expect_in_message), std::string::npos) << e.what();
    }
  };
  bad({}, "no targets");
  bad({"example.com"}, "'example.com'");
  bad({"example.com:"}, "missing port");
  bad({"example.com:0"}, "1..65535");
  bad({"example.com:65536"}, "1..65535");
  bad({"example.com:http"}, "1..65535");
  bad({"example.com:-1"}, "1..65535");
  bad({":80"}, "empty host");
  bad({"[]:80"}, "empty host");
  bad({"[::1]"}, "missing port");
  bad({"[::1"}, "']'");
  bad({"::1:80"}, "brackets");
  bad({"good:80", "bad"}, "'bad'");
}

TEST(ResolveTargetTest, ParsesHostPortAndBracketedV6) {
  auto t = detail::parse_resolve_target("example.com:8080");
  EXPECT_EQ(t.host, "example.com");
  EXPECT_EQ(t.port, "8080");
  t = detail::parse_resolve_target("[::1]:65535");
  EXPECT_EQ(t.host, "::1");
  EXPECT_EQ(t.port, "65535");
  t = detail::parse_resolve_target("10.0.0.1:1");
  EXPECT_EQ(t.host, "10.0.0.1");
  EXPECT_EQ(t.port, "1");
}

TEST(ResolveTargetTest, OptionsMustBePositive) {
  asio::io_context io;
  test::ManualTimer mt;
  EXPECT_THROW(resolved_providers(io.get_executor(), mt.timer, {"a:1"}, ResolveOptions{0ms, 1s}),
               std::invalid_argument);
  EXPECT_THROW(resolved_providers(io.get_executor(), mt.timer, {"a:1"}, ResolveOptions{1s, -1ms}),
               std::invalid_argument);
}

TEST(ResolveTargetTest, DescribeNamesEveryTarget) {
  asio::io_context io;
  test::ManualTimer mt;
  EXPECT_EQ(resolved_providers(io.get_executor(), mt.timer, {"example.com:80"})->describe(), "dns:example.com:80");
  EXPECT_EQ(resolved_providers(io.get_executor(), mt.timer, {"a:1", "[::1]:2"})->describe(), "dns:a:1,[::1]:2");
}

/// The real resolver, on an io_context polled here until the report comes.
class RealResolverTest : public ::testing::Test {
 protected:
  /// Bounded generously: a lookup that goes to a slow DNS server may take
  /// several of its timeouts.
  bool wait_report(std::size_t n) {
    return test::wait_until(
        [&] {
          io_.restart();
          io_.poll();
          return rec_.count() >= n;
        },
        std::chrono::seconds(60));
  }
  asio::io_context io_;
  test::ManualTimer mt_;
  Recorder rec_;
};

TEST_F(RealResolverTest, AnIpLiteralResolvesToItself) {
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"127.0.0.1:7001", "[::1]:7002"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  EXPECT_FALSE(r.ec) << r.why;
  EXPECT_EQ(r.endpoints, (std::vector<tcp::endpoint>{ep("127.0.0.1", 7001), ep("::1", 7002)}));
  source->stop();
}

TEST_F(RealResolverTest, LocalhostResolvesToLoopback) {
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"localhost:7003"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  ASSERT_FALSE(r.ec) << r.why;
  ASSERT_FALSE(r.endpoints.empty());
  for (const auto& e : r.endpoints) {
    EXPECT_TRUE(e.address().is_loopback()) << e;
    EXPECT_EQ(e.port(), 7003);
  }
  source->stop();
}

TEST_F(RealResolverTest, AnUnknownNameReportsTheError) {
  // .invalid never resolves (RFC 6761).
  auto source = resolved_providers(io_.get_executor(), mt_.timer, {"no-such-host.invalid:80"});
  source->start(rec_.listener());
  ASSERT_TRUE(wait_report(1));
  auto r = rec_.last();
  if (!r.ec) GTEST_SKIP() << "this network's DNS answers for .invalid names";
  EXPECT_TRUE(r.endpoints.empty());
  EXPECT_EQ(r.why.rfind("host name 'no-such-host.invalid' does not resolve: ", 0), 0u) << r.why;
  source->stop();
}

TEST(StaticProvidersTest, ReportsItsSetOnceAtStart) {
  auto source = static_providers({ep("127.0.0.1", 7001), ep("::1", 7002), ep("127.0.0.1", 7001)});
  EXPECT_EQ(source->describe(), "127.0.0.1:7001,[::1]:7002");
  Recorder rec;
  source->start(rec.listener());
  ASSERT_EQ(rec.count(), 1u);
  EXPECT_FALSE(rec.last().ec);
  EXPECT_EQ(rec.last().endpoints, (std::vector<tcp::endpoint>{ep("127.0.0.1", 7001), ep("::1", 7002)}));
  source->connect_failed(ep("127.0.0.1", 7001));
  source->stop();
  EXPECT_EQ(rec.count(), 1u);
}

}  // namespace
}  // namespace wheelrpc::rpc
