// CallOptions::wait_for_ready, gRPC's semantics: by default a call waits while
// a provider's connection is being made, and fails at once with unavailable
// when every provider is in backoff after a failed connect; wait_for_ready =
// true waits until the deadline (tests/rpc/deadline_test.cc,
// tests/rpc/keepalive_test.cc). Bounded waits only.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "support/cluster.h"

#include "support/cluster_preamble.h"

namespace {

CallOptions with_timeout(std::chrono::milliseconds t, int retries = 2) {
  CallOptions o;
  o.timeout = t;
  o.retries = retries;
  return o;
}

// The trap it fixes: three calls with 5 s deadlines to a refused port took
// 15 s. Now each fails when its connect (or the reconnect backoff) says no
// provider can be reached, naming the connect error.
TEST(WaitForReady, ByDefaultCallsToADeadServerFailLongBeforeTheirDeadlines) {
  Cluster c({Mode::reply});
  c.providers[0]->proxy->down();  // its port refuses connections
  for (int i = 0; i < 3; ++i) {
    auto f = start(c, "work", "", with_timeout(5s));
    auto out = wheelrpc::test::wait(f);
    EXPECT_EQ(out.ec, errc::unavailable) << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "every provider is in backoff after a failed connect"))
        << out.response.error_message;
    EXPECT_TRUE(contains(out.response.error_message, "cannot connect to 127.0.0.1:")) << out.response.error_message;
    EXPECT_LT(out.took, 4s) << "waited for its deadline: " << out.response.error_message;
  }
  EXPECT_EQ(c.client->stats().pending, 0u);
}

// While the connection is being made (here: TCP connected, the HELLO never
// answered) a call waits for it, and ends at its deadline, not at once.
TEST(WaitForReady, ByDefaultACallWaitsWhileTheConnectionIsBeingMade) {
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::test::IoThreads io;
  // Listens, never accepts: the kernel completes the TCP handshake, nobody
  // answers the HELLO.
  boost::asio::ip::tcp::acceptor mute(io.io, wheelrpc::test::loopback0());
  auto co = wheelrpc::test::client_options();
  co.connect_timeout = 30s;  // the handshake stays in progress past the deadline
  wheelrpc::rpc::Client client(io.io.get_executor(), timer, {mute.local_endpoint()}, co);
  auto f = wheelrpc::test::start(client, "work", "", with_timeout(200ms));
  auto out = wheelrpc::test::wait(f);
  EXPECT_EQ(out.ec, errc::timeout) << out.response.error_message;
  EXPECT_TRUE(contains(out.response.error_message, "not sent: no connection ready")) << out.response.error_message;
  EXPECT_GE(out.took, 200ms);
  client.close();
}

// A provider in backoff does not fail calls while another one is connecting
// or ready: without a single retry, every call reaches the live provider.
TEST(WaitForReady, ADownProviderDoesNotFailCallsWhileAnotherOneConnects) {
  // p1's handshake may take long on a loaded machine; it must not time out
  // (then both would be in backoff). p0's connects are refused at once.
  auto co = wheelrpc::test::client_options();
  co.connect_timeout = 10s;
  Cluster c({Mode::reply, Mode::reply}, co);
  c.providers[0]->proxy->down();
  std::vector<std::future<wheelrpc::test::Outcome>> fs;
  for (int i = 0; i < 20; ++i) fs.push_back(start(c, "work", "", with_timeout(10s, /*retries=*/0)));
  for (auto& f : fs) {
    auto out = wheelrpc::test::wait(f);
    EXPECT_FALSE(out.ec) << out.response.error_message;
    EXPECT_EQ(out.response.payload, "p1");
  }
  EXPECT_EQ(c.providers[1]->requests(), 20);
  EXPECT_EQ(c.client->stats().retries, 0u);
}

}  // namespace
