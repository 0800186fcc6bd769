// FaultProxy and its control API against a raw Asio echo upstream, all on
// 127.0.0.1 port 0. Every wait is bounded; timings are measured with
// steady_clock and asserted with generous bounds.

#include <wheelrpc/fault/control_server.h>
#include <wheelrpc/fault/fault_proxy.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "support/fault_proxy_fixture.h"
#include "support/raw_http.h"
#include "support/timed_client.h"
#include "support/wait.h"

namespace {

namespace asio = boost::asio;
namespace fault = wheelrpc::fault;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using wheelrpc::test::is_closed_error;
using wheelrpc::test::loopback;
using wheelrpc::test::pattern;
using wheelrpc::test::since;
using wheelrpc::test::TimedClient;
using wheelrpc::test::wait_until;

// The fixture (io threads, echo upstream, proxy) is shared with
// fault_proxy_lifetime_test.cc.
using FaultProxyTest = wheelrpc::test::FaultProxyFixture;

TEST_F(FaultProxyTest, PassesBytesIntactBothWaysAndForwardsTheEnd) {
  auto c = connect();
  const std::string data = pattern(256 * 1024);
  ASSERT_FALSE(c->write(data));
  std::string back;
  ASSERT_FALSE(c->read_exactly(data.size(), back));
  EXPECT_EQ(back, data);

  // A half-close travels through: the echo sees the end and closes its side.
  c->shutdown_send();
  std::string rest;
  EXPECT_EQ(c->read_until_closed(rest), asio::error::eof);
  EXPECT_TRUE(rest.empty());

  ASSERT_TRUE(wait_until([&] { return proxy_->stats().connections_active == 0; }));
  const auto s = proxy_->stats();
  EXPECT_EQ(s.connections_accepted, 1u);
  EXPECT_EQ(s.bytes_upstream_in, data.size());
  EXPECT_EQ(s.bytes_upstream_out, data.size());
  EXPECT_EQ(s.bytes_downstream_in, data.size());
  EXPECT_EQ(s.bytes_downstream_out, data.size());
  EXPECT_EQ(s.bytes_dropped, 0u);
  EXPECT_EQ(echo_->bytes_received(), data.size());
}

TEST_F(FaultProxyTest, LatencyDelaysEachWayByAtLeastTheConfiguredTime) {
  ASSERT_FALSE(proxy_->add_toxic({"lat_down", fault::Stream::downstream, fault::Latency{100ms, 0ms}}));
  ASSERT_FALSE(proxy_->add_toxic({"lat_up", fault::Stream::upstream, fault::Latency{50ms, 0ms}}));
  auto c = connect();
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    expect_echo(*c, "ping");
    const auto rtt = since(t0);
    EXPECT_GE(rtt, 150ms);
    EXPECT_LT(rtt, 3000ms);
  }
  const auto list = proxy_->toxics();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].applied, 3u);
  EXPECT_EQ(list[1].applied, 3u);
}

TEST_F(FaultProxyTest, LatencyWithJitterPreservesOrder) {
  // Jitter as large as the latency: chunk delays range over 0..80 ms, so
  // without ordering later chunks would overtake earlier ones.
  ASSERT_FALSE(proxy_->add_toxic({"lat", fault::Stream::both, fault::Latency{40ms, 40ms}}));
  auto c = connect();
  std::string sent;
  for (int i = 0; i < 100; ++i) {
    char chunk[16];
    std::snprintf(chunk, sizeof chunk, "<%03d>", i);
    sent += chunk;
    ASSERT_FALSE(c->write(chunk));
    // Paces the writes so that the proxy reads them as separate chunks.
    std::this_thread::sleep_for(1ms);
  }
  std::string back;
  ASSERT_FALSE(c->read_exactly(sent.size(), back, 10s));
  EXPECT_EQ(back, sent);
  EXPECT_GT(proxy_->toxics()[0].applied, 10u);  // the chunks really were separate
}

