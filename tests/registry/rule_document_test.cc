// Rule documents (docs/governance.md), pure: every field, every refusal
// reason, the last good version per key (RuleSet), scopes, force, and the
// CallRules a consumer gets, in key order.

#include <gtest/gtest.h>

#include <wheelrpc/registry/rules.h>

#include "rule_document.h"
#include "rule_set.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::registry::detail;
using namespace std::chrono_literals;
namespace rpc = wheelrpc::rpc;

const std::string kPrefix = "/wheelrpc/echo/rules/";

RuleDocument parse(std::string_view json) {
  std::string why;
  auto d = parse_rule_document(json, why);
  EXPECT_TRUE(d) << why;
  return d.value_or(RuleDocument{});
}

GoodRules rules_of(std::initializer_list<std::pair<std::string, std::string>> docs) {
  GoodRules g;
  std::int64_t rev = 10;
  for (const auto& [name, json] : docs) {
    const auto key = kPrefix + name;
    g.emplace(key, RuleVersion{rev, parse(json), rule_origin(key, rev)});
    ++rev;
  }
  return g;
}

KeyValue kv(const std::string& name, std::string value, std::int64_t rev) {
  KeyValue k;
  k.key = kPrefix + name;
  k.value = std::move(value);
  k.mod_revision = rev;
  return k;
}

WatchEvent put(const std::string& name, std::string value, std::int64_t rev) {
  return {EventType::put, kv(name, std::move(value), rev)};
}

WatchEvent del(const std::string& name, std::int64_t rev) { return {EventType::del, kv(name, "", rev)}; }

TEST(RuleDocument, AnEmptyObjectIsValidAndOverridesNothing) {
  EXPECT_EQ(validate_rule("{}"), "");
  auto r = build_call_rules(rules_of({{"a", "{}"}}), {}, 7, "etcd at x");
  EXPECT_TRUE(r->service.empty());
  EXPECT_TRUE(r->methods.empty());
  EXPECT_FALSE(r->load_balance);
  EXPECT_TRUE(r->weights.empty());
  EXPECT_EQ(r->revision, 7);
  EXPECT_EQ(r->source, "etcd at x");
}

TEST(RuleDocument, EveryPolicyFieldIsRead) {
  const auto d = parse(R"({"service": {"timeout_ms": 1500, "attempt_timeout_ms": 400, "hedge_delay_ms": 50,
      "stream_timeout_ms": 60000, "message_timeout_ms": 3000, "stall_timeout_ms": 2000,
      "first_message_timeout_ms": 900, "retries": 3, "idempotent": true, "wait_for_ready": false,
      "compression": "lz4", "compression_level": -3, "force": true}})");
  ASSERT_TRUE(d.service);
  const auto& p = *d.service;
  EXPECT_EQ(p.timeout_ms, 1500);
  EXPECT_EQ(p.attempt_timeout_ms, 400);
  EXPECT_EQ(p.hedge_delay_ms, 50);
  EXPECT_EQ(p.stream_timeout_ms, 60000);
  EXPECT_EQ(p.message_timeout_ms, 3000);
  EXPECT_EQ(p.stall_timeout_ms, 2000);
  EXPECT_EQ(p.first_message_timeout_ms, 900);
  EXPECT_EQ(p.retries, 3);
  EXPECT_EQ(p.idempotent, true);
  EXPECT_EQ(p.wait_for_ready, false);
  EXPECT_EQ(p.compression, wheelrpc::transport::Compression::lz4);
  EXPECT_EQ(p.compression_level, -3);
  EXPECT_EQ(p.force, true);

  GoodRules g;
  g.emplace(kPrefix + "x", RuleVersion{42, d, rule_origin(kPrefix + "x", 42)});
  const auto r = build_call_rules(g, {}, 42, "");
  const auto& o = r->service;
  ASSERT_TRUE(o.timeout && o.attempt_timeout && o.hedge_delay && o.stream_timeout && o.message_timeout &&
              o.stall_timeout && o.first_message_timeout && o.retries && o.idempotent && o.wait_for_ready &&
              o.compression && o.compression_level);
  EXPECT_EQ(o.timeout->value, 1500ms);
  EXPECT_EQ(o.attempt_timeout->value, 400ms);
  EXPECT_EQ(o.hedge_delay->value, 50ms);
  EXPECT_EQ(o.stream_timeout->value, 60000ms);
  EXPECT_EQ(o.message_timeout->value, 3000ms);
  EXPECT_EQ(o.stall_timeout->value, 2000ms);
  EXPECT_EQ(o.first_message_timeout->value, 900ms);
  EXPECT_EQ(o.retries->value, 3);
  EXPECT_TRUE(o.idempotent->value);
  EXPECT_FALSE(o.wait_for_ready->value);
  EXPECT_EQ(o.compression->value, wheelrpc::transport::Compression::lz4);
  EXPECT_EQ(o.compression_level->value, -3);
  EXPECT_TRUE(o.timeout->force);
  EXPECT_EQ(*o.timeout->origin, "runtime override /wheelrpc/echo/rules/x rev 42");
  // One origin string per document, shared by its overrides.
  EXPECT_EQ(o.timeout->origin.get(), o.compression->origin.get());
}

