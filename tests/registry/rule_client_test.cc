// End to end: a Client following a service and its rules in etcd; a rule
// put with wheelrpc's own etcd client changes the calls' timeout, and the
// timeout message names the rule's key and revision. Skipped without
// /usr/bin/etcd. (The change reaching clients within 500 ms is measured by a
// bench, not asserted here: this bounds it generously.)

#include <gtest/gtest.h>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/errc.h>

#include "registry/registry_test_util.h"
#include "support/rpc_fixture.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
namespace rpc = wheelrpc::rpc;
namespace detail = wheelrpc::registry::detail;

TEST(RuleClient, ARuleFromEtcdSetsTheTimeoutAndTheMessageNamesIt) {
  REQUIRE_ETCD();
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads threads;
  rpc::Server server(threads.io.get_executor(), timer);
  register_test_methods(server, threads.io);  // "sleep": replies after the payload's ms
  ASSERT_FALSE(server.listen(loopback0()));
  const std::string endpoint = "127.0.0.1:" + std::to_string(server.local_endpoint().port());

  IoThread direct_io;
  auto direct = direct_client(direct_io, etcd.endpoints());
  auto reg = EtcdRegistry::create(threads.io.get_executor(), timer, etcd.endpoints(), fast_options());
  reg->register_instance(instance("echo", endpoint));

  rpc::ClientOptions co;
  co.call_defaults.timeout = 3000ms;  // the client default: a runtime override beats it
  co.rules = rule_source(reg, "echo", {.application = "echo_client"});
  std::optional<rpc::Client> client;
  client.emplace(threads.io.get_executor(), timer, provider_source(reg, "echo"), co);

  // Before any rule: a 1 s reply is within the client's 3 s default.
  Outcome first;
  ASSERT_TRUE(wait_until(
      [&] {
        first = call_and_wait(*client, "sleep", "1000");
        return !first.ec;
      },
      30s))
      << first.ec.message() << ": " << first.response.error_message;

  const auto put_at = std::chrono::steady_clock::now();
  auto [ec, put] = await<detail::PutResult>([&](auto h) {
    direct->put("/wheelrpc/echo/rules/slow", R"({"methods": {"sleep": {"timeout_ms": 200}}})", 0, h);
  });
  ASSERT_FALSE(ec) << ec.message();
  const std::string origin = "runtime override /wheelrpc/echo/rules/slow rev " + std::to_string(put.revision);

  // Calls started after the put: the first that times out by the rule shows
  // when it applied (sleep 300 ms: ok without the rule, a timeout with it).
  std::chrono::steady_clock::time_point applied_at;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto o = call_and_wait(*client, "sleep", "300");
        if (o.ec != rpc::errc::timeout) return false;
        applied_at = std::chrono::steady_clock::now() - o.took;
        return true;
      },
      20s));
  const auto apply_ms = std::chrono::duration_cast<std::chrono::milliseconds>(applied_at - put_at).count();
  ::testing::Test::RecordProperty("rule_applied_within_ms", static_cast<int>(apply_ms));
  EXPECT_LT(apply_ms, 10'000);

  const auto slow = call_and_wait(*client, "sleep", "1000");
  EXPECT_EQ(slow.ec, rpc::errc::timeout) << slow.response.error_message;
  EXPECT_GE(slow.took, 190ms);
  EXPECT_LT(slow.took, 900ms);  // ~200 ms, not the 3 s default nor the 1 s reply
  EXPECT_NE(slow.response.error_message.find(origin), std::string::npos) << slow.response.error_message;

  // The call's own option still beats a runtime override.
  rpc::CallOptions own;
  own.timeout = 3000ms;
  const auto mine = call_and_wait(*client, "sleep", "300", own);
  EXPECT_FALSE(mine.ec) << mine.response.error_message;

  // A bad version is refused: the rule in force stays.
  auto [bec, bad] = await<detail::PutResult>(
      [&](auto h) { direct->put("/wheelrpc/echo/rules/slow", R"({"methods": {"sleep": {"timeout_ms": 0}}})", 0, h); });
  ASSERT_FALSE(bec);
  ASSERT_TRUE(wait_until([&] { return reg->stats().rules_refused == 1; }, 20s));
  const auto still = call_and_wait(*client, "sleep", "1000");
  EXPECT_EQ(still.ec, rpc::errc::timeout);
  EXPECT_NE(still.response.error_message.find(origin), std::string::npos) << still.response.error_message;

  // The rule deleted: back to the client default.
  auto [dec, del] = await<detail::DeleteResult>([&](auto h) { direct->delete_key("/wheelrpc/echo/rules/slow", h); });
  ASSERT_FALSE(dec);
  ASSERT_TRUE(wait_until([&] { return !call_and_wait(*client, "sleep", "300").ec; }, 20s));

  client->close();
  client.reset();
  reg->close();
  server.stop();
  threads.stop();
}

}  // namespace
