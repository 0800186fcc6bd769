// EtcdRegistry against a real etcd member: registration, subscription, the
// lease, failback retries, bad values, close.

#include <gtest/gtest.h>

#include <wheelrpc/registry/etcd_registry.h>

#include "registry/registry_test_util.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;

class EtcdRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
    direct_ = direct_client(io_, etcd_->endpoints());
  }

  std::shared_ptr<EtcdRegistry> make(EtcdRegistryOptions o = fast_options()) {
    return EtcdRegistry::create(io_.io.get_executor(), io_.timer, etcd_->endpoints(), o);
  }
  std::optional<std::vector<detail::KeyValue>> keys(const std::string& prefix = "/wheelrpc/echo/providers/") {
    return read_keys(*direct_, prefix);
  }
  bool has_keys(std::size_t n, const std::string& prefix = "/wheelrpc/echo/providers/") {
    auto k = keys(prefix);
    return k && k->size() == n;
  }

  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::shared_ptr<detail::EtcdClient> direct_;
};

TEST_F(EtcdRegistryTest, ARegisteredInstanceIsSeenBySubscribersUnderTheRegistrysLease) {
  auto reg = make();
  auto states = std::make_shared<StateLog>();
  reg->register_instance(instance("echo", "127.0.0.1:7002"), StateLog::listener(states));
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001", "127.0.0.1:7002"}); }, 20s));
  ASSERT_TRUE(wait_until([&] { return states->registered(); }, 20s));
  // Subscribers may hear of a key before the registry reads its put's answer.
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 2; }, 20s));
  EXPECT_EQ(states->failures(), 0u);
  auto k = keys();
  ASSERT_TRUE(k);
  ASSERT_EQ(k->size(), 2u);
  EXPECT_NE(reg->lease_id(), 0);
  for (const auto& kv : *k) EXPECT_EQ(kv.lease, reg->lease_id());  // one lease for every key
  EXPECT_EQ((*k)[0].key, "/wheelrpc/echo/providers/127.0.0.1:7001");
  const auto s = reg->stats();
  EXPECT_EQ(s.lease_grants, 1u);
  EXPECT_EQ(s.registrations, 2u);
  EXPECT_EQ(s.registered_now, 2u);
  EXPECT_EQ(s.subscriptions_now, 1u);
  EXPECT_GE(s.full_reads, 1u);
  EXPECT_TRUE(log->only_changes());
}

TEST_F(EtcdRegistryTest, UnregisterIsSeenAsARemovalAndTheListenerHearsOnlyChanges) {
  auto reg = make();
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->last_is({}); }, 20s));  // the empty set, once read
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 20s));
  // Same value again: a put, but no change for subscribers.
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  auto [ec, unused] =
      await<int>([&](auto h) { reg->unregister_instance("echo", "127.0.0.1:7001", [h](error_code e) { h(e, 0); }); });
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(wait_until([&] { return log->last_is({}); }, 20s));
  EXPECT_TRUE(has_keys(0));
  EXPECT_TRUE(log->only_changes());
  EXPECT_EQ(log->calls(), 3u);  // {}, {7001}, {}
  EXPECT_EQ(reg->stats().registered_now, 0u);
  EXPECT_GE(reg->stats().unregistrations, 1u);
}

TEST_F(EtcdRegistryTest, ALeaseRevokedBehindItsBackIsReplacedByANewLeaseAndEverythingIsPutAgain) {
  auto reg = make();
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  reg->register_instance(instance("echo", "127.0.0.1:7002"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 2; }, 20s));
  const auto old = reg->lease_id();
  ASSERT_NE(old, 0);
  auto [rec, unused] = await<int>([&](auto h) { direct_->lease_revoke(old, [h](error_code e) { h(e, 0); }); });
  ASSERT_FALSE(rec) << rec.message();
  // The next keepalive (every ttl / 3) finds the lease gone.
  ASSERT_TRUE(wait_until([&] { return reg->lease_id() != old && reg->lease_id() != 0 && has_keys(2); }, 20s));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 2; }, 20s));
  const auto now = reg->lease_id();
  auto k = keys();
  ASSERT_TRUE(k);
  for (const auto& kv : *k) EXPECT_EQ(kv.lease, now);
  const auto s = reg->stats();
  EXPECT_EQ(s.lease_losses, 1u);
  EXPECT_EQ(s.lease_grants, 2u);
  EXPECT_GE(s.registrations, 4u);
}

