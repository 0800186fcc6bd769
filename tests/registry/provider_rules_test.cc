// Provider rules (docs/governance.md, "Provider rules"): the "server" block
// of a rule document and its provider scope, pure; a Server's own overrides
// (Server::apply_rules: a method's timeout and concurrency limit, disabled);
// and a Server following its rules in real etcd (ProviderRuleFollower),
// chosen by address or zone, drained from its clients while disabled.

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/provider_rule_follower.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/server_rules.h>

#include "registry/registry_test_util.h"
#include "rule_document.h"
#include "support/held_responders.h"
#include "support/rpc_fixture.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
namespace rpc = wheelrpc::rpc;
namespace detail = wheelrpc::registry::detail;

const std::string kRules = "/wheelrpc/echo/rules/";

detail::GoodRules provider_rules_of(std::initializer_list<std::pair<std::string, std::string>> docs) {
  detail::GoodRules g;
  std::int64_t rev = 20;
  for (const auto& [name, json] : docs) {
    std::string why;
    auto d = detail::parse_rule_document(json, why);
    EXPECT_TRUE(d) << why;
    const auto key = kRules + name;
    g.emplace(key, detail::RuleVersion{rev, d.value_or(detail::RuleDocument{}), detail::rule_origin(key, rev)});
    ++rev;
  }
  return g;
}

TEST(ProviderRuleDocument, AServerBlockTakesTimeoutConcurrencyWeightDisabledAndMethods) {
  EXPECT_EQ(validate_rule(R"({"scope": {"providers": ["10.0.0.7:7001"], "zones": ["eu-1"], "provider_tags": ["canary"]},
                              "server": {"disabled": false, "weight": 50, "timeout_ms": 500, "max_concurrency": 64,
                                         "methods": {"echo": {"timeout_ms": 300, "max_concurrency": 8}}}})"),
            "");
}

TEST(ProviderRuleDocument, BadServerBlocksAreRefusedNamingTheField) {
  EXPECT_EQ(validate_rule(R"({"server": {"timeout_ms": -1}})"), "server.timeout_ms: -1 is outside 0..86400000");
  EXPECT_EQ(validate_rule(R"({"server": {"max_concurrency": 1000001}})"),
            "server.max_concurrency: 1000001 is outside 0..1000000");
  EXPECT_EQ(validate_rule(R"({"server": {"retries": 2}})"), "server.retries: unknown field");
  EXPECT_EQ(validate_rule(R"({"server": {"methods": {"echo": {"weight": 2}}}})"),
            "server.methods.echo.weight: unknown field (a method takes timeout_ms, max_concurrency)");
  EXPECT_EQ(validate_rule(R"({"server": {"weight": 10001}})"), "server.weight: 10001 is outside 0..10000");
  EXPECT_EQ(validate_rule(R"({"scope": {"providers": ["localhost:1"]}, "server": {}})").substr(0, 46),
            "scope.providers: 'localhost:1' is not an ip:po");
  // Whose settings they are: the provider's, whoever calls it.
  EXPECT_EQ(validate_rule(R"({"scope": {"applications": ["checkout"]}, "server": {"disabled": true}})"),
            "server: a provider's settings cannot be scoped to consumers (scope.applications, scope.tags): put them "
            "in a document of their own");
  EXPECT_EQ(validate_rule(R"({"scope": {"zones": ["eu-1"]}, "service": {"retries": 1}})"),
            "scope: scope.providers, scope.zones and scope.provider_tags choose the providers of a \"server\" block, "
            "and the document has none");
}