TEST(RuleDocument, MinusOneTimeoutMeansNoDeadline) {
  const auto r = build_call_rules(rules_of({{"a", R"({"methods": {"echo": {"timeout_ms": -1}}})"}}), {}, 1, "");
  ASSERT_TRUE(r->for_method("echo").timeout);
  EXPECT_EQ(r->for_method("echo").timeout->value, rpc::CallOptions::kNoDeadline);
}

TEST(RuleDocument, LoadBalanceAndProvidersAreRead) {
  const auto r = build_call_rules(rules_of({{"a", R"({"load_balance": "p2c", "providers": {
      "127.0.0.1:7001": {"weight": 250}, "[::1]:7002": {"disabled": true},
      "127.0.0.1:7003": {"weight": 9, "disabled": true}, "127.0.0.1:7004": {"disabled": false}}})"}}),
                                  {}, 1, "");
  ASSERT_TRUE(r->load_balance);
  EXPECT_EQ(r->load_balance->value, rpc::LoadBalance::power_of_two);
  ASSERT_EQ(r->weights.size(), 3u);  // "disabled": false alone overrides nothing
  EXPECT_EQ(r->weights.at("127.0.0.1:7001").value, 250u);
  EXPECT_EQ(r->weights.at("[::1]:7002").value, 0u);
  EXPECT_EQ(r->weights.at("127.0.0.1:7003").value, 0u);  // disabled beats weight
  for (const char* lb : {"round_robin", "least_active"}) {
    EXPECT_EQ(validate_rule(std::string(R"({"load_balance": ")") + lb + "\"}"), "") << lb;
  }
}

TEST(RuleDocument, TagRoutesAreReadAndALaterKeysRouteReplacesAnEarlierOnes) {
  const auto r = build_call_rules(
      rules_of({{"a", R"({"tags": {"canary": {"providers": ["127.0.0.1:7001", "[::1]:7002"]}, "blue": {}}})"},
                {"b", R"({"tags": {"blue": {"fallback": false}}})"}}),
      {}, 1, "");
  ASSERT_EQ(r->tags.size(), 2u);
  const auto& canary = r->tags.at("canary");
  EXPECT_EQ(canary.providers, (std::vector<std::string>{"127.0.0.1:7001", "[::1]:7002"}));
  EXPECT_TRUE(canary.fallback) << "a tag falls back to the untagged providers by default";
  EXPECT_EQ(*canary.origin, "runtime override /wheelrpc/echo/rules/a rev 10");
  EXPECT_FALSE(r->tags.at("blue").fallback);
  EXPECT_TRUE(r->tags.at("blue").providers.empty());
  EXPECT_EQ(validate_rule(R"({"tags": {"a b": {}}})"),
            "tags.a b: 'a b' is not a tag: 1..64 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(validate_rule(R"({"tags": {"canary": {"providers": ["nowhere"]}}})")
                .rfind("tags.canary.providers: 'nowhere' is not an ip:port", 0),
            0u);
  EXPECT_EQ(validate_rule(R"({"tags": {"canary": {"fallback": 1}}})"),
            "tags.canary.fallback: expected a boolean, got an integer");
  EXPECT_EQ(validate_rule(R"({"tags": {"canary": {"weight": 1}}})"), "tags.canary.weight: unknown field");
  EXPECT_EQ(validate_rule(R"({"tags": []})"), "tags: expected an object, got an array");
}

