// Hostile HTTP/2 clients against a real server's gRPC wire, in process (a
// Server with gRPC-path methods, support/grpc_test_server.h, and tight
// GrpcServerOptions). Each abuser gets a clear answer, a GOAWAY (and the
// close) or an RST_STREAM (or a refusal) of its stream alone, while a
// well-behaved native client and a well-behaved gRPC client, calling all
// along on connections of their own, complete every call. The frames are
// made by hand (support/h2_frames.h) where no client library would send them.
#include <gtest/gtest.h>

#include <random>

#include "abuse/abuse_support.h"
#include "abuse/grpc_abuse_support.h"
#include "support/compression_bombs.h"
#include "support/grpc_test_server.h"

namespace {

using namespace wheelrpc::test::abuse;
namespace h2 = wheelrpc::test::h2;
using wheelrpc::test::grpc_frame;
using wheelrpc::test::grpc_request_headers;
using wheelrpc::test::H2Headers;

constexpr std::uint32_t kMaxBody = 1u << 20;
constexpr std::uint32_t kMaxStreams = 16;
constexpr std::uint32_t kMaxHeaderBytes = 8u << 10;

wheelrpc::rpc::ServerOptions abuse_options() {
  wheelrpc::rpc::ServerOptions o;
  o.channel.max_body = kMaxBody;
  o.grpc.max_concurrent_streams = kMaxStreams;
  o.grpc.max_header_list_bytes = kMaxHeaderBytes;
  o.grpc.min_ping_interval = 1000ms;
  o.grpc.max_ping_strikes = 2;
  o.grpc.max_resets_burst = 20;
  o.grpc.resets_per_second = 10;
  return o;
}

/// The HTTP/2 error codes (RFC 9113, 7).
constexpr std::uint32_t kNoError = 0, kProtocolError = 1, kRefusedStream = 7, kEnhanceYourCalm = 11;

class GrpcAbuse : public ::testing::Test {
 protected:
  void SetUp() override {
    native_.emplace(f_.port());
    ASSERT_TRUE(native_->start(50)) << native_->first_error();
    grpc_.emplace(f_.port());
    ASSERT_TRUE(grpc_->start(50)) << grpc_->first_error();
  }

  /// After the abuse: both good clients completed every call, and new
  /// connections of both protocols are served.
  void expect_undisturbed() {
    // Each goes on calling after the abuse (the abuse may be over in a few ms).
    const auto native_then = native_->ok(), grpc_then = grpc_->ok();
    EXPECT_TRUE(wheelrpc::test::wait_until(
        [&] { return native_->ok() >= native_then + 20 && grpc_->ok() >= grpc_then + 20; }, 30s))
        << native_->ok() - native_then << " native calls and " << grpc_->ok() - grpc_then << " gRPC calls since";
    native_->stop();
    grpc_->stop();
    EXPECT_EQ(native_->failed(), 0u) << native_->first_error();
    EXPECT_EQ(grpc_->failed(), 0u) << grpc_->first_error();
    wheelrpc::test::H2Client fresh(f_.port());
    const auto id = fresh.grpc_call("/test.Echo/Echo", "after");
    ASSERT_TRUE(fresh.wait_closed(id));
    EXPECT_EQ(fresh.stream(id).messages(), std::vector<std::string>{"after"});
  }

  /// The preface and SETTINGS, then the server's SETTINGS, acknowledged:
  /// its limits and windows apply to what follows.
  static void open(h2::RawConnection& c) {
    ASSERT_TRUE(c.send(h2::opening()));
    ASSERT_TRUE(c.read_until([](const h2::Frame& f) { return f.type == h2::kSettings && (f.flags & h2::kAck) == 0; }));
  }
  /// A request's HEADERS on `id` (END_STREAM when `end`).
  static std::string request(std::int32_t id, std::string_view path = "/test.Echo/Echo", bool end = false,
                             const H2Headers& extra = {}) {
    return h2::headers(id, grpc_request_headers(path, extra), end);
  }
  /// A unary call on an abuser's connection that must still be answered.
  static void expect_served(h2::RawConnection& c, std::int32_t id) {
    ASSERT_TRUE(c.send(request(id) + h2::data(id, grpc_frame("still"), true)));
    const auto h = c.wait_frame(h2::kHeaders, id);
    ASSERT_TRUE(h) << "no answer on stream " << id;
    EXPECT_EQ(h->field(":status"), "200");
  }

