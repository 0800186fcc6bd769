// EtcdClient against real etcd processes (support/etcd_cluster.h).

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include <wheelrpc/registry/errc.h>

#include "etcd_client.h"
#include "registry/etcd_test_util.h"
#include "registry/registry_test_util.h"
#include "support/etcd_cluster.h"
#include "support/wait.h"

namespace {
using namespace wheelrpc::registry::detail;
using wheelrpc::registry::errc;
using wheelrpc::test::await;
using wheelrpc::test::EtcdCluster;
using wheelrpc::test::IoThread;
using boost::system::error_code;
using namespace std::chrono_literals;

std::vector<EtcdEndpoint> endpoints_of(const std::string& list) {
  error_code ec;
  std::string why;
  auto eps = parse_etcd_endpoints(list, ec, why);
  EXPECT_FALSE(ec) << why;
  return eps;
}

// A loopback port nothing listens on (probed, then released).
std::string dead_address() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return "127.0.0.1:" + std::to_string(a.local_endpoint().port());
}

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
    client_ = EtcdClient::create(io_.io.get_executor(), io_.timer, endpoints_of(etcd_->endpoints()));
  }

  RangeResult range(const std::string& prefix) {
    auto [ec, r] = await<RangeResult>([&](auto h) { client_->range_prefix(prefix, h); });
    EXPECT_FALSE(ec) << ec.message();
    return r;
  }
  void put(const std::string& k, const std::string& v, std::int64_t lease = 0) {
    auto [ec, r] = await<PutResult>([&](auto h) { client_->put(k, v, lease, h); });
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_GT(r.revision, 0);
  }

  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::shared_ptr<EtcdClient> client_;
};

TEST_F(EtcdClientTest, PutRangeByPrefixAndDelete) {
  put("/t/a/1", "one");
  put("/t/a/2", std::string("two\0bin", 7));
  put("/t/b/1", "other");
  auto r = range("/t/a/");
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, "/t/a/1");
  EXPECT_EQ(r.kvs[0].value, "one");
  EXPECT_EQ(r.kvs[1].value, std::string("two\0bin", 7));
  EXPECT_GE(r.revision, 4);

  auto [ec, d] = await<DeleteResult>([&](auto h) { client_->delete_key("/t/a/1", h); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(d.deleted, 1);
  r = range("/t/a/");
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].key, "/t/a/2");
  EXPECT_EQ(range("/t/none/").kvs.size(), 0u);
}

TEST_F(EtcdClientTest, KeepAliveKeepsALeasedKeyPastItsTtl) {
  auto [gec, lease] = await<LeaseGrantResult>([&](auto h) { client_->lease_grant(2s, h); });
  ASSERT_FALSE(gec) << gec.message();
  ASSERT_NE(lease.id, 0);
  EXPECT_EQ(lease.ttl, 2s);
  put("/t/live", "x", lease.id);
  const auto lease_id = lease.id;  // clang 14 cannot capture a structured binding
  // 3.5 s > the 2 s TTL: without the renewals the key would be gone.
  const auto end = std::chrono::steady_clock::now() + 3500ms;
  while (std::chrono::steady_clock::now() < end) {
    auto [kec, k] = await<KeepAliveResult>([&](auto h) { client_->lease_keepalive(lease_id, h); });
    ASSERT_FALSE(kec) << kec.message();
    EXPECT_EQ(k.id, lease.id);
    EXPECT_GT(k.ttl.count(), 0);
    std::this_thread::sleep_for(500ms);  // the renewal period under test, not a wait for an outcome
  }
  auto r = range("/t/live");
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].lease, lease.id);
}

