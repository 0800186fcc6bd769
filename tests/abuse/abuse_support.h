#pragma once
// What the abuse tests share: a real echo_server run as a child process with
// tight limits, a well-behaved client calling it all along, and abusers on
// raw sockets. Each abuser returns how long the server took to cut off each
// of its connections.

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/frame.h>

#include "support/open_files.h"
#include "support/raw_frames.h"
#include "support/rpc_fixture.h"
#include "support/server_process.h"
#include "support/wait.h"

namespace wheelrpc::test::abuse {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// Whether the server's resident memory means anything here: under a
/// sanitizer (the server is built like the tests) freed memory is held in a
/// quarantine or beside shadow memory, so only the other checks apply.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kMemoryChecked = false;
#else
inline constexpr bool kMemoryChecked = true;
#endif

/// The server's limits in these tests (echo_server flags).
inline constexpr auto kHelloTimeout = 1000ms;
inline constexpr std::size_t kWriteQueueBytes = std::size_t{4} << 20;

inline std::vector<std::string> server_args() {
  return {"--threads",         "2",    "--hello-timeout-ms",      std::to_string(kHelloTimeout.count()),
          "--max-connections", "1500", "--max-write-queue-bytes", std::to_string(kWriteQueueBytes)};
}

/// The abusers' sockets are files.
using examples::raise_open_file_limit;

/// A connected blocking TCP socket to 127.0.0.1:port, or -1.
inline int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends all of `bytes` (blocking); false once the peer has closed.
inline bool send_all(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const auto n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

inline std::string hello_frame() { return hello_bytes(); }

/// Waits until the server has closed every socket in `fds` (EOF or reset;
/// anything it sends first is read and dropped), or `limit` passes. Returns,
/// per socket, how long after `since` it was seen closed (-1 ms: never). The
/// sockets are closed on return.
inline std::vector<std::chrono::milliseconds> wait_closed(std::vector<int>& fds, Clock::time_point since,
                                                          std::chrono::milliseconds limit) {
  std::vector<std::chrono::milliseconds> out(fds.size(), std::chrono::milliseconds(-1));
  std::vector<pollfd> p(fds.size());
  for (std::size_t i = 0; i < fds.size(); ++i) p[i] = {fds[i], POLLIN, 0};
  std::size_t open = fds.size();
  const auto until = Clock::now() + limit;
  std::vector<char> sink(1 << 16);
  while (open > 0 && Clock::now() < until) {
    if (::poll(p.data(), p.size(), 50) <= 0) continue;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      const auto n = ::recv(p[i].fd, sink.data(), sink.size(), MSG_DONTWAIT);
      if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) continue;
      out[i] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since);
      p[i].fd = -1;
      --open;
    }
  }
  for (int& fd : fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  return out;
}

/// A client that behaves: calls `echo` back to back until stopped, each call
/// with a 5 s deadline; counts what every call ended with.
class GoodClient {
 public:
  explicit GoodClient(std::uint16_t port, rpc::ClientOptions options = {})
      : client_(threads_.io.get_executor(), timer_,
                {boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), port)}, options) {}
  ~GoodClient() {
    stop();
    client_.close();
    threads_.stop();
  }
  /// Makes `n` calls first (all must succeed), then calls on in the background.
  bool start(int warmup = 200) {
    for (int i = 0; i < warmup; ++i) {
      if (!one_call()) return false;
    }
    loop_ = std::thread([this] {
      while (!stopping_.load()) one_call();
    });
    return true;
  }
  void stop() {
    stopping_.store(true);
    if (loop_.joinable()) loop_.join();
  }
  std::uint64_t ok() const { return ok_.load(); }
  std::uint64_t failed() const { return failed_.load(); }
  std::string first_error() {
    std::lock_guard lock(mu_);
    return first_error_;
  }

 private:
  bool one_call() {
    rpc::CallOptions o;
    o.timeout = 5s;
    const auto out = call_and_wait(client_, "echo", "ping", o);
    if (!out.ec && out.response.payload == "ping") {
      ok_.fetch_add(1);
      return true;
    }
    failed_.fetch_add(1);
    std::lock_guard lock(mu_);
    if (first_error_.empty()) first_error_ = out.ec.message() + ": " + out.response.error_message;
    return false;
  }

  IoThreads threads_{1};
  timer::HashedWheelTimer timer_;
  rpc::Client client_;
  std::thread loop_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> ok_{0}, failed_{0};
  std::mutex mu_;
  std::string first_error_;
};

// ---------------------------------------------------------------- abusers

/// `n` connections, each sending `bytes(i)` once (blocking) and then nothing
/// more; returns when each was cut off (see wait_closed). If any connect
/// fails, none is kept and the result is empty.
template <class Bytes>
std::vector<std::chrono::milliseconds> connections_sending(std::uint16_t port, std::size_t n, Bytes bytes) {
  std::vector<int> fds;
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = connect_to(port);
    if (fd < 0) {
      for (int open : fds) ::close(open);
      return {};
    }
    fds.push_back(fd);
    send_all(fd, bytes(i));
  }
  return wait_closed(fds, t0, 60s);
}

/// `n` connections that send nothing.
inline std::vector<std::chrono::milliseconds> silent_connections(std::uint16_t port, std::size_t n) {
  return connections_sending(port, n, [](std::size_t) { return std::string(); });
}

