// EtcdRegistry through failures: a member of a 3-member cluster dies, a watch
// breaks mid-stream (a FaultProxy between the registry and etcd goes down)
// and resumes without missing what changed meanwhile, and a compacted
// revision forces a full re-read.

#include <gtest/gtest.h>

#include <wheelrpc/fault/fault_proxy.h>
#include <wheelrpc/registry/errc.h>
#include <wheelrpc/registry/etcd_registry.h>

#include "registry/registry_test_util.h"
#include "support/raw_http.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;
namespace ip = boost::asio::ip;

TEST(RegistryCluster, KillingTheMemberTheRegistryTalksToKeepsRegistrationsAndTheSubscriptionWorking) {
  REQUIRE_ETCD();
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  IoThread io;
  // Member 0 first: the registry talks to it until it dies.
  auto reg = EtcdRegistry::create(io.io.get_executor(), io.timer, etcd.endpoints(), fast_options());
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 30s));

  etcd.kill(0);
  reg->register_instance(instance("echo", "127.0.0.1:7002"));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001", "127.0.0.1:7002"}); }, 30s));
  // The put's answer and the watch event come on different connections.
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 2; }, 30s));

  // Beyond the 2 s TTL both keys are still there: the keepalives moved on too.
  auto other = direct_client(io, "etcd://" + etcd.client_address(1) + "," + etcd.client_address(2));
  EXPECT_FALSE(wait_until(
      [&] {
        auto k = read_keys(*other, "/wheelrpc/echo/providers/");
        return k && k->size() != 2;
      },
      3s));
  auto k = read_keys(*other, "/wheelrpc/echo/providers/");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->size(), 2u);
  for (const auto& kv : *k) EXPECT_EQ(kv.lease, reg->lease_id());
  EXPECT_TRUE(log->only_changes());
}

// Three members; the one serving a registry's watch can be frozen (SIGSTOP:
// no error, no bytes) and is thawed at the end.
class FrozenMember : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(3);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
  }
  void TearDown() override {
    if (etcd_ && frozen_ >= 0) etcd_->thaw(frozen_);
  }
  /// The member serving the one watch of the test's registry: member 0,
  /// where its requests start, unless one of them failed over while the
  /// cluster settled (on a loaded machine) and the watch went with it.
  /// -1 if no single member shows it within 10 s.
  int watching_member() {
    int member = -1;
    wait_until(
        [&] {
          int found = 0;
          for (int i = 0; i < 3; ++i) {
            if (etcd_->watchers(i) > 0) {
              member = i;
              ++found;
            }
          }
          return found == 1;
        },
        10s);
    return member;
  }
  /// Freezes the member serving the registry's watch, then puts provider
  /// 127.0.0.1:7009 of "echo" through the other two (retried through a
  /// leader election if the frozen one led).
  void freeze_and_put_through_the_others() {
    const int member = watching_member();
    ASSERT_GE(member, 0) << "no single etcd member serves the registry's watch";
    frozen_ = member;
    etcd_->freeze(member);
    const int a = (member + 1) % 3, b = (member + 2) % 3;
    auto other = direct_client(io_, "etcd://" + etcd_->client_address(a) + "," + etcd_->client_address(b));
    error_code ec = errc::timeout;
    for (int i = 0; i < 40 && ec; ++i) {
      ec = await<detail::PutResult>([&](auto h) {
             other->put("/wheelrpc/echo/providers/127.0.0.1:7009", instance("echo", "127.0.0.1:7009").to_json(), 0, h);
           }).first;
      if (ec) std::this_thread::sleep_for(100ms);
    }
    ASSERT_FALSE(ec) << ec.message();
  }

  std::unique_ptr<EtcdCluster> etcd_;
  int frozen_ = -1;
  IoThread io_;
};

TEST_F(FrozenMember, AWatchOnAFrozenMemberMovesOnceRequestsFailOverAwayFromIt) {
  auto reg = EtcdRegistry::create(io_.io.get_executor(), io_.timer, etcd_->endpoints(), fast_options());
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  reg->register_instance(instance("echo", "127.0.0.1:7001"));  // its keepalives run every ttl / 3
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 30s));

  freeze_and_put_through_the_others();  // the watch's stream just goes quiet
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001", "127.0.0.1:7009"}); }, 30s));
  EXPECT_GE(reg->stats().watch_restarts, 1u);
}

TEST_F(FrozenMember, ASubscribeOnlyRegistrysWatchMovesOffAFrozenMember) {
  // No lease, so no keepalive: only its probes reach etcd periodically.
  auto reg = EtcdRegistry::create(io_.io.get_executor(), io_.timer, etcd_->endpoints(), fast_options());
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->calls() >= 1; }, 30s));
  EXPECT_EQ(reg->lease_id(), 0);

  freeze_and_put_through_the_others();
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7009"}); }, 30s))
      << "the watch stayed on the frozen member";
}

