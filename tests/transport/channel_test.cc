// Channel reads and memory: frames arrive whole however the bytes are split
// (one byte per read, many frames per read, a frame larger than any buffer the
// channel starts with), and a channel holds heap buffers only for what it
// carries: none while it waits, none after a quiet spell.
#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/errc.h>
#include <wheelrpc/transport/frame.h>

#include "support/wait.h"

namespace {

using namespace std::chrono_literals;
using namespace wheelrpc::transport;
namespace asio = boost::asio;
using boost::system::error_code;
using wheelrpc::test::wait_until;

/// Records what a channel delivers (its callbacks run on the channel's strand).
class Recorder : public ChannelHandler {
 public:
  void on_frame(Channel&, Frame& frame) override {
    std::lock_guard lock(mu_);
    frames_.push_back(std::move(frame));
  }
  void on_close(Channel&, const error_code& ec, const std::string&) override {
    std::lock_guard lock(mu_);
    ++closes_;
    close_ec_ = ec;
  }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return frames_.size();
  }
  std::vector<Frame> frames() const {
    std::lock_guard lock(mu_);
    return frames_;
  }
  int closes() const {
    std::lock_guard lock(mu_);
    return closes_;
  }
  error_code close_ec() const {
    std::lock_guard lock(mu_);
    return close_ec_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Frame> frames_;
  int closes_ = 0;
  error_code close_ec_;
};

/// A Channel on the accepting end of a loopback connection, run by one
/// thread, and a blocking raw socket (5 s receive timeout) as its peer.
class ChannelPair {
 public:
  /// `handler`: the channel's handler instead of the recorder.
  explicit ChannelPair(ChannelOptions options = {}, std::shared_ptr<ChannelHandler> handler = nullptr) {
    asio::ip::tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
    peer_.connect(acceptor.local_endpoint());
    timeval tv{5, 0};
    ::setsockopt(peer_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    peer_.set_option(asio::ip::tcp::no_delay(true));
    asio::ip::tcp::socket accepted(io_);
    acceptor.accept(accepted);
    channel_ = handler ? Channel::create(std::move(accepted), std::move(handler), options)
                       : Channel::create(std::move(accepted), recorder_, options);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ChannelPair() {
    channel_->close({}, "test over");
    error_code ignored;
    peer_.close(ignored);
    work_.reset();
    thread_.join();
  }

  Channel& channel() { return *channel_; }
  const Recorder& recorder() const { return *recorder_; }
  ChannelBufferStats stats() const { return channel_->buffer_stats(); }
  /// Writes `bytes` from the peer (blocking until the kernel took them all).
  void send(const std::string& bytes) { asio::write(peer_, asio::buffer(bytes)); }
  /// True if the peer's next read finds the connection closed (EOF).
  bool peer_sees_eof() {
    char c = 0;
    error_code ec;
    asio::read(peer_, asio::buffer(&c, 1), ec);
    return ec == asio::error::eof;
  }
  /// Reads exactly `n` bytes at the peer.
  std::string receive(std::size_t n) {
    std::string out(n, '\0');
    asio::read(peer_, asio::buffer(out));
    return out;
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  asio::ip::tcp::socket peer_{io_};
  std::shared_ptr<Recorder> recorder_ = std::make_shared<Recorder>();
  std::shared_ptr<Channel> channel_;
  std::thread thread_;
};

std::string encode(const Frame& f) {
  std::string out;
  encode_frame(f, out);
  return out;
}

Frame heartbeat(std::uint64_t id = 1) {
  Frame f;
  f.header.flags = kFlagRequest | kFlagTwoWay | kFlagEvent;
  f.header.request_id = id;
  return f;
}

/// A request with every field set; `payload_bytes` bytes of every byte value.
Frame request(std::uint64_t id, std::size_t payload_bytes) {
  Frame f;
  f.header.flags = kFlagRequest | kFlagTwoWay;
  f.header.request_id = id;
  f.header.deadline_ms = 1000;
  f.method = "echo";
  f.attachments = {{"trace", "abc"}, {"k", std::string(1, '\0')}};
  f.payload.resize(payload_bytes);
  for (std::size_t i = 0; i < payload_bytes; ++i) f.payload[i] = static_cast<char>((i * 131 + id) & 0xff);
  return f;
}

void expect_same(const Frame& want, const Frame& got) {
  EXPECT_EQ(want.header.flags, got.header.flags);
  EXPECT_EQ(want.header.request_id, got.header.request_id);
  EXPECT_EQ(want.header.deadline_ms, got.header.deadline_ms);
  EXPECT_EQ(want.method, got.method);
  EXPECT_EQ(want.attachments, got.attachments);
  EXPECT_TRUE(want.payload == got.payload)
      << "payloads of " << want.payload.size() << " and " << got.payload.size() << " bytes differ";
}

// Sends a 351-byte frame one byte per read (after `warm_up` heartbeats, each
// read on its own); the heap read buffer must stay at most `max_capacity`.
void one_byte_reads(ChannelOptions options, int warm_up, std::size_t max_capacity) {
  ChannelPair p(options);
  p.channel().start();
  for (int i = 0; i < warm_up; ++i) {
    p.send(encode(heartbeat()));
    ASSERT_TRUE(wait_until([&] { return p.stats().reads == static_cast<std::uint64_t>(i + 1); }));
  }
  const Frame sent = request(7, 300);
  const std::string bytes = encode(sent);
  ASSERT_GT(bytes.size(), Channel::kInlineReadBytes);
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    p.send(bytes.substr(i, 1));
    // The next byte goes out only once this one was read on its own.
    ASSERT_TRUE(wait_until([&] { return p.stats().read_pending == i + 1; })) << "byte " << i;
    ASSERT_LE(p.stats().read_capacity, max_capacity) << "byte " << i;
  }
  p.send(bytes.substr(bytes.size() - 1));
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == static_cast<std::size_t>(warm_up) + 1; }));
  expect_same(sent, p.recorder().frames().back());
  EXPECT_EQ(bytes.size() + static_cast<std::size_t>(warm_up), p.stats().reads);
  EXPECT_EQ(0, p.recorder().closes());
}