TEST_F(EtcdRegistryTest, KeepalivesHoldTheKeysPastTheirTtl) {
  auto reg = make();
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1; }, 20s));
  // Twice the 2 s TTL: the keys stay only if the renewals work.
  ASSERT_FALSE(wait_until([&] { return !has_keys(1); }, 4s));
  EXPECT_GE(reg->stats().lease_renewals, 3u);
  EXPECT_EQ(reg->stats().lease_losses, 0u);
}

TEST_F(EtcdRegistryTest, ARegisterWhileEtcdIsDownIsRetriedAndSucceedsAfterARestart) {
  auto reg = make();
  etcd_->kill(0);
  auto states = std::make_shared<StateLog>();
  reg->register_instance(instance("echo", "127.0.0.1:7001"), StateLog::listener(states));
  ASSERT_TRUE(wait_until([&] { return states->failures() >= 1; }, 20s));
  ASSERT_TRUE(wait_until([&] { return reg->stats().retry_tasks_pending == 1; }, 20s));
  EXPECT_EQ(reg->lease_id(), 0);
  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  ASSERT_TRUE(wait_until([&] { return states->registered(); }, 20s));
  EXPECT_TRUE(has_keys(1));
  EXPECT_EQ(reg->stats().retry_tasks_pending, 0u);
  EXPECT_EQ(reg->stats().registered_now, 1u);
  {
    std::lock_guard l(states->mu);
    EXPECT_NE(states->states.front().second.find("lease grant failed"), std::string::npos)
        << states->states.front().second;
  }
}

TEST_F(EtcdRegistryTest, ARegistrationIsReportedGoneOnceItsLeaseExpiredWhileEtcdWasUnreachable) {
  auto reg = make();
  auto states = std::make_shared<StateLog>();
  reg->register_instance(instance("echo", "127.0.0.1:7001"), StateLog::listener(states));
  ASSERT_TRUE(wait_until([&] { return states->registered(); }, 20s));
  etcd_->kill(0);
  // Unrenewed past its TTL the lease is gone at etcd: reported while etcd
  // is still down, not only once it answers again.
  ASSERT_TRUE(wait_until([&] { return states->failures() >= 1; }, 20s));
  {
    std::lock_guard l(states->mu);
    EXPECT_NE(states->states.back().second.find("expired while etcd was unreachable"), std::string::npos)
        << states->states.back().second;
  }
  EXPECT_EQ(reg->stats().registered_now, 0u);
  // Back: registered again (a new lease, or the old one if etcd had not
  // revoked it yet), by itself.
  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  ASSERT_TRUE(wait_until([&] { return states->registered(); }, 20s));
  EXPECT_TRUE(wait_until([&] { return has_keys(1); }, 20s));
  EXPECT_EQ(reg->stats().registered_now, 1u);
}

TEST_F(EtcdRegistryTest, AnUnregisterSupersedesAPendingRegisterRetry) {
  auto reg = make();
  etcd_->kill(0);
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().retry_tasks_pending == 1; }, 20s));
  auto [ec, unused] =
      await<int>([&](auto h) { reg->unregister_instance("echo", "127.0.0.1:7001", [h](error_code e) { h(e, 0); }); });
  EXPECT_TRUE(ec);  // the first delete failed: etcd is down; it is retried
  // One retry pending: the delete's; the register's was cancelled.
  EXPECT_EQ(reg->stats().retry_tasks_pending, 1u);
  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  ASSERT_TRUE(wait_until([&] { return reg->stats().unregistrations >= 1; }, 20s));
  EXPECT_TRUE(wait_until([&] { return reg->stats().retry_tasks_pending == 0; }, 20s));
  EXPECT_EQ(reg->stats().registrations, 0u);  // never put
  EXPECT_EQ(reg->stats().lease_grants, 0u);
  EXPECT_TRUE(has_keys(0));
}

TEST_F(EtcdRegistryTest, ARegisterSupersedesAPendingUnregisterRetry) {
  auto reg = make();
  etcd_->kill(0);
  auto [ec, unused] =
      await<int>([&](auto h) { reg->unregister_instance("echo", "127.0.0.1:7001", [h](error_code e) { h(e, 0); }); });
  EXPECT_TRUE(ec);
  ASSERT_TRUE(wait_until([&] { return reg->stats().retry_tasks_pending == 1; }, 20s));
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1; }, 20s));
  EXPECT_TRUE(has_keys(1));
  EXPECT_EQ(reg->stats().unregistrations, 0u);  // the delete was never sent again
}