TEST(RuleDocument, EveryRefusalNamesTheFieldAndTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not valid JSON: "},
      {"{", "not valid JSON: "},
      {"[]", "a rule document is a JSON object, not an array"},
      {R"({"colour": 1})", "colour: unknown field"},
      {R"({"force": "yes"})", "force: expected a boolean, got a string"},
      {R"({"scope": []})", "scope: expected an object, got an array"},
      {R"({"scope": {"apps": []}})", "scope.apps: unknown field"},
      {R"({"scope": {"tags": "canary"}})", "scope.tags: expected an array of strings, got a string"},
      {R"({"scope": {"tags": ["a", 1]}})", "scope.tags[1]: expected a string, got an integer"},
      {R"({"scope": {"applications": [""]}})", "scope.applications[0]: is empty"},
      {R"({"service": 5})", "service: expected an object, got an integer"},
      {R"({"service": {"timeout": 5}})", "service.timeout: unknown field"},
      {R"({"methods": {"echo": {"timeout_ms": 0}}})", "methods.echo.timeout_ms: 0 is outside 1..86400000"},
      {R"({"methods": {"echo": {"timeout_ms": -2}}})", "methods.echo.timeout_ms: -2 is outside 1..86400000"},
      {R"({"methods": {"echo": {"timeout_ms": 86400001}}})",
       "methods.echo.timeout_ms: 86400001 is outside 1..86400000"},
      {R"({"methods": {"echo": {"timeout_ms": 1.5}}})", "methods.echo.timeout_ms: expected an integer, got a number"},
      {R"({"methods": {"echo": {"timeout_ms": 18446744073709551615}}})",
       "methods.echo.timeout_ms: 18446744073709551615 is outside 1..86400000"},
      {R"({"methods": {"echo": {"attempt_timeout_ms": -1}}})",
       "methods.echo.attempt_timeout_ms: -1 is outside 0..86400000"},
      {R"({"service": {"hedge_delay_ms": 86400001}})", "service.hedge_delay_ms: 86400001 is outside 0..86400000"},
      {R"({"service": {"stream_timeout_ms": -5}})", "service.stream_timeout_ms: -5 is outside 0..86400000"},
      {R"({"service": {"message_timeout_ms": "1"}})", "service.message_timeout_ms: expected an integer, got a string"},
      {R"({"service": {"stall_timeout_ms": null}})", "service.stall_timeout_ms: expected an integer, got null"},
      {R"({"service": {"first_message_timeout_ms": true}})",
       "service.first_message_timeout_ms: expected an integer, got a boolean"},
      {R"({"service": {"retries": 17}})", "service.retries: 17 is outside 0..16"},
      {R"({"service": {"retries": -1}})", "service.retries: -1 is outside 0..16"},
      {R"({"service": {"idempotent": 1}})", "service.idempotent: expected a boolean, got an integer"},
      {R"({"service": {"wait_for_ready": "true"}})", "service.wait_for_ready: expected a boolean, got a string"},
      {R"({"service": {"compression": "brotli"}})",
       "service.compression: 'brotli' is not one of identity, zstd, lz4, gzip, deflate"},
      {R"({"service": {"compression": 1}})", "service.compression: expected a string, got an integer"},
      {R"({"service": {"compression_level": 23}})", "service.compression_level: 23 is outside -7..22"},
      {R"({"service": {"compression_level": -8}})", "service.compression_level: -8 is outside -7..22"},
      {R"({"service": {"force": 0}})", "service.force: expected a boolean, got an integer"},
      {R"({"methods": []})", "methods: expected an object, got an array"},
      {R"({"methods": {"": {}}})", "methods: a method name is empty"},
      {R"({"methods": {"/pkg.Greeter/SayHello": {"retries": 99}}})",
       "methods./pkg.Greeter/SayHello.retries: 99 is outside 0..16"},
      {R"({"load_balance": "random"})",
       "load_balance: 'random' is not one of round_robin, least_active, p2c, load_aware"},
      {R"({"load_balance": 1})", "load_balance: expected a string, got an integer"},
      {R"({"providers": []})", "providers: expected an object, got an array"},
      {R"({"providers": {"localhost:7001": {}}})", "providers.localhost:7001: 'localhost:7001' is not an ip:port"},
      {R"({"providers": {"127.0.0.1:7001": 5}})", "providers.127.0.0.1:7001: expected an object, got an integer"},
      {R"({"providers": {"127.0.0.1:7001": {"weight": 10001}}})",
       "providers.127.0.0.1:7001.weight: 10001 is outside 0..10000"},
      {R"({"providers": {"127.0.0.1:7001": {"weight": -1}}})",
       "providers.127.0.0.1:7001.weight: -1 is outside 0..10000"},
      {R"({"providers": {"127.0.0.1:7001": {"disabled": "no"}}})",
       "providers.127.0.0.1:7001.disabled: expected a boolean, got a string"},
      {R"({"providers": {"127.0.0.1:7001": {"weigth": 1}}})", "providers.127.0.0.1:7001.weigth: unknown field"},
  };
  for (const auto& [json, reason] : cases) {
    const auto why = validate_rule(json);
    EXPECT_EQ(why.rfind(reason, 0), 0u) << json << " -> " << why;
  }
  // Boundaries that are valid.
  for (const char* ok : {R"({"service": {"timeout_ms": 1}})", R"({"service": {"timeout_ms": 86400000}})",
                         R"({"service": {"attempt_timeout_ms": 0, "retries": 16, "compression_level": 22}})",
                         R"({"service": {"compression_level": -7, "compression": "identity"}})",
                         R"({"providers": {"127.0.0.1:7001": {"weight": 0}, "[::1]:1": {"weight": 10000}}})",
                         R"({"scope": {"applications": [], "tags": []}})"}) {
    EXPECT_EQ(validate_rule(ok), "") << ok;
  }
}