TEST(ChannelReads, AFrameSplitIntoOneByteReadsArrivesWhole) {
  // A quiet channel: the inline bytes until the header says how long the
  // frame is, then a buffer of exactly its size (reads that continue a frame
  // do not make a channel busy).
  one_byte_reads({}, 0, encoded_size(request(7, 300)));
}

TEST(ChannelReads, AFrameSplitIntoOneByteReadsOnABusyChannelArrivesWhole) {
  // Two frames within busy_read_interval make the channel busy: it keeps its
  // first busy buffer (1 KiB), in which the frame then arrives byte by byte.
  ChannelOptions options;
  options.busy_read_interval = std::chrono::seconds(5);
  one_byte_reads(options, 2, 1024);
}

TEST(ChannelReads, AFrameSplitIntoOneByteReadsOnAChannelNeverBusyArrivesWhole) {
  ChannelOptions options;
  options.busy_read_interval = std::chrono::microseconds(0);
  one_byte_reads(options, 2, encoded_size(request(7, 300)));
}

TEST(ChannelReads, AFrameLargerThanAnyInitialBufferArrivesWhole) {
  ChannelOptions options;
  options.read_buffer_bytes = 4096;
  ChannelPair p(options);
  p.channel().start();
  const Frame sent = request(1, std::size_t{3} << 20);
  std::thread writer([&] { p.send(encode(sent)); });  // blocks until the channel has read most of it
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 1; }));
  writer.join();
  expect_same(sent, p.recorder().frames().at(0));
  // What the frame needed is given back once it is complete.
  EXPECT_TRUE(wait_until([&] { return p.stats().read_capacity <= options.read_buffer_bytes; }))
      << p.stats().read_capacity;
}

TEST(ChannelReads, ManyFramesInOneReadAreAllDeliveredInOrder) {
  ChannelPair p;
  constexpr std::uint64_t kFrames = 1000;
  std::string bytes;
  for (std::uint64_t i = 0; i < kFrames; ++i) encode_frame(i % 2 ? heartbeat(i) : request(i, 8), bytes);
  p.send(bytes);  // all of it waits in the socket before the first read
  p.channel().start();
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == kFrames; }));
  const auto frames = p.recorder().frames();
  for (std::uint64_t i = 0; i < kFrames; ++i) ASSERT_EQ(i, frames[i].header.request_id);
  expect_same(request(998, 8), frames[998]);
  // The first read takes the inline bytes, then the kept buffer doubles per
  // full read: a handful of reads, each of many frames.
  EXPECT_LE(p.stats().reads, 12u);
}