TEST_F(EtcdRegistryTest, RegisterAndUnregisterInQuickSuccessionEndInTheLastStateAsked) {
  auto reg = make();
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  // One write per key in flight: a delete can never overtake the put before it.
  for (int i = 0; i < 5; ++i) {
    reg->register_instance(instance("echo", "127.0.0.1:7001"));
    reg->unregister_instance("echo", "127.0.0.1:7001");
  }
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1 && has_keys(1); }, 20s));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 20s));
  for (int i = 0; i < 5; ++i) {
    reg->unregister_instance("echo", "127.0.0.1:7001");
    reg->register_instance(instance("echo", "127.0.0.1:7001"));
  }
  auto [ec, unused] =
      await<int>([&](auto h) { reg->unregister_instance("echo", "127.0.0.1:7001", [h](error_code e) { h(e, 0); }); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(has_keys(0));
  ASSERT_TRUE(wait_until([&] { return log->last_is({}); }, 20s));
  // No put still in flight lands afterwards.
  EXPECT_FALSE(wait_until([&] { return !has_keys(0); }, 1s));
  EXPECT_TRUE(log->only_changes());
}

TEST_F(EtcdRegistryTest, CloseRevokesTheLeaseSoTheKeysGoAtOnce) {
  auto o = fast_options();
  o.lease_ttl = 60s;  // expiry cannot be what removes them
  auto reg = make(o);
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1 && has_keys(1); }, 20s));
  const auto t0 = std::chrono::steady_clock::now();
  reg->close();
  reg->close();  // idempotent
  ASSERT_TRUE(wait_until([&] { return has_keys(0); }, 20s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(reg->lease_id(), 0);
}

TEST_F(EtcdRegistryTest, ValuesThatAreNotServiceInstancesAreSkippedAndCounted) {
  auto put = [&](const std::string& k, const std::string& v) {
    auto [ec, r] = await<detail::PutResult>([&](auto h) { direct_->put(k, v, 0, h); });
    ASSERT_FALSE(ec) << ec.message();
  };
  put("/wheelrpc/echo/providers/junk", "not json at all");
  auto reg = make();
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1; }, 20s));
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001"}); }, 20s));
  EXPECT_EQ(reg->stats().bad_entries, 1u);
  // Through the watch: a value naming another service, then a good one.
  put("/wheelrpc/echo/providers/127.0.0.1:9", instance("other", "127.0.0.1:9").to_json());
  put("/wheelrpc/echo/providers/127.0.0.1:7003", instance("echo", "127.0.0.1:7003").to_json());
  ASSERT_TRUE(wait_until([&] { return log->last_is({"127.0.0.1:7001", "127.0.0.1:7003"}); }, 20s));
  EXPECT_EQ(reg->stats().bad_entries, 2u);
  EXPECT_TRUE(log->only_changes());
}

TEST_F(EtcdRegistryTest, AnInvalidInstanceIsRefusedAtOnceWithTheReason) {
  auto reg = make();
  auto states = std::make_shared<StateLog>();
  reg->register_instance(instance("e cho", "127.0.0.1:7001"), StateLog::listener(states));
  ASSERT_TRUE(wait_until([&] { return states->failures() == 1; }, 20s));
  std::lock_guard l(states->mu);
  EXPECT_NE(states->states[0].second.find("has a space"), std::string::npos);
  EXPECT_EQ(reg->stats().retry_tasks_pending, 0u);
}

TEST_F(EtcdRegistryTest, UnsubscribeStopsTheListener) {
  auto reg = make();
  auto log = SetLog::make();
  const auto id = reg->subscribe("echo", SetLog::listener(log));
  ASSERT_TRUE(wait_until([&] { return log->last_is({}); }, 20s));
  reg->unsubscribe(id);
  reg->unsubscribe(id);
  ASSERT_TRUE(wait_until([&] { return reg->stats().subscriptions_now == 0; }, 20s));
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1; }, 20s));
  // A second subscriber sees the change; the first heard nothing more.
  auto log2 = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log2));
  ASSERT_TRUE(wait_until([&] { return log2->last_is({"127.0.0.1:7001"}); }, 20s));
  EXPECT_EQ(log->calls(), 1u);
}

TEST_F(EtcdRegistryTest, DroppingTheLastReferenceWithRequestsInFlightClosesCleanly) {
  auto o = fast_options();
  o.lease_ttl = 60s;
  auto reg = make(o);
  reg->register_instance(instance("echo", "127.0.0.1:7001"));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 1; }, 20s));
  auto log = SetLog::make();
  reg->subscribe("echo", SetLog::listener(log));               // a read in flight
  reg->register_instance(instance("echo", "127.0.0.1:7002"));  // a put posted
  reg.reset();
  // The handle's destruction closed the registry: the lease is revoked.
  ASSERT_TRUE(wait_until([&] { return has_keys(0); }, 20s));
}

}  // namespace
