// rule_source() against real etcd: rules put, refused, deleted; etcd gone
// and back; a source started while etcd is down. Skipped without /usr/bin/etcd.

#include <gtest/gtest.h>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rules.h>

#include "registry/registry_test_util.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;
namespace rpc = wheelrpc::rpc;

/// Every report a RuleSource listener heard. Shared with the listener (it
/// may run on the io thread after the test body returns).
struct RuleLog {
  std::mutex mu;
  std::vector<std::shared_ptr<const rpc::CallRules>> rules;
  std::vector<std::string> errors;

  static rpc::RuleSource::Listener listener(const std::shared_ptr<RuleLog>& log) {
    return [log](error_code ec, std::shared_ptr<const rpc::CallRules> r, std::string why) {
      std::lock_guard l(log->mu);
      if (ec) {
        EXPECT_EQ(r, nullptr);
        log->errors.push_back(why);
      } else {
        EXPECT_NE(r, nullptr);
        log->rules.push_back(std::move(r));
      }
    };
  }
  std::size_t reports() {
    std::lock_guard l(mu);
    return rules.size();
  }
  std::size_t error_count() {
    std::lock_guard l(mu);
    return errors.size();
  }
  std::shared_ptr<const rpc::CallRules> last() {
    std::lock_guard l(mu);
    return rules.empty() ? nullptr : rules.back();
  }
  /// The last report's timeout override of `method`, with its origin.
  std::optional<std::pair<std::chrono::milliseconds, std::string>> timeout(std::string_view method) {
    auto r = last();
    if (!r) return std::nullopt;
    auto o = r->for_method(method);
    if (!o.timeout) return std::nullopt;
    return std::make_pair(o.timeout->value, *o.timeout->origin);
  }
};

class RuleSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
    direct_ = direct_client(io_, etcd_->endpoints());
    reg_ = EtcdRegistry::create(io_.io.get_executor(), io_.timer, etcd_->endpoints(), fast_options());
  }
  void TearDown() override {
    if (source_) source_->stop();
    if (reg_) reg_->close();
  }

  /// Puts `json` under rule `name` of "echo"; returns the put's revision (0: failed).
  std::int64_t put_rule(const std::string& name, const std::string& json) {
    auto [ec, r] = await<wheelrpc::registry::detail::PutResult>(
        [&](auto h) { direct_->put("/wheelrpc/echo/rules/" + name, json, 0, h); });
    EXPECT_FALSE(ec) << ec.message();
    return ec ? 0 : r.revision;
  }
  void delete_rule(const std::string& name) {
    auto [ec, r] = await<wheelrpc::registry::detail::DeleteResult>(
        [&](auto h) { direct_->delete_key("/wheelrpc/echo/rules/" + name, h); });
    EXPECT_FALSE(ec) << ec.message();
  }
  void start(RuleScope who = {}) {
    source_ = rule_source(reg_, "echo", std::move(who));
    source_->start(RuleLog::listener(log_));
  }

  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::shared_ptr<wheelrpc::registry::detail::EtcdClient> direct_;
  std::shared_ptr<EtcdRegistry> reg_;
  std::shared_ptr<rpc::RuleSource> source_;
  std::shared_ptr<RuleLog> log_ = std::make_shared<RuleLog>();
};

TEST_F(RuleSourceTest, APutRuleReachesTheListenerWithItsValuesAndRevision) {
  start();
  EXPECT_EQ(source_->describe(), "etcd rules of 'echo'");
  ASSERT_TRUE(wait_until([&] { return log_->reports() >= 1; }, 20s));  // no rule yet: an empty set
  EXPECT_TRUE(log_->last()->service.empty());
  EXPECT_TRUE(log_->last()->methods.empty());

  const auto rev = put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 200, "retries": 0}},
                                        "load_balance": "least_active",
                                        "providers": {"127.0.0.1:7001": {"weight": 7}}})");
  ASSERT_GT(rev, 0);
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo").has_value(); }, 20s));
  const auto r = log_->last();
  EXPECT_EQ(log_->timeout("echo")->first, 200ms);
  EXPECT_EQ(log_->timeout("echo")->second, "runtime override /wheelrpc/echo/rules/slow rev " + std::to_string(rev));
  EXPECT_EQ(r->for_method("echo").retries->value, 0);
  EXPECT_EQ(r->load_balance->value, rpc::LoadBalance::least_active);
  EXPECT_EQ(r->weights.at("127.0.0.1:7001").value, 7u);
  EXPECT_EQ(r->revision, rev);
  EXPECT_EQ(r->source, reg_->describe());
  EXPECT_EQ(reg_->stats().rules_accepted, 1u);
  EXPECT_EQ(log_->error_count(), 0u);
}

