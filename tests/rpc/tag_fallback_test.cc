// Tag routing when a tag's rule says "fallback": false and the set has no
// provider of that tag (docs/governance.md, "Tag routing"): a call that does
// not wait for ready fails at once with errc::unavailable naming the tag (not
// at its deadline); one that waits for ready waits for a provider of its tag
// and goes there, or times out naming the tag; a call waiting for its tag's
// only provider fails the moment the provider leaves the tag; with the
// fallback allowed, tagged calls go to the untagged providers. Both wires.
// Real servers behind proxies (support/cluster.h), real time, generous
// deadlines.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/provider_source.h>
#include <wheelrpc/rpc/routing_tag.h>

#include "support/cluster.h"
#include "support/driven_rules.h"
#include "support/driven_source.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"

namespace {

using wheelrpc::rpc::CallRules;
using wheelrpc::rpc::ProviderInfo;
using wheelrpc::rpc::ProviderSource;
using wheelrpc::rpc::RoutingTag;
using wheelrpc::rpc::RoutingTagScope;
using wheelrpc::rpc::WireProtocol;
using tcp = boost::asio::ip::tcp;

std::string tag_fallback_peer(const tcp::endpoint& ep) {
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

ClientOptions tag_fallback_options(WireProtocol wire, std::shared_ptr<wheelrpc::rpc::RuleSource> rules) {
  auto co = client_options();
  co.protocol = wire;
  co.rules = std::move(rules);
  return co;
}

/// Rules where "canary" has no provider and may not fall back.
std::shared_ptr<CallRules> strict_canary(std::vector<std::string> providers = {}) {
  auto rules = std::make_shared<CallRules>();
  auto& route = rules->tags["canary"];
  route.providers = std::move(providers);
  route.fallback = false;
  route.origin = std::make_shared<const std::string>("runtime override /wheelrpc/echo/rules/canary rev 7");
  rules->revision = 7;
  return rules;
}

/// The client follows its rules once it reports them in force (its first call
/// after that sees them): waits, bounded, for the rule source's report.
void wait_for_rules(Client& client) {
  ASSERT_TRUE(wait_until([&] { return client.stats().rule_updates >= 1; }, 20s));
}

std::future<Outcome> start_tagged(Client& client, std::string_view tag, CallOptions o) {
  RoutingTagScope scope(*RoutingTag::make(tag));
  return start(client, "work", "", std::move(o));
}

CallOptions wait_for_ready_opts(std::chrono::milliseconds timeout) {
  auto o = opts(timeout);
  o.wait_for_ready = true;
  return o;
}

/// A tagged call, deadline 30 s, on a client whose rule gives "canary" no
/// provider and no fallback: it ends unavailable long before its deadline,
/// names the tag and the rule, and reaches no provider.
void expect_fails_fast(WireProtocol wire) {
  Cluster c({Mode::reply, Mode::reply}, tag_fallback_options(wire, wheelrpc::rpc::static_rules(strict_canary())));
  c.connect_all();
  wait_for_rules(*c.client);
  auto f = start_tagged(*c.client, "canary", opts(30s));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "tag 'canary'")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "allows no fallback")) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "/wheelrpc/echo/rules/canary rev 7")) << out.response.error_message;
  EXPECT_FALSE(contains(out.response.error_message, "timeout")) << out.response.error_message;
  EXPECT_LT(out.took, 10s) << "it failed at once, not at its deadline";
  ::testing::Test::RecordProperty("message", out.response.error_message);
  ::testing::Test::RecordProperty(
      "took_us", static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(out.took).count()));
  EXPECT_EQ(c.total_requests(), 0);
  // An untagged call still goes.
  auto g = start(c, "work", "", opts(5s));
  auto plain = wait(g);
  EXPECT_FALSE(plain.ec) << plain.response.error_message;
}

TEST(TagFallback, AStrictTagWithNoProviderFailsAtOnceUnavailableNamingTheTag) {
  expect_fails_fast(WireProtocol::native);
}

TEST(TagFallback, OnTheGrpcWireAStrictTagWithNoProviderFailsAtOnceToo) { expect_fails_fast(WireProtocol::grpc); }