TEST(RuleDocument, RuleNamesAreChecked) {
  EXPECT_EQ(validate_rule_name("slow-echo_v1.2"), "");
  EXPECT_EQ(validate_rule_name(std::string(128, 'a')), "");
  EXPECT_NE(validate_rule_name(""), "");
  EXPECT_NE(validate_rule_name(std::string(129, 'a')), "");
  EXPECT_EQ(validate_rule_name("a/b"), "rule name 'a/b' has '/' (allowed: A-Z a-z 0-9 . _ -)");
  EXPECT_NE(validate_rule_name("a b"), "");
}

TEST(RuleDocument, ALaterKeyBeatsAnEarlierOneFieldByField) {
  const auto r = build_call_rules(rules_of({
                                      {"10-base", R"({"service": {"timeout_ms": 1000, "retries": 1},
                                                     "load_balance": "round_robin",
                                                     "providers": {"127.0.0.1:1": {"weight": 5}}})"},
                                      {"20-over", R"({"service": {"timeout_ms": 300},
                                                     "load_balance": "least_active"})"},
                                  }),
                                  {}, 1, "");
  ASSERT_TRUE(r->service.timeout && r->service.retries);
  EXPECT_EQ(r->service.timeout->value, 300ms);
  EXPECT_EQ(*r->service.timeout->origin, "runtime override /wheelrpc/echo/rules/20-over rev 11");
  EXPECT_EQ(r->service.retries->value, 1);  // untouched by the later key
  EXPECT_EQ(*r->service.retries->origin, "runtime override /wheelrpc/echo/rules/10-base rev 10");
  EXPECT_EQ(r->load_balance->value, rpc::LoadBalance::least_active);
  EXPECT_EQ(r->weights.at("127.0.0.1:1").value, 5u);
}

