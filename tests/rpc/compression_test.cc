// Compression end to end (docs/compression.md): every algorithm both ways
// on calls and streams, below and above the threshold; what the HELLO
// announces bounds what is sent (an old peer gets identity); the policy's
// precedence (call > IDL > client default) and the server's reply policy
// (mirror, or its own); the per-method payload bytes before and after.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/method_policy.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/transport/compression.h>

#include "support/frame_peer.h"
#include "support/rpc_fixture.h"
#include "support/scripted_server.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::MethodStats;
using wheelrpc::rpc::ServerOptions;
using wheelrpc::rpc::Status;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Compression;
using wheelrpc::transport::CompressionSet;

namespace {

/// Text that compresses as an API's JSON does (about 5-10x).
std::string json_like(std::size_t size) {
  std::string out;
  std::uint64_t x = 42;
  const char* names[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
  while (out.size() < size) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out += "{\"id\":" + std::to_string(x >> 40) + ",\"name\":\"" + names[(x >> 20) % 6] +
           "\",\"active\":" + ((x >> 7) & 1 ? "true" : "false") + ",\"score\":" + std::to_string((x >> 30) % 1000) +
           "},";
  }
  out.resize(size);
  return out;
}

std::optional<MethodStats> find(const std::vector<MethodStats>& all, const std::string& method) {
  for (const auto& m : all) {
    if (m.method == method) return m;
  }
  return std::nullopt;
}

/// Echoes each message of a stream back; held only by its pending operations.
struct ChatEcho : std::enable_shared_from_this<ChatEcho> {
  explicit ChatEcho(wheelrpc::rpc::ServerStream s) : stream(std::move(s)) {}
  void read() {
    stream.async_read([self = shared_from_this()](boost::system::error_code ec, std::optional<std::string> m) {
      if (ec || !m) {
        self->stream.finish(wheelrpc::rpc::StatusCode::ok, "");
        return;
      }
      self->stream.async_write(std::move(*m), [self](boost::system::error_code werr) {
        if (!werr) self->read();
      });
    });
  }
  wheelrpc::rpc::ServerStream stream;
};

class EveryAlgorithm : public ::testing::TestWithParam<Compression> {};

TEST_P(EveryAlgorithm, ACallsRequestAndReplyGoCompressedAndComeBackWhole) {
  RpcFixture f;
  const std::string payload = json_like(64 * 1024);
  CallOptions o;
  o.compression = GetParam();
  auto out = wheelrpc::test::call_and_wait(*f.client, "echo", payload, o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, payload);

  const auto c = find(f.client->method_stats(), "echo");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sent.messages, 1u);
  EXPECT_EQ(c->sent.compressed, 1u);
  EXPECT_EQ(c->sent.bytes, payload.size());
  EXPECT_LT(c->sent.wire_bytes * 3, c->sent.bytes) << "JSON-like text shrinks at least 3x";
  // The server mirrors the call's algorithm.
  EXPECT_EQ(c->received.compressed, 1u);
  EXPECT_EQ(c->received.bytes, payload.size());
  EXPECT_GT(c->received.ratio(), 3.0);
  const auto s = find(f.server.method_stats(), "echo");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->received.compressed, 1u);
  EXPECT_EQ(s->received.wire_bytes, c->sent.wire_bytes);
  EXPECT_EQ(s->sent.compressed, 1u);
}

TEST_P(EveryAlgorithm, BelowTheThresholdNothingIsCompressed) {
  RpcFixture f;
  CallOptions o;
  o.compression = GetParam();
  const std::string small = json_like(1023);  // the default threshold is 1024
  auto out = wheelrpc::test::call_and_wait(*f.client, "echo", small, o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, small);
  const auto c = find(f.client->method_stats(), "echo");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sent.compressed, 0u);
  EXPECT_EQ(c->sent.wire_bytes, small.size());
  EXPECT_EQ(c->received.compressed, 0u);
}