TEST(ProviderRuleDocument, AProviderFollowsTheBlocksThatChooseItByAddressZoneOrTagInKeyOrder) {
  const auto good = provider_rules_of({
      {"10-all", R"({"server": {"timeout_ms": 1000, "max_concurrency": 10}})"},
      {"20-zone",
       R"({"scope": {"zones": ["eu-1"]}, "server": {"timeout_ms": 500, "methods": {"echo": {"max_concurrency": 2}}}})"},
      {"30-one", R"({"scope": {"providers": ["10.0.0.7:7001"]}, "server": {"disabled": true}})"},
      {"40-canary", R"({"scope": {"provider_tags": ["canary"]}, "server": {"max_concurrency": 3}})"},
  });
  const auto plain = detail::build_server_rules(good, {.address = "10.0.0.8:7001"}, 44, "etcd at x");
  EXPECT_EQ(plain->revision, 44);
  EXPECT_FALSE(plain->is_disabled());
  EXPECT_EQ(plain->for_method("echo").timeout->value, 1000ms);
  EXPECT_EQ(plain->for_method("echo").max_concurrency->value, 10u);
  EXPECT_EQ(*plain->for_method("echo").timeout->origin, "runtime override /wheelrpc/echo/rules/10-all rev 20");

  const auto eu = detail::build_server_rules(good, {.address = "10.0.0.9:7001", .zone = "eu-1"}, 44, "");
  EXPECT_EQ(eu->for_method("echo").timeout->value, 500ms) << "a later key beats an earlier one";
  EXPECT_EQ(eu->for_method("echo").max_concurrency->value, 2u) << "a method's field beats the block's";
  EXPECT_EQ(eu->for_method("sleep").max_concurrency->value, 10u);
  EXPECT_FALSE(eu->is_disabled());

  const auto one = detail::build_server_rules(good, {.address = "10.0.0.7:7001"}, 44, "");
  EXPECT_TRUE(one->is_disabled());
  EXPECT_EQ(*one->disabled->origin, "runtime override /wheelrpc/echo/rules/30-one rev 22");

  const auto canary =
      detail::build_server_rules(good, {.address = "10.0.0.5:7001", .zone = "eu-1", .tag = "canary"}, 44, "");
  EXPECT_EQ(canary->for_method("sleep").max_concurrency->value, 3u);
  EXPECT_EQ(canary->for_method("echo").max_concurrency->value, 2u) << "the method's own field still beats it";
}

TEST(ProviderRuleDocument, ClientsWeighTheProvidersABlockChoosesAndDrainADisabledOne) {
  const auto good = provider_rules_of({
      {"10-zone", R"({"scope": {"zones": ["eu-1"]}, "server": {"weight": 30}})"},
      {"20-one", R"({"scope": {"providers": ["10.0.0.7:7001"]}, "server": {"disabled": true, "timeout_ms": 5}})"},
      {"30-limits", R"({"server": {"max_concurrency": 4}})"},
  });
  const auto rules = detail::build_call_rules(good, {.application = "checkout"}, 9, "");
  ASSERT_EQ(rules->provider_weights.size(), 2u) << "a block without weight or disabled weighs nothing";
  EXPECT_EQ(rules->provider_weights[0].weight.value, 30u);
  EXPECT_TRUE(rules->provider_weights[0].chooses("10.0.0.1:1", "eu-1", ""));
  EXPECT_FALSE(rules->provider_weights[0].chooses("10.0.0.1:1", "us-1", "eu-1"));
  EXPECT_EQ(rules->provider_weights[1].weight.value, 0u) << "disabled is weight 0";
  EXPECT_TRUE(rules->provider_weights[1].chooses("10.0.0.7:7001", "", ""));
  EXPECT_FALSE(rules->provider_weights[1].chooses("10.0.0.7:7002", "", ""));
  EXPECT_TRUE(rules->service.empty()) << "a server block overrides no call policy";
}

// ------------------------------------------------------------ Server::apply_rules

std::shared_ptr<const rpc::ServerRules> server_rules(std::function<void(rpc::ServerRules&)> fill) {
  auto r = std::make_shared<rpc::ServerRules>();
  fill(*r);
  return r;
}

rpc::CallOptions no_deadline() {
  rpc::CallOptions o;
  o.timeout = rpc::CallOptions::kNoDeadline;
  o.retries = 0;
  return o;
}