/// Logs frames ("f"), batch ends ("|") and the close ("c"), in order; closes
/// the channel at the frame with id `close_at` (0: never).
class BatchLog : public ChannelHandler {
 public:
  explicit BatchLog(std::uint64_t close_at = 0) : close_at_(close_at) {}
  void on_frame(Channel& ch, Frame& frame) override {
    add('f');
    if (frame.header.request_id == close_at_) ch.close({}, "closed by a frame's handler");
  }
  void on_close(Channel&, const error_code&, const std::string&) override { add('c'); }
  void on_frames_delivered(Channel&) override { add('|'); }
  std::string log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  void add(char c) {
    std::lock_guard lock(mu_);
    log_ += c;
  }
  const std::uint64_t close_at_;
  mutable std::mutex mu_;
  std::string log_;
};

// A handler may hold something for one read's frames (the client holds its
// core): every batch ends with on_frames_delivered, after its last frame.
TEST(ChannelReads, EveryBatchOfFramesEndsWithOneDeliveredCallAfterItsLastFrame) {
  auto log = std::make_shared<BatchLog>();
  ChannelPair p({}, log);
  constexpr std::uint64_t kFrames = 500;
  std::string bytes;
  for (std::uint64_t i = 1; i <= kFrames; ++i) encode_frame(request(i, 8), bytes);
  p.send(bytes);  // in the socket before the first read: a few reads of many frames
  p.channel().start();
  ASSERT_TRUE(wait_until([&] {
    const auto l = log->log();
    return std::count(l.begin(), l.end(), 'f') == kFrames && l.back() == '|';
  }));
  const auto l = log->log();
  EXPECT_EQ(l.front(), 'f');
  EXPECT_EQ(l.find("||"), std::string::npos) << "a batch without frames: " << l;
  EXPECT_LT(std::count(l.begin(), l.end(), '|'), static_cast<long>(kFrames)) << "not batched: " << l;
}

// A frame that closes the channel ends its batch too, after on_close: a
// reference held for the batch is not kept by a closed channel.
TEST(ChannelReads, ABatchAFrameClosedEndsAfterTheClose) {
  auto log = std::make_shared<BatchLog>(/*close_at=*/2);
  ChannelPair p({}, log);
  p.send(encode(request(1, 8)) + encode(request(2, 8)) + encode(request(3, 8)));
  p.channel().start();
  ASSERT_TRUE(wait_until([&] { return log->log().find('c') != std::string::npos; }));
  ASSERT_TRUE(wait_until([&] { return log->log().back() == '|'; }));
  // However the reads split them: frame 2's batch ends after the close, and
  // no frame follows it.
  const auto l = log->log();
  EXPECT_EQ(std::count(l.begin(), l.end(), 'f'), 2) << l;
  EXPECT_EQ(l.substr(l.size() - 3), "fc|") << l;
}