  wheelrpc::test::GrpcFixture f_{abuse_options()};
  std::optional<GoodClient> native_;
  std::optional<GoodGrpcClient> grpc_;
};

TEST_F(GrpcAbuse, GarbageAfterThePrefaceIsAnsweredWithGoawayAndTheClose) {
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 20; ++i) {
    h2::RawConnection c(f_.port());
    ASSERT_TRUE(c.connected());
    std::string garbage(4096, '\0');
    for (auto& ch : garbage) ch = static_cast<char>(rng());
    garbage[3] = '\x00';  // a DATA frame where SETTINGS must come first
    c.send(std::string(h2::kPreface) + garbage);
    const auto g = c.wait_goaway();
    ASSERT_TRUE(g) << "round " << i;
    EXPECT_NE(g->error_code(), kNoError);
    EXPECT_TRUE(c.wait_eof()) << "round " << i;
  }
  // After a proper SETTINGS: a frame header announcing 16 MiB (over
  // SETTINGS_MAX_FRAME_SIZE), then noise.
  for (int i = 0; i < 20; ++i) {
    h2::RawConnection c(f_.port());
    std::string garbage(4096, '\0');
    for (auto& ch : garbage) ch = static_cast<char>(rng());
    garbage[0] = '\xff';
    c.send(h2::opening() + garbage);
    const auto g = c.wait_goaway();
    ASSERT_TRUE(g) << "round " << i;
    EXPECT_NE(g->error_code(), kNoError);
    EXPECT_TRUE(c.wait_eof()) << "round " << i;
  }
  expect_undisturbed();
}

TEST_F(GrpcAbuse, HeadersWithoutPathResetTheStreamAlone) {
  h2::RawConnection c(f_.port());
  H2Headers no_path = grpc_request_headers("/test.Echo/Echo");
  no_path.erase(no_path.begin() + 3);
  open(c);
  ASSERT_TRUE(c.send(h2::headers(1, no_path, true)));
  const auto rst = c.wait_frame(h2::kRstStream, 1);
  ASSERT_TRUE(rst);
  EXPECT_EQ(rst->error_code(), kProtocolError);
  expect_served(c, 3);
  EXPECT_FALSE(c.find(h2::kGoaway));
  expect_undisturbed();
}

TEST_F(GrpcAbuse, HeadersOverTheListLimitAreRefusedOnTheirStreamAlone) {
  h2::RawConnection c(f_.port());
  // 20 KiB of one header, over 8 KiB: a HEADERS and a CONTINUATION.
  const std::string block =
      h2::block(grpc_request_headers("/test.Echo/Echo")) + h2::literal("x-big", std::string(20000, 'b'));
  const std::string first = block.substr(0, 16000), rest = block.substr(16000);
  open(c);
  ASSERT_TRUE(c.send(h2::frame(h2::kHeaders, 0, 1, first) + h2::frame(h2::kContinuation, h2::kEndHeaders, 1, rest)));
  // The answer (HTTP 431, RESOURCE_EXHAUSTED), then RST_STREAM NO_ERROR: the
  // client need not send the rest of the call.
  const auto h = c.wait_frame(h2::kHeaders, 1);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->field(":status"), "431");
  EXPECT_EQ(h->field("grpc-status"), "8");
  const auto rst = c.wait_frame(h2::kRstStream, 1);
  ASSERT_TRUE(rst);
  EXPECT_EQ(rst->error_code(), kNoError);
  expect_served(c, 3);
  EXPECT_FALSE(c.find(h2::kGoaway));
  expect_undisturbed();
}

TEST_F(GrpcAbuse, AnHpackBombIsRefusedAtTheHeaderListLimitWithoutDecodingItAll) {
  h2::RawConnection c(f_.port());
  // Stream 1 puts a 4,000-byte header in the dynamic table (index 62): a fine call.
  const std::string entry = h2::literal("x-bomb", std::string(4000, 'B'), true);
  open(c);
  ASSERT_TRUE(
      c.send(h2::frame(h2::kHeaders, h2::kEndHeaders, 1, h2::block(grpc_request_headers("/test.Echo/Echo")) + entry) +
             h2::data(1, grpc_frame("one"), true)));
  const auto first = c.wait_frame(h2::kHeaders, 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->field(":status"), "200");
  // Stream 3 refers to it 16,000 times: 64 MB of headers in 16 KB.
  std::string bomb = h2::block(grpc_request_headers("/test.Echo/Echo"));
  for (int i = 0; i < 16000; ++i) bomb += h2::indexed(62);
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.send(h2::frame(h2::kHeaders, h2::kEndHeaders, 3, bomb) + h2::data(3, grpc_frame("two"), true)));
  const auto h = c.wait_frame(h2::kHeaders, 3);
  ASSERT_TRUE(h) << "no answer to the bomb";
  EXPECT_LT(Clock::now() - t0, 10s);
  EXPECT_EQ(h->field(":status"), "431");
  EXPECT_EQ(h->field("grpc-status"), "8");
  // The dynamic table is intact: the connection goes on.
  expect_served(c, 5);
  EXPECT_FALSE(c.find(h2::kGoaway));
  expect_undisturbed();
}