TEST_F(FaultProxyTest, BandwidthLimitsThroughput) {
  ASSERT_FALSE(proxy_->add_toxic({"bw", fault::Stream::downstream, fault::Bandwidth{200}}));  // 200 KB/s
  auto c = connect();
  const std::string data = pattern(100'000);  // 0.5 s at 200 KB/s
  const auto t0 = Clock::now();
  ASSERT_FALSE(c->write(data));
  std::string back;
  ASSERT_FALSE(c->read_exactly(data.size(), back, 10s));
  const auto elapsed = since(t0);
  EXPECT_EQ(back, data);
  EXPECT_GE(elapsed, 450ms);
  EXPECT_LT(elapsed, 5000ms);
}

TEST_F(FaultProxyTest, BlackholeKeepsTheConnectionOpenAndForwardsNothingUntilRemoved) {
  auto c = connect();
  expect_echo(*c, "before");
  // The toxic reaches the connection's strand before the bytes written next.
  ASSERT_FALSE(proxy_->add_toxic({"hole", fault::Stream::upstream, fault::Blackhole{}}));
  ASSERT_FALSE(c->write("lost"));
  std::string got;
  // Nothing arrives and the connection is not closed: the read times out.
  EXPECT_EQ(c->read_some(got, 300ms), asio::error::timed_out);
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().bytes_dropped == 4; }));
  EXPECT_EQ(echo_->bytes_received(), 6u);

  ASSERT_FALSE(proxy_->remove_toxic("hole"));
  expect_echo(*c, "after");
  EXPECT_EQ(proxy_->stats().connections_active, 1u);
}

TEST_F(FaultProxyTest, ResetPeerResetsExistingAndNewConnectionsPromptly) {
  auto c = connect();
  expect_echo(*c, "hello");
  const auto t0 = Clock::now();
  ASSERT_FALSE(proxy_->add_toxic({"rst", fault::Stream::downstream, fault::ResetPeer{0ms}}));
  std::string got;
  const auto ec = c->read_until_closed(got, 5s);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
  EXPECT_LT(since(t0), 2000ms);

  // A new connection is accepted and reset at once: so soon, sometimes, that
  // the client's connect already reports the reset.
  TimedClient c2;
  const auto t1 = Clock::now();
  if (const auto cec = c2.connect(proxy_->local_endpoint())) {
    EXPECT_EQ(cec, asio::error::connection_reset) << cec.message();
  } else {
    std::string got2;
    const auto rec = c2.read_until_closed(got2, 5s);
    EXPECT_TRUE(is_closed_error(rec)) << rec.message();
    EXPECT_TRUE(got2.empty());
  }
  EXPECT_LT(since(t1), 2000ms);
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().resets == 2; }));
  EXPECT_EQ(proxy_->toxics()[0].applied, 2u);
}

TEST_F(FaultProxyTest, ResetPeerAfterATimeout) {
  ASSERT_FALSE(proxy_->add_toxic({"rst", fault::Stream::both, fault::ResetPeer{300ms}}));
  const auto t0 = Clock::now();
  auto c = connect();
  expect_echo(*c, "in time");  // traffic flows until the timeout
  std::string got;
  const auto ec = c->read_until_closed(got, 5s);
  const auto elapsed = since(t0);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 3000ms);
  EXPECT_EQ(proxy_->stats().resets, 1u);
}

TEST_F(FaultProxyTest, RemovingAPendingResetPeerCancelsIt) {
  ASSERT_FALSE(proxy_->add_toxic({"rst", fault::Stream::both, fault::ResetPeer{200ms}}));
  auto c = connect();
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().connections_active == 1; }));
  ASSERT_FALSE(proxy_->remove_toxic("rst"));
  std::string got;
  // Well past the timeout, the connection is still there.
  EXPECT_EQ(c->read_some(got, 500ms), asio::error::timed_out);
  expect_echo(*c, "still here");
  EXPECT_EQ(proxy_->stats().resets, 0u);
}

