// libFuzzer target for the server's HTTP/2 (gRPC) handling: a real Server
// on 127.0.0.1, port 0, started once per process, with a unary method and
// a bidi stream method under gRPC paths; each input is sent, after the
// HTTP/2 preface, on a new loopback connection, which then half-closes and
// reads until the server closes it. The server runs GrpcServerConnection
// (rpc/src, instrumented in the fuzz build) on its own threads: beyond "no
// crash, no sanitizer report" it checks that
//   - the server closes each connection once the client has half-closed
//     (within 10 s: nothing the client said keeps it open);
//   - whatever the server wrote starts with a well-formed SETTINGS frame;
//   - a fresh, well-formed gRPC call is answered after every 1,000 inputs
//     (the server still serves).
// Run it with scripts/fuzz.sh; the seeds are in corpus/http2/ (see
// http2_fuzz_seeds.cc).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "support/h2_frames.h"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

/// Echoes each message; ends after the half-close. Callbacks, not a
/// coroutine: clang 14 fails on coroutines with the fuzz build's flags
/// ("Cannot represent a difference across sections").
void chat(wheelrpc::rpc::ServerStream s) {
  s.async_read([s](boost::system::error_code ec, std::optional<std::string> m) mutable {
    if (ec) return;
    if (!m) {
      s.finish();
      return;
    }
    s.async_write(std::move(*m), [s](boost::system::error_code write_ec) mutable {
      if (!write_ec) chat(std::move(s));
    });
  });
}

/// The server, for the whole process (never destroyed: libFuzzer exits
/// without unwinding, and a server stopping under a running input would
/// only add noise).
struct Target {
  Target() : guard(asio::make_work_guard(io)), server(io.get_executor(), timer, options()) {
    server.handle("/fuzz.Echo/Echo",
                  [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) { r.reply(std::move(req.payload)); });
    server.handle_stream("/fuzz.Echo/Chat", [](wheelrpc::rpc::ServerStream s) { chat(std::move(s)); });
    const auto ec = server.listen({asio::ip::make_address("127.0.0.1"), 0});
    FUZZ_CHECK(!ec);
    port = server.local_endpoint().port();
    thread = std::thread([this] { io.run(); });
  }
  static wheelrpc::rpc::ServerOptions options() {
    wheelrpc::rpc::ServerOptions o;
    // Small enough for the fuzzer's inputs to reach each limit.
    o.channel.max_body = 4096;
    o.grpc.max_header_list_bytes = 1024;
    o.grpc.max_concurrent_streams = 8;
    o.grpc.stream_window = 1024;
    o.grpc.max_resets_burst = 4;
    o.grpc.resets_per_second = 1;
    o.grpc.max_bad_requests = 4;
    return o;
  }

  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  wheelrpc::rpc::Server server;
  std::uint16_t port = 0;
  std::thread thread;
};

Target& target() {
  static Target* t = new Target;
  return *t;
}

/// Sends `bytes`, half-closes, and reads what the server writes until it
/// closes (true) or 10 s pass (false).
bool exchange(std::uint16_t port, const std::string& bytes, std::string& reply) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // The server may close before it read everything: a send may then fail.
  std::size_t off = 0;
  while (off < bytes.size()) {
    const auto n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Its reads wait for our reads (a flood of frames it must answer): drain a little.
      pollfd p{fd, POLLIN | POLLOUT, 0};
      ::poll(&p, 1, 100);
      char sink[65536];
      const auto r = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (r > 0) reply.append(sink, static_cast<std::size_t>(r));
      if (r == 0) break;
      continue;
    }
    break;
  }
  ::shutdown(fd, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + 10s;
  bool closed = false;
  char buf[65536];
  while (!closed && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const auto n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      if (reply.size() < (1u << 20)) reply.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      closed = true;
    }
  }
  ::close(fd);
  return closed;
}

/// A well-formed call to /fuzz.Echo/Echo is answered with its message.
void check_still_serving(std::uint16_t port) {
  namespace h2 = wheelrpc::test::h2;
  h2::RawConnection c(port);
  FUZZ_CHECK(c.connected());
  FUZZ_CHECK(c.send(h2::opening()));
  FUZZ_CHECK(c.read_until([](const h2::Frame& f) { return f.type == h2::kSettings && (f.flags & h2::kAck) == 0; }));
  const wheelrpc::test::H2Headers headers{{":method", "POST"},
                                          {":scheme", "http"},
                                          {":authority", "127.0.0.1"},
                                          {":path", "/fuzz.Echo/Echo"},
                                          {"content-type", "application/grpc"},
                                          {"te", "trailers"}};
  FUZZ_CHECK(c.send(h2::headers(1, headers, false) + h2::data(1, std::string("\0\0\0\0\2hi", 7), true)));
  const auto trailers = c.read_until(
      [](const h2::Frame& f) { return f.type == h2::kHeaders && f.stream_id == 1 && (f.flags & h2::kEndStream); });
  FUZZ_CHECK(trailers);
  FUZZ_CHECK(c.frames().back().field("grpc-status") == "0");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::uint64_t runs = 0;
  Target& t = target();
  std::string bytes(wheelrpc::test::h2::kPreface);
  bytes.append(reinterpret_cast<const char*>(data), size);
  std::string reply;
  FUZZ_CHECK(exchange(t.port, bytes, reply));
  // The server's first frame is its SETTINGS (stream 0, a multiple of 6 bytes).
  if (reply.size() >= 9) {
    FUZZ_CHECK(reply[3] == 4);
    FUZZ_CHECK((reply[4] & 1) == 0);
    FUZZ_CHECK(reply[5] == 0 && reply[6] == 0 && reply[7] == 0 && reply[8] == 0);
    const std::size_t len = static_cast<unsigned char>(reply[0]) << 16 | static_cast<unsigned char>(reply[1]) << 8 |
                            static_cast<unsigned char>(reply[2]);
    FUZZ_CHECK(len % 6 == 0);
  }
  if (++runs % 1000 == 0) check_still_serving(t.port);
  return 0;
}