TEST_F(GrpcAbuse, AContinuationFloodIsCutOff) {
  h2::RawConnection c(f_.port());
  ASSERT_TRUE(
      c.send(h2::opening() + h2::frame(h2::kHeaders, 0, 1, h2::block(grpc_request_headers("/test.Echo/Echo")))));
  // CONTINUATION frames with a small header each, never END_HEADERS.
  const std::string one = h2::frame(h2::kContinuation, 0, 1, h2::literal("x-more", "value"));
  std::string burst;
  for (int i = 0; i < 1000; ++i) burst += one;
  bool sending = true;
  for (int round = 0; round < 1000 && sending; ++round) sending = c.send(burst);
  // Cut off: a GOAWAY and the close.
  EXPECT_TRUE(c.wait_eof(30s)) << "the flood was taken for " << (sending ? "all of its" : "part of its") << " frames";
  const auto g = c.find(h2::kGoaway);
  ASSERT_TRUE(g) << "closed without a GOAWAY";
  EXPECT_NE(g->error_code(), kNoError);
  EXPECT_FALSE(g->debug().empty());
  expect_undisturbed();
}

TEST_F(GrpcAbuse, RapidResetIsAnsweredWithGoawayEnhanceYourCalm) {
  h2::RawConnection c(f_.port());
  std::string burst = h2::opening();
  for (std::int32_t id = 1; id < 2 * 500; id += 2) burst += request(id) + h2::rst_stream(id, 8 /* CANCEL */);
  c.send(burst);
  const auto g = c.wait_goaway();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->error_code(), kEnhanceYourCalm);
  EXPECT_NE(g->debug().find("resets"), std::string::npos) << g->debug();
  EXPECT_TRUE(c.wait_eof());
  expect_undisturbed();
}

/// `n` copies of `frame` after the opening, sent without reading a byte.
bool flood_without_reading(h2::RawConnection& c, const std::string& frame, int n) {
  c.set_receive_buffer(4096);
  std::string burst;
  for (int i = 0; i < 1000; ++i) burst += frame;
  if (!c.send(h2::opening())) return false;
  for (int sent = 0; sent < n; sent += 1000) {
    if (!c.send(burst)) return false;
  }
  return true;
}

TEST_F(GrpcAbuse, ASettingsFloodWhileNotReadingIsCutOff) {
  h2::RawConnection c(f_.port());
  const bool all_sent = flood_without_reading(c, h2::settings({{4 /* INITIAL_WINDOW_SIZE */, 65535}}), 1'000'000);
  EXPECT_FALSE(all_sent) << "a million SETTINGS taken";
  EXPECT_TRUE(c.wait_eof(30s));
  expect_undisturbed();
}

TEST_F(GrpcAbuse, APingFloodWhileNotReadingIsCutOff) {
  h2::RawConnection c(f_.port());
  const bool all_sent = flood_without_reading(c, h2::ping(), 1'000'000);
  EXPECT_FALSE(all_sent) << "a million PINGs taken";
  EXPECT_TRUE(c.wait_eof(30s));
  expect_undisturbed();
}

// Thousands of SETTINGS in one read: nghttp2 calls it a flood (their ACKs
// pile up) and ends the session without a GOAWAY of its own; the server
// still says why, last.
TEST_F(GrpcAbuse, ASettingsFloodInOneBurstIsAnsweredWithGoawayEnhanceYourCalm) {
  h2::RawConnection c(f_.port());
  open(c);
  std::string burst;
  for (int i = 0; i < 30000; ++i) burst += h2::settings();
  c.send(burst);  // the server may close before all of it is sent
  EXPECT_TRUE(c.wait_eof(30s));
  const auto g = c.find(h2::kGoaway);
  ASSERT_TRUE(g) << "closed without a GOAWAY";
  EXPECT_EQ(g->error_code(), kEnhanceYourCalm);
  EXPECT_NE(g->debug().find("Flood"), std::string::npos) << "debug: " << g->debug();
  expect_undisturbed();
}