/// Answers every request with a reply of its id and notes, per frame, which
/// read brought it and how many bytes the channel had written by then.
class Answerer : public ChannelHandler {
 public:
  struct Seen {
    std::uint64_t read = 0, bytes_out = 0;
  };
  void on_frame(Channel& ch, Frame& frame) override {
    Frame reply;
    reply.header.request_id = frame.header.request_id;
    reply.payload = "r";
    EXPECT_FALSE(ch.send(reply));
    std::lock_guard lock(mu_);
    seen_.push_back({ch.buffer_stats().reads, ch.traffic().bytes_out});
  }
  void on_close(Channel&, const error_code&, const std::string&) override {}
  std::vector<Seen> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST(ChannelWrites, RepliesToTheFirstFramesOfALargeReadGoOutWhileTheRestAreHandled) {
  // Without the early flush a channel writes only between reads (its write
  // completes on the strand), so within one read the bytes written never
  // change; with it, replies to the first kEarlyFlushFrames frames of a large
  // read are on the wire before the next frame of that read is handled.
  auto answerer = std::make_shared<Answerer>();
  ChannelPair p({}, answerer);
  constexpr std::uint64_t kFrames = 1000;
  std::string bytes;
  for (std::uint64_t i = 0; i < kFrames; ++i) encode_frame(request(i, 8), bytes);
  p.send(bytes);  // all of it waits in the socket before the first read
  p.channel().start();
  // Every reply arrives, in order.
  Frame reply;
  reply.header.request_id = 0;
  reply.payload = "r";
  const std::size_t reply_size = encoded_size(reply);
  const std::string got = p.receive(kFrames * reply_size);
  FrameDecoder decoder;
  std::size_t offset = 0;
  for (std::uint64_t i = 0; i < kFrames; ++i) {
    Frame f;
    std::size_t consumed = 0;
    ASSERT_EQ(
        decoder.decode(reinterpret_cast<const std::uint8_t*>(got.data()) + offset, got.size() - offset, f, consumed),
        FrameDecoder::Result::frame);
    ASSERT_EQ(f.header.request_id, i);
    offset += consumed;
  }
  const auto seen = answerer->seen();
  ASSERT_EQ(seen.size(), kFrames);
  std::size_t mid_read_writes = 0;
  for (std::size_t i = 1; i < seen.size(); ++i) {
    if (seen[i].read == seen[i - 1].read && seen[i].bytes_out > seen[i - 1].bytes_out) ++mid_read_writes;
  }
  EXPECT_GE(mid_read_writes, 1u) << "no reply left before the end of its read (" << p.stats().reads << " reads)";
}

/// Runs `fn` for every frame (on the channel's strand).
class FnHandler : public ChannelHandler {
 public:
  explicit FnHandler(std::function<void(Channel&, Frame&)> fn) : fn_(std::move(fn)) {}
  void on_frame(Channel& ch, Frame& frame) override { fn_(ch, frame); }
  void on_close(Channel&, const error_code&, const std::string&) override {}