TEST_P(EveryAlgorithm, EachStreamMessageGoesCompressedBothWays) {
  RpcFixture f({}, {}, 2, [](wheelrpc::rpc::Server& server) {
    server.handle_stream("chat",
                         [](wheelrpc::rpc::ServerStream s) { std::make_shared<ChatEcho>(std::move(s))->read(); });
  });
  CallOptions o;
  o.compression = GetParam();
  auto opened = std::make_shared<std::promise<std::pair<boost::system::error_code, wheelrpc::rpc::ClientStream>>>();
  f.client->async_open_stream("chat", o, [opened](boost::system::error_code ec, wheelrpc::rpc::ClientStream s) {
    opened->set_value({ec, std::move(s)});
  });
  auto [ec, stream] = opened->get_future().get();
  ASSERT_FALSE(ec) << ec.message();
  const std::vector<std::string> messages = {json_like(8 * 1024), "short", json_like(20 * 1024)};
  for (const auto& m : messages) {
    std::promise<boost::system::error_code> wrote;
    stream.async_write(m, [&](boost::system::error_code e) { wrote.set_value(e); });
    ASSERT_FALSE(wrote.get_future().get());
    std::promise<std::optional<std::string>> got;
    stream.async_read([&](boost::system::error_code e, std::optional<std::string> r) {
      EXPECT_FALSE(e) << e.message();
      got.set_value(std::move(r));
    });
    auto r = got.get_future().get();
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, m);
  }
  stream.cancel();
  const auto c = find(f.client->method_stats(), "chat");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sent.messages, 3u);
  EXPECT_EQ(c->sent.compressed, 2u) << "the two messages over the threshold";
  EXPECT_EQ(c->received.messages, 3u);
  EXPECT_EQ(c->received.compressed, 2u) << "the server's messages mirror the call's algorithm";
  EXPECT_LT(c->sent.wire_bytes * 2, c->sent.bytes);
}

INSTANTIATE_TEST_SUITE_P(Compression, EveryAlgorithm,
                         ::testing::Values(Compression::zstd, Compression::lz4, Compression::gzip,
                                           Compression::deflate),
                         [](const auto& p) { return std::string(wheelrpc::transport::to_string(p.param)); });

TEST(CompressionPeers, AServerThatDecodesNothingGetsIdentityAndTheCallWorks) {
  ServerOptions so;
  so.compression.accept = CompressionSet{};
  RpcFixture f(so);
  CallOptions o;
  o.compression = Compression::zstd;
  const std::string payload = json_like(16 * 1024);
  auto out = wheelrpc::test::call_and_wait(*f.client, "echo", payload, o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, payload);
  const auto c = find(f.client->method_stats(), "echo");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sent.compressed, 0u);
  EXPECT_EQ(c->received.compressed, 1u) << "the client still decodes zstd: the reply mirrors it";
}

/// What a scripted server saw of each request: its encoding bytes.
struct Seen {
  std::mutex mu;
  std::vector<std::pair<std::uint8_t, std::uint8_t>> frames;  // encoding, reply_encoding
  std::vector<std::string> payloads;
};

TEST(CompressionPeers, AnOldServerThatAnnouncesNothingGetsIdentity) {
  wheelrpc::test::IoThreads threads;
  Seen seen;
  wheelrpc::test::ScriptedServer old(threads.io.get_executor(), true,
                                     [&](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& req) {
                                       {
                                         std::lock_guard lock(seen.mu);
                                         seen.frames.emplace_back(req.header.encoding, req.header.reply_encoding);
                                         seen.payloads.push_back(req.payload);
                                       }
                                       ch.send(wheelrpc::test::ScriptedServer::reply_to(req, "fine"));
                                     });
  // It answers the HELLO as a server without compression does.
  old.edit_hello([](wheelrpc::transport::Attachments& a) {
    std::erase_if(a, [](const auto& kv) { return kv.first == "accept_encoding"; });
  });
  wheelrpc::timer::HashedWheelTimer timer;
  wheelrpc::rpc::Client client(threads.io.get_executor(), timer,
                               std::vector<boost::asio::ip::tcp::endpoint>{old.endpoint()});
  CallOptions o;
  o.compression = Compression::zstd;
  const std::string payload = json_like(16 * 1024);
  auto out = wheelrpc::test::call_and_wait(client, "echo", payload, o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  client.close();
  std::lock_guard lock(seen.mu);
  ASSERT_EQ(seen.frames.size(), 1u);
  EXPECT_EQ(seen.frames[0].first, 0) << "nothing compressed to a server that did not announce it";
  EXPECT_EQ(seen.payloads[0], payload);
}

TEST(CompressionPeers, AnOldClientThatAnnouncesNothingGetsItsRepliesAsTheyAre) {
  ServerOptions so;
  so.compression.reply = Compression::zstd;  // the server would compress every reply
  RpcFixture f(so);
  wheelrpc::test::FramePeer peer(f.server.local_endpoint());
  auto hello = peer.hello();  // no accept_encoding
  ASSERT_TRUE(hello);
  EXPECT_EQ(wheelrpc::transport::CompressionSet::all().to_string(), [&] {
    for (const auto& [k, v] : hello->attachments) {
      if (k == "accept_encoding") return v;
    }
    return std::string();
  }()) << "the server announces what it decodes";
  const std::string payload = json_like(16 * 1024);
  peer.request(7, "echo", payload, 0, static_cast<std::uint8_t>(Compression::zstd));
  auto reply = peer.read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->header.status, 0);
  EXPECT_EQ(reply->header.encoding, 0);
  EXPECT_EQ(reply->payload, payload);
}