TEST(ServerRules, ARuleTimeoutBoundsACallThatCameWithoutADeadlineUntilItIsLifted) {
  HeldResponders held;
  RpcFixture fx({}, {}, 2, [&](rpc::Server& s) {
    s.handle("hold", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  });
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.methods["hold"].timeout = rpc::Overridden<std::chrono::milliseconds>{200ms, false, nullptr};
  }));
  const auto bounded = call_and_wait(*fx.client, "hold", "", no_deadline());
  EXPECT_EQ(bounded.ec, rpc::errc::server_timeout) << bounded.response.error_message;
  EXPECT_GE(bounded.took, 190ms);

  fx.server.apply_rules(nullptr);
  auto unbounded = start(*fx.client, "hold", "", no_deadline());
  ASSERT_TRUE(wait_until([&] { return held.size() == 2; }));  // the first stays held, timed out
  EXPECT_FALSE(done(unbounded));
  held.release_all();
  const auto out = unbounded.get();
  EXPECT_FALSE(out.ec) << "lifted: the registered timeout (none) is back: " << out.response.error_message;
}

TEST(ServerRules, ARuleConcurrencyLimitRefusesTheCallBeyondItAndAMethodsOwnBeatsTheServices) {
  HeldResponders held;
  RpcFixture fx({}, {}, 2, [&](rpc::Server& s) {
    s.handle("hold", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  });
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.service.max_concurrency = rpc::Overridden<std::size_t>{5, false, nullptr};
    r.methods["hold"].max_concurrency = rpc::Overridden<std::size_t>{1, false, nullptr};
  }));
  auto first = start(*fx.client, "hold", "", no_deadline());
  ASSERT_TRUE(wait_until([&] { return held.size() == 1; }));
  const auto second = call_and_wait(*fx.client, "hold", "", no_deadline());
  EXPECT_EQ(second.ec, rpc::errc::resource_exhausted) << second.response.error_message;
  EXPECT_NE(second.response.error_message.find("limit of 1 calls at once"), std::string::npos)
      << second.response.error_message;
  EXPECT_FALSE(call_and_wait(*fx.client, "echo", "", no_deadline()).ec) << "echo is under the service's 5";

  // Raised while the first runs: a second fits; the first gives its place back.
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.methods["hold"].max_concurrency = rpc::Overridden<std::size_t>{2, false, nullptr};
  }));
  auto third = start(*fx.client, "hold", "", no_deadline());
  ASSERT_TRUE(wait_until([&] { return held.size() == 2; }));
  held.release_all();
  EXPECT_FALSE(first.get().ec);
  EXPECT_FALSE(third.get().ec);
}

TEST(ServerRules, DisabledTakesTheServerOfflineUntilLiftedAndSetOnlineCannotOverruleIt) {
  RpcFixture fx;
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.disabled = rpc::Overridden<bool>{true, false, nullptr};
  }));
  EXPECT_FALSE(fx.server.state().online);
  EXPECT_TRUE(fx.server.state().disabled_by_rule);
  const auto refused = call_and_wait(*fx.client, "echo", "", no_deadline());
  EXPECT_EQ(refused.ec, rpc::errc::unavailable) << refused.response.error_message;

  fx.server.set_online(true);
  EXPECT_FALSE(fx.server.state().online) << "the rule holds";
  fx.server.set_online(false);  // the operator's own offline, under the rule
  fx.server.apply_rules(nullptr);
  EXPECT_FALSE(fx.server.state().online) << "lifted: set_online's offline stands";
  EXPECT_FALSE(fx.server.state().disabled_by_rule);
  fx.server.set_online(true);
  EXPECT_TRUE(fx.server.state().online);
  EXPECT_FALSE(call_and_wait(*fx.client, "echo", "", no_deadline()).ec);
}

