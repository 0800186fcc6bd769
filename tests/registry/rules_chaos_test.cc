// Runtime rules (docs/governance.md) through a 3-member etcd cluster in
// trouble, while a client calls its providers from three threads the whole
// time. Three in-process echo providers register through an EtcdRegistry; the
// client follows the service and its rules (registry::provider_source and
// registry::rule_source) through another. Then:
// (a) a rule lowers the timeout of "sleep": the client has the rule's
//     revision within 500 ms of the put, and a slow call times out at it;
// (b) the etcd leader (first made the member the client's registry watches
//     through) is killed, and a rule setting one provider's weight to 0 is
//     put through a surviving member: the client applies it (the drained
//     provider gets no new call);
// (c) every member is killed: the client keeps the last good rules (the
//     timeout override still applies, the drained provider still gets
//     nothing);
// (d) the members are started again on their data: a rule put after that
//     (the drain lifted) is applied.
// Every load call is counted: none failed, none lost, none completed twice.
// Skipped without /usr/bin/etcd.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/server.h>

#include "registry/registry_test_util.h"
#include "support/raw_http.h"
#include "support/rpc_fixture.h"

namespace {
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;
namespace rpc = wheelrpc::rpc;
namespace registry = wheelrpc::registry;
namespace detail = wheelrpc::registry::detail;
using SteadyClock = std::chrono::steady_clock;

std::int64_t ms_since(SteadyClock::time_point t0, SteadyClock::time_point t1 = SteadyClock::now()) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count();
}

/// Member `i`'s id and the id of the leader it knows, as JSON values (from
/// its /v3/maintenance/status); empty strings when it does not answer.
std::pair<std::string, std::string> member_status(EtcdCluster& etcd, int i) {
  const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), etcd.client_port(i));
  const auto reply = http_call(ep, "POST", "/v3/maintenance/status", "{}");
  if (reply.status != 200) return {};
  error_code ec;
  const auto v = boost::json::parse(reply.body, ec);
  if (ec || !v.is_object()) return {};
  const auto* header = v.as_object().if_contains("header");
  const auto* leader = v.as_object().if_contains("leader");
  if (!header || !leader || !header->is_object()) return {};
  const auto* self = header->as_object().if_contains("member_id");
  if (!self) return {};
  return {boost::json::serialize(*self), boost::json::serialize(*leader)};
}

/// The member that leads the cluster now, or -1.
int leading_member(EtcdCluster& etcd) {
  for (int i = 0; i < etcd.size(); ++i) {
    const auto [self, leader] = member_status(etcd, i);
    if (!self.empty() && self == leader) return i;
  }
  return -1;
}

/// The one member serving watches (the client's registry watches the
/// providers and the rules through one member), or -1.
int watching_member(EtcdCluster& etcd) {
  int member = -1, found = 0;
  for (int i = 0; i < etcd.size(); ++i) {
    if (etcd.watchers(i) > 0) {
      member = i;
      ++found;
    }
  }
  return found == 1 ? member : -1;
}

/// Asks the leader to hand leadership to member `to`
/// (/v3/maintenance/transfer-leadership); true once `to` leads.
bool move_leader(EtcdCluster& etcd, int leader, int to) {
  const auto target = member_status(etcd, to).first;
  if (target.empty()) return false;
  const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), etcd.client_port(leader));
  const auto reply = http_call(ep, "POST", "/v3/maintenance/transfer-leadership", R"({"targetID": )" + target + "}");
  if (reply.status != 200) return false;
  return wait_until([&] { return leading_member(etcd) == to; }, 10s);
}

/// Puts `value` at `key` through `client`, retried (a leader election may be
/// under way) for up to about 20 s; the put's revision.
std::int64_t put_rule(detail::EtcdClient& client, const std::string& key, const std::string& value) {
  error_code ec = boost::asio::error::timed_out;
  detail::PutResult put;
  for (int i = 0; i < 100 && ec; ++i) {
    std::tie(ec, put) =
        await<detail::PutResult>([&](auto h) { client.put(key, value, 0, h); }, std::chrono::seconds(5));
    if (ec) std::this_thread::sleep_for(200ms);
  }
  EXPECT_FALSE(ec) << "put " << key << ": " << ec.message();
  return ec ? -1 : put.revision;
}