/// The algorithm a client's call used, as a scripted server saw it.
class Precedence : public ::testing::Test {
 protected:
  std::uint8_t encoding_of(CallOptions o, ClientOptions co = {}) {
    Seen seen;
    wheelrpc::test::ScriptedServer server(threads_.io.get_executor(), true,
                                          [&](wheelrpc::transport::Channel& ch, wheelrpc::transport::Frame& req) {
                                            {
                                              std::lock_guard lock(seen.mu);
                                              seen.frames.emplace_back(req.header.encoding, req.header.reply_encoding);
                                            }
                                            ch.send(wheelrpc::test::ScriptedServer::reply_to(req, "fine"));
                                          });
    wheelrpc::rpc::Client client(threads_.io.get_executor(), timer_,
                                 std::vector<boost::asio::ip::tcp::endpoint>{server.endpoint()}, co);
    auto out = wheelrpc::test::call_and_wait(client, "m", json_like(8 * 1024), o);
    EXPECT_FALSE(out.ec) << out.response.error_message;
    client.close();
    std::lock_guard lock(seen.mu);
    EXPECT_EQ(seen.frames.size(), 1u);
    if (seen.frames.empty()) return 0xff;
    // The reply is asked in the call's algorithm, compressed or not.
    EXPECT_EQ(seen.frames[0].second, seen.frames[0].first);
    return seen.frames[0].first;
  }

  wheelrpc::timer::HashedWheelTimer timer_;
  wheelrpc::test::IoThreads threads_;
};

TEST_F(Precedence, TheCallBeatsTheIdlBeatsTheClientDefault) {
  ClientOptions co;
  co.call_defaults.compression = Compression::lz4;
  CallOptions plain;
  EXPECT_EQ(encoding_of(plain, co), static_cast<std::uint8_t>(Compression::lz4)) << "the client default";

  wheelrpc::rpc::MethodPolicy idl;
  idl.compression = Compression::gzip;
  CallOptions from_idl;
  wheelrpc::rpc::fill_policy(from_idl, idl);
  EXPECT_EQ(encoding_of(from_idl, co), static_cast<std::uint8_t>(Compression::gzip)) << "the IDL beats the default";

  CallOptions own;
  own.compression = Compression::zstd;
  wheelrpc::rpc::fill_policy(own, idl);
  EXPECT_EQ(encoding_of(own, co), static_cast<std::uint8_t>(Compression::zstd)) << "the call beats the IDL";

  CallOptions off;
  off.compression = Compression::identity;  // given: overrides the default
  EXPECT_EQ(encoding_of(off, co), 0);
  EXPECT_EQ(encoding_of(CallOptions{}), 0) << "built in: none";
}

TEST(CompressionReplies, TheServerMirrorsTheCallOrUsesItsOwnWhenTheClientDecodesIt) {
  const std::string big = json_like(32 * 1024);
  auto reply_encoding = [&](ServerOptions so, std::uint8_t asked, std::string accept) {
    RpcFixture f(so, {}, 2, [&](wheelrpc::rpc::Server& s) { s.handle("big", [&](auto, auto r) { r.reply(big); }); });
    wheelrpc::test::FramePeer peer(f.server.local_endpoint());
    EXPECT_TRUE(peer.hello({{"accept_encoding", accept}}));
    peer.request(3, "big", "?", 0, asked);  // a request too small to compress
    auto reply = peer.read();
    EXPECT_TRUE(reply && reply->header.status == 0);
    if (!reply) return 0xff;
    std::string plain = reply->payload;
    if (reply->header.encoding != 0) {
      std::string out;
      EXPECT_FALSE(
          wheelrpc::transport::decompress(static_cast<Compression>(reply->header.encoding), reply->payload, {}, out));
      plain = out;
    }
    EXPECT_EQ(plain, big);
    return static_cast<int>(reply->header.encoding);
  };
  const auto z = static_cast<std::uint8_t>(Compression::zstd);
  const auto g = static_cast<std::uint8_t>(Compression::gzip);
  EXPECT_EQ(reply_encoding({}, z, "zstd,gzip"), z) << "mirrored";
  EXPECT_EQ(reply_encoding({}, 0, "zstd,gzip"), 0) << "a call without compression gets none";
  ServerOptions own;
  own.compression.reply = Compression::gzip;
  EXPECT_EQ(reply_encoding(own, z, "zstd,gzip"), g) << "the server's own";
  EXPECT_EQ(reply_encoding(own, z, "zstd"), 0) << "never one the client did not announce";
  ServerOptions never;
  never.compression.reply = Compression::identity;
  EXPECT_EQ(reply_encoding(never, z, "zstd,gzip"), 0);
}

}  // namespace
