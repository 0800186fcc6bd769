// Runtime rules (ClientOptions::rules, call_rules.h): the precedence of a
// setting's layers (call > override > IDL > client default > built-in; a
// forced override beats the call too), rules applied to the next call when a
// source reports new ones and kept when it fails, timeouts that name who set
// them, and Client::explain.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>

#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/method_policy.h>

#include "support/cluster.h"
#include "support/driven_rules.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"
using wheelrpc::rpc::CallRules;
using wheelrpc::rpc::Layer;
using wheelrpc::rpc::Overridden;
using wheelrpc::rpc::PolicyOverrides;
using wheelrpc::rpc::RuleSource;
using wheelrpc::test::DrivenRules;
using wheelrpc::test::manual_client_options;

namespace {

std::shared_ptr<const std::string> origin(std::string text) { return std::make_shared<const std::string>(text); }

Overridden<std::chrono::milliseconds> ms(std::chrono::milliseconds v, bool force = false, std::string from = "") {
  return {v, force, from.empty() ? nullptr : origin(from)};
}

TEST(Setting, EachLayerFillsOnlyWhatTheLayersAboveLeftAlone) {
  CallOptions call;
  call.retries = 5;  // the caller's own
  wheelrpc::rpc::MethodPolicy idl;
  idl.timeout = 300ms;
  idl.retries = 1;
  wheelrpc::rpc::fill_policy(call, idl);
  CallOptions defaults;
  defaults.timeout = 9s;
  defaults.idempotent = true;
  wheelrpc::rpc::fill_defaults(call, defaults);
  EXPECT_EQ(call.retries.layer(), Layer::call);
  EXPECT_EQ(*call.retries, 5);
  EXPECT_EQ(call.timeout.layer(), Layer::idl);
  EXPECT_EQ(*call.timeout, 300ms);
  EXPECT_EQ(call.idempotent.layer(), Layer::client_default);
  EXPECT_TRUE(*call.idempotent);
  EXPECT_EQ(call.hedge_delay.layer(), Layer::built_in);
  EXPECT_FALSE(call.hedge_delay.given());
}

TEST(CallRules, AnOverrideBeatsTheIdlAndTheDefaultsButNotTheCallUnlessForced) {
  PolicyOverrides o;
  o.timeout = ms(200ms, false, "runtime override k rev 3");
  o.retries = Overridden<int>{0, true, origin("runtime override k2 rev 4")};
  CallOptions call;
  call.timeout = 5s;  // the caller's own: beats a plain override
  call.retries = 4;   // beaten by a forced one
  wheelrpc::rpc::MethodPolicy idl;
  idl.attempt_timeout = 50ms;
  wheelrpc::rpc::fill_policy(call, idl);
  o.apply(call);
  EXPECT_EQ(*call.timeout, 5s);
  EXPECT_EQ(call.timeout.layer(), Layer::call);
  EXPECT_EQ(*call.retries, 0);
  EXPECT_EQ(call.retries.layer(), Layer::forced_override);

  CallOptions from_idl;
  wheelrpc::rpc::MethodPolicy slow;
  slow.timeout = 2s;
  wheelrpc::rpc::fill_policy(from_idl, slow);
  o.apply(from_idl);
  EXPECT_EQ(*from_idl.timeout, 200ms);
  EXPECT_EQ(from_idl.timeout.layer(), Layer::runtime_override);
  wheelrpc::rpc::fill_defaults(from_idl, CallOptions{});
  EXPECT_EQ(*from_idl.timeout, 200ms) << "the client's defaults never beat an override";
}

TEST(CallRules, AMethodsOwnFieldBeatsTheServicesAndTheRestComesFromTheService) {
  auto rules = std::make_shared<CallRules>();
  rules->service.timeout = ms(1s, false, "svc");
  rules->service.retries = Overridden<int>{1, false, origin("svc")};
  rules->methods["work"].timeout = ms(250ms, false, "method");
  const auto work = rules->for_method("work");
  EXPECT_EQ(work.timeout->value, 250ms);
  EXPECT_EQ(*work.timeout->origin, "method");
  EXPECT_EQ(work.retries->value, 1);
  EXPECT_EQ(rules->for_method("other").timeout->value, 1s);
  EXPECT_EQ(*rules->timeout_origin("work"), "method");
  EXPECT_EQ(*rules->timeout_origin("other"), "svc");
  EXPECT_TRUE(PolicyOverrides{}.empty());
  EXPECT_FALSE(work.empty());
}

/// A client on manual time following `rules`, its one provider holding every call.
struct RuledCluster {
  explicit RuledCluster(std::shared_ptr<RuleSource> rules, ClientOptions co = manual_client_options())
      : c(ManualTime{}, {Mode::hold}, with_rules(std::move(co), std::move(rules))) {
    c.connect_all();
  }
  static ClientOptions with_rules(ClientOptions co, std::shared_ptr<RuleSource> rules) {
    co.rules = std::move(rules);
    return co;
  }
  Cluster c;
};

TEST(CallRules, ACallTimesOutAtTheOverridesTimeoutAndItsMessageNamesTheRule) {
  auto rules = std::make_shared<CallRules>();
  rules->methods["work"].timeout = ms(200ms, false, "runtime override /wheelrpc/echo/rules/slow rev 4712");
  rules->revision = 4712;
  RuledCluster r(wheelrpc::rpc::static_rules(rules));
  auto& c = r.c;
  CallOptions o;  // no timeout of its own: the built-in 1000 ms, beaten by the rule
  auto f = start(c, "work", "", o);
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  c.advance(199ms, 1s);
  EXPECT_FALSE(done(f)) << "before the override's deadline";
  c.advance(1ms);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_EQ(out.took, 200ms);
  EXPECT_TRUE(
      contains(out.response.error_message, "timeout 200 ms (runtime override /wheelrpc/echo/rules/slow rev 4712)"))
      << out.response.error_message;
  const auto records = c.client->recent_timeouts();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].timeout_source, "timeout 200 ms (runtime override /wheelrpc/echo/rules/slow rev 4712)");

  // The caller's own timeout beats a plain override, and says so.
  auto g = start(c, "work", "", opts(300ms));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 2; }));
  c.advance(299ms, 1s);
  EXPECT_FALSE(done(g));
  c.advance(1ms);
  out = wait(g);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_EQ(out.took, 300ms);
  EXPECT_FALSE(contains(out.response.error_message, "timeout 300 ms")) << "the caller knows its own timeout";
  EXPECT_EQ(c.client->recent_timeouts().front().timeout_source, "timeout 300 ms (call)");
}