 private:
  std::function<void(Channel&, Frame&)> fn_;
};

Frame reply_to(std::uint64_t id, std::size_t payload_bytes) {
  Frame f = request(id, payload_bytes);
  f.header.flags = 0;
  return f;
}

// A handler's own sends skip the write lock while nothing sent from another
// thread is queued; once something is, they queue behind it, so a frame sent
// from another thread before the handler's (and seen by it) is written first.
TEST(ChannelWrites, AFrameAnotherThreadSentBeforeTheHandlersReplyGoesOutFirst) {
  const Frame first = reply_to(100, 16), second = reply_to(101, 16);
  auto handler = std::make_shared<FnHandler>([&](Channel& ch, Frame&) {
    std::thread other([&] { EXPECT_FALSE(ch.send(first)); });
    other.join();
    EXPECT_FALSE(ch.send(second));
  });
  ChannelPair p({}, handler);
  p.channel().start();
  p.send(encode(request(1, 8)));
  const std::string want = encode(first) + encode(second);
  EXPECT_EQ(p.receive(want.size()), want) << "the handler's reply overtook the frame sent before it";
}

// A reply larger than the socket takes at once is written by an async write
// that the handler's send started; reads go on meanwhile, and a quiet read
// (which trims buffers no write is using) must leave the one being written.
TEST(ChannelWrites, AHandlersReplyLargerThanTheSocketTakesIsWrittenWholeWhileReadsGoOn) {
  ChannelOptions options;
  options.busy_read_interval = std::chrono::microseconds(0);  // every read is quiet: trims
  options.max_body = 64u << 20;
  const Frame big = reply_to(1, std::size_t{32} << 20);  // far more than the socket buffers hold
  std::atomic<int> heartbeats{0};
  std::string scribble;  // would take the place of a buffer given back while it is written
  auto handler = std::make_shared<FnHandler>([&](Channel& ch, Frame& frame) {
    if (frame.header.is_event()) {
      scribble.assign(encoded_size(big), 'x');
      heartbeats.fetch_add(1);
    } else {
      EXPECT_FALSE(ch.send(big));
    }
  });
  ChannelPair p(options, handler);
  p.channel().start();
  p.send(encode(request(1, 8)));
  // The reply is being written (the peer reads nothing yet), and the read
  // that brought the request is over.
  ASSERT_TRUE(wait_until([&] { return p.channel().traffic().bytes_out > 0; }));
  p.send(encode(heartbeat(2)));  // read (and its scribble made) while the reply is still being written
  ASSERT_TRUE(wait_until([&] { return heartbeats.load() == 1; }));
  const std::string want = encode(big);
  EXPECT_TRUE(p.receive(want.size()) == want) << "the reply was cut or changed while it was written";
  EXPECT_TRUE(p.channel().is_open());
}

// A graceful close waits for the frames the handler sent too.
TEST(ChannelClose, AfterFlushTheHandlersOwnReplyArrivesThenEof) {
  const Frame reply = reply_to(5, 4 << 20);
  auto handler = std::make_shared<FnHandler>([&](Channel& ch, Frame&) {
    EXPECT_FALSE(ch.send(reply));
    ch.close_after_flush(make_error_code(errc::closed), "done", std::chrono::seconds(30));
  });
  ChannelPair p({}, handler);
  p.channel().start();
  p.send(encode(request(5, 8)));
  const std::string want = encode(reply);
  EXPECT_TRUE(p.receive(want.size()) == want) << "the reply was cut";
  EXPECT_TRUE(p.peer_sees_eof());
}

// A handler that gives back the buffer of its reply's payload: the next
// frame's payload is decoded into that buffer (no allocation of its own).
TEST(ChannelMemory, ARecycledReplyBufferHoldsTheNextFramesPayload) {
  std::mutex mu;  // the vectors are written on the channel's thread
  std::vector<const void*> given, received;
  std::vector<std::string> payloads;
  auto handler = std::make_shared<FnHandler>([&](Channel& ch, Frame& frame) {
    std::lock_guard lock(mu);
    received.push_back(frame.payload.data());
    std::string payload = std::move(frame.payload);
    payloads.push_back(payload);
    Frame reply = reply_to(frame.header.request_id, 0);
    reply.payload = std::move(payload);
    EXPECT_FALSE(ch.send(reply));
    reply.payload.reserve(1000);  // a size of its own: malloc would not hand this block out for the next payload
    given.push_back(reply.payload.data());
    ch.recycle(std::move(reply.payload));
  });
  ChannelPair p({}, handler);
  std::string bytes;
  for (std::uint64_t i = 1; i <= 3; ++i) encode_frame(request(i, 100), bytes);
  p.send(bytes);  // all three wait in the socket: one read
  p.channel().start();
  std::string want;
  for (std::uint64_t i = 1; i <= 3; ++i) {
    Frame reply = reply_to(i, 0);
    reply.payload = request(i, 100).payload;
    encode_frame(reply, want);
  }
  ASSERT_EQ(p.receive(want.size()), want);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mu);
    return given.size() == 3;
  }));
  std::lock_guard lock(mu);
  EXPECT_EQ(received[1], given[0]) << "the second payload was not decoded into the first reply's buffer";
  EXPECT_EQ(received[2], given[1]);
  for (std::uint64_t i = 1; i <= 3; ++i) EXPECT_EQ(payloads[i - 1], request(i, 100).payload);
}

// A frame whose payload the handler still holds keeps it: nothing recycled over it.
TEST(ChannelMemory, ARecycledBufferNeverReplacesAPayloadTheHandlerKept) {
  std::mutex mu;
  std::string seen;
  bool done = false;
  auto handler = std::make_shared<FnHandler>([&](Channel& ch, Frame& frame) {
    ch.recycle(std::string(200, 'x'));
    std::lock_guard lock(mu);
    seen = frame.payload;
    done = true;
  });
  ChannelPair p({}, handler);
  p.channel().start();
  p.send(encode(request(1, 100)));
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mu);
    return done;
  }));
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, request(1, 100).payload);
}

