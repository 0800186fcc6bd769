// ServiceInstance JSON, endpoint text, and the provider set (pure code).

#include <gtest/gtest.h>

#include <wheelrpc/registry/registry.h>

#include "endpoint_address.h"
#include "provider_set.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::registry::detail;

ServiceInstance sample() {
  ServiceInstance s;
  s.service = "echo";
  s.endpoint = "127.0.0.1:7001";
  s.weight = 250;
  s.version = "1.2.0";
  s.zone = "eu-1";
  s.tags = {{"canary", "true"}, {"team", "rpc"}};
  return s;
}

TEST(ServiceInstanceJson, RoundTripsEveryField) {
  const auto in = sample();
  std::string why;
  auto out = ServiceInstance::from_json(in.to_json(), why);
  ASSERT_TRUE(out) << why;
  EXPECT_EQ(*out, in);
}

TEST(ServiceInstanceJson, AnIPv6EndpointAndEmptyOptionalsRoundTrip) {
  ServiceInstance in;
  in.service = "a.b_c-1";
  in.endpoint = "[::1]:9000";
  std::string why;
  auto out = ServiceInstance::from_json(in.to_json(), why);
  ASSERT_TRUE(out) << why;
  EXPECT_EQ(*out, in);
  EXPECT_EQ(out->weight, 100);
}

TEST(ServiceInstanceJson, UnknownFieldsAreIgnoredAndMissingOptionalsDefault) {
  std::string why;
  auto out = ServiceInstance::from_json(R"({"service":"echo","endpoint":"10.0.0.1:80","extra":[1,2],"x":{}})", why);
  ASSERT_TRUE(out) << why;
  EXPECT_EQ(out->weight, 100);
  EXPECT_TRUE(out->version.empty());
  EXPECT_TRUE(out->tags.empty());
}

TEST(ServiceInstanceJson, BadInputsAreRefusedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"garbage{", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"endpoint":"1.2.3.4:5"})", "no \"service\""},
      {R"({"service":"echo"})", "no \"endpoint\""},
      {R"({"service":7,"endpoint":"1.2.3.4:5"})", "\"service\" is not a string"},
      {R"({"service":"echo","endpoint":"1.2.3.4:5","weight":-1})", "weight -1"},
      {R"({"service":"echo","endpoint":"1.2.3.4:5","weight":"9"})", "\"weight\""},
      {R"({"service":"echo","endpoint":"1.2.3.4:5","weight":1.5})", "\"weight\""},
      {R"({"service":"echo","endpoint":"1.2.3.4:5","tags":[]})", "\"tags\" is not an object"},
      {R"({"service":"echo","endpoint":"1.2.3.4:5","tags":{"a":1}})", "tag \"a\""},
      {R"({"service":"e cho","endpoint":"1.2.3.4:5"})", "has a space"},
      {R"({"service":"echo","endpoint":"1.2.3.4"})", "no port"},
      {R"({"service":"echo","endpoint":"1.2.3.4:0"})", "no valid port"},
      {R"({"service":"echo","endpoint":"1.2.3.4:70000"})", "no valid port"},
      {R"({"service":"echo","endpoint":"::1:80"})", "brackets"},
      {R"({"service":"echo","endpoint":"a/b:80"})", "slash"},
  };
  for (const auto& [text, expected] : cases) {
    std::string why;
    EXPECT_FALSE(ServiceInstance::from_json(text, why)) << text;
    EXPECT_NE(why.find(expected), std::string::npos) << text << " -> " << why;
  }
}

TEST(ServiceInstanceJson, InvalidReasonNamesTheProblem) {
  EXPECT_EQ(sample().invalid_reason(), "");
  auto s = sample();
  s.service = "a b";
  EXPECT_EQ(s.invalid_reason(), "service name 'a b' has a space");
  s = sample();
  s.service = std::string(129, 'x');
  EXPECT_NE(s.invalid_reason().find("128"), std::string::npos);
  s = sample();
  s.service.clear();
  EXPECT_EQ(s.invalid_reason(), "service name is empty");
  s = sample();
  s.weight = 10001;
  EXPECT_NE(s.invalid_reason().find("10001"), std::string::npos);
  s = sample();
  s.endpoint = "";
  EXPECT_EQ(s.invalid_reason(), "endpoint is empty");
}

TEST(EndpointAddress, ParsesIpLiteralsOnly) {
  std::string why;
  auto v4 = parse_ip_endpoint("127.0.0.1:7001", why);
  ASSERT_TRUE(v4) << why;
  EXPECT_EQ(v4->port(), 7001);
  auto v6 = parse_ip_endpoint("[::1]:7002", why);
  ASSERT_TRUE(v6) << why;
  EXPECT_TRUE(v6->address().is_v6());
  EXPECT_EQ(format_endpoint(*v6), "[::1]:7002");
  EXPECT_EQ(format_endpoint(*v4), "127.0.0.1:7001");
  for (const char* bad : {"localhost:80", "1.2.3.4", "1.2.3.4:0", "[::1:80", "::1:80", "1.2.3.4:x", ""}) {
    EXPECT_FALSE(parse_ip_endpoint(bad, why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(EndpointAddress, UnspecifiedAddressesAreAnnouncedAsLoopback) {
  namespace ip = boost::asio::ip;
  EXPECT_EQ(format_endpoint(announceable({ip::make_address("0.0.0.0"), 7001})), "127.0.0.1:7001");
  EXPECT_EQ(format_endpoint(announceable({ip::make_address("::"), 7001})), "127.0.0.1:7001");
  EXPECT_EQ(format_endpoint(announceable({ip::make_address("10.1.2.3"), 7001})), "10.1.2.3:7001");
}

TEST(ProviderSet, KeepsValidEntriesSortedAndReportsBadOnes) {
  ProviderSet set("echo");
  auto b = sample();
  b.endpoint = "127.0.0.2:1";
  auto a = sample();
  a.endpoint = "127.0.0.1:1";
  auto other = sample();
  other.service = "other";
  auto kv = [](std::string key, std::string value) {
    KeyValue out;
    out.key = std::move(key);
    out.value = std::move(value);
    return out;
  };
  const auto bad =
      set.reset({kv("/r/echo/providers/127.0.0.2:1", b.to_json()), kv("/r/echo/providers/x", "not json"),
                 kv("/r/echo/providers/127.0.0.1:1", a.to_json()), kv("/r/echo/providers/o", other.to_json())});
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].key, "/r/echo/providers/x");
  EXPECT_NE(bad[1].why.find("names service 'other'"), std::string::npos) << bad[1].why;
  auto sorted = set.sorted();
  ASSERT_EQ(sorted.size(), 2u);
  EXPECT_EQ(sorted[0].endpoint, "127.0.0.1:1");
  EXPECT_EQ(sorted[1].endpoint, "127.0.0.2:1");

  WatchEvent del;
  del.type = EventType::del;
  del.kv.key = "/r/echo/providers/127.0.0.1:1";
  EXPECT_FALSE(set.apply(del));
  EXPECT_EQ(set.size(), 1u);
  // A key overwritten with garbage no longer names a provider.
  WatchEvent garbage;
  garbage.kv = kv("/r/echo/providers/127.0.0.2:1", "{}");
  EXPECT_TRUE(set.apply(garbage));
  EXPECT_EQ(set.size(), 0u);
}

}  // namespace
