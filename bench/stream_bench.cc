/// rpc_bench's stream workload: wheelrpc's untyped streams, mirroring
/// bench/peers/grpc_stream.cc (gRPC C++ bidi streaming) mode for mode, so
/// bench/compare_stream.sh can put the two side by side.
///
///   rpc_bench server ... [--stream-handlers callback|coroutine]
///   rpc_bench client --port N --stream echo|oneway|idle [--streams 1] [--payload 64]
///                    [--warmup 1] [--duration 10] [--server-pid PID] [--host 127.0.0.1]
///
/// Server (`rpc_bench server` registers both methods next to its `echo`):
/// `stream_echo` writes every message back (read, write it, read the next)
/// and finishes with success when the client half-closes; `stream_sink`
/// counts the messages and, when the client half-closes, writes the count
/// (decimal) and finishes. --stream-handlers picks the handlers' form:
/// `callback` (the default): a chain of completion handlers, each holding
/// the ServerStream and nothing else (sink: and its count), so an idle
/// stream holds one read handler of 16 bytes (24 for the sink); or
/// `coroutine`: one C++20 coroutine per stream (co_spawn on the stream's
/// executor, as_tuple(use_awaitable)), which holds its frame while idle.
///
/// Client: one wheelrpc::rpc::Client (one connection) on an io_context run
/// by one thread, as grpc_stream's one channel polled by one thread. Before
/// anything it connects and waits until the connection is ready (HELLO
/// done; grpc_stream: WaitForConnected) and reads both processes' RSS. Then
/// it opens --streams streams at once and starts the clock when every one
/// was accepted by the server (grpc_stream: started, and the server's
/// initial metadata arrived). Each message carries its stream's sequence
/// number in its first 8 bytes. Operations are completion handlers
/// (lambdas holding the client and the stream's slot).
///   echo:   S stream_echo streams, each with one message in flight: write
///           it, once written read its echo (it must be the message, same
///           size, same sequence number), write the next (the echo's buffer
///           is reused). Measured: echoes completed in [warm-up, warm-up +
///           duration) and their round trips, write to echo (stamped with
///           the timer's cheap steady clock, as rpc_bench's echo).
///   oneway: S stream_sink streams, each writing back to back, the next
///           write when the previous one completed (a write completes when
///           the stream has credit for it and the connection queued it: what
///           gRPC's write completion means too). Measured: writes completed
///           in the window. After it each stream half-closes and reads the
///           server's count, which must equal its writes (`check`).
///   idle:   S stream_echo streams exchange one message each, then keep a
///           read pending and send nothing. 1 s after the last exchange the
///           RSS of both processes less their RSS read before the streams
///           opened, / S, is what an open stream costs; the CPU is over that
///           second. --warmup and --duration are not used. The server's
///           figure is only right from a fresh server (one that served as
///           many streams before reuses the memory they freed).
/// After the window each stream finishes its message in flight, half-closes,
/// reads to the end and must end with success (async_finish). CPU of both
/// processes is sampled at the window's edges (steady timers, as rpc_bench's
/// echo). One JSON line with grpc_stream's fields, "system": "wheelrpc".
/// Exit status 1 if a stream failed or `check` is not ok.

#include "stream_bench.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench_util.h"

#ifndef WHEELRPC_BENCH_VERSION
#define WHEELRPC_BENCH_VERSION "0.1.0"
#endif