/// Calls "echo" from `threads` threads, one call at a time on each, until
/// stop(); counts every completion of every call (the handler counts before
/// anything else, so a second completion is seen).
class ChaosLoad {
 public:
  ChaosLoad(rpc::Client& client, int threads) : client_(client), progress_(static_cast<std::size_t>(threads)) {
    calls_.resize(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t] { run(static_cast<std::size_t>(t)); });
  }
  ~ChaosLoad() { stop(); }

  void stop() {
    stop_.store(true);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  /// Waits until every thread has completed `n` more calls than now.
  bool each_completes(std::uint64_t n, std::chrono::milliseconds limit = 60s) {
    std::vector<std::uint64_t> target;
    for (const auto& p : progress_) target.push_back(p.load() + n);
    return wait_until(
        [&] {
          for (std::size_t i = 0; i < progress_.size(); ++i) {
            if (progress_[i].load() < target[i]) return false;
          }
          return true;
        },
        limit);
  }
  std::uint64_t ok() const { return ok_.load(); }
  std::uint64_t failed() const { return failed_.load(); }
  std::string failures() {
    std::lock_guard lock(mu_);
    return failure_examples_;
  }
  /// After stop() and the client's close: calls that never completed, and
  /// calls that completed more than once.
  std::uint64_t total() const {
    std::uint64_t n = 0;
    for (const auto& v : calls_) n += v.size();
    return n;
  }
  std::uint64_t lost() const {
    return count_where([](int c) { return c == 0; });
  }
  std::uint64_t twice() const {
    return count_where([](int c) { return c > 1; });
  }

 private:
  using Counter = std::shared_ptr<std::atomic<int>>;

  void run(std::size_t t) {
    while (!stop_.load()) {
      auto completions = std::make_shared<std::atomic<int>>(0);
      calls_[t].push_back(completions);
      auto p = std::make_shared<std::promise<void>>();
      auto f = p->get_future();
      rpc::CallOptions o;
      o.timeout = 5000ms;
      o.idempotent = true;  // every failure it may see is retried (retries: the default 2)
      client_.async_call("echo", "x", std::move(o), [this, completions, p](error_code ec, rpc::Response r) {
        if (completions->fetch_add(1) != 0) return;  // a second completion: counted, nothing else
        if (ec) {
          failed_.fetch_add(1);
          std::lock_guard lock(mu_);
          if (failure_examples_.size() < 2000) failure_examples_ += ec.message() + ": " + r.error_message + "\n";
        } else {
          ok_.fetch_add(1);
        }
        p->set_value();
      });
      if (f.wait_for(30s) != std::future_status::ready) continue;  // lost, unless it completes by the end
      progress_[t].fetch_add(1);
    }
  }
  template <class Pred>
  std::uint64_t count_where(Pred pred) const {
    std::uint64_t n = 0;
    for (const auto& v : calls_) {
      for (const auto& c : v) n += pred(c->load()) ? 1 : 0;
    }
    return n;
  }

  rpc::Client& client_;
  std::atomic<bool> stop_{false};
  std::vector<std::atomic<std::uint64_t>> progress_;
  std::vector<std::vector<Counter>> calls_;  // calls_[t]: only thread t touches it until stop()
  std::atomic<std::uint64_t> ok_{0}, failed_{0};
  std::mutex mu_;
  std::string failure_examples_;
  std::vector<std::thread> threads_;
};