TEST(CallRules, AForcedOverrideBeatsTheCallsOwnTimeout) {
  auto rules = std::make_shared<CallRules>();
  rules->service.timeout = ms(100ms, true, "runtime override /wheelrpc/echo/rules/incident rev 9");
  RuledCluster r(wheelrpc::rpc::static_rules(rules));
  auto& c = r.c;
  auto f = start(c, "work", "", opts(30s));
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  c.advance(100ms, 1s);
  auto out = wait(f);
  EXPECT_EQ(out.ec, errc::timeout);
  EXPECT_EQ(out.took, 100ms);
  EXPECT_TRUE(contains(out.response.error_message, "rules/incident rev 9")) << out.response.error_message;
}

TEST(CallRules, NewRulesApplyToTheNextCallAndAFailedReportKeepsTheLastGoodOnes) {
  auto source = std::make_shared<DrivenRules>();
  RuledCluster r(source);
  auto& c = r.c;
  auto first = std::make_shared<CallRules>();
  first->revision = 10;
  first->methods["work"].timeout = ms(150ms, false, "rule rev 10");
  source->report(first);
  EXPECT_EQ(c.client->stats().rule_updates, 1u);

  auto f = start(c, "work", "", CallOptions{});
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  c.advance(150ms, 1s);
  EXPECT_EQ(wait(f).took, 150ms);

  source->fail("etcd at 127.0.0.1:1 refused the connection");
  EXPECT_EQ(c.client->stats().rule_errors, 1u);
  auto g = start(c, "work", "", CallOptions{});
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 2; }));
  c.advance(150ms, 1s);
  EXPECT_EQ(wait(g).took, 150ms) << "the last good rules stand while the source fails";
  EXPECT_EQ(c.client->explain("work").rules_error, "etcd at 127.0.0.1:1 refused the connection");

  source->report(std::make_shared<CallRules>());  // every rule deleted
  auto h = start(c, "work", "", CallOptions{});
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 3; }));
  c.advance(999ms, 1s);
  EXPECT_FALSE(done(h)) << "back to the built-in 1000 ms";
  c.advance(1ms);
  EXPECT_EQ(wait(h).took, 1000ms);
  EXPECT_TRUE(c.client->explain("work").rules_error.empty());
}