// The registry reaches etcd only through a FaultProxy; the test writes to
// etcd directly.
class RegistryThroughProxy : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
    proxy_ = std::make_unique<wheelrpc::fault::FaultProxy>(
        io_.io.get_executor(), ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0),
        ip::tcp::endpoint(ip::make_address("127.0.0.1"), etcd_->client_port(0)));
    ASSERT_FALSE(proxy_->start());
    direct_ = direct_client(io_, etcd_->endpoints());
    reg_ = EtcdRegistry::create(io_.io.get_executor(), io_.timer,
                                "etcd://127.0.0.1:" + std::to_string(proxy_->local_endpoint().port()), fast_options());
  }
  void TearDown() override {
    reg_.reset();
    if (proxy_) proxy_->stop();
  }

  void put(const std::string& endpoint) {
    auto [ec, r] = await<detail::PutResult>([&](auto h) {
      direct_->put("/wheelrpc/echo/providers/" + endpoint, instance("echo", endpoint).to_json(), 0, h);
    });
    ASSERT_FALSE(ec) << ec.message();
    last_revision_ = r.revision;
  }
  void del(const std::string& endpoint) {
    auto [ec, r] =
        await<detail::DeleteResult>([&](auto h) { direct_->delete_key("/wheelrpc/echo/providers/" + endpoint, h); });
    ASSERT_FALSE(ec) << ec.message();
    last_revision_ = r.revision;
  }
  // The subscription has lost its watch and waits for a retry.
  bool subscription_broken() { return reg_->stats().retry_tasks_pending >= 1; }

  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<wheelrpc::fault::FaultProxy> proxy_;
  std::shared_ptr<detail::EtcdClient> direct_;
  std::shared_ptr<EtcdRegistry> reg_;
  std::int64_t last_revision_ = 0;
};

TEST_F(RegistryThroughProxy, AWatchBrokenMidStreamResumesAndSeesWhatChangedMeanwhile) {
  auto log = SetLog::make();
  reg_->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->last_is({}); }, 20s));
  put("127.0.0.1:7001");
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 20s));

  proxy_->down();  // the watch's connection is cut; new ones are refused
  ASSERT_TRUE(wait_until([&] { return subscription_broken(); }, 20s));
  put("127.0.0.1:7002");
  del("127.0.0.1:7001");
  put("127.0.0.1:7003");
  EXPECT_TRUE(log->last_is({"127.0.0.1:7001"}));  // the last known set stands meanwhile
  ASSERT_FALSE(proxy_->up());
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7002", "127.0.0.1:7003"}); }, 20s));
  const auto s = reg_->stats();
  EXPECT_EQ(s.full_reads, 1u);  // resumed from the last revision + 1, not re-read
  EXPECT_GE(s.watch_restarts, 1u);
  // Every change while broken arrived through the resumed watch, in order:
  // the listener saw 7001 leave only together with or after 7002 arriving.
  {
    std::lock_guard l(log->mu);
    for (const auto& set : log->sets) {
      bool has1 = false, has3 = false;
      for (const auto& i : set) {
        has1 |= i.endpoint == "127.0.0.1:7001";
        has3 |= i.endpoint == "127.0.0.1:7003";
      }
      EXPECT_FALSE(has1 && has3);
    }
  }
  // And it goes on watching.
  put("127.0.0.1:7004");
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"}); }, 20s));
  EXPECT_TRUE(log->only_changes());
}

TEST_F(RegistryThroughProxy, ACompactedRevisionForcesAFullReReadThatYieldsTheRightSet) {
  auto log = SetLog::make();
  reg_->subscribe("echo", SetLog::listener(log));
  put("127.0.0.1:7001");
  put("127.0.0.1:7002");
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001", "127.0.0.1:7002"}); }, 20s));

  proxy_->down();
  ASSERT_TRUE(wait_until([&] { return subscription_broken(); }, 20s));
  del("127.0.0.1:7001");
  put("127.0.0.1:7003");
  put("127.0.0.1:7003");
  const auto reply =
      http_exchange(ip::tcp::endpoint(ip::make_address("127.0.0.1"), etcd_->client_port(0)),
                    http_request_text("POST", "/v3/kv/compaction",
                                      "{\"revision\":\"" + std::to_string(last_revision_) + "\",\"physical\":true}"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  ASSERT_FALSE(proxy_->up());
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7002", "127.0.0.1:7003"}); }, 20s));
  EXPECT_EQ(reg_->stats().full_reads, 2u);
  EXPECT_TRUE(log->only_changes());
  // Watching again after the re-read.
  del("127.0.0.1:7002");
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7003"}); }, 20s));
}

TEST_F(RegistryThroughProxy, AShortOutageDoesNotCostTheLease) {
  reg_->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg_->stats().registered_now == 1; }, 20s));
  const auto lease = reg_->lease_id();
  const auto failures = reg_->stats().request_failures;
  proxy_->down();
  // Down for about one keepalive period (ttl / 3 of 2 s), well within the TTL.
  ASSERT_TRUE(wait_until([&] { return reg_->stats().request_failures > failures; }, 20s));
  ASSERT_FALSE(proxy_->up());
  const auto renewals = reg_->stats().lease_renewals;
  ASSERT_TRUE(wait_until([&] { return reg_->stats().lease_renewals > renewals; }, 20s));
  EXPECT_EQ(reg_->lease_id(), lease);
  EXPECT_EQ(reg_->stats().lease_losses, 0u);
}

}  // namespace