TEST(RulesChaos, RulesReachTheClientThroughLeaderLossAndAFullEtcdOutageWithNoCallLostOrDoubled) {
  REQUIRE_ETCD();
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ok()) << etcd.error();

  // Three providers of "echo" (and "sleep"), registered through their own registry.
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads threads;
  std::vector<std::unique_ptr<rpc::Server>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<rpc::Server>(threads.io.get_executor(), timer));
    register_test_methods(*servers.back(), threads.io);
    ASSERT_FALSE(servers.back()->listen(loopback0()));
    addresses.push_back("127.0.0.1:" + std::to_string(servers.back()->local_endpoint().port()));
  }
  IoThread provider_io;
  auto providers = registry::EtcdRegistry::create(provider_io.io.get_executor(), provider_io.timer, etcd.endpoints(),
                                                  fast_options());
  for (const auto& a : addresses) providers->register_instance(instance("echo", a));

  // The client, following the service and its rules through a registry of its own.
  auto followed = registry::EtcdRegistry::create(threads.io.get_executor(), timer, etcd.endpoints(), fast_options());
  rpc::ClientOptions co;
  co.call_defaults.timeout = 3000ms;  // "sleep 400" succeeds until a rule lowers it
  co.rules = registry::rule_source(followed, "echo");
  std::optional<rpc::Client> client;
  client.emplace(threads.io.get_executor(), timer, registry::provider_source(followed, "echo"), co);
  ASSERT_TRUE(wait_until([&] { return client->source_state().providers == 3; }, 30s));
  ASSERT_TRUE(wait_until([&] { return !call_and_wait(*client, "echo", "x").ec; }, 30s));
  EXPECT_FALSE(call_and_wait(*client, "sleep", "400").ec) << "no rule yet: the client's 3 s default";

  IoThread direct_io;
  auto direct = direct_client(direct_io, etcd.endpoints());
  ChaosLoad load(*client, 3);
  ASSERT_TRUE(load.each_completes(20));

  // (a) A rule lowers the timeout of "sleep" to 150 ms.
  const auto put_a = SteadyClock::now();
  const auto rev_a =
      put_rule(*direct, "/wheelrpc/echo/rules/10-timeout", R"({"methods": {"sleep": {"timeout_ms": 150}}})");
  ASSERT_GT(rev_a, 0);
  const auto acked_a = SteadyClock::now();
  ASSERT_TRUE(wait_until([&] { return client->explain("sleep").rules_revision >= rev_a; }, 20s));
  const auto applied_a = SteadyClock::now();
  // The first call started after the put that times out at the new value.
  SteadyClock::time_point first_timeout_start;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto o = call_and_wait(*client, "sleep", "400");
        if (o.ec != rpc::errc::timeout) return false;
        first_timeout_start = SteadyClock::now() - std::chrono::duration_cast<SteadyClock::duration>(o.took);
        EXPECT_LT(o.took, 390ms) << o.response.error_message;
        EXPECT_NE(o.response.error_message.find("/wheelrpc/echo/rules/10-timeout rev " + std::to_string(rev_a)),
                  std::string::npos)
            << o.response.error_message;
        return true;
      },
      20s));
  const auto rule_ms = ms_since(put_a, applied_a);
  RecordProperty("a_put_to_revision_ms", static_cast<int>(rule_ms));
  RecordProperty("a_ack_to_revision_ms", static_cast<int>(ms_since(acked_a, applied_a)));
  RecordProperty("a_put_to_first_timeout_ms", static_cast<int>(ms_since(put_a, first_timeout_start)));
  EXPECT_LT(rule_ms, 500) << "from the put to the client holding its revision";

  // (b) The leader dies; weight 0 for provider 2, put through a survivor.
  // The leader is made the member the client's registry watches through, when
  // that can be done, so killing it breaks both at once.
  int leader = -1;
  ASSERT_TRUE(wait_until([&] { return (leader = leading_member(etcd)) >= 0; }, 20s));
  int watched = -1;
  wait_until([&] { return (watched = watching_member(etcd)) >= 0; }, 10s);
  if (watched >= 0 && watched != leader && move_leader(etcd, leader, watched)) leader = watched;
  RecordProperty("b_killed_leader", leader);
  RecordProperty("b_leader_was_watched", leader == watched ? 1 : 0);
  etcd.kill(leader);
  std::string survivors = "etcd://";
  for (int i = 0; i < 3; ++i) {
    if (i != leader) survivors += (survivors.size() > 7 ? "," : "") + etcd.client_address(i);
  }
  auto survivor = direct_client(direct_io, survivors);
  const auto put_b = SteadyClock::now();
  const auto rev_b = put_rule(*survivor, "/wheelrpc/echo/rules/20-drain",
                              R"({"providers": {")" + addresses[2] + R"(": {"weight": 0}}})");
  ASSERT_GT(rev_b, 0);
  const auto acked_b = SteadyClock::now();
  auto weight_of_2 = [&]() -> std::optional<std::uint32_t> {
    for (const auto& p : client->providers()) {
      if (p.peer == addresses[2] && !p.removed) return p.weight;
    }
    return std::nullopt;
  };
  ASSERT_TRUE(wait_until([&] { return weight_of_2() == 0u; }, 30s)) << "the drain never reached the client";
  RecordProperty("b_put_to_drain_ms", static_cast<int>(ms_since(put_b)));  // the put waits out the election
  RecordProperty("b_ack_to_drain_ms", static_cast<int>(ms_since(acked_b)));
  ASSERT_TRUE(load.each_completes(3));  // the calls that were in flight when it applied are done
  const auto drained = servers[2]->stats().requests;
  const auto others = servers[0]->stats().requests + servers[1]->stats().requests;
  ASSERT_TRUE(load.each_completes(100));
  EXPECT_EQ(servers[2]->stats().requests, drained) << "the drained provider got new calls";
  EXPECT_GT(servers[0]->stats().requests + servers[1]->stats().requests, others);
  EXPECT_EQ(load.failed(), 0u) << load.failures();

  // (c) The whole cluster goes: the last good rules stand.
  const auto rev_before_outage = client->explain("sleep").rules_revision;
  for (int i = 0; i < 3; ++i) etcd.kill(i);
  const bool noticed = wait_until([&] { return !client->explain("sleep").rules_error.empty(); }, 30s);
  RecordProperty("c_outage_noticed", noticed ? 1 : 0);
  // An observation window longer than the registrations' 2 s lease TTL, with
  // calls going all along.
  const auto outage_start = SteadyClock::now();
  while (ms_since(outage_start) < 3000) ASSERT_TRUE(load.each_completes(10));
  {
    const auto e = client->explain("sleep");
    EXPECT_EQ(e.rules_revision, rev_before_outage) << "the last good rules stand";
    const auto o = call_and_wait(*client, "sleep", "400");
    EXPECT_EQ(o.ec, rpc::errc::timeout) << "the timeout override still applies: " << o.response.error_message;
    EXPECT_LT(o.took, 390ms);
  }
  EXPECT_EQ(weight_of_2(), std::optional<std::uint32_t>(0u));
  EXPECT_EQ(servers[2]->stats().requests, drained) << "the drained provider got calls during the outage";
  EXPECT_EQ(client->source_state().providers, 3u) << "the provider set stands too";
  EXPECT_EQ(load.failed(), 0u) << load.failures();

  // (d) The members come back on their data; a rule change made after that applies.
  const auto restart_at = SteadyClock::now();
  for (int i = 0; i < 3; ++i) etcd.restart(i, 0ms);  // started; healthy only once a quorum is up
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(etcd.wait_healthy(i, 30s)) << etcd.error();
  RecordProperty("d_restart_ms", static_cast<int>(ms_since(restart_at)));
  const auto put_d = SteadyClock::now();
  const auto rev_d = put_rule(*direct, "/wheelrpc/echo/rules/20-drain",
                              R"({"providers": {")" + addresses[2] + R"(": {"weight": 100}}})");
  ASSERT_GT(rev_d, rev_b);
  ASSERT_TRUE(wait_until([&] { return client->explain("sleep").rules_revision >= rev_d; }, 30s))
      << "the client never read the rules again: " << client->explain("sleep").rules_error;
  RecordProperty("d_put_to_revision_ms", static_cast<int>(ms_since(put_d)));
  EXPECT_EQ(weight_of_2(), std::optional<std::uint32_t>(100u));
  ASSERT_TRUE(wait_until([&] { return servers[2]->stats().requests > drained; }, 30s))
      << "provider 2 takes calls again";
  ASSERT_TRUE(load.each_completes(50));

  load.stop();
  client->close();
  RecordProperty("calls", static_cast<int>(load.total()));
  RecordProperty("failed", static_cast<int>(load.failed()));
  EXPECT_EQ(load.failed(), 0u) << load.failures();
  EXPECT_EQ(load.lost(), 0u);
  EXPECT_EQ(load.twice(), 0u);
  EXPECT_EQ(load.ok(), load.total());
  std::printf("rules chaos: %llu calls, %llu ok, %llu failed, %llu lost, %llu twice; put->revision %lld ms\n",
              static_cast<unsigned long long>(load.total()), static_cast<unsigned long long>(load.ok()),
              static_cast<unsigned long long>(load.failed()), static_cast<unsigned long long>(load.lost()),
              static_cast<unsigned long long>(load.twice()), static_cast<long long>(rule_ms));

  client.reset();
  followed->close();
  providers->close();
  for (auto& s : servers) s->stop();
  threads.stop();
}

}  // namespace
