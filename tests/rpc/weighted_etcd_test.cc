// Provider weights from a real etcd: the weight in each provider's registry
// record (ServiceInstance::weight) reaches the client's balancer through
// registry::provider_source, and a record re-registered with a new weight
// changes the share without a reconnect. Skipped without /usr/bin/etcd.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>

#include "registry/registry_test_util.h"
#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"

namespace {

using wheelrpc::test::EtcdCluster;
namespace registry = wheelrpc::registry;
using tcp = boost::asio::ip::tcp;

std::string text(const tcp::endpoint& ep) { return ep.address().to_string() + ":" + std::to_string(ep.port()); }

TEST(WeightedEtcd, AProviderOfWeight300BesideOneOf100GetsThreeQuartersOfTheCalls) {
  REQUIRE_ETCD();
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  // The registry's io_context outlives the cluster's: a client's last reference
  // to the registry can drop on the cluster's thread after the client closes.
  wheelrpc::test::IoThread reg_io;
  Cluster c({Mode::reply, Mode::reply});
  auto reg = registry::EtcdRegistry::create(reg_io.io.get_executor(), reg_io.timer, etcd.endpoints(),
                                            wheelrpc::test::fast_options());
  auto record = [&](std::size_t i, int weight) {
    auto inst = wheelrpc::test::instance("echo", text(c.providers[i]->proxy->local_endpoint()));
    inst.weight = weight;
    return inst;
  };
  reg->register_instance(record(0, 300));
  reg->register_instance(record(1, 100));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 2; }, 20s));

  Client client(c.io.io.get_executor(), c.timer, registry::provider_source(reg, "echo"), client_options());
  const auto weight_of = [&](std::size_t i) -> std::pair<std::uint32_t, std::string> {
    for (const auto& p : client.providers()) {
      if (p.peer == text(c.providers[i]->proxy->local_endpoint())) return {p.weight, p.weight_from};
    }
    return {0, "missing"};
  };
  client.connect();
  ASSERT_TRUE(wait_until(
      [&] {
        auto ps = client.providers();
        return ps.size() == 2 && ps[0].ready && ps[1].ready && weight_of(0).first == 300;
      },
      20s));
  EXPECT_EQ(weight_of(0), std::make_pair(300u, std::string("registry")));
  EXPECT_EQ(weight_of(1), std::make_pair(100u, std::string("default")));
  for (int i = 0; i < 400; ++i) {
    auto f = start(client, "work", "", opts(5s));
    auto out = wait(f);
    ASSERT_FALSE(out.ec) << out.response.error_message;
  }
  EXPECT_EQ(c.providers[0]->requests(), 300);
  EXPECT_EQ(c.providers[1]->requests(), 100);

  // The record of p1 changes only in weight: the share follows, the
  // connection stays.
  std::map<std::string, std::uint64_t> connects;
  for (const auto& p : client.providers()) connects[p.peer] = p.connect_attempts;
  reg->register_instance(record(1, 900));
  ASSERT_TRUE(wait_until([&] { return weight_of(1).first == 900; }, 20s));
  const int p0 = c.providers[0]->requests(), p1 = c.providers[1]->requests();
  for (int i = 0; i < 400; ++i) {
    auto f = start(client, "work", "", opts(5s));
    auto out = wait(f);
    ASSERT_FALSE(out.ec) << out.response.error_message;
  }
  EXPECT_EQ(c.providers[0]->requests() - p0, 100);
  EXPECT_EQ(c.providers[1]->requests() - p1, 300);
  for (const auto& p : client.providers()) EXPECT_EQ(p.connect_attempts, connects[p.peer]) << p.peer;
  client.close();
  // Closed while its timer lives: the client's provider source may hold the
  // registry until the cluster's threads stop, after reg_io's timer is gone.
  reg->close();
}

}  // namespace