TEST_F(GrpcAbuse, PingsFasterThanTheMinimumIntervalGetGoawayTooManyPings) {
  h2::RawConnection c(f_.port());
  ASSERT_TRUE(c.send(h2::opening()));
  // Each PING is sent once the previous one's ACK came: a keepalive far too eager.
  std::optional<h2::Frame> g;
  for (int i = 0; i < 10 && !g; ++i) {
    const std::string opaque = "ping000" + std::to_string(i);
    if (!c.send(h2::ping(opaque))) break;
    c.read_until([&](const h2::Frame& f) {
      return (f.type == h2::kPing && (f.flags & h2::kAck) && f.payload == opaque) || f.type == h2::kGoaway;
    });
    g = c.find(h2::kGoaway);
  }
  ASSERT_TRUE(g) << "no GOAWAY after 10 PINGs";
  EXPECT_EQ(g->error_code(), kEnhanceYourCalm);
  EXPECT_EQ(g->debug(), "too_many_pings");
  EXPECT_TRUE(c.wait_eof());
  expect_undisturbed();
}

// gRPC clients ping as data arrives (BDP probes), many times while one
// large reply is under way: every DATA frame the server sends clears the
// strikes, as gRPC servers count them, not the reply's first message alone.
TEST_F(GrpcAbuse, PingsBetweenTheDataFramesOfOneLargeReplyAreNoStrikes) {
  h2::RawConnection c(f_.port());
  constexpr std::uint32_t kWindow = 4096;  // the reply comes a few frames at a time
  ASSERT_TRUE(c.send(std::string(h2::kPreface) + h2::settings({{4 /* INITIAL_WINDOW_SIZE */, kWindow}}) +
                     h2::window_update(0, 1u << 20)));
  const std::string body = grpc_frame(std::string(64u << 10, 'x'));
  std::string out = request(1);
  for (std::size_t at = 0; at < body.size(); at += 16384) {
    out += h2::data(1, std::string_view(body).substr(at, 16384), at + 16384 >= body.size());
  }
  ASSERT_TRUE(c.send(out));
  std::size_t received = 0;
  int pings = 0;
  while (received < body.size() && !c.find(h2::kGoaway)) {
    ASSERT_TRUE(c.read_until([](const h2::Frame& f) {
      return (f.type == h2::kData && f.stream_id == 1) || f.type == h2::kGoaway;
    })) << "the reply stopped after "
        << received << " bytes";
    const h2::Frame f = c.frames().back();
    if (f.type != h2::kData) continue;
    received += f.payload.size();
    // A probe per DATA frame, answered before the window opens again.
    const std::string opaque = "bdp" + std::to_string(10000 + pings++);
    ASSERT_TRUE(c.send(h2::ping(opaque)));
    ASSERT_TRUE(c.read_until([&](const h2::Frame& a) {
      return (a.type == h2::kPing && (a.flags & h2::kAck) && a.payload == opaque) || a.type == h2::kGoaway;
    }));
    if (!f.payload.empty()) {
      ASSERT_TRUE(c.send(h2::window_update(1, static_cast<std::uint32_t>(f.payload.size()))));
    }
  }
  if (const auto g = c.find(h2::kGoaway)) {
    ADD_FAILURE() << "GOAWAY " << g->error_code() << " '" << g->debug() << "' after " << pings << " PINGs";
  }
  const auto trailers = [](const h2::Frame& f) {
    return f.type == h2::kHeaders && f.stream_id == 1 && f.field("grpc-status");
  };
  if (std::none_of(c.frames().begin(), c.frames().end(), trailers)) {
    EXPECT_TRUE(c.read_until(trailers));
  }
  EXPECT_EQ(received, body.size());
  EXPECT_GT(pings, 3) << "fewer PINGs than the strikes allowed: the test proves nothing";
  expect_undisturbed();
}

/// Calls to /test.Echo/Hold on streams 1, 3, ... `last`.
std::string hold_calls(std::int32_t last) {
  std::string burst;
  for (std::int32_t id = 1; id <= last; id += 2) {
    burst += h2::headers(id, grpc_request_headers("/test.Echo/Hold"), false) + h2::data(id, grpc_frame("hold"), true);
  }
  return burst;
}

// The limit's first id past it: 16 streams are 1, 3, ... 31.
constexpr std::int32_t kOverLimit = 2 * kMaxStreams + 1;