TEST(RuleDocument, AMethodsFieldBeatsTheServicesEvenFromAnEarlierKey) {
  const auto r = build_call_rules(rules_of({
                                      {"a", R"({"methods": {"echo": {"timeout_ms": 200}}})"},
                                      {"b", R"({"service": {"timeout_ms": 5000, "retries": 4}})"},
                                  }),
                                  {}, 1, "");
  const auto echo = r->for_method("echo");
  EXPECT_EQ(echo.timeout->value, 200ms);
  EXPECT_EQ(echo.retries->value, 4);
  EXPECT_EQ(r->for_method("sleep").timeout->value, 5000ms);
  rpc::CallOptions call;
  r->apply("echo", call);
  EXPECT_EQ(call.timeout.value(), 200ms);
}

TEST(RuleDocument, ScopesSelectConsumersByApplicationOrTag) {
  const auto g = rules_of({
      {"all", R"({"service": {"retries": 1}})"},
      {"app", R"({"scope": {"applications": ["checkout"]}, "service": {"retries": 2}})"},
      {"tag", R"({"scope": {"tags": ["canary"]}, "service": {"retries": 3}})"},
      {"zeither", R"({"scope": {"applications": ["billing"], "tags": ["blue"]}, "service": {"retries": 4}})"},
  });
  auto retries = [&](RuleScope who) { return build_call_rules(g, who, 1, "")->service.retries->value; };
  EXPECT_EQ(retries({}), 1);
  EXPECT_EQ(retries({.application = "checkout"}), 2);
  EXPECT_EQ(retries({.application = "other", .tags = {"x", "canary"}}), 3);
  EXPECT_EQ(retries({.application = "checkout", .tags = {"canary"}}), 3);  // "tag" sorts after "app"
  EXPECT_EQ(retries({.application = "billing"}), 4);
  EXPECT_EQ(retries({.application = "x", .tags = {"blue"}}), 4);
  EXPECT_EQ(retries({.application = "", .tags = {}}), 1);
}

TEST(RuleDocument, ForceComesFromTheDocumentUnlessTheBlockSaysOtherwise) {
  const auto r =
      build_call_rules(rules_of({{"a", R"({"force": true, "service": {"retries": 1},
                          "methods": {"echo": {"timeout_ms": 200, "force": false}, "sleep": {"timeout_ms": 300}},
                          "load_balance": "p2c"})"},
                                 {"b", R"({"methods": {"chat": {"stream_timeout_ms": 9, "force": true}}})"}}),
                       {}, 1, "");
  EXPECT_TRUE(r->service.retries->force);
  EXPECT_FALSE(r->methods.at("echo").timeout->force);
  EXPECT_TRUE(r->methods.at("sleep").timeout->force);
  EXPECT_TRUE(r->load_balance->force);
  EXPECT_TRUE(r->methods.at("chat").stream_timeout->force);
  // Forced beats the call's own value; a runtime override does not.
  rpc::CallOptions call;
  call.timeout = 5000ms;
  r->apply("sleep", call);
  EXPECT_EQ(call.timeout.value(), 300ms);
  rpc::CallOptions call2;
  call2.timeout = 5000ms;
  r->apply("echo", call2);
  EXPECT_EQ(call2.timeout.value(), 5000ms);
}

