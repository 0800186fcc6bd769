// Routing tags (routing_tag.h): a call carries its client's tag as the W3C
// baggage entry wheelrpc-tag; a server puts the tag of the request it serves
// in force while its handler runs and while the completion of a call made
// there runs, so A -> B -> C keeps it without code in B; a call's own
// baggage wins; both wires.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "support/rpc_fixture.h"

namespace {

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::RoutingTag;
using wheelrpc::rpc::Server;
using wheelrpc::test::loopback0;

TEST(RoutingTag, IsReadFromItsBaggageEntryAndNothingElse) {
  EXPECT_EQ(RoutingTag::from_baggage("wheelrpc-tag=canary").view(), "canary");
  EXPECT_EQ(RoutingTag::from_baggage("user=7, wheelrpc-tag = blue ;ttl=3,x=y").view(), "blue");
  EXPECT_TRUE(RoutingTag::from_baggage("user=7").empty());
  EXPECT_TRUE(RoutingTag::from_baggage("wheelrpc-tag=has space").empty());
  EXPECT_TRUE(RoutingTag::from_baggage("wheelrpc-tagx=canary").empty());
  EXPECT_TRUE(RoutingTag::from_baggage("").empty());
  EXPECT_TRUE(RoutingTag::from_baggage(",,,=,wheelrpc-tag").empty());
  EXPECT_FALSE(RoutingTag::make(std::string(65, 'a')).has_value());
  EXPECT_TRUE(RoutingTag::make(std::string(64, 'a')).has_value());
  EXPECT_FALSE(RoutingTag::make("a/b").has_value());
  EXPECT_TRUE(RoutingTag::make("")->empty());
}

TEST(RoutingTag, AScopePutsATagInForceAndRestoresThePreviousOne) {
  EXPECT_TRUE(wheelrpc::rpc::current_routing_tag().empty());
  {
    wheelrpc::rpc::RoutingTagScope outer(*RoutingTag::make("a"));
    {
      wheelrpc::rpc::RoutingTagScope inner(*RoutingTag::make("b"));
      EXPECT_EQ(wheelrpc::rpc::current_routing_tag().view(), "b");
    }
    EXPECT_EQ(wheelrpc::rpc::current_routing_tag().view(), "a");
  }
  EXPECT_TRUE(wheelrpc::rpc::current_routing_tag().empty());
}

/// A -> B -> C: C answers "who" with the baggage it got and the tag in force
/// in its handler; B forwards "forward" to C from its handler, and
/// "forward_twice" calls C again from the completion of its first call.
struct ThreeHops {
  explicit ThreeHops(wheelrpc::rpc::WireProtocol b_to_c = wheelrpc::rpc::WireProtocol::native)
      : threads(2), c(threads.io.get_executor(), timer), b(threads.io.get_executor(), timer) {
    c.handle("who", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      std::string baggage;
      for (const auto& [k, v] : req.attachments)
        if (k == wheelrpc::rpc::kBaggageKey) baggage = v;
      r.reply(baggage + "|" + std::string(wheelrpc::rpc::current_routing_tag().view()));
    });
    if (auto ec = c.listen(loopback0())) throw boost::system::system_error(ec);
    ClientOptions to_c;
    to_c.protocol = b_to_c;
    b_client.emplace(threads.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{c.local_endpoint()},
                     to_c);
    b.handle("forward", [this](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      b_client->async_call("who", "", CallOptions{},
                           [r = std::move(r)](boost::system::error_code ec, wheelrpc::rpc::Response res) mutable {
                             if (ec) {
                               r.fail(ec, res.error_message);
                             } else {
                               r.reply(std::move(res.payload));
                             }
                           });
    });
    b.handle("forward_twice", [this](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      b_client->async_call("who", "", CallOptions{},
                           [this, r = std::move(r)](boost::system::error_code ec, wheelrpc::rpc::Response) mutable {
                             if (ec) {
                               r.fail(ec, "first hop failed");
                               return;
                             }
                             // From the first call's completion: the tag is in force here too.
                             b_client->async_call("who", "", CallOptions{},
                                                  [r = std::move(r)](boost::system::error_code ec2,
                                                                     wheelrpc::rpc::Response res) mutable {
                                                    if (ec2) {
                                                      r.fail(ec2, res.error_message);
                                                    } else {
                                                      r.reply(std::move(res.payload));
                                                    }
                                                  });
                           });
    });
    if (auto ec = b.listen(loopback0())) throw boost::system::system_error(ec);
  }
  ~ThreeHops() {
    b_client->close();
    b.stop();
    c.stop();
    threads.stop();
  }
  std::string call_b(const std::string& method, ClientOptions co, CallOptions o = {}) {
    Client a(threads.io.get_executor(), timer, std::vector<boost::asio::ip::tcp::endpoint>{b.local_endpoint()}, co);
    o.timeout = 10s;
    auto out = wheelrpc::test::call_and_wait(a, method, "", o);
    a.close();
    EXPECT_FALSE(out.ec) << out.response.error_message;
    return out.response.payload;
  }

  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads threads;
  Server c;
  Server b;
  std::optional<Client> b_client;
};

ClientOptions tagged(std::string tag, wheelrpc::rpc::WireProtocol p = wheelrpc::rpc::WireProtocol::native) {
  ClientOptions co;
  co.tag = std::move(tag);
  co.protocol = p;
  return co;
}

TEST(RoutingTag, TheClientsTagReachesTheThirdHopWithoutCodeInTheSecond) {
  ThreeHops h;
  EXPECT_EQ(h.call_b("forward", tagged("canary")), "wheelrpc-tag=canary|canary");
  EXPECT_EQ(h.call_b("forward_twice", tagged("canary")), "wheelrpc-tag=canary|canary");
  EXPECT_EQ(h.call_b("forward", ClientOptions{}), "|") << "an untagged call stays untagged";
}

TEST(RoutingTag, ACallsOwnBaggageBeatsTheTagInForce) {
  ThreeHops h;
  CallOptions o;
  o.attachments.emplace_back("baggage", "wheelrpc-tag=blue,user=7");
  // B's call to C carries the tag of the request B serves: blue.
  EXPECT_EQ(h.call_b("forward", tagged("canary"), o), "wheelrpc-tag=blue|blue");
}

TEST(RoutingTag, TravelsOverTheGrpcWireToo) {
  ThreeHops h(wheelrpc::rpc::WireProtocol::grpc);
  EXPECT_EQ(h.call_b("forward", tagged("canary", wheelrpc::rpc::WireProtocol::grpc)), "wheelrpc-tag=canary|canary");
}

TEST(RoutingTag, AClientRefusesATagThatIsNotOne) {
  wheelrpc::timer::HashedWheelTimer timer;
  boost::asio::io_context io;
  ClientOptions co;
  co.tag = "no spaces allowed";
  EXPECT_THROW(Client(io.get_executor(), timer,
                      std::vector<boost::asio::ip::tcp::endpoint>{{boost::asio::ip::make_address("127.0.0.1"), 9}}, co),
               std::invalid_argument);
}

}  // namespace
