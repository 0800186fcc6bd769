/// Raw Boost.Asio TCP echo: the floor wheelrpc's RPC echo is compared with
/// (system "boost_asio_tcp_echo" in bench/compare_rpc.sh). Not an RPC system:
/// no method names, no deadlines, no per-call timer, no per-call allocation;
/// what is left is what one loopback TCP connection and two threads allow.
///
///   asio_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1]
///   asio_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1] [--duration 10]
///                    [--server-pid PID] [--host 127.0.0.1]
///
/// The command line and the client's JSON line are those of wheelrpc's
/// rpc_bench (bench/rpc_bench.cc); "deadline_ms" is 0 (there is none).
///
/// Frames: a 4-byte little-endian length, then that many bytes. TCP_NODELAY on
/// both ends.
///
/// Server: one thread (plus the sleeping --lifetime guard). Per connection it
/// reads whatever has arrived, writes back every complete frame of it in one
/// write, and reads again once that write is done: echoing C frames costs one
/// read and one write when they arrive together.
///
/// Client: one thread, one connection, C frames in flight (closed loop). Each
/// frame carries its sequence number in its first 8 payload bytes; TCP keeps
/// order, so every reply must carry the next expected number (else it counts
/// as an error). Each reply queues one new frame at once; frames queued while
/// a write is in flight leave together in the next write. A reply's latency is
/// the time of the read that brought it minus the time its request was
/// queued. Calls completed in [warm-up, warm-up + duration) are measured;
/// afterwards no new frame is queued and the run ends when every reply is in.
/// Exit status 1 if any call failed, 2 on a usage error.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/version.hpp>

#include "peer_util.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t kHeader = 4;
/// A length above this closes the connection (a corrupt stream, not a frame).
constexpr std::uint32_t kMaxFrame = 64u << 20;
constexpr std::size_t kInitialBuffer = 64 * 1024;

void put_le32(char* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint32_t get_le32(const char* in) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

/// How many leading bytes of data[0, size) are whole frames; `too_big` is set
/// when the first incomplete frame announces more than kMaxFrame.
std::size_t whole_frames(const char* data, std::size_t size, bool& too_big) {
  std::size_t at = 0;
  too_big = false;
  while (size - at >= kHeader) {
    const std::uint32_t len = get_le32(data + at);
    if (len > kMaxFrame) {
      too_big = true;
      break;
    }
    if (size - at - kHeader < len) break;
    at += kHeader + len;
  }
  return at;
}

std::string boost_version() {
  return std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) + "." +
         std::to_string(BOOST_VERSION % 100);
}

// ---- server ---------------------------------------------------------------------

/// One accepted connection. Lives as long as one of its handlers is pending:
/// each captures `self`.
class EchoSession : public std::enable_shared_from_this<EchoSession> {
 public:
  explicit EchoSession(tcp::socket socket) : socket_(std::move(socket)) {
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
  }

  void start() { do_read(); }