TEST_F(FaultProxyTest, LimitDataPassesExactlyNBytesThenCloses) {
  ASSERT_FALSE(proxy_->add_toxic({"limit", fault::Stream::downstream, fault::LimitData{1000}}));
  auto c = connect();
  const std::string data = pattern(5000);
  ASSERT_FALSE(c->write(data));
  std::string got;
  const auto ec = c->read_until_closed(got, 5s);
  EXPECT_TRUE(is_closed_error(ec)) << ec.message();
  EXPECT_EQ(got, data.substr(0, 1000));
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().connections_active == 0; }));
  EXPECT_EQ(proxy_->stats().limit_closes, 1u);
}

TEST_F(FaultProxyTest, SlicerDeliversAllBytesInSmallDelayedPieces) {
  // 4000 bytes in slices of 100 ± 50 bytes, 2 ms apart: at least 26 slices,
  // so at least 52 ms.
  ASSERT_FALSE(proxy_->add_toxic({"slice", fault::Stream::downstream, fault::Slicer{100, 50, 2000us}}));
  auto c = connect();
  const std::string data = pattern(4000);
  const auto t0 = Clock::now();
  ASSERT_FALSE(c->write(data));
  std::string got;
  int reads = 0;
  while (got.size() < data.size()) {
    const auto ec = c->read_some(got, 5s);
    ASSERT_FALSE(ec) << ec.message();
    ++reads;
  }
  EXPECT_EQ(got, data);
  EXPECT_GE(since(t0), 52ms);
  EXPECT_GE(reads, 5);  // slices 2 ms apart: a busy machine may merge a few reads
}

TEST_F(FaultProxyTest, DownRefusesAndDropsConnectionsUpAcceptsOnTheSamePort) {
  auto c = connect();
  expect_echo(*c, "one");
  const auto port = proxy_->local_endpoint().port();

  const auto t0 = Clock::now();
  proxy_->down();
  EXPECT_FALSE(proxy_->is_up());
  std::string got;
  EXPECT_TRUE(is_closed_error(c->read_until_closed(got, 5s)));
  EXPECT_LT(since(t0), 2000ms);

  TimedClient refused;
  EXPECT_EQ(refused.connect(proxy_->local_endpoint()), asio::error::connection_refused);

  // Bounded retry: the freed port may briefly be another test's source port.
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return !proxy_->up(); }));
  EXPECT_TRUE(proxy_->is_up());
  EXPECT_EQ(proxy_->local_endpoint().port(), port);
  auto c2 = connect();
  expect_echo(*c2, "two");
  EXPECT_TRUE(proxy_->stats().up);
}

TEST_F(FaultProxyTest, RemovingLatencyReleasesHeldBytesAtOnceInOrder) {
  ASSERT_FALSE(proxy_->add_toxic({"slow", fault::Stream::downstream, fault::Latency{10s, 0ms}}));
  auto c = connect();
  ASSERT_FALSE(c->write("first,"));
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().bytes_downstream_in == 6; }));
  ASSERT_FALSE(c->write("second"));
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().bytes_downstream_in == 12; }));
  std::string got;
  EXPECT_EQ(c->read_some(got, 100ms), asio::error::timed_out);  // held by the toxic

  const auto t0 = Clock::now();
  ASSERT_FALSE(proxy_->remove_toxic("slow"));
  ASSERT_FALSE(c->read_exactly(12, got, 5s));
  EXPECT_EQ(got, "first,second");
  EXPECT_LT(since(t0), 2000ms);  // not the 10 s of the toxic
}