TEST_F(EtcdClientTest, RevokeRemovesKeysAndKeepAliveThenReportsTheLeaseGone) {
  auto [gec, lease] = await<LeaseGrantResult>([&](auto h) { client_->lease_grant(30s, h); });
  ASSERT_FALSE(gec) << gec.message();
  put("/t/r/1", "x", lease.id);
  put("/t/r/2", "y", lease.id);
  const auto lease_id = lease.id;  // clang 14 cannot capture a structured binding
  ASSERT_EQ(range("/t/r/").kvs.size(), 2u);

  auto [rec, unused] = await<int>([&](auto h) { client_->lease_revoke(lease_id, [h](error_code e) { h(e, 0); }); });
  ASSERT_FALSE(rec) << rec.message();
  EXPECT_TRUE(range("/t/r/").kvs.empty());

  auto [kec, k] = await<KeepAliveResult>([&](auto h) { client_->lease_keepalive(lease_id, h); });
  ASSERT_FALSE(kec) << kec.message();
  EXPECT_EQ(k.ttl, 0s);  // gone: TTL absent, not an error

  // A put with the dead lease is refused by etcd, with its reason.
  auto [pec, p] = await<PutResult>([&](auto h) { client_->put("/t/r/3", "z", lease_id, h); });
  EXPECT_EQ(pec, errc::etcd_error);
  auto [rec2, unused2] = await<int>([&](auto h) { client_->lease_revoke(lease_id, [h](error_code e) { h(e, 0); }); });
  EXPECT_EQ(rec2, errc::etcd_error);
}

// Collects a watch's messages and its final error.
struct WatchLog {
  std::mutex mu;
  std::vector<WatchEvent> events;
  std::int64_t last_revision = 0;
  bool created = false;
  std::optional<error_code> final_ec;

  auto handler() {
    return [this](error_code ec, const WatchResponse& r) {
      std::lock_guard l(mu);
      if (ec) {
        EXPECT_FALSE(final_ec) << "final call twice";
        final_ec = ec;
        return;
      }
      created = created || r.created;
      for (const auto& e : r.events) {
        events.push_back(e);
        last_revision = e.kv.mod_revision;
      }
    };
  }
  std::size_t count() {
    std::lock_guard l(mu);
    return events.size();
  }
  bool is_created() {
    std::lock_guard l(mu);
    return created;
  }
  std::optional<error_code> final() {
    std::lock_guard l(mu);
    return final_ec;
  }
};

TEST_F(EtcdClientTest, WatchSeesPutsAndDeletesInOrderAndResumesWithoutAGap) {
  put("/t/w/0", "before");
  const auto start = range("/t/w/").revision;
  WatchLog log;
  auto w = client_->watch("/t/w/", start + 1, log.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.is_created(); }, 20s));
  put("/t/w/1", "a");
  put("/t/w/2", "b");
  auto [dec, d] = await<DeleteResult>([&](auto h) { client_->delete_key("/t/w/1", h); });
  ASSERT_FALSE(dec);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.count() >= 3; }, 20s));
  w->cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.final().has_value(); }, 20s));
  EXPECT_EQ(*log.final(), boost::asio::error::operation_aborted);
  {
    std::lock_guard l(log.mu);
    ASSERT_EQ(log.events.size(), 3u);
    EXPECT_EQ(log.events[0].type, EventType::put);
    EXPECT_EQ(log.events[0].kv.key, "/t/w/1");
    EXPECT_EQ(log.events[0].kv.value, "a");
    EXPECT_EQ(log.events[1].kv.key, "/t/w/2");
    EXPECT_EQ(log.events[2].type, EventType::del);
    EXPECT_EQ(log.events[2].kv.key, "/t/w/1");
  }

  // Changes while no watch runs are seen by the next one, from last + 1, once.
  put("/t/w/3", "c");
  auto [dec2, d2] = await<DeleteResult>([&](auto h) { client_->delete_key("/t/w/2", h); });
  ASSERT_FALSE(dec2);
  WatchLog resumed;
  auto w2 = client_->watch("/t/w/", log.last_revision + 1, resumed.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return resumed.count() >= 2; }, 20s));
  put("/t/w/4", "d");
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return resumed.count() >= 3; }, 20s));
  w2->cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return resumed.final().has_value(); }, 20s));
  std::lock_guard l(resumed.mu);
  ASSERT_EQ(resumed.events.size(), 3u);
  EXPECT_EQ(resumed.events[0].kv.key, "/t/w/3");
  EXPECT_EQ(resumed.events[0].type, EventType::put);
  EXPECT_EQ(resumed.events[1].kv.key, "/t/w/2");
  EXPECT_EQ(resumed.events[1].type, EventType::del);
  EXPECT_EQ(resumed.events[2].kv.key, "/t/w/4");
}