void expect_falls_back(WireProtocol wire) {
  auto rules = std::make_shared<CallRules>();
  Cluster c({Mode::reply, Mode::reply, Mode::reply}, tag_fallback_options(wire, nullptr));
  rules->tags["blue"].providers = {tag_fallback_peer(c.providers[2]->proxy->local_endpoint())};
  rules->tags["canary"].fallback = true;
  // A second client, following the rules (the cluster's own has none).
  auto co = tag_fallback_options(wire, wheelrpc::rpc::static_rules(rules));
  Client client(
      c.io.io.get_executor(), c.timer,
      std::vector<tcp::endpoint>{c.providers[0]->proxy->local_endpoint(), c.providers[1]->proxy->local_endpoint(),
                                 c.providers[2]->proxy->local_endpoint()},
      co);
  wait_for_rules(client);
  for (int i = 0; i < 30; ++i) {
    auto f = start_tagged(client, "canary", opts(5s));
    auto out = wait(f);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EXPECT_NE(out.response.payload, "p2") << "blue's provider takes no canary call";
  }
  EXPECT_EQ(c.providers[2]->requests(), 0);
  EXPECT_EQ(c.providers[0]->requests() + c.providers[1]->requests(), 30);
  client.close();
}

TEST(TagFallback, WithTheFallbackAllowedATagWithNoProviderGoesToTheUntaggedOnes) {
  expect_falls_back(WireProtocol::native);
}

TEST(TagFallback, OnTheGrpcWireTheFallbackGoesToTheUntaggedOnesToo) { expect_falls_back(WireProtocol::grpc); }

/// A call that waits for ready waits while its tag has no provider, then goes
/// to the provider of its tag that joins the set.
void expect_waits_for_tagged_provider(WireProtocol wire) {
  Cluster c({Mode::reply, Mode::reply, Mode::reply}, tag_fallback_options(wire, nullptr));
  auto source = std::make_shared<wheelrpc::test::DrivenSource>();
  Client client(c.io.io.get_executor(), c.timer, source,
                tag_fallback_options(wire, wheelrpc::rpc::static_rules(strict_canary())));
  auto info = [&](std::size_t i) { return ProviderInfo(c.providers[i]->proxy->local_endpoint()); };
  source->report({info(0), info(1)});
  wait_for_rules(client);
  auto f = start_tagged(client, "canary", wait_for_ready_opts(30s));
  // It waits (no provider serves canary yet); an untagged call meanwhile goes.
  auto g = start(client, "work", "", opts(5s));
  auto plain = wait(g);
  EXPECT_FALSE(plain.ec) << plain.response.error_message;
  EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout) << "a call that waits for ready waits";
  auto canary = info(2);
  canary.tags["tag"] = "canary";
  source->report({info(0), info(1), canary});
  auto out = wait(f);
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "p2");
  client.close();
}

TEST(TagFallback, WaitForReadyWaitsUntilAProviderOfItsTagJoins) {
  expect_waits_for_tagged_provider(WireProtocol::native);
}

TEST(TagFallback, OnTheGrpcWireWaitForReadyWaitsUntilAProviderOfItsTagJoins) {
  expect_waits_for_tagged_provider(WireProtocol::grpc);
}

TEST(TagFallback, WaitForReadyTimesOutNamingTheTag) {
  Cluster c({Mode::reply, Mode::reply},
            tag_fallback_options(WireProtocol::native, wheelrpc::rpc::static_rules(strict_canary())));
  c.connect_all();
  wait_for_rules(*c.client);
  auto f = start_tagged(*c.client, "canary", wait_for_ready_opts(400ms));
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "not sent: no provider serves tag 'canary'"))
      << out.response.error_message;
  EXPECT_GE(out.took, 400ms) << "it waited for its deadline";
  RecordProperty("message", out.response.error_message);
  EXPECT_EQ(c.total_requests(), 0);
}

TEST(TagFallback, ACallWaitingForItsTagsOnlyProviderFailsWhenTheProviderLeavesTheTag) {
  auto rules = std::make_shared<wheelrpc::test::DrivenRules>();
  Cluster c({Mode::reply, Mode::reply, Mode::reply}, tag_fallback_options(WireProtocol::native, rules));
  const auto p2 = tag_fallback_peer(c.providers[2]->proxy->local_endpoint());
  rules->report(strict_canary({p2}));
  c.providers[2]->proxy->down();  // canary's only provider cannot be reached
  c.client->connect();
  ASSERT_TRUE(wait_until([&] {
    auto ps = c.client->providers();
    return std::count_if(ps.begin(), ps.end(), [](const auto& p) { return p.ready; }) == 2;
  }));
  auto f = start_tagged(*c.client, "canary", opts(30s));
  // The untagged providers are ready, so the call waits for canary's.
  EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout) << "it waits for its tag's provider";
  const auto t0 = Clock::now();
  rules->report(strict_canary());  // p2 no longer serves canary
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "tag 'canary'")) << out.response.error_message;
  EXPECT_LT(Clock::now() - t0, 10s) << "it failed when the rule changed, not at its deadline";
  EXPECT_EQ(c.total_requests(), 0);
}

}  // namespace