TEST_F(FaultProxyTest, ToxicsComeAndGoWhileTrafficFlows) {
  auto c = connect();
  std::atomic<bool> done{false};
  std::thread churn([&] {
    const std::vector<fault::Toxic> toxics = {
        {"lat", fault::Stream::both, fault::Latency{5ms, 5ms}},
        {"bw", fault::Stream::downstream, fault::Bandwidth{2000}},
        {"slice", fault::Stream::upstream, fault::Slicer{64, 32, 100us}},
    };
    for (int round = 0; !done.load(); ++round) {
      const auto& t = toxics[static_cast<std::size_t>(round) % toxics.size()];
      EXPECT_FALSE(proxy_->add_toxic(t));
      std::this_thread::sleep_for(3ms);
      EXPECT_FALSE(proxy_->remove_toxic(t.name));
    }
  });
  std::string sent, back;
  for (int i = 0; i < 200; ++i) {
    std::string chunk = std::to_string(i) + ":" + pattern(static_cast<std::size_t>(200 + i * 13));
    sent += chunk;
    ASSERT_FALSE(c->write(chunk));
    ASSERT_FALSE(c->read_exactly(chunk.size(), back, 10s));
  }
  done = true;
  churn.join();
  EXPECT_EQ(back, sent);
  EXPECT_GT(proxy_->stats().toxics_applied, 0u);
  EXPECT_TRUE(proxy_->toxics().empty());
}

TEST_F(FaultProxyTest, UpstreamRefusalClosesTheClientConnection) {
  echo_->stop();
  // The echo's port is closed now, so the upstream connect is refused.
  TimedClient c;
  ASSERT_FALSE(c.connect(proxy_->local_endpoint()));
  std::string got;
  EXPECT_TRUE(is_closed_error(c.read_until_closed(got, 5s)));
  ASSERT_TRUE(wait_until([&] { return proxy_->stats().upstream_connect_failures == 1; }));
}

TEST_F(FaultProxyTest, RejectsBadToxicsAndUnknownNames) {
  EXPECT_EQ(proxy_->add_toxic({"", fault::Stream::both, fault::Blackhole{}}), fault::errc::invalid_toxic);
  EXPECT_EQ(proxy_->add_toxic({"a b", fault::Stream::both, fault::Blackhole{}}), fault::errc::invalid_toxic);
  EXPECT_EQ(proxy_->add_toxic({"bw", fault::Stream::both, fault::Bandwidth{0}}), fault::errc::invalid_toxic);
  EXPECT_EQ(proxy_->add_toxic({"s", fault::Stream::both, fault::Slicer{10, 10, 0us}}), fault::errc::invalid_toxic);
  EXPECT_EQ(proxy_->add_toxic({"l", fault::Stream::both, fault::Latency{-1ms, 0ms}}), fault::errc::invalid_toxic);
  ASSERT_FALSE(proxy_->add_toxic({"x", fault::Stream::both, fault::Blackhole{}}));
  EXPECT_EQ(proxy_->add_toxic({"x", fault::Stream::upstream, fault::Latency{}}), fault::errc::toxic_exists);
  EXPECT_EQ(proxy_->remove_toxic("nope"), fault::errc::no_such_toxic);
  EXPECT_EQ(fault::make_error_code(fault::errc::toxic_exists).category().name(), std::string("wheelrpc.fault"));
  fault::FaultProxy never_started(io_.get_executor(), loopback(0), echo_->endpoint());
  EXPECT_EQ(never_started.up(), fault::errc::not_started);
  proxy_->stop();
  EXPECT_EQ(proxy_->start(), fault::errc::stopped);
}

// ---- the HTTP control API -------------------------------------------------------

namespace control {

using wheelrpc::test::http_call;
using wheelrpc::test::http_exchange;

class ControlApiTest : public FaultProxyTest {
 protected:
  void SetUp() override {
    FaultProxyTest::SetUp();
    control_ = std::make_unique<fault::ControlServer>(io_.get_executor(), *proxy_, 0);
    ASSERT_FALSE(control_->start());
    api_ = control_->local_endpoint();
    ASSERT_EQ(api_.address().to_string(), "127.0.0.1");
  }
  asio::ip::tcp::endpoint api_;
};

TEST_F(ControlApiTest, ListsAddsAndRemovesToxics) {
  auto r = http_call(api_, "GET", "/toxics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[]\n");

  r = http_call(api_, "POST", "/toxics",
                R"({"name":"lat1","type":"latency","stream":"downstream","attributes":{"latency":200,"jitter":20}})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("name":"lat1")"), std::string::npos) << r.body;
  const auto list = proxy_->toxics();
  ASSERT_EQ(list.size(), 1u);
  const auto* lat = std::get_if<fault::Latency>(&list[0].toxic.attributes);
  ASSERT_NE(lat, nullptr);
  EXPECT_EQ(lat->latency, 200ms);
  EXPECT_EQ(lat->jitter, 20ms);