 private:
  void do_read() {
    if (filled_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a frame longer than the buffer
    socket_.async_read_some(asio::buffer(buffer_.data() + filled_, buffer_.size() - filled_),
                            [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(error_code ec, std::size_t n) {
    if (ec) return;  // the client is gone: the last handler frees the session
    filled_ += n;
    bool too_big = false;
    const std::size_t whole = whole_frames(buffer_.data(), filled_, too_big);
    if (too_big) return;
    if (whole == 0) return do_read();
    asio::async_write(socket_, asio::buffer(buffer_.data(), whole),
                      [self = shared_from_this(), whole](error_code ec2, std::size_t) { self->on_write(ec2, whole); });
  }

  void on_write(error_code ec, std::size_t written) {
    if (ec) return;
    // What is left is at most one partial frame: keep it at the front.
    std::memmove(buffer_.data(), buffer_.data() + written, filled_ - written);
    filled_ -= written;
    do_read();
  }

  tcp::socket socket_;
  std::vector<char> buffer_ = std::vector<char>(kInitialBuffer);
  std::size_t filled_ = 0;
};

void accept_next(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](error_code ec, tcp::socket socket) {
    if (!ec) std::make_shared<EchoSession>(std::move(socket))->start();
    if (ec != asio::error::operation_aborted) accept_next(acceptor);
  });
}

int server(const peers::Flags& flags) {
  const auto address = asio::ip::make_address(flags.str("host", "127.0.0.1"));
  const auto port = static_cast<unsigned short>(flags.integer("port", 0, 0, 65535));
  peers::exit_after(flags.seconds("lifetime", 0));

  asio::io_context io(1);
  tcp::acceptor acceptor(io, tcp::endpoint(address, port));
  peers::write_port_file(flags.str("port-file", ""), acceptor.local_endpoint().port());
  accept_next(acceptor);
  io.run();  // until killed: the acceptor always has an accept pending
  return 0;
}

// ---- client ---------------------------------------------------------------------

/// Keeps C frames in flight on one connection; everything runs on the one
/// thread that runs the io_context.
class EchoLoad {
 public:
  EchoLoad(tcp::socket& socket, peers::EchoRun& run, std::int64_t t_measure, std::int64_t t_end)
      : socket_(socket),
        run_(run),
        t_measure_(t_measure),
        t_end_(t_end),
        payload_(static_cast<std::size_t>(run.payload)),
        queued_at_(static_cast<std::size_t>(run.concurrency)),
        read_buffer_(std::max(kInitialBuffer, 2 * (kHeader + payload_))) {
    const std::size_t batch = queued_at_.size() * (kHeader + payload_);
    pending_.reserve(batch);
    writing_.reserve(batch);
  }

  /// Called once, when every reply is in (or the connection failed).
  std::function<void()> on_done;

  void start() {
    const std::int64_t now = peers::now_ns();
    for (std::size_t i = 0; i < queued_at_.size(); ++i) queue_frame(now);
    flush();
    do_read();
  }

 private:
  void queue_frame(std::int64_t now) {
    const std::size_t at = pending_.size();
    pending_.resize(at + kHeader + payload_, 'x');
    put_le32(pending_.data() + at, static_cast<std::uint32_t>(payload_));
    std::memcpy(pending_.data() + at + kHeader, &next_sent_, sizeof next_sent_);
    // At most C frames are in flight, so slot seq % C is free: its last user,
    // frame seq - C, has had its reply.
    queued_at_[next_sent_ % queued_at_.size()] = now;
    ++next_sent_;
  }

  /// Starts writing every queued frame, unless a write is already in flight
  /// (its completion calls flush again).
  void flush() {
    if (writing_busy_ || pending_.empty() || done_) return;
    writing_.swap(pending_);
    pending_.clear();
    writing_busy_ = true;
    asio::async_write(socket_, asio::buffer(writing_), [this](error_code ec, std::size_t) {
      writing_busy_ = false;
      if (ec) return fail("write", ec);
      flush();
    });
  }

  void do_read() {
    if (filled_ == read_buffer_.size()) read_buffer_.resize(read_buffer_.size() * 2);
    socket_.async_read_some(asio::buffer(read_buffer_.data() + filled_, read_buffer_.size() - filled_),
                            [this](error_code ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(error_code ec, std::size_t n) {
    if (ec) return fail("read", ec);
    filled_ += n;
    const std::int64_t now = peers::now_ns();  // every reply of this read arrived now
    bool too_big = false;
    const std::size_t whole = whole_frames(read_buffer_.data(), filled_, too_big);
    if (too_big) return fail("read", make_error_code(boost::system::errc::message_size));
    for (std::size_t at = 0; at < whole;) {
      const std::uint32_t len = get_le32(read_buffer_.data() + at);
      std::uint64_t seq = ~next_received_;
      if (len >= sizeof seq) std::memcpy(&seq, read_buffer_.data() + at + kHeader, sizeof seq);
      if (len != payload_ || seq != next_received_) {
        if (run_.errors++ == 0) std::fprintf(stderr, "asio_echo client: a reply does not match its request\n");
      } else if (now >= t_measure_ && now < t_end_) {
        run_.latency.record(static_cast<std::uint64_t>(now - queued_at_[seq % queued_at_.size()]));
      }
      ++next_received_;
      if (now < t_end_) queue_frame(now);  // closed loop: one new frame per reply
      at += kHeader + len;
    }
    std::memmove(read_buffer_.data(), read_buffer_.data() + whole, filled_ - whole);
    filled_ -= whole;
    if (next_received_ == next_sent_) return finish();  // past the window and drained
    flush();
    do_read();
  }

  void fail(const char* what, const error_code& ec) {
    if (done_) return;  // our own close() aborts what is pending
    std::fprintf(stderr, "asio_echo client: %s: %s\n", what, ec.message().c_str());
    run_.errors += next_sent_ - next_received_;
    finish();
  }

  void finish() {
    if (done_) return;
    done_ = true;
    error_code ignored;
    socket_.close(ignored);
    if (on_done) on_done();
  }

  tcp::socket& socket_;
  peers::EchoRun& run_;
  const std::int64_t t_measure_, t_end_;
  const std::size_t payload_;
  std::vector<std::int64_t> queued_at_;  ///< by sequence number modulo C
  std::vector<char> pending_;            ///< frames queued, not yet written
  std::vector<char> writing_;            ///< frames of the write in flight
  bool writing_busy_ = false;
  std::vector<char> read_buffer_;
  std::size_t filled_ = 0;
  std::uint64_t next_sent_ = 0;
  std::uint64_t next_received_ = 0;
  bool done_ = false;
};

int client(const peers::Flags& flags) {
  peers::EchoRun run;
  run.system = "boost_asio_tcp_echo";
  run.version = boost_version();
  run.read_flags(flags);
  if (!flags.has("port")) throw peers::UsageError("the client needs --port");
  const tcp::endpoint server(asio::ip::make_address(flags.str("host", "127.0.0.1")),
                             static_cast<unsigned short>(flags.integer("port", 0, 1, 65535)));

  asio::io_context io(1);
  tcp::socket socket(io);
  socket.connect(server);  // before the clock starts
  socket.set_option(tcp::no_delay(true));

  const std::int64_t t0 = peers::now_ns();
  const std::int64_t t_measure = t0 + static_cast<std::int64_t>(run.warmup_s * 1e9);
  const std::int64_t t_end = t_measure + static_cast<std::int64_t>(run.duration_s * 1e9);
  const auto until = [](std::int64_t t) { return std::chrono::nanoseconds(t - peers::now_ns()); };
  EchoLoad load(socket, run, t_measure, t_end);

  // CPU at the window's edges; a watchdog ends the run if replies stop coming.
  asio::steady_timer window_start(io, until(t_measure));
  window_start.async_wait([&](error_code) { run.begin_window(run.cpu_now()); });
  asio::steady_timer window_end(io, until(t_end));
  window_end.async_wait([&](error_code) { run.end_window(run.cpu_now()); });
  asio::steady_timer watchdog(io, until(t_end) + std::chrono::seconds(5));
  watchdog.async_wait([&](error_code ec) {
    if (ec) return;
    std::fprintf(stderr, "asio_echo client: watchdog: replies still missing 5 s after the window\n");
    ++run.errors;
    io.stop();
  });
  load.on_done = [&] { watchdog.cancel(); };

  load.start();
  io.run();  // returns when drained and both window timers have run
  run.json().print();
  return run.errors == 0 ? 0 : 1;
}

int usage(std::string_view problem) {
  if (!problem.empty()) std::fprintf(stderr, "asio_echo: %.*s\n", static_cast<int>(problem.size()), problem.data());
  std::fprintf(stderr,
               "usage: asio_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1]\n"
               "       asio_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1] [--duration 10]\n"
               "                        [--server-pid PID] [--host 127.0.0.1]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "server") return server(peers::Flags(argc, argv, {"port", "port-file", "lifetime", "host"}));
    if (mode == "client") {
      return client(
          peers::Flags(argc, argv, {"port", "concurrency", "payload", "warmup", "duration", "server-pid", "host"}));
    }
    return usage(mode.empty() ? "" : "unknown mode " + std::string(mode));
  } catch (const peers::UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asio_echo %.*s: %s\n", static_cast<int>(mode.size()), mode.data(), e.what());
    return 1;
  }
}