TEST_F(EtcdClientTest, WatchFromACompactedRevisionReportsCompacted) {
  put("/t/c/1", "a");
  put("/t/c/1", "b");
  const auto rev = range("/t/c/").revision;
  const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), etcd_->client_port(0));
  const auto reply = wheelrpc::test::http_exchange(
      ep, wheelrpc::test::http_request_text("POST", "/v3/kv/compaction",
                                            "{\"revision\":\"" + std::to_string(rev) + "\",\"physical\":true}"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  WatchLog log;
  auto w = client_->watch("/t/c/", 1, log.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.final().has_value(); }, 20s));
  EXPECT_EQ(*log.final(), errc::compacted);
  EXPECT_EQ(log.count(), 0u);
}

TEST_F(EtcdClientTest, AWatchWhoseMemberDiesEndsAsTruncated) {
  WatchLog log;
  auto w = client_->watch("/t/k/", 0, log.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.is_created(); }, 20s));
  etcd_->kill(0);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.final().has_value(); }, 20s));
  EXPECT_EQ(*log.final(), errc::truncated) << log.final()->message();
}

TEST(EtcdClientFailover, ADeadFirstEndpointIsSkipped) {
  REQUIRE_ETCD();
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  IoThread io;
  auto client = EtcdClient::create(io.io.get_executor(), io.timer,
                                   endpoints_of("etcd://" + dead_address() + "," + etcd.client_address(0)));
  auto [ec, p] = await<PutResult>([&](auto h) { client->put("/f/1", "x", 0, h); });
  ASSERT_FALSE(ec) << ec.message();
  auto [rec, r] = await<RangeResult>([&](auto h) { client->range_prefix("/f/", h); });
  ASSERT_FALSE(rec) << rec.message();
  EXPECT_EQ(r.kvs.size(), 1u);
  WatchLog log;
  auto w = client->watch("/f/", 0, log.handler());
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return log.is_created(); }, 20s));
  w->cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.final().has_value(); }, 20s));
}

TEST(EtcdClientFailover, AllEndpointsDeadIsUnavailable) {
  IoThread io;
  auto client = EtcdClient::create(io.io.get_executor(), io.timer,
                                   endpoints_of("etcd://" + dead_address() + "," + dead_address()));
  auto [ec, r] = await<RangeResult>([&](auto h) { client->range_prefix("/f/", h); });
  EXPECT_EQ(ec, errc::unavailable) << ec.message();
}

TEST(EtcdClientFailover, AFrozenMemberTimesOutByTheDeadlineAndTheNextAnswers) {
  REQUIRE_ETCD();
  EtcdCluster frozen(1);
  ASSERT_TRUE(frozen.ok()) << frozen.error();
  EtcdCluster live(1);
  ASSERT_TRUE(live.ok()) << live.error();
  IoThread io;
  EtcdClientOptions opts;
  // Long enough that a live member's answer on a loaded machine is never
  // taken for a timeout below.
  opts.request_timeout = 1500ms;
  frozen.freeze(0);
  struct Thaw {
    EtcdCluster& c;
    ~Thaw() { c.thaw(0); }
  } thaw{frozen};

  auto alone = EtcdClient::create(io.io.get_executor(), io.timer, endpoints_of(frozen.endpoints()), opts);
  auto t0 = std::chrono::steady_clock::now();
  auto [ec, r] = await<RangeResult>([&](auto h) { alone->range_prefix("/x/", h); });
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(ec, errc::timeout) << ec.message();
  EXPECT_GE(elapsed, 1450ms);
  EXPECT_LT(elapsed, 10s);

  auto both =
      EtcdClient::create(io.io.get_executor(), io.timer,
                         endpoints_of("etcd://" + frozen.client_address(0) + "," + live.client_address(0)), opts);
  auto [ec2, p] = await<PutResult>([&](auto h) { both->put("/x/1", "y", 0, h); });
  ASSERT_FALSE(ec2) << ec2.message();
  // The member that answered is tried first next time: no second timeout.
  t0 = std::chrono::steady_clock::now();
  auto [ec3, r3] = await<RangeResult>([&](auto h) { both->range_prefix("/x/", h); });
  ASSERT_FALSE(ec3) << ec3.message();
  EXPECT_EQ(r3.kvs.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1450ms) << "no request timed out on the frozen member";

  frozen.thaw(0);
  // Thawed, it answers again (a few tries: it may first catch up on its timers).
  error_code ec4 = errc::timeout;
  for (int i = 0; i < 10 && ec4; ++i) ec4 = await<RangeResult>([&](auto h) { alone->range_prefix("/x/", h); }).first;
  EXPECT_FALSE(ec4) << ec4.message();
}

}  // namespace