  // Toxiproxy's defaults: stream downstream, name TYPE_STREAM.
  r = http_call(api_, "POST", "/toxics", R"({"type":"limit_data","attributes":{"bytes":10},"toxicity":1.0})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("name":"limit_data_downstream")"), std::string::npos) << r.body;

  r = http_call(api_, "GET", "/toxics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("lat1"), std::string::npos);
  EXPECT_NE(r.body.find("limit_data_downstream"), std::string::npos);
  EXPECT_EQ(http_call(api_, "GET", "/toxics/lat1").status, 200);

  r = http_call(api_, "POST", "/toxics", R"({"name":"lat1","type":"blackhole"})");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);

  EXPECT_EQ(http_call(api_, "DELETE", "/toxics/lat1").status, 204);
  EXPECT_EQ(http_call(api_, "DELETE", "/toxics/lat1").status, 404);
  EXPECT_EQ(http_call(api_, "GET", "/toxics/lat1").status, 404);
  ASSERT_EQ(proxy_->toxics().size(), 1u);
  EXPECT_EQ(proxy_->toxics()[0].toxic.name, "limit_data_downstream");
}

TEST_F(ControlApiTest, DownUpAndStats) {
  auto c = connect();
  expect_echo(*c, "x");

  auto r = http_call(api_, "POST", "/down");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"up\":false}\n");
  EXPECT_FALSE(proxy_->is_up());
  TimedClient refused;
  EXPECT_EQ(refused.connect(proxy_->local_endpoint()), asio::error::connection_refused);

  r = http_call(api_, "POST", "/up");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"up\":true}\n");
  auto c2 = connect();
  expect_echo(*c2, "y");

  r = http_call(api_, "GET", "/stats");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"connections_accepted\":2"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"up\":true"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"bytes_upstream_in\":2"), std::string::npos) << r.body;
}

TEST_F(ControlApiTest, BadRequestsAreClientErrorsNeverCrashes) {
  const char* bad_bodies[] = {
      "{not json",
      "[]",
      R"({"name":"a","type":"earthquake"})",
      R"({"name":"a","type":"latency","attributes":{"latency":-5}})",
      R"({"name":"a","type":"latency","attributes":{"speed":5}})",
      R"({"name":"a","type":"latency","attributes":{"latency":"200"}})",
      R"({"name":"a","type":"latency","stream":"sideways"})",
      R"({"name":"a","type":"latency","colour":"red"})",
      R"({"name":"a b","type":"blackhole"})",
      R"({"name":"a","type":"slicer","attributes":{"average_size":0}})",
      R"({"name":"a","type":"bandwidth","attributes":{"rate":1.5}})",
      R"({"name":"a","type":"blackhole","toxicity":0.5})",
      R"({"name":"a"})",
      "",
  };
  for (const char* body : bad_bodies) {
    const auto r = http_call(api_, "POST", "/toxics", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_NE(r.body.find("\"error\""), std::string::npos) << body;
  }
  EXPECT_TRUE(proxy_->toxics().empty());

  auto r = http_exchange(api_, "this is not http\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(http_call(api_, "GET", "/nowhere").status, 404);
  EXPECT_EQ(http_call(api_, "PUT", "/toxics").status, 405);
  EXPECT_EQ(http_call(api_, "GET", "/down").status, 405);
  // Still serving.
  EXPECT_EQ(http_call(api_, "GET", "/toxics").status, 200);
}

}  // namespace control

}  // namespace