TEST(ChannelMemory, AnIdleChannelHoldsNoHeapBuffer) {
  ChannelPair p;
  EXPECT_EQ(0u, p.stats().read_capacity);
  EXPECT_EQ(0u, p.stats().write_capacity);
  p.channel().start();
  p.send(encode(heartbeat()));
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 1; }));
  ASSERT_FALSE(p.channel().send(heartbeat(2)));  // the reply
  EXPECT_EQ(encode(heartbeat(2)), p.receive(kHeaderSize));
  // A heartbeat is read and decoded in the inline bytes: no heap buffer, and
  // none for the wait that follows.
  EXPECT_TRUE(wait_until([&] { return p.stats().reads == 1; }));
  const auto s = p.stats();
  EXPECT_EQ(0u, s.read_capacity);
  EXPECT_EQ(0u, s.read_pending);
  EXPECT_LE(s.write_capacity, 2 * Channel::kKeptWriteBytes);
}

TEST(ChannelMemory, OneFrameLargerThanTheInlineBytesLeavesNoBufferBehind) {
  // A connection's first frame (a HELLO) takes two reads: the inline bytes,
  // then a buffer sized to the rest. That is not traffic: the channel stays
  // quiet and gives the buffer back.
  ChannelPair p;
  p.channel().start();
  const Frame hello = request(1, 150);
  p.send(encode(hello));
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 1; }));
  expect_same(hello, p.recorder().frames().at(0));
  EXPECT_TRUE(wait_until([&] { return p.stats().reads >= 2 && p.stats().read_capacity == 0; }))
      << "reads " << p.stats().reads << ", read buffer " << p.stats().read_capacity;
}

TEST(ChannelMemory, AQuietReadGivesBackWhatABurstNeeded) {
  ChannelOptions options;
  options.busy_read_interval = 200ms;
  ChannelPair p(options);
  p.channel().start();
  // A burst both ways: 200 requests of 1 KiB, one reply of 512 KiB.
  std::string burst;
  for (std::uint64_t i = 0; i < 200; ++i) encode_frame(request(i, 1024), burst);
  p.send(burst);
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 200; }));
  const Frame reply = request(1, 512 << 10);
  ASSERT_FALSE(p.channel().send(reply));
  EXPECT_EQ(encoded_size(reply), p.receive(encoded_size(reply)).size());
  ASSERT_TRUE(wait_until([&] { return p.stats().write_capacity >= (512u << 10); }))
      << "the written buffer is kept for the next batch";
  EXPECT_GT(p.stats().read_capacity, 0u) << "a busy channel keeps its read buffer";

  std::this_thread::sleep_for(300ms);  // a quiet spell longer than busy_read_interval
  p.send(encode(heartbeat(1000)));
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 201; }));
  EXPECT_TRUE(wait_until([&] {
    const auto s = p.stats();
    return s.read_capacity == 0 && s.write_capacity <= 2 * Channel::kKeptWriteBytes;
  })) << "read "
      << p.stats().read_capacity << ", write " << p.stats().write_capacity;
}

TEST(ChannelMemory, APartialFrameHoldsWhatArrivedNotWhatItsHeaderAnnounces) {
  ChannelOptions options;
  options.read_buffer_bytes = 4096;
  ChannelPair p(options);
  p.channel().start();
  const Frame sent = request(3, std::size_t{6} << 20);  // under the 8 MiB limit
  const std::string bytes = encode(sent);
  constexpr std::size_t kFirst = 10'000;
  p.send(bytes.substr(0, kFirst));
  ASSERT_TRUE(wait_until([&] { return p.stats().read_pending == kFirst; }));
  EXPECT_GE(p.stats().read_capacity, kFirst);
  EXPECT_LE(p.stats().read_capacity, 4 * kFirst) << "not the 6 MiB the header announces";
  p.send(bytes.substr(kFirst));
  ASSERT_TRUE(wait_until([&] { return p.recorder().count() == 1; }));
  expect_same(sent, p.recorder().frames().at(0));
}

TEST(ChannelReads, ABodyOverTheLimitClosesTheChannelFromTheHeaderAlone) {
  ChannelOptions options;
  options.max_body = 1024;
  ChannelPair p(options);
  p.channel().start();
  std::string bytes = encode(request(1, 2048));
  p.send(bytes.substr(0, kHeaderSize));  // the header alone
  ASSERT_TRUE(wait_until([&] { return p.recorder().closes() == 1; }));
  EXPECT_EQ(make_error_code(errc::body_too_large), p.recorder().close_ec());
  EXPECT_EQ(0u, p.recorder().count());
  EXPECT_EQ(0u, p.stats().read_capacity);
}

}  // namespace