TEST_F(GrpcAbuse, StreamsBeyondMaxConcurrentStreamsAreRefused) {
  h2::RawConnection c(f_.port());
  // Sent before the server's SETTINGS could be acknowledged: the streams over
  // its limit are refused (RST_STREAM REFUSED_STREAM), the others go on.
  ASSERT_TRUE(c.send(h2::opening() + hold_calls(kOverLimit + 8)));
  for (std::int32_t id = kOverLimit; id <= kOverLimit + 8; id += 2) {
    const auto rst = c.wait_frame(h2::kRstStream, id);
    ASSERT_TRUE(rst) << "stream " << id << " was taken";
    EXPECT_TRUE(rst->error_code() == kRefusedStream || rst->error_code() == kProtocolError) << rst->error_code();
  }
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return f_.state->held_count() == kMaxStreams; }));
  EXPECT_EQ(f_.state->held_count(), kMaxStreams) << "no more calls than the limit reached the handler";
  EXPECT_FALSE(c.find(h2::kGoaway));
  f_.state->release_all();
  for (std::int32_t id = 1; id < kOverLimit; id += 2) EXPECT_TRUE(c.wait_frame(h2::kHeaders, id)) << id;
  expect_served(c, kOverLimit + 10);
  expect_undisturbed();
}

TEST_F(GrpcAbuse, StreamsBeyondTheAcknowledgedLimitAreAConnectionError) {
  h2::RawConnection c(f_.port());
  open(c);  // the server's SETTINGS acknowledged: its limit is known to the client
  ASSERT_TRUE(c.send(hold_calls(kOverLimit + 8)));
  // nghttp2 answers a stream over an acknowledged limit with GOAWAY
  // PROTOCOL_ERROR (RFC 9113 5.1.2 allows a stream error too).
  const auto g = c.wait_goaway();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->error_code(), kProtocolError);
  EXPECT_NE(g->debug().find("max concurrent streams"), std::string::npos) << g->debug();
  EXPECT_TRUE(c.wait_eof());
  EXPECT_LE(f_.state->held_count(), kMaxStreams) << "no more calls than the limit reached the handler";
  expect_undisturbed();
}

TEST_F(GrpcAbuse, ClientsThatNeverOpenTheirWindowHoldNoMoreThanIt) {
  std::vector<std::unique_ptr<h2::RawConnection>> slow;
  for (int i = 0; i < 8; ++i) {
    auto c = std::make_unique<h2::RawConnection>(f_.port());
    c->set_receive_buffer(4096);
    open(*c);
    // 1 MiB asked for; 64 KiB of window (HTTP/2's initial one), never opened; nothing more read.
    ASSERT_TRUE(c->send(request(1, "/test.Echo/Count") + h2::data(1, grpc_frame("64 16384"), true)));
    slow.push_back(std::move(c));
  }
  // The handlers write until the windows are full, then wait.
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return f_.state->count_writes.load() >= 8; }, 20s));
  const bool more = wheelrpc::test::wait_until([&] { return f_.state->count_writes.load() >= 8 * 16; }, 1000ms);
  EXPECT_FALSE(more) << f_.state->count_writes.load() << " writes of 16 KiB done for 8 clients with 64 KiB windows";
  expect_undisturbed();
  slow.clear();
}

TEST_F(GrpcAbuse, AMessagePrefixOverTheLimitIsRefusedOnItsStream) {
  h2::RawConnection c(f_.port());
  std::string prefix = grpc_frame("");
  prefix[1] = prefix[2] = prefix[3] = prefix[4] = '\xff';
  open(c);
  ASSERT_TRUE(c.send(request(1) + h2::data(1, prefix, false)));
  const auto h = c.wait_frame(h2::kHeaders, 1);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->field("grpc-status"), "8");
  const auto rst = c.wait_frame(h2::kRstStream, 1);
  ASSERT_TRUE(rst) << "the server does not wait for the rest";
  EXPECT_EQ(rst->error_code(), kNoError);
  expect_served(c, 3);
  expect_undisturbed();
}

TEST_F(GrpcAbuse, AGzipBombIsRefusedOnItsStream) {
  const std::string bomb = grpc_frame(wheelrpc::test::deflate_bomb(std::size_t{64} << 20), true);
  ASSERT_LT(bomb.size(), kMaxBody);
  h2::RawConnection c(f_.port());
  open(c);
  std::string wire = request(1, "/test.Echo/Echo", false, {{"grpc-encoding", "gzip"}});
  for (std::size_t off = 0; off < bomb.size(); off += 16384) {
    wire += h2::data(1, bomb.substr(off, 16384), off + 16384 >= bomb.size());
  }
  ASSERT_TRUE(c.send(wire));
  const auto h = c.wait_frame(h2::kHeaders, 1);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->field("grpc-status"), "8") << h->field("grpc-message").value_or("");
  expect_served(c, 3);
  expect_undisturbed();
}

}  // namespace