namespace {

// Retries an operation through a leader election (etcd answers "leader
// changed" / "no leader" meanwhile), up to a bounded number of tries.
template <class R, class Start>
std::pair<error_code, R> await_through_election(Start start) {
  std::pair<error_code, R> out{errc::timeout, R{}};
  for (int i = 0; i < 40; ++i) {
    out = await<R>(start);
    if (!out.first) break;
    std::this_thread::sleep_for(100ms);
  }
  return out;
}

TEST(EtcdClusterFixture, ThreeMembersFailOverAndAWatchResumesOnAnotherMember) {
  REQUIRE_ETCD();
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  IoThread io;
  auto client = EtcdClient::create(io.io.get_executor(), io.timer, endpoints_of(etcd.endpoints()));
  auto [pec, p] = await_through_election<PutResult>([&](auto h) { client->put("/m/1", "a", 0, h); });
  ASSERT_FALSE(pec) << pec.message();

  WatchLog log;
  auto w = client->watch("/m/", p.revision + 1, log.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.is_created(); }, 20s));
  auto [pec2, p2] = await_through_election<PutResult>([&](auto h) { client->put("/m/2", "b", 0, h); });
  ASSERT_FALSE(pec2) << pec2.message();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.count() >= 1; }, 20s));

  etcd.kill(0);  // the member the client talks to (the first endpoint)
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return log.final().has_value(); }, 20s));
  EXPECT_EQ(*log.final(), errc::truncated) << log.final()->message();

  auto [pec3, p3] = await_through_election<PutResult>([&](auto h) { client->put("/m/3", "c", 0, h); });
  ASSERT_FALSE(pec3) << pec3.message();
  WatchLog resumed;
  auto w2 = client->watch("/m/", log.last_revision + 1, resumed.handler());
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return resumed.count() >= 1; }, 20s));
  {
    std::lock_guard l(resumed.mu);
    EXPECT_EQ(resumed.events[0].kv.key, "/m/3");
  }
  w2->cancel();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return resumed.final().has_value(); }, 20s));

  ASSERT_TRUE(etcd.restart(0)) << etcd.error();
  auto only_first =
      EtcdClient::create(io.io.get_executor(), io.timer, endpoints_of("etcd://" + etcd.client_address(0)));
  auto [rec, r] = await_through_election<RangeResult>([&](auto h) { only_first->range_prefix("/m/", h); });
  ASSERT_FALSE(rec) << rec.message();
  EXPECT_EQ(r.kvs.size(), 3u);  // the restarted member caught up
}

TEST(EtcdClusterFixture, TheDestructorKillsAndReapsItsProcesses) {
  REQUIRE_ETCD();
  pid_t pid = -1;
  {
    EtcdCluster etcd(1);
    ASSERT_TRUE(etcd.ok()) << etcd.error();
    pid = etcd.pid(0);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // gone and reaped: no zombie keeps the PID
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