TEST(RuleSet, ABadVersionIsRefusedOnceAndTheLastGoodOneStays) {
  RuleSet set(kPrefix);
  auto out = set.reset({kv("slow", R"({"service": {"timeout_ms": 300}})", 5)});
  EXPECT_EQ(out.accepted, 1u);
  EXPECT_TRUE(out.refused.empty());
  EXPECT_TRUE(set.take_changed());
  EXPECT_FALSE(set.take_changed());

  out = set.apply({put("slow", R"({"service": {"timeout_ms": 0}})", 6)});
  ASSERT_EQ(out.refused.size(), 1u);
  EXPECT_EQ(out.refused[0].key, kPrefix + "slow");
  EXPECT_EQ(out.refused[0].mod_revision, 6);
  EXPECT_EQ(out.refused[0].why, "service.timeout_ms: 0 is outside 1..86400000");
  EXPECT_FALSE(set.take_changed());
  ASSERT_EQ(set.good().size(), 1u);
  EXPECT_EQ(set.good().begin()->second.mod_revision, 5);

  // Read again (a compaction): the same bad version is not refused twice,
  // and the good one still stands.
  out = set.reset({kv("slow", R"({"service": {"timeout_ms": 0}})", 6)});
  EXPECT_TRUE(out.refused.empty());
  EXPECT_EQ(out.accepted, 0u);
  EXPECT_FALSE(set.take_changed());
  EXPECT_EQ(set.good().begin()->second.mod_revision, 5);

  out = set.apply({put("slow", R"({"service": {"timeout_ms": 400}})", 7)});
  EXPECT_EQ(out.accepted, 1u);
  EXPECT_TRUE(set.take_changed());
  EXPECT_EQ(*set.good().begin()->second.origin, "runtime override /wheelrpc/echo/rules/slow rev 7");
}

TEST(RuleSet, AKeyWhoseFirstVersionIsBadHasNoEffect) {
  RuleSet set(kPrefix);
  auto out = set.reset({kv("bad", "{not json", 3), kv("bad/name", "{}", 4), kv("ok", "{}", 5)});
  ASSERT_EQ(out.refused.size(), 2u);
  EXPECT_EQ(out.refused[1].why, "rule name 'bad/name' has '/' (allowed: A-Z a-z 0-9 . _ -)");
  EXPECT_EQ(set.good().size(), 1u);
  EXPECT_EQ(set.good().count(kPrefix + "ok"), 1u);
}

TEST(RuleSet, ADeletedKeysRulesGoAndAReadDropsMissingKeys) {
  RuleSet set(kPrefix);
  set.reset({kv("a", "{}", 3), kv("b", "{}", 4)});
  EXPECT_TRUE(set.take_changed());
  set.apply({del("a", 9)});
  EXPECT_TRUE(set.take_changed());
  EXPECT_EQ(set.good().size(), 1u);
  set.apply({del("zz", 10)});  // never known
  EXPECT_FALSE(set.take_changed());
  set.reset({});
  EXPECT_TRUE(set.take_changed());
  EXPECT_TRUE(set.good().empty());
}

TEST(RuleSet, AllEventsOfOneResponseApplyTogether) {
  RuleSet set(kPrefix);
  set.reset({});
  EXPECT_TRUE(set.take_changed());  // the first read always reports
  auto out = set.apply({put("a", R"({"service": {"retries": 1}})", 5), put("b", R"({"service": {"retries": 2}})", 5),
                        put("c", R"({"retries": 3})", 5)});
  EXPECT_EQ(out.accepted, 2u);
  EXPECT_EQ(out.refused.size(), 1u);
  EXPECT_TRUE(set.take_changed());
  EXPECT_EQ(build_call_rules(set.good(), {}, 5, "")->service.retries->value, 2);
}

}  // namespace