/// `n` connections that each send a HELLO one byte per 100 ms (it would take
/// about 6 s to complete). Returns when each was cut off (or -1 ms if it
/// managed to send the whole HELLO and was still open 60 s after).
inline std::vector<std::chrono::milliseconds> slow_hellos(std::uint16_t port, std::size_t n) {
  const std::string hello = hello_frame();
  std::vector<int> fds;
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = connect_to(port);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  const auto t0 = Clock::now();
  std::vector<std::chrono::milliseconds> out(fds.size(), std::chrono::milliseconds(-1));
  std::vector<bool> cut(fds.size(), false);
  std::size_t sent = 0;
  for (; sent < hello.size(); ++sent) {
    bool any = false;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (cut[i]) continue;
      if (::send(fds[i], hello.data() + sent, 1, MSG_NOSIGNAL) != 1) {
        cut[i] = true;
        out[i] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
        continue;
      }
      any = true;
    }
    if (!any) break;
    std::this_thread::sleep_for(100ms);
  }
  // Those not yet seen cut off (a send into a socket the server closed
  // succeeds once): wait for the close itself.
  std::vector<int> rest;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (cut[i]) {
      ::close(fds[i]);
    } else {
      rest.push_back(fds[i]);
      index.push_back(i);
    }
  }
  const auto later = wait_closed(rest, t0, 60s);
  for (std::size_t k = 0; k < index.size(); ++k) out[index[k]] = later[k];
  return out;
}

/// `n` connections that send 4 KiB of random bytes each.
inline std::vector<std::chrono::milliseconds> garbage(std::uint16_t port, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return connections_sending(port, n, [&](std::size_t) {
    std::string bytes(4096, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    return bytes;
  });
}

/// `n` connections that say HELLO, then send a request header announcing a
/// body of 4 GiB - 1 and the first bytes of it.
inline std::vector<std::chrono::milliseconds> huge_headers(std::uint16_t port, std::size_t n) {
  std::string header = request_bytes(2, "echo");
  // body_len is the header's last four bytes (big-endian).
  for (int b = 0; b < 4; ++b) header[transport::kHeaderSize - 1 - b] = static_cast<char>(0xff);
  header.resize(transport::kHeaderSize);
  const std::string bytes = hello_frame() + header + std::string(65536, 'x');
  return connections_sending(port, n, [&](std::size_t) { return bytes; });
}

/// `n` connections that say HELLO, then send requests for 64 KiB echoes as
/// fast as they can and read nothing, until the server cuts them off.
inline std::vector<std::chrono::milliseconds> floods(std::uint16_t port, std::size_t n) {
  std::string burst;
  for (std::uint64_t id = 2; id < 2 + 16; ++id) {
    burst += request_bytes(id, "echo", std::string(65536, 'f'));
  }
  std::vector<int> fds;
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = connect_to(port);
    if (fd < 0) break;
    // Sends time out after 1 s: a server that stopped reading cannot block us.
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    send_all(fd, hello_frame());
    fds.push_back(fd);
  }
  const auto t0 = Clock::now();
  std::vector<bool> going(fds.size(), true);
  std::size_t left = fds.size();
  // Up to 256 MiB asked of each (4,096 replies of 64 KiB), far over the
  // server's bound on queued replies.
  for (int round = 0; round < 256 && left > 0; ++round) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (going[i] && !send_all(fds[i], burst)) {
        going[i] = false;
        --left;
      }
    }
  }
  return wait_closed(fds, t0, 60s);
}

/// `n` connections that speak plaintext (a HELLO) to a TLS port.
inline std::vector<std::chrono::milliseconds> plaintext_on_tls(std::uint16_t port, std::size_t n) {
  return connections_sending(port, n, [](std::size_t) { return hello_frame(); });
}

/// `n` wheelrpc clients whose TLS certificate the server does not trust (or
/// none at all): each makes one call, which must fail. Returns, per client,
/// how long its call took (-1 ms: it succeeded, or did not end in 60 s).
inline std::vector<std::chrono::milliseconds> untrusted_tls_clients(std::uint16_t port, std::size_t n,
                                                                    const rpc::ClientOptions& options) {
  IoThreads threads(1);
  timer::HashedWheelTimer timer;
  std::vector<std::unique_ptr<rpc::Client>> clients;
  std::vector<std::future<Outcome>> calls;
  const auto t0 = Clock::now();
  rpc::CallOptions o;
  o.timeout = 60s;
  o.retries = 0;
  for (std::size_t i = 0; i < n; ++i) {
    clients.push_back(
        std::make_unique<rpc::Client>(threads.io.get_executor(), timer,
                                      std::vector<boost::asio::ip::tcp::endpoint>{boost::asio::ip::tcp::endpoint(
                                          boost::asio::ip::address_v4::loopback(), port)},
                                      options));
    calls.push_back(start(*clients.back(), "echo", "x", o));
  }
  std::vector<std::chrono::milliseconds> out;
  for (auto& f : calls) {
    const bool done = f.wait_until(t0 + 60s) == std::future_status::ready;
    const auto t = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    out.push_back(done && f.get().ec ? t : std::chrono::milliseconds(-1));
  }
  for (auto& c : clients) c->close();
  threads.stop();
  return out;
}

/// Whether every connection was cut off, and the longest it took.
struct Verdict {
  bool all_cut = false;
  std::chrono::milliseconds longest{0};
};
inline Verdict verdict(const std::vector<std::chrono::milliseconds>& times) {
  Verdict v;
  v.all_cut = !times.empty();
  for (auto t : times) {
    if (t.count() < 0) v.all_cut = false;
    v.longest = std::max(v.longest, t);
  }
  return v;
}

}  // namespace wheelrpc::test::abuse
