#include <gtest/gtest.h>

#include <wheelrpc/registry/errc.h>

#include "etcd_endpoints.h"

namespace {
using namespace wheelrpc::registry::detail;
using wheelrpc::registry::errc;

std::vector<EtcdEndpoint> parse(std::string_view s, boost::system::error_code& ec, std::string& why) {
  return parse_etcd_endpoints(s, ec, why);
}

TEST(EtcdEndpoints, ParsesSchemesHostsAndIpv6) {
  boost::system::error_code ec;
  std::string why;
  auto eps = parse("etcd://127.0.0.1:2379,example.com:22379,[::1]:2380", ec, why);
  ASSERT_FALSE(ec) << why;
  ASSERT_EQ(eps.size(), 3u);
  EXPECT_EQ(eps[0], (EtcdEndpoint{"127.0.0.1", 2379}));
  EXPECT_EQ(eps[1], (EtcdEndpoint{"example.com", 22379}));
  EXPECT_EQ(eps[2], (EtcdEndpoint{"::1", 2380}));
  EXPECT_EQ(to_string(eps[2]), "[::1]:2380");
  EXPECT_EQ(to_string(eps[0]), "127.0.0.1:2379");

  eps = parse("localhost:1", ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(eps, (std::vector<EtcdEndpoint>{{"localhost", 1}}));
  eps = parse("http://h:2", ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(eps, (std::vector<EtcdEndpoint>{{"h", 2}}));
}

TEST(EtcdEndpoints, BadInputsNameTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "names no endpoint"},           {"etcd://", "names no endpoint"},       {"etcd://h1", "missing ':port'"},
      {"etcd://h1:0", "1..65535"},         {"etcd://h1:65536", "1..65535"},        {"etcd://h1:12x", "1..65535"},
      {"etcd://h1:", "1..65535"},          {"etcd://:2379", "empty host"},         {"etcd://h1:1,,h2:2", "empty entry"},
      {"etcd://h1:1,", "empty entry"},     {"https://h1:1", "unsupported scheme"}, {"etcd://::1:2379", "[addr]:port"},
      {"etcd://[::1:2379", "[ipv6]:port"}, {"etcd://h1:1/v3", "1..65535"},
  };
  for (const auto& [input, needle] : cases) {
    boost::system::error_code ec;
    std::string why;
    auto eps = parse(input, ec, why);
    EXPECT_EQ(ec, errc::bad_endpoint) << input;
    EXPECT_TRUE(eps.empty()) << input;
    EXPECT_NE(why.find(needle), std::string::npos) << input << " -> " << why;
  }
}

}  // namespace