TEST_F(RuleSourceTest, ABadVersionIsRefusedCountedAndThePreviousOneStays) {
  const auto good = put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 300}}})");
  start();
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo").has_value(); }, 20s));
  const auto before = log_->reports();

  ASSERT_GT(put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 0}}})"), 0);
  ASSERT_TRUE(wait_until([&] { return reg_->stats().rules_refused == 1; }, 20s));
  // A later good change of another key shows the refused one never applied.
  const auto other = put_rule("other", R"({"service": {"retries": 1}})");
  ASSERT_TRUE(wait_until([&] { return log_->last()->service.retries.has_value(); }, 20s));
  EXPECT_EQ(log_->reports(), before + 1);  // the refusal reported nothing
  EXPECT_EQ(log_->timeout("echo")->first, 300ms);
  EXPECT_EQ(log_->timeout("echo")->second, "runtime override /wheelrpc/echo/rules/slow rev " + std::to_string(good));
  EXPECT_EQ(log_->last()->revision, other);
  EXPECT_EQ(reg_->stats().rules_refused, 1u);

  // A key whose first version is bad has no effect.
  ASSERT_GT(put_rule("broken", R"({"methods": {"echo": {"timeout_ms": "fast"}}})"), 0);
  ASSERT_TRUE(wait_until([&] { return reg_->stats().rules_refused == 2; }, 20s));
  EXPECT_EQ(log_->timeout("echo")->first, 300ms);
}

TEST_F(RuleSourceTest, ADeletedKeysOverridesGo) {
  put_rule("a", R"({"methods": {"echo": {"timeout_ms": 300}}})");
  put_rule("b", R"({"service": {"retries": 5}})");
  start();
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo").has_value(); }, 20s));
  delete_rule("a");
  ASSERT_TRUE(wait_until([&] { return !log_->timeout("echo").has_value(); }, 20s));
  EXPECT_EQ(log_->last()->service.retries->value, 5);
  delete_rule("b");
  ASSERT_TRUE(wait_until([&] { return log_->last()->service.empty(); }, 20s));
}

TEST_F(RuleSourceTest, ScopesFollowTheConsumer) {
  put_rule("all", R"({"service": {"retries": 1}})");
  put_rule("canary", R"({"scope": {"tags": ["canary"]}, "service": {"retries": 2}})");
  start({.application = "checkout", .tags = {"canary"}});
  ASSERT_TRUE(wait_until([&] { return log_->reports() >= 1; }, 20s));
  EXPECT_EQ(log_->last()->service.retries->value, 2);
}

TEST_F(RuleSourceTest, EtcdStoppedKeepsTheLastRulesAndReportsErrors) {
  put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 300}}})");
  start();
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo").has_value(); }, 20s));
  const auto reports = log_->reports();
  etcd_->kill(0);
  ASSERT_TRUE(wait_until([&] { return log_->error_count() >= 1; }, 30s));
  EXPECT_EQ(log_->reports(), reports);  // errors only, never an empty set
  EXPECT_EQ(log_->timeout("echo")->first, 300ms);
  ASSERT_TRUE(etcd_->restart(0));
  put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 400}}})");
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo")->first == 400ms; }, 30s));
}

TEST_F(RuleSourceTest, ASourceStartedWhileEtcdIsDownGetsTheRulesWhenItComesUp) {
  put_rule("slow", R"({"methods": {"echo": {"timeout_ms": 300}}})");
  etcd_->kill(0);
  start();
  ASSERT_TRUE(wait_until([&] { return log_->error_count() >= 1; }, 30s));
  EXPECT_EQ(log_->reports(), 0u);
  {
    std::lock_guard l(log_->mu);
    EXPECT_NE(log_->errors[0].find("/wheelrpc/echo/rules/"), std::string::npos) << log_->errors[0];
  }
  ASSERT_TRUE(etcd_->restart(0));
  ASSERT_TRUE(wait_until([&] { return log_->timeout("echo").has_value(); }, 30s));
  EXPECT_EQ(log_->timeout("echo")->first, 300ms);
}

TEST_F(RuleSourceTest, StopEndsTheSubscription) {
  start();
  ASSERT_TRUE(wait_until([&] { return log_->reports() >= 1; }, 20s));
  EXPECT_EQ(reg_->stats().subscriptions_now, 1u);
  source_->stop();
  source_->stop();
  EXPECT_TRUE(wait_until([&] { return reg_->stats().subscriptions_now == 0; }, 20s));
}

}  // namespace