namespace wheelrpc::bench {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using rpc::ClientStream;
using rpc::ServerStream;
using namespace std::chrono_literals;

constexpr std::string_view kEchoMethod = "stream_echo";
constexpr std::string_view kSinkMethod = "stream_sink";

// ---- server: the callback form ------------------------------------------------
//
// Each handler holds the ServerStream (a shared handle, 16 bytes) and passes
// it on to the next operation's handler; the stream's own copy for the call
// is taken first, since the handler's construction moves it away.

struct EchoRead {
  ServerStream s;
  void operator()(error_code ec, std::optional<std::string> m);
};
struct EchoWritten {
  ServerStream s;
  void operator()(error_code ec) {
    if (ec) return;  // the stream ended (cancelled, connection lost): nothing to answer
    ServerStream self = s;
    self.async_read(EchoRead{std::move(s)});
  }
};
void EchoRead::operator()(error_code ec, std::optional<std::string> m) {
  if (ec) return;
  if (!m) return s.finish();  // the client half-closed
  ServerStream self = s;
  self.async_write(std::move(*m), EchoWritten{std::move(s)});
}

struct SinkReplied {
  ServerStream s;
  void operator()(error_code ec) {
    if (!ec) s.finish();
  }
};
struct SinkRead {
  ServerStream s;
  std::uint64_t count = 0;
  void operator()(error_code ec, std::optional<std::string> m) {
    if (ec) return;
    ServerStream self = s;
    if (m) {
      self.async_read(SinkRead{std::move(s), count + 1});
    } else {
      self.async_write(std::to_string(count), SinkReplied{std::move(s)});
    }
  }
};

// ---- server: the coroutine form -----------------------------------------------

asio::awaitable<void> echo_coroutine(ServerStream s) {
  for (;;) {
    auto [ec, m] = co_await s.async_read(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    if (!m) break;
    auto [wec] = co_await s.async_write(std::move(*m), asio::as_tuple(asio::use_awaitable));
    if (wec) co_return;
  }
  s.finish();
}

asio::awaitable<void> sink_coroutine(ServerStream s) {
  std::uint64_t count = 0;
  for (;;) {
    auto [ec, m] = co_await s.async_read(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    if (!m) break;
    ++count;
  }
  auto [ec] = co_await s.async_write(std::to_string(count), asio::as_tuple(asio::use_awaitable));
  if (!ec) s.finish();
}

// ---- client -------------------------------------------------------------------

enum class Mode { echo, oneway, idle };

/// How long the client waits for its connection, and for every stream to open.
constexpr auto kConnectTimeout = 5s;
constexpr auto kOpenTimeout = 10s;
/// How long idle streams stay open before the RSS is read.
constexpr auto kIdleSettle = 1s;
/// How long after the window (idle: after the start) the run may take to end.
constexpr auto kDrainBound = 10s;
constexpr auto kIdleBound = 60s;

/// Stamps: the timer's cheap steady clock, as rpc_bench's echo.
inline std::int64_t stamp_ns() noexcept { return to_ns(wheelrpc::timer::fast_steady_now()); }

long rss_of(pid_t pid) {
  if (pid <= 0) return -1;
  const long kib = proc_status_field("/proc/" + std::to_string(pid) + "/status", "VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

class StreamLoad {
 public:
  StreamLoad(const Flags& flags, asio::io_context& io, rpc::Client& client)
      : io_(io),
        client_(client),
        mode_name_(flags.str("stream", "echo")),
        payload_(static_cast<std::size_t>(flags.integer("payload", 64, 8, 16 << 20))),
        warmup_s_(flags.seconds("warmup", 1)),
        duration_s_(flags.seconds("duration", 10)),
        server_pid_(static_cast<pid_t>(flags.integer("server-pid", 0, 0, 1 << 30))),
        slots_(static_cast<std::size_t>(flags.integer("streams", 1, 1, 100000))),
        edge_(io),
        window_end_(io),
        watchdog_(io) {
    mode_ = mode_name_ == "echo"     ? Mode::echo
            : mode_name_ == "oneway" ? Mode::oneway
            : mode_name_ == "idle"   ? Mode::idle
                                     : throw UsageError("--stream takes echo, oneway or idle");
    if (!(duration_s_ > 0)) throw UsageError("--duration must be > 0");
    oneway_message_.assign(payload_, 'x');
  }

  /// Connects, opens the streams and runs the mode; returns once every stream
  /// ended (or the watchdog gave up). On the io_context's thread.
  void start() {
    client_.connect();
    const std::int64_t give_up = stamp_ns() + std::chrono::nanoseconds(kConnectTimeout).count();
    wait_ready(give_up);
  }

  int report() const {
    Check check = check_;
    check.expect(errors_ == 0, std::to_string(errors_) + " of " + std::to_string(slots_.size()) + " streams failed");
    if (mode_ != Mode::idle) check.expect(messages_ > 0, "no message completed in the window");
    if (mode_ == Mode::oneway) {
      check.expect(server_count_ == client_count_, "the server counted " + std::to_string(server_count_) +
                                                       " messages, the client wrote " + std::to_string(client_count_));
    }
    JsonLine line;
    line.str("system", "wheelrpc")
        .str("version", WHEELRPC_BENCH_VERSION)
        .str("workload", "stream")
        .str("mode", mode_name_)
        .num("streams", static_cast<unsigned long long>(slots_.size()))
        .num("payload_bytes", static_cast<unsigned long long>(payload_))
        .num("warmup_s", warmup_s_, 1)
        .num("duration_s", duration_s_, 1)
        .num("messages", static_cast<unsigned long long>(messages_))
        .num("messages_per_s", mode_ == Mode::idle ? 0.0 : static_cast<double>(messages_) / duration_s_, 0)
        .num("p50_us", latency_.quantile(0.50) / 1e3, 1)
        .num("p99_us", latency_.quantile(0.99) / 1e3, 1)
        .num("errors", static_cast<unsigned long long>(errors_))
        .num("client_cpu_s", client_cpu_s_, 2)
        .num("server_cpu_s", server_cpu_s_, 2);
    if (mode_ == Mode::idle) {
      line.num("client_rss_bytes_per_stream", client_rss_, 0).num("server_rss_bytes_per_stream", server_rss_, 0);
    }
    line.num("p999_us", latency_.quantile(0.999) / 1e3, 1)
        .num("client_cpu_ns_per_message", per_message_ns(client_cpu_s_), 0)
        .num("server_cpu_ns_per_message", per_message_ns(server_cpu_s_), 0)
        .str("check", check.text())
        .print();
    return check.ok() ? 0 : 1;
  }

 private:
  enum class Phase : std::uint8_t { opening, running, idle, closing, done };
  /// One stream and what its handlers need; the handlers hold `this` and the slot.
  struct Slot {
    ClientStream stream;
    std::string buf;                 ///< echo: the message in flight, then its echo
    std::uint64_t sent = 0;          ///< messages written (echo, idle: and echoed)
    std::int64_t sent_ns = 0;        ///< when the message in flight was written
    std::uint64_t server_count = 0;  ///< oneway: the server's count
    Phase phase = Phase::opening;
    bool count_read = false;  ///< oneway: the count arrived
  };

  // ---- connect, open
  void wait_ready(std::int64_t give_up) {
    bool ready = false;
    for (const auto& c : client_.connections()) {
      ready = ready || (c.state == rpc::ConnectionInfo::State::ready && c.heartbeat.count() > 0);
    }
    if (ready) return open_all();
    if (stamp_ns() > give_up) {
      std::fprintf(stderr, "rpc_bench client: the connection was not ready after %lld s\n",
                   static_cast<long long>(kConnectTimeout.count()));
      errors_ = slots_.size();
      return client_.close();
    }
    edge_.expires_after(5ms);
    edge_.async_wait([this, give_up](error_code) { wait_ready(give_up); });
  }

  void open_all() {
    client_rss0_ = rss_bytes();
    server_rss0_ = rss_of(server_pid_);
    opening_ = live_ = slots_.size();
    watchdog_.expires_after(mode_ == Mode::idle ? kIdleBound
                                                : kOpenTimeout + kDrainBound + ns_of(warmup_s_ + duration_s_));
    watchdog_.async_wait([this](error_code ec) {
      if (ec) return;
      std::fprintf(stderr, "rpc_bench client: watchdog fired (%zu streams still open)\n", live_);
      errors_ += live_;
      io_.stop();
    });
    const std::string method(mode_ == Mode::oneway ? kSinkMethod : kEchoMethod);
    for (Slot& s : slots_) {
      rpc::CallOptions options;
      options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kOpenTimeout);
      client_.async_open_stream(method, std::move(options), [this, &s](error_code ec, ClientStream stream) {
        s.stream = std::move(stream);
        if (ec) {
          fail(s, "the stream did not open", ec);
        } else {
          s.phase = Phase::running;
        }
        if (--opening_ == 0) all_open();
      });
    }
  }

  void all_open() {
    const std::int64_t now = stamp_ns();
    if (live_ == 0) return;  // none opened
    if (mode_ == Mode::idle) {
      exchanging_ = live_;
    } else {
      t_measure_ = now + static_cast<std::int64_t>(warmup_s_ * 1e9);
      t_end_ = t_measure_ + static_cast<std::int64_t>(duration_s_ * 1e9);
      edge_.expires_after(std::chrono::nanoseconds(t_measure_ - now));
      edge_.async_wait([this](error_code) { cpu0_ = cpu_now(); });
      window_end_.expires_after(std::chrono::nanoseconds(t_end_ - now));
      window_end_.async_wait([this](error_code) { set_cpu(cpu0_, cpu_now()); });
    }
    for (Slot& s : slots_) {
      if (s.phase == Phase::running) send(s);
    }
  }

  // ---- the messages
  void send(Slot& s) {
    if (mode_ == Mode::oneway) {
      std::string m = oneway_message_;
      std::memcpy(m.data(), &s.sent, sizeof s.sent);
      s.stream.async_write(std::move(m), [this, &s](error_code ec) { on_oneway_written(s, ec); });
      return;
    }
    if (s.buf.empty()) s.buf.assign(payload_, 'x');
    std::memcpy(s.buf.data(), &s.sent, sizeof s.sent);
    s.sent_ns = stamp_ns();
    s.stream.async_write(std::move(s.buf), [this, &s](error_code ec) {
      if (ec) return fail(s, "a write failed", ec);
      s.stream.async_read([this, &s](error_code e, std::optional<std::string> m) { on_echo(s, e, std::move(m)); });
    });
  }

  void on_oneway_written(Slot& s, error_code ec) {
    if (ec) return fail(s, "a write failed", ec);
    const std::int64_t now = stamp_ns();
    ++s.sent;
    if (now >= t_measure_ && now < t_end_) ++messages_;
    now >= t_end_ ? close(s) : send(s);
  }

  void on_echo(Slot& s, error_code ec, std::optional<std::string> m) {
    const std::int64_t now = stamp_ns();
    if (ec) return fail(s, "a read failed", ec);
    if (!m) return fail(s, "the stream ended early", ec);
    std::uint64_t got = ~s.sent;
    if (m->size() >= sizeof got) std::memcpy(&got, m->data(), sizeof got);
    if (m->size() != payload_ || got != s.sent) return fail(s, "a message that is not the echo", ec);
    ++s.sent;
    if (mode_ == Mode::idle) {  // its one exchange: stay open with a read pending
      ++messages_;
      s.phase = Phase::idle;
      s.stream.async_read(
          [this, &s](error_code e, std::optional<std::string> end) { on_end_read(s, e, std::move(end)); });
      return exchanged();
    }
    if (now >= t_measure_ && now < t_end_) {
      ++messages_;
      latency_.record(static_cast<std::uint64_t>(now - s.sent_ns));
    }
    s.buf = std::move(*m);
    now >= t_end_ ? close(s) : send(s);
  }

  // ---- idle
  void exchanged() {
    if (--exchanging_ != 0) return;
    const auto cpu0 = cpu_now();
    edge_.expires_after(kIdleSettle);
    edge_.async_wait([this, cpu0](error_code) {
      set_cpu(cpu0, cpu_now());
      client_rss_ = per_stream(client_rss0_, rss_bytes());
      server_rss_ = per_stream(server_rss0_, rss_of(server_pid_));
      for (Slot& s : slots_) {
        if (s.phase == Phase::idle) close(s);
      }
    });
  }

  // ---- the end
  void close(Slot& s) {
    s.phase = Phase::closing;
    s.stream.async_writes_done([this, &s](error_code ec) {
      if (ec) return fail(s, "the half-close failed", ec);
      if (mode_ != Mode::idle) read_end(s);  // idle: its read is pending already
    });
  }
  void read_end(Slot& s) {
    s.stream.async_read([this, &s](error_code e, std::optional<std::string> m) { on_end_read(s, e, std::move(m)); });
  }
  void on_end_read(Slot& s, error_code ec, std::optional<std::string> m) {
    if (s.phase == Phase::done) return;
    if (ec) return fail(s, "the stream ended with an error", ec);
    if (m) {
      if (mode_ != Mode::oneway || s.count_read) return fail(s, "an unexpected message", ec);
      s.count_read = true;
      s.server_count = std::strtoull(m->c_str(), nullptr, 10);
      return read_end(s);
    }
    if (s.phase != Phase::closing) return fail(s, "the stream ended before the client half-closed", ec);
    if (mode_ == Mode::oneway && !s.count_read) return fail(s, "no count from the server", ec);
    s.stream.async_finish([this, &s](error_code e) {
      if (e) return fail(s, "the stream's final status is an error", e);
      if (mode_ == Mode::oneway) {
        server_count_ += s.server_count;
        client_count_ += s.sent;
      }
      ended(s);
    });
  }

  void fail(Slot& s, const char* why, error_code ec) {
    if (s.phase == Phase::done) return;
    const bool exchanging = mode_ == Mode::idle && s.phase == Phase::running;
    if (errors_++ == 0) {
      const std::string detail = s.stream.valid() ? s.stream.error_message() : std::string();
      std::fprintf(stderr, "rpc_bench client: first failed stream: %s: %s\n", why,
                   !detail.empty() ? detail.c_str() : (ec ? ec.message().c_str() : "-"));
    }
    s.stream.cancel();
    ended(s);
    if (exchanging) exchanged();
  }

  void ended(Slot& s) {
    s.phase = Phase::done;
    if (--live_ != 0) return;
    // The window's timers are left to fire (the last stream can end before
    // the one at the window's end ran); the watchdog is not.
    watchdog_.cancel();
    client_.close();  // releases the io_context
  }

  // ---- figures
  static std::chrono::nanoseconds ns_of(double s) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
  }
  std::pair<double, double> cpu_now() const {
    return {process_cpu_s(), server_pid_ > 0 ? other_process_cpu_s(server_pid_) : -1.0};
  }
  void set_cpu(std::pair<double, double> start, std::pair<double, double> end) {
    client_cpu_s_ = end.first - start.first;
    server_cpu_s_ = start.second < 0 || end.second < 0 ? -1 : end.second - start.second;
  }
  double per_stream(long before, long after) const {
    return before < 0 || after < 0 ? -1 : static_cast<double>(after - before) / static_cast<double>(slots_.size());
  }
  double per_message_ns(double cpu_s) const {
    return cpu_s < 0 || messages_ == 0 || mode_ == Mode::idle ? -1 : cpu_s * 1e9 / static_cast<double>(messages_);
  }

  asio::io_context& io_;
  rpc::Client& client_;
  std::string mode_name_;
  Mode mode_ = Mode::echo;
  std::size_t payload_;
  double warmup_s_, duration_s_;
  pid_t server_pid_;  ///< 0: the server's CPU and RSS are not reported (-1)
  std::string oneway_message_;
  std::vector<Slot> slots_;
  asio::steady_timer edge_, window_end_, watchdog_;

  std::size_t opening_ = 0, live_ = 0, exchanging_ = 0;
  std::int64_t t_measure_ = std::numeric_limits<std::int64_t>::max();
  std::int64_t t_end_ = std::numeric_limits<std::int64_t>::max();
  std::pair<double, double> cpu0_{0, -1};

  LatencyHistogram latency_;        ///< ns, echo round trips completed in the window
  std::uint64_t messages_ = 0;      ///< completed in the window (idle: the exchanges)
  std::uint64_t errors_ = 0;        ///< failed streams
  std::uint64_t server_count_ = 0;  ///< oneway: the server's counts, summed
  std::uint64_t client_count_ = 0;  ///< oneway: the writes of the streams that ended well
  double client_cpu_s_ = 0, server_cpu_s_ = -1;
  long client_rss0_ = -1, server_rss0_ = -1;
  double client_rss_ = -1, server_rss_ = -1;  ///< idle: bytes per stream
  Check check_;
};

}  // namespace

void register_stream_methods(rpc::Server& server, const std::string& form) {
  if (form == "callback") {
    server.handle_stream(std::string(kEchoMethod), [](ServerStream s) {
      ServerStream self = s;
      self.async_read(EchoRead{std::move(s)});
    });
    server.handle_stream(std::string(kSinkMethod), [](ServerStream s) {
      ServerStream self = s;
      self.async_read(SinkRead{std::move(s), 0});
    });
  } else if (form == "coroutine") {
    server.handle_stream(std::string(kEchoMethod), [](ServerStream s) {
      auto ex = s.get_executor();
      asio::co_spawn(ex, echo_coroutine(std::move(s)), asio::detached);
    });
    server.handle_stream(std::string(kSinkMethod), [](ServerStream s) {
      auto ex = s.get_executor();
      asio::co_spawn(ex, sink_coroutine(std::move(s)), asio::detached);
    });
  } else {
    throw UsageError("--stream-handlers takes callback or coroutine (got '" + form + "')");
  }
}

int stream_client(const Flags& flags) {
  flags.check_known({"port", "stream", "streams", "payload", "warmup", "duration", "server-pid", "host", "protocol"});
  const auto ep = endpoint_of(flags.str("host", "127.0.0.1"), flags.integer("port", 0, 1, 65535));
  asio::io_context io(1);
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the client
  rpc::ClientOptions options;
  const std::string protocol = flags.str("protocol", "native");
  if (protocol == "grpc") {
    options.protocol = rpc::WireProtocol::grpc;
  } else if (protocol != "native") {
    throw UsageError("--protocol takes native|grpc (got '" + protocol + "')");
  }
  rpc::Client client(io.get_executor(), timer, {ep}, std::move(options));
  StreamLoad load(flags, io, client);  // checks the flags before connecting
  asio::post(io, [&] { load.start(); });
  io.run();        // returns once every stream ended and the client closed (or the watchdog stopped it)
  client.close();  // idempotent
  return load.report();
}

}  // namespace wheelrpc::bench