// The same limits on every way in: the gRPC wire, the admin gateway's
// in-process call, and a stream's opening.
TEST(ServerRules, OnTheGrpcWireARuleConcurrencyLimitRefusesTheCallBeyondItToo) {
  HeldResponders held;
  rpc::ClientOptions co;
  co.protocol = rpc::WireProtocol::grpc;
  RpcFixture fx({}, co, 2, [&](rpc::Server& s) {
    s.handle("hold", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  });
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.methods["hold"].max_concurrency = rpc::Overridden<std::size_t>{1, false, nullptr};
  }));
  auto first = start(*fx.client, "hold", "", no_deadline());
  ASSERT_TRUE(wait_until([&] { return held.size() == 1; }));
  const auto second = call_and_wait(*fx.client, "hold", "", no_deadline());
  EXPECT_EQ(second.ec, rpc::errc::resource_exhausted) << second.response.error_message;
  held.release_all();
  EXPECT_FALSE(first.get().ec);
}

TEST(ServerRules, AGatewayCallWithoutABudgetIsBoundByARuleTimeout) {
  HeldResponders held;
  RpcFixture fx({}, {}, 2, [&](rpc::Server& s) {
    s.handle("hold", [&](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
  });
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.service.timeout = rpc::Overridden<std::chrono::milliseconds>{200ms, false, nullptr};
  }));
  std::promise<boost::system::error_code> done;
  fx.server.async_invoke("hold", "", 0ms, [&](boost::system::error_code ec, rpc::Response) { done.set_value(ec); });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready) << "the rule's 200 ms bound the call that had none";
  EXPECT_EQ(f.get(), rpc::errc::server_timeout);
  held.release_all();
}

TEST(ServerRules, AStreamBeyondARuleConcurrencyLimitIsNotOpened) {
  std::mutex mu;
  std::vector<rpc::ServerStream> open;  // held open until the fixture goes
  RpcFixture fx({}, {}, 2, [&](rpc::Server& s) {
    s.handle_stream("listen", [&](rpc::ServerStream st) {
      std::lock_guard l(mu);
      open.push_back(std::move(st));
    });
  });
  fx.server.apply_rules(server_rules([](rpc::ServerRules& r) {
    r.methods["listen"].max_concurrency = rpc::Overridden<std::size_t>{1, false, nullptr};
  }));
  const auto open_one = [&] {
    std::promise<boost::system::error_code> p;
    std::optional<rpc::ClientStream> kept;
    fx.client->async_open_stream("listen", rpc::CallOptions{}, [&](boost::system::error_code ec, rpc::ClientStream cs) {
      if (!ec) kept.emplace(std::move(cs));
      p.set_value(ec);
    });
    auto f = p.get_future();
    EXPECT_EQ(f.wait_for(30s), std::future_status::ready);
    return std::make_pair(f.get(), std::move(kept));
  };
  auto [first_ec, first] = open_one();
  ASSERT_FALSE(first_ec) << first_ec.message();
  auto [second_ec, second] = open_one();
  EXPECT_EQ(second_ec, rpc::errc::resource_exhausted) << second_ec.message();
  first.reset();
  std::lock_guard l(mu);
  open.clear();
}

// ------------------------------------------------------------ in etcd

/// A server registered as `echo` through an announcer, with a zone.
struct RuledProvider {
  RuledProvider(IoThreads& threads, wheelrpc::timer::Timer& timer, std::shared_ptr<Registry> reg, std::string zone)
      : server(threads.io.get_executor(), timer, options(reg, std::move(zone))) {
    register_test_methods(server, threads.io);
    server.handle("hold", [this](rpc::Request, rpc::Responder r) { held.add(std::move(r)); });
    if (server.listen(loopback0())) throw std::runtime_error("listen failed");
    address = "127.0.0.1:" + std::to_string(server.local_endpoint().port());
  }
  static rpc::ServerOptions options(std::shared_ptr<Registry> reg, std::string zone) {
    ServiceInstance inst;
    inst.service = "echo";
    inst.zone = std::move(zone);
    rpc::ServerOptions so;
    so.announcer = announcer(std::move(reg), inst);
    so.unregister_grace = 0ms;
    return so;
  }
  ~RuledProvider() {
    held.release_all();
    server.stop();
  }
  HeldResponders held;
  rpc::Server server;
  std::string address;
};

