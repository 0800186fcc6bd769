// Tag routing across two hops through a real etcd: A follows service "mid"
// and B forwards each call to service "back" (a plain client call from its
// handler, no tag code), whose providers are registered one tagged canary and
// one untagged. Every call A tags canary reaches the canary; no untagged call
// does. Skipped without /usr/bin/etcd.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/rpc/server.h>

#include "registry/registry_test_util.h"
#include "support/cluster.h"
#include "support/wait.h"

#include "support/cluster_preamble.h"

namespace {

using wheelrpc::test::EtcdCluster;
namespace registry = wheelrpc::registry;
using tcp = boost::asio::ip::tcp;

std::string text(const tcp::endpoint& ep) { return ep.address().to_string() + ":" + std::to_string(ep.port()); }

TEST(TagRoutingEtcd, ACanaryTagCrossesTwoHopsWithoutCodeInTheMiddle) {
  REQUIRE_ETCD();
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  // The registry's io_context outlives the cluster's: a client's last reference
  // to the registry can drop on the cluster's thread after the client closes.
  wheelrpc::test::IoThread reg_io;
  Cluster c({Mode::reply, Mode::reply});  // the back end: p0 canary, p1 untagged
  auto reg = registry::EtcdRegistry::create(reg_io.io.get_executor(), reg_io.timer, etcd.endpoints(),
                                            wheelrpc::test::fast_options());
  auto canary = wheelrpc::test::instance("back", text(c.providers[0]->proxy->local_endpoint()));
  canary.tags["tag"] = "canary";
  reg->register_instance(canary);
  reg->register_instance(wheelrpc::test::instance("back", text(c.providers[1]->proxy->local_endpoint())));

  // B: serves "work" by calling "back" from its handler.
  Client to_back(c.io.io.get_executor(), c.timer, registry::provider_source(reg, "back"), client_options());
  wheelrpc::rpc::Server mid(c.io.io.get_executor(), c.timer);
  mid.handle("work", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
    to_back.async_call("work", "", opts(5s), [r = std::move(r)](error_code ec, Response res) mutable {
      if (ec) {
        r.fail(ec, res.error_message);
      } else {
        r.reply(std::move(res.payload));
      }
    });
  });
  ASSERT_FALSE(mid.listen({boost::asio::ip::make_address("127.0.0.1"), 0}));
  reg->register_instance(wheelrpc::test::instance("mid", text(mid.local_endpoint())));
  ASSERT_TRUE(wait_until([&] { return reg->stats().registered_now == 3; }, 20s));
  ASSERT_TRUE(wait_until([&] { return to_back.source_state().providers == 2; }, 20s));

  auto calls = [&](Client& a, int n) {
    std::map<std::string, int> by_provider;
    for (int i = 0; i < n; ++i) {
      auto f = start(a, "work", "", opts(5s));
      auto out = wait(f);
      EXPECT_FALSE(out.ec) << out.response.error_message;
      ++by_provider[out.response.payload];
    }
    return by_provider;
  };
  auto tagged_options = client_options();
  tagged_options.tag = "canary";
  Client tagged(c.io.io.get_executor(), c.timer, registry::provider_source(reg, "mid"), tagged_options);
  Client untagged(c.io.io.get_executor(), c.timer, registry::provider_source(reg, "mid"), client_options());
  EXPECT_EQ(calls(tagged, 50), (std::map<std::string, int>{{"p0", 50}})) << "every tagged call reaches the canary";
  EXPECT_EQ(calls(untagged, 50), (std::map<std::string, int>{{"p1", 50}})) << "no untagged call does";
  tagged.close();
  untagged.close();
  to_back.close();
  mid.stop();
  reg->close();
}

}  // namespace
