// provider_source() and announcer(): the registry as rpc sees it.

#include <gtest/gtest.h>

#include <wheelrpc/registry/errc.h>
#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>

#include "registry/registry_test_util.h"

namespace {
using namespace wheelrpc::registry;
using namespace wheelrpc::test;
using namespace std::chrono_literals;
using boost::system::error_code;
namespace ip = boost::asio::ip;

ServiceInstance weighted(const std::string& service, int weight) {
  ServiceInstance i;
  i.service = service;
  i.weight = weight;
  return i;
}

struct DoneLog {
  std::mutex mu;
  int calls = 0;
  error_code ec;
  std::string message;
  std::chrono::steady_clock::time_point at;

  static wheelrpc::rpc::ServiceAnnouncer::Done done(const std::shared_ptr<DoneLog>& log) {
    return [log](error_code e, std::string m) {
      std::lock_guard l(log->mu);
      ++log->calls;
      log->ec = e;
      log->message = std::move(m);
      log->at = std::chrono::steady_clock::now();
    };
  }
  int count() {
    std::lock_guard l(mu);
    return calls;
  }
};

TEST(RegistryAnnouncer, WithCheckAnEtcdThatRefusesFailsAtTheFirstFailureNamingIt) {
  IoThread io;
  const std::string dead = unused_address();
  auto reg = EtcdRegistry::create(io.io.get_executor(), io.timer, "etcd://" + dead, fast_options());
  AnnounceOptions o;
  o.check = true;
  o.check_timeout = 60s;  // never reached: the refusal is the answer
  auto a = announcer(reg, weighted("echo", 100), o);
  auto done = std::make_shared<DoneLog>();
  a->announce({ip::make_address("0.0.0.0"), 7001}, DoneLog::done(done));
  ASSERT_TRUE(wait_until([&] { return done->count() == 1; }, 30s));
  {
    std::lock_guard l(done->mu);
    EXPECT_EQ(done->ec, errc::unavailable);
    EXPECT_EQ(done->message.rfind("registration of 'echo' at 127.0.0.1:7001 failed: ", 0), 0u) << done->message;
    EXPECT_NE(done->message.find("etcd at " + dead + " refused the connection"), std::string::npos) << done->message;
  }
  // Check failed means unregistered: no register retry is left.
  EXPECT_TRUE(wait_until([&] { return reg->stats().registered_now == 0; }, 5s));
  EXPECT_EQ(done->count(), 1);
}

TEST(RegistryAnnouncer, WithCheckAnEtcdThatNeverAnswersFailsByItsCheckTimeout) {
  IoThread io;
  // Listens, never accepts, never answers: connects succeed (the backlog),
  // requests get nothing back.
  boost::asio::io_context silent_io;
  ip::tcp::acceptor silent(silent_io, {ip::make_address("127.0.0.1"), 0});
  const std::string silent_at = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  auto ro = fast_options();
  ro.request_timeout = 60s;  // longer than the check: only the check can end the wait
  auto reg = EtcdRegistry::create(io.io.get_executor(), io.timer, "etcd://" + silent_at, ro);
  AnnounceOptions o;
  o.check = true;
  o.check_timeout = 800ms;
  auto a = announcer(reg, weighted("echo", 100), o);
  auto done = std::make_shared<DoneLog>();
  const auto t0 = std::chrono::steady_clock::now();
  a->announce({ip::make_address("0.0.0.0"), 7001}, DoneLog::done(done));
  ASSERT_TRUE(wait_until([&] { return done->count() == 1; }, 30s));
  std::lock_guard l(done->mu);
  EXPECT_EQ(done->ec, errc::timeout);
  EXPECT_EQ(
      done->message,
      "registration of 'echo' at 127.0.0.1:7001 not confirmed within 800 ms: no answer from etcd at " + silent_at);
  EXPECT_GE(done->at - t0, 750ms);
}

TEST(RegistryProviderSource, AnUnreachableEtcdIsReportedAsAnErrorNamingTheService) {
  IoThread io;
  auto reg = EtcdRegistry::create(io.io.get_executor(), io.timer, "etcd://" + unused_address(), fast_options());
  auto source = provider_source(reg, "echo");
  struct Report {
    std::mutex mu;
    int errors = 0;
    int sets = 0;
    std::string why;
  };
  auto report = std::make_shared<Report>();
  source->start([report](error_code ec, std::vector<ip::tcp::endpoint> eps, std::string why) {
    std::lock_guard l(report->mu);
    if (ec) {
      EXPECT_TRUE(eps.empty());
      ++report->errors;
      report->why = why;
    } else {
      ++report->sets;
    }
  });
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard l(report->mu);
        return report->errors >= 2;  // the first read, then its retry
      },
      20s));
  source->stop();
  std::lock_guard l(report->mu);
  EXPECT_EQ(report->sets, 0);
  // The cause only: the client puts the source's name (describe()) in front,
  // so a prefix here would be said twice.
  EXPECT_EQ(report->why.rfind("read of /wheelrpc/echo/providers/ failed: ", 0), 0u) << report->why;
  EXPECT_NE(report->why.find("refused the connection"), std::string::npos) << report->why;
  EXPECT_EQ(source->describe(), "etcd service 'echo'");
}

class RegistryBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ETCD();
    etcd_ = std::make_unique<EtcdCluster>(1);
    ASSERT_TRUE(etcd_->ok()) << etcd_->error();
    direct_ = direct_client(io_, etcd_->endpoints());
    reg_ = EtcdRegistry::create(io_.io.get_executor(), io_.timer, etcd_->endpoints(), fast_options());
  }
  bool has_keys(std::size_t n) {
    auto k = read_keys(*direct_, "/wheelrpc/echo/providers/");
    return k && k->size() == n;
  }

  IoThread io_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::shared_ptr<detail::EtcdClient> direct_;
  std::shared_ptr<EtcdRegistry> reg_;
};

TEST_F(RegistryBindingTest, WithCheckTheAnnounceCompletesOnceRegistered) {
  AnnounceOptions o;
  o.check = true;
  auto a = announcer(reg_, weighted("echo", 7), o);
  auto done = std::make_shared<DoneLog>();
  a->announce({ip::make_address("127.0.0.1"), 7001}, DoneLog::done(done));
  ASSERT_TRUE(wait_until([&] { return done->count() == 1; }, 20s));
  {
    std::lock_guard l(done->mu);
    EXPECT_FALSE(done->ec) << done->message;
  }
  EXPECT_TRUE(has_keys(1));
  EXPECT_TRUE(a->in_force());
  auto withdrawn = std::make_shared<DoneLog>();
  a->withdraw(DoneLog::done(withdrawn));
  EXPECT_FALSE(a->in_force());
  ASSERT_TRUE(wait_until([&] { return withdrawn->count() == 1; }, 20s));
  EXPECT_FALSE(withdrawn->ec) << withdrawn->message;
  EXPECT_TRUE(has_keys(0));
}

TEST_F(RegistryBindingTest, WithoutCheckTheAnnounceSucceedsAtOnceAndRegistersLater) {
  etcd_->kill(0);
  auto states = std::make_shared<StateLog>();
  AnnounceOptions o;
  o.on_state = StateLog::listener(states);
  auto a = announcer(reg_, weighted("echo", 100), o);
  auto done = std::make_shared<DoneLog>();
  a->announce({ip::make_address("::"), 7001}, DoneLog::done(done));
  EXPECT_EQ(done->count(), 1);  // inline, before any etcd answer
  EXPECT_FALSE(done->ec);
  EXPECT_FALSE(a->in_force()) << "accepted is not registered: a server is not ready yet";
  ASSERT_TRUE(wait_until([&] { return states->failures() >= 1; }, 20s));
  EXPECT_FALSE(a->in_force());
  ASSERT_TRUE(etcd_->restart(0)) << etcd_->error();
  ASSERT_TRUE(wait_until([&] { return states->registered(); }, 20s));
  EXPECT_TRUE(a->in_force());
  auto k = read_keys(*direct_, "/wheelrpc/echo/providers/");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->size(), 1u);
  EXPECT_EQ((*k)[0].key, "/wheelrpc/echo/providers/127.0.0.1:7001");
}

TEST_F(RegistryBindingTest, TheProviderSourceReportsEndpointsAndSkipsNonIpOnes) {
  reg_->register_instance(instance("echo", "127.0.0.1:7001"));
  reg_->register_instance(instance("echo", "[::1]:7002"));
  reg_->register_instance(instance("echo", "localhost:7003"));  // a valid instance, but not an "ip:port"
  ASSERT_TRUE(wait_until([&] { return reg_->stats().registered_now == 3; }, 20s));
  auto source = provider_source(reg_, "echo");
  EXPECT_EQ(source->describe(), "etcd service 'echo'");
  struct Reports {
    std::mutex mu;
    std::vector<std::vector<ip::tcp::endpoint>> sets;
  };
  auto reports = std::make_shared<Reports>();
  source->start([reports](error_code ec, std::vector<ip::tcp::endpoint> eps, std::string why) {
    EXPECT_FALSE(ec) << why;
    std::lock_guard l(reports->mu);
    reports->sets.push_back(std::move(eps));
  });
  auto last_size = [&]() -> std::optional<std::size_t> {
    std::lock_guard l(reports->mu);
    if (reports->sets.empty()) return std::nullopt;
    return reports->sets.back().size();
  };
  ASSERT_TRUE(wait_until([&] { return last_size() == 2u; }, 20s));
  {
    std::lock_guard l(reports->mu);
    const auto& eps = reports->sets.back();
    EXPECT_EQ(eps[0], ip::tcp::endpoint(ip::make_address("127.0.0.1"), 7001));
    EXPECT_EQ(eps[1], ip::tcp::endpoint(ip::make_address("::1"), 7002));
  }
  reg_->unregister_instance("echo", "127.0.0.1:7001");
  reg_->unregister_instance("echo", "[::1]:7002");
  ASSERT_TRUE(wait_until([&] { return last_size() == 0u; }, 20s));  // every provider left: an empty set
  source->stop();
  source->stop();
  EXPECT_TRUE(wait_until([&] { return reg_->stats().subscriptions_now == 0; }, 20s));
}

}  // namespace