TEST(ProviderRulesEtcd, AServerFollowsTheBlocksThatChooseItAndADisabledOneLeavesItsClients) {
  REQUIRE_ETCD();
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads threads;
  IoThread direct_io;
  auto direct = direct_client(direct_io, etcd.endpoints());
  auto reg = EtcdRegistry::create(threads.io.get_executor(), timer, etcd.endpoints(), fast_options());
  {
    RuledProvider a(threads, timer, reg, "eu-1"), b(threads, timer, reg, "us-1");
    ProviderRuleFollower follow_a(reg, a.server, "echo", {.zone = "eu-1"});
    ProviderRuleFollower follow_b(reg, b.server, "echo", {.zone = "us-1"});
    EXPECT_EQ(follow_a.self().address, a.address) << "its announced address";
    ASSERT_TRUE(wait_until([&] { return follow_a.applied() >= 1 && follow_b.applied() >= 1; }, 30s))
        << "the first read reaches both";

    rpc::ClientOptions co;
    co.rules = rule_source(reg, "echo");
    rpc::Client client(threads.io.get_executor(), timer, provider_source(reg, "echo"), co);
    const auto live = [&] {
      std::vector<std::string> peers;
      for (const auto& p : client.providers())
        if (!p.removed) peers.push_back(p.peer);
      return peers;
    };
    ASSERT_TRUE(wait_until([&] { return live().size() == 2; }, 30s));

    const auto put = [&](const std::string& name, const std::string& json) {
      auto [ec, r] = await<detail::PutResult>([&](auto h) { direct->put(kRules + name, json, 0, h); });
      ASSERT_FALSE(ec) << ec.message();
    };
    // eu-1 only: a 200 ms bound on calls that come without a deadline.
    put("10-eu", R"({"scope": {"zones": ["eu-1"]}, "server": {"methods": {"hold": {"timeout_ms": 200}}}})");
    ASSERT_TRUE(wait_until(
        [&] {
          const auto r = a.server.rules();
          return r && r->for_method("hold").timeout;
        },
        30s));
    EXPECT_EQ(*a.server.rules()->for_method("hold").timeout->origin,
              "runtime override /wheelrpc/echo/rules/10-eu rev " + std::to_string(a.server.rules()->revision));
    ASSERT_TRUE(b.server.rules());
    EXPECT_FALSE(b.server.rules()->for_method("hold").timeout) << "us-1 is not chosen";

    // a by address: disabled. It goes offline, withdraws, and its clients
    // drain it; b serves every call, none fails.
    put("20-off", R"({"scope": {"providers": [")" + a.address + R"("]}, "server": {"disabled": true}})");
    ASSERT_TRUE(wait_until([&] { return a.server.state().disabled_by_rule; }, 30s));
    EXPECT_FALSE(b.server.state().disabled_by_rule);
    ASSERT_TRUE(wait_until([&] { return live().size() == 1; }, 30s)) << "withdrawn from the registry";
    EXPECT_EQ(live()[0], b.address);
    for (int i = 0; i < 20; ++i) {
      const auto out = call_and_wait(client, "echo", "x");
      ASSERT_FALSE(out.ec) << out.response.error_message;
    }

    // Deleted: a is online and announced again, and called again.
    auto [ec, d] = await<detail::DeleteResult>([&](auto h) { direct->delete_key(kRules + "20-off", h); });
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(wait_until([&] { return !a.server.state().disabled_by_rule && a.server.state().online; }, 30s));
    ASSERT_TRUE(wait_until([&] { return live().size() == 2; }, 30s)) << "announced again";
    client.close();
    follow_a.stop();
    follow_b.stop();
  }
  reg->close();
}

}  // namespace