namespace {

// close_after_flush: what was queued before it reaches the peer, then EOF;
// sends after it are refused.
TEST(ChannelClose, AfterFlushTheQueuedFramesArriveThenEof) {
  ChannelPair pair;
  const Frame big = request(7, 4 << 20);  // more than the socket buffers take at once
  ASSERT_FALSE(pair.channel().send(big));
  pair.channel().close_after_flush(make_error_code(errc::closed), "done", std::chrono::seconds(30));
  EXPECT_EQ(pair.channel().send(heartbeat()), errc::closed) << "a send after close_after_flush was queued";
  const std::string want = encode(big);
  EXPECT_EQ(pair.receive(want.size()), want) << "the queued frame was cut";
  EXPECT_TRUE(pair.peer_sees_eof());
  ASSERT_TRUE(wait_until([&] { return pair.recorder().closes() == 1; }));
  EXPECT_EQ(pair.recorder().close_ec(), errc::closed);
}

// A peer that takes nothing: the channel closes at the limit anyway.
TEST(ChannelClose, AfterFlushAPeerThatReadsNothingIsClosedAtTheLimit) {
  ChannelPair pair;
  ASSERT_FALSE(pair.channel().send(request(8, 48 << 20)));  // far more than the socket buffers hold
  pair.channel().close_after_flush(make_error_code(errc::closed), "done", std::chrono::milliseconds(100));
  ASSERT_TRUE(wait_until([&] { return pair.recorder().closes() == 1; })) << "still open past the limit";
  EXPECT_FALSE(pair.channel().is_open());
}

// Nothing queued: it closes at once.
TEST(ChannelClose, AfterFlushWithNothingQueuedClosesAtOnce) {
  ChannelPair pair;
  pair.channel().close_after_flush(make_error_code(errc::closed), "done", std::chrono::seconds(30));
  EXPECT_TRUE(pair.peer_sees_eof());
  ASSERT_TRUE(wait_until([&] { return pair.recorder().closes() == 1; }));
}

/// Pauses reading at every frame it takes; keep_paused() answers `keep`.
class Pauser : public ChannelHandler {
 public:
  void on_frame(Channel& ch, Frame&) override {
    frames_.fetch_add(1);
    ch.pause_reading();
  }
  void on_close(Channel&, const error_code&, const std::string&) override {}
  bool keep_paused(Channel&) override { return keep.load(); }
  std::size_t frames() const { return frames_.load(); }
  std::atomic<bool> keep{false};

 private:
  std::atomic<std::size_t> frames_{0};
};

/// Runs everything the channel's strand was given before, then returns.
void drain_strand(Channel& ch) {
  std::atomic<bool> ran{false};
  asio::post(ch.strand(), [&] { ran = true; });
  ASSERT_TRUE(wait_until([&] { return ran.load(); }));
}

// A resume asked for an earlier pause (a reply that went out before the
// handler paused again) must not undo the later pause: the handler is asked
// whether its reason to pause still holds.
TEST(ChannelReads, AResumeTheHandlerNoLongerWantsLeavesTheChannelPaused) {
  auto pauser = std::make_shared<Pauser>();
  ChannelPair p({}, pauser);
  p.send(encode(request(1, 8)) + encode(request(2, 8)) + encode(request(3, 8)));
  p.channel().start();
  ASSERT_TRUE(wait_until([&] { return pauser->frames() == 1 && p.channel().reading_paused(); }));
  pauser->keep = true;
  p.channel().resume_reading();
  drain_strand(p.channel());
  EXPECT_TRUE(p.channel().reading_paused());
  EXPECT_EQ(pauser->frames(), 1u) << "a stale resume let a frame in";
  pauser->keep = false;
  p.channel().resume_reading();
  ASSERT_TRUE(wait_until([&] { return pauser->frames() == 2; })) << "a wanted resume reads on";
  drain_strand(p.channel());
  EXPECT_TRUE(p.channel().reading_paused()) << "paused again at the second frame";
  p.channel().resume_reading();
  ASSERT_TRUE(wait_until([&] { return pauser->frames() == 3; }));
}

}  // namespace