TEST(CallRules, AStreamsTimersTakeTheOverride) {
  auto rules = std::make_shared<CallRules>();
  rules->methods["stream"].message_timeout = ms(700ms, false, "rule");
  CallOptions o;
  rules->apply("stream", o);
  EXPECT_EQ(*o.message_timeout, 700ms);
  EXPECT_EQ(o.message_timeout.layer(), Layer::runtime_override);
}

TEST(CallRules, ExplainShowsEveryLayerAndTheWinner) {
  auto source = std::make_shared<DrivenRules>();
  auto co = manual_client_options();
  co.call_defaults.timeout = 3s;
  co.call_defaults.retries = 4;
  RuledCluster r(source, co);
  auto& c = r.c;

  auto before = c.client->explain("work");
  EXPECT_EQ(before.rules_source, "test rules");
  EXPECT_EQ(before.rules_revision, 0);
  ASSERT_FALSE(before.settings.empty());
  EXPECT_EQ(before.settings[0].name, "timeout_ms");
  EXPECT_EQ(before.settings[0].winner.layer, Layer::client_default);
  EXPECT_EQ(before.settings[0].winner.value, "3000");
  ASSERT_EQ(before.settings[0].layers.size(), 2u);
  EXPECT_EQ(before.settings[0].layers[1].layer, Layer::built_in);
  EXPECT_EQ(before.settings[0].layers[1].value, "1000");

  auto rules = std::make_shared<CallRules>();
  rules->revision = 4712;
  rules->methods["work"].timeout = ms(200ms, false, "runtime override /wheelrpc/echo/rules/slow rev 4712");
  rules->load_balance = Overridden<wheelrpc::rpc::LoadBalance>{wheelrpc::rpc::LoadBalance::power_of_two, false,
                                                               origin("runtime override lb rev 4712")};
  source->report(rules);
  auto now = c.client->explain("work");
  EXPECT_EQ(now.rules_revision, 4712);
  const auto& t = now.settings[0];
  EXPECT_EQ(t.winner.layer, Layer::runtime_override);
  EXPECT_EQ(t.winner.value, "200");
  EXPECT_EQ(t.winner.origin, "runtime override /wheelrpc/echo/rules/slow rev 4712");
  ASSERT_EQ(t.layers.size(), 3u);
  EXPECT_EQ(t.layers[1].layer, Layer::client_default);
  const auto retries =
      std::find_if(now.settings.begin(), now.settings.end(), [](const auto& s) { return s.name == "retries"; });
  ASSERT_NE(retries, now.settings.end());
  EXPECT_EQ(retries->winner.value, "4");
  EXPECT_EQ(now.load_balance.winner.value, "p2c");
  EXPECT_EQ(now.load_balance.winner.layer, Layer::runtime_override);
  EXPECT_FALSE(now.idl_known);
}

TEST(CallRules, ExplainKnowsWhatTheIdlSaysOnceTheMethodWasCalledWithIt) {
  RuledCluster r(wheelrpc::rpc::static_rules(nullptr));
  auto& c = r.c;
  CallOptions o;
  wheelrpc::rpc::MethodPolicy idl;
  idl.timeout = 400ms;
  wheelrpc::rpc::fill_policy(o, idl);  // as a typed stub does
  auto f = start(c, "work", "", o);
  ASSERT_TRUE(wait_until([&] { return c.providers[0]->held_count() == 1; }));
  const auto e = c.client->explain("work");
  EXPECT_TRUE(e.idl_known);
  EXPECT_EQ(e.settings[0].winner.layer, Layer::idl);
  EXPECT_EQ(e.settings[0].winner.value, "400");
  c.advance(400ms, 1s);
  auto out = wait(f);
  EXPECT_TRUE(contains(out.response.error_message, "timeout 400 ms (IDL)")) << out.response.error_message;
}

}  // namespace
