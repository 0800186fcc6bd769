/// rpc_bench conn_scale: what N idle connections with heartbeats cost.
///
///   rpc_bench conn_scale [--connections 1000] [--heartbeat-ms 1000] [--duration-s 20]
///                        [--batch 200] [--ready-timeout-s 120]
///                        [--port P [--server-pid PID]] [--host 127.0.0.1]
///
/// Shape: a gateway holding many quiet upstream connections. The client (this
/// process) makes one wheelrpc::rpc::Client per connection, all sharing one
/// HashedWheelTimer and one io_context run by one thread, each with
/// ClientOptions::heartbeat = --heartbeat-ms (so every connection has its own
/// HeartbeatTimerTask and ReconnectTimerTask). The server is a second process,
/// `rpc_bench server --heartbeat-ms H` (ServerOptions::keepalive.heartbeat = H), started
/// here unless --port names one already running (pass its --server-pid to have
/// its CPU and memory measured).
///
/// Method: both processes raise their open-file soft limit to the hard limit;
/// if N connections (one descriptor on each side, plus kOpenFileMargin) do not
/// fit, it says so on stderr and exits 2. RSS (VmRSS) of both processes is
/// read before the first connection; connections are then made `--batch` at a
/// time, each batch waited for (ClientStats::connects) before the next, so the
/// accept backlog is never overrun, all within --ready-timeout-s. Once all are
/// ready, CPU (utime + stime) of both processes is sampled, the connections
/// stay idle (heartbeats only) for --duration-s, and CPU and RSS are sampled
/// again. Per-connection RSS = (RSS at the end of the window - RSS before) / N.
///
/// Output: one JSON line, first the fields workload, connections, heartbeat_ms,
/// duration_s, heartbeats_sent (sum of ClientStats::heartbeats_sent),
/// client_cpu_s, server_cpu_s (over the window), client_rss_bytes_per_conn,
/// server_rss_bytes_per_conn, timer_pending (the client's shared timer at the
/// end of the window), errors (connections that failed, never became ready,
/// were lost or reconnected); then details, among them user and kernel CPU
/// apart (client_user_cpu_s, client_sys_cpu_s, server_user_cpu_s,
/// server_sys_cpu_s) and user-space CPU per heartbeat sent in the window
/// (client_user_us_per_heartbeat, server_user_us_per_heartbeat: the server
/// answers each), and the CPU of each process's timer worker thread
/// ("wheel-timer", where the channel timer tasks run) over the window. Exit
/// status 1 if errors > 0.

#include "conn_scale.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench_util.h"

extern char** environ;

namespace wheelrpc::bench {
namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;

#ifndef WHEELRPC_BENCH_VERSION
#define WHEELRPC_BENCH_VERSION "0.1.0"
#endif

/// VmRSS of process `pid` (0 = this one), in bytes; -1 if it is gone.
long rss_of(pid_t pid) {
  const std::string path = pid == 0 ? "/proc/self/status" : "/proc/" + std::to_string(pid) + "/status";
  const long kib = proc_status_field(path, "VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

/// The soft "Max open files" of process `pid`, from /proc/PID/limits;
/// LONG_MAX when unlimited, -1 when it cannot be read.
long open_file_limit_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream in(line.substr(std::strlen("Max open files")));
    std::string soft;
    in >> soft;
    if (soft == "unlimited") return LONG_MAX;
    try {
      return std::stol(soft);
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

/// The message (and exit status 2) when `n` connections do not fit under `limit` open files.
int too_many_files(const char* who, long n, long limit) {
  std::fprintf(stderr,
               "rpc_bench conn_scale: %ld connections need %ld open files in the %s process (one per "
               "connection plus %ld), but its open-file limit is %ld even after raising the soft limit "
               "to the hard one. Raise the hard limit (ulimit -Hn, or LimitNOFILE=) or use fewer "
               "--connections.\n",
               n, n + kOpenFileMargin, who, kOpenFileMargin, limit);
  return 2;
}

/// `rpc_bench server` started by conn_scale (this same executable), on port 0;
/// stopped with SIGTERM when destroyed.
class ServerProcess {
 public:
  ServerProcess(long heartbeat_ms, double lifetime_s) {
    char tmpl[] = "/tmp/rpc_bench_conn_scale.XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    dir_ = tmpl;
    const std::string port_file = dir_ + "/port";
    std::vector<std::string> args = {"rpc_bench",      "server",
                                     "--port",         "0",
                                     "--port-file",    port_file,
                                     "--heartbeat-ms", std::to_string(heartbeat_ms),
                                     "--lifetime",     std::to_string(static_cast<long>(lifetime_s) + 1)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (const int e = ::posix_spawn(&pid_, "/proc/self/exe", nullptr, nullptr, argv.data(), environ)) {
      pid_ = 0;
      cleanup();
      throw std::runtime_error(std::string("cannot start the server: ") + std::strerror(e));
    }
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        cleanup();
        throw std::runtime_error("the server exited at start (see its message above)");
      }
      std::ifstream f(port_file);
      if (f >> port_) return;
      std::this_thread::sleep_for(10ms);
    }
    stop();
    throw std::runtime_error("the server did not start listening within 10 s");
  }
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  int port() const noexcept { return port_; }

 private:
  void stop() noexcept {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = 0;
    }
    cleanup();
  }
  void cleanup() noexcept {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }

  pid_t pid_ = 0;
  int port_ = 0;
  std::string dir_;
};

/// What the clients report, summed.
struct ClientTotals {
  std::uint64_t heartbeats_sent = 0;
  std::uint64_t connect_failures = 0;
  std::uint64_t reconnects = 0;  ///< connects beyond each client's first
  std::uint64_t idle_closes = 0;
  long bad = 0;  ///< clients not connected exactly once and ready now
  long ready = 0;
};

ClientTotals totals(const std::vector<std::unique_ptr<rpc::Client>>& clients, bool check_ready) {
  ClientTotals t;
  for (const auto& c : clients) {
    const auto s = c->stats();
    t.heartbeats_sent += s.heartbeats_sent;
    t.connect_failures += s.connect_failures;
    t.reconnects += s.connects > 1 ? s.connects - 1 : 0;
    t.idle_closes += s.idle_closes;
    const bool ready = !check_ready || c->providers().at(0).ready;
    if (ready && s.connects >= 1) ++t.ready;
    if (s.connects != 1 || s.idle_closes != 0 || !ready) ++t.bad;
  }
  return t;
}

/// CPU seconds of the thread named `name` (comm) of process `pid`; -1 if none.
/// The shared timer's worker is "wheel-timer": what the channel timer tasks cost.
double thread_cpu_of(pid_t pid, std::string_view name) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(dir, ec)) {
    std::string comm = read_small_file(d.path().string() + "/comm");
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
    if (comm == name) return stat_cpu_s(d.path().string() + "/stat");
  }
  return -1;
}

double delta(double before, double after) { return before < 0 || after < 0 ? -1 : after - before; }

double per_conn(long before, long after, long n) {
  if (before < 0 || after < 0 || n <= 0) return -1;
  return static_cast<double>(after - before) / static_cast<double>(n);
}

}  // namespace

int conn_scale(const Flags& flags) {
  flags.check_known(
      {"connections", "heartbeat-ms", "duration-s", "batch", "ready-timeout-s", "port", "server-pid", "host"});
  const long n = static_cast<long>(flags.integer("connections", 1000, 1, 1'000'000));
  const long heartbeat_ms = static_cast<long>(flags.integer("heartbeat-ms", 1000, 1, 3'600'000));
  const double duration_s = flags.seconds("duration-s", 20);
  const long batch = static_cast<long>(flags.integer("batch", 200, 1, 100'000));
  const double ready_timeout_s = flags.seconds("ready-timeout-s", 120);
  if (!(duration_s > 0)) throw UsageError("--duration-s must be > 0");
  if (flags.has("server-pid") && !flags.has("port")) throw UsageError("--server-pid goes with --port");

  if (const long limit = raise_open_file_limit(); limit >= 0 && limit < n + kOpenFileMargin) {
    return too_many_files("client", n, limit);
  }

  std::optional<ServerProcess> spawned;
  pid_t server_pid = 0;
  long long port = 0;
  if (flags.has("port")) {
    port = flags.integer("port", 0, 1, 65535);
    server_pid = static_cast<pid_t>(flags.integer("server-pid", 0, 0, 1 << 30));
  } else {
    spawned.emplace(heartbeat_ms, ready_timeout_s + duration_s + 120);
    server_pid = spawned->pid();
    port = spawned->port();
  }
  if (server_pid > 0) {
    if (const long limit = open_file_limit_of(server_pid); limit >= 0 && limit < n + kOpenFileMargin) {
      return too_many_files("server", n, limit);
    }
  }
  const auto ep = endpoint_of(flags.str("host", "127.0.0.1"), port);

  timer::HashedWheelTimer timer;  // outlives the clients
  asio::io_context io(1);
  auto work = asio::make_work_guard(io);
  std::thread io_thread([&io] { io.run(); });
  std::vector<std::unique_ptr<rpc::Client>> clients;
  clients.reserve(static_cast<std::size_t>(n));
  {  // start the timer's worker now, so its thread is in the baseline
    std::error_code ec;
    timer.new_timeout([] {}, 1ms, ec);
  }
  std::this_thread::sleep_for(200ms);
  const long client_rss0 = rss_of(0);
  const long server_rss0 = server_pid ? rss_of(server_pid) : -1;

  // Connect, a batch at a time.
  rpc::ClientOptions options;
  options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
  const auto setup_start = std::chrono::steady_clock::now();
  const auto ready_by = setup_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                          std::chrono::duration<double>(ready_timeout_s));
  bool timed_out = false;
  for (long first = 0; first < n && !timed_out; first += batch) {
    const long end = std::min(n, first + batch);
    for (long i = first; i < end; ++i) {
      clients.push_back(
          std::make_unique<rpc::Client>(io.get_executor(), timer, std::vector<asio::ip::tcp::endpoint>{ep}, options));
      clients.back()->connect();
    }
    for (long i = first; i < end;) {
      if (clients[static_cast<std::size_t>(i)]->stats().connects > 0) {
        ++i;
      } else if (std::chrono::steady_clock::now() >= ready_by) {
        timed_out = true;
        std::fprintf(stderr, "rpc_bench conn_scale: only %ld of %ld connections ready after %.0f s\n", i, n,
                     ready_timeout_s);
        break;
      } else {
        std::this_thread::sleep_for(1ms);
      }
    }
  }
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
  const long client_rss_ready = rss_of(0);
  const long server_rss_ready = server_pid ? rss_of(server_pid) : -1;

  // The window: nothing but heartbeats.
  const ClientTotals at_start = totals(clients, false);
  const pid_t self = ::getpid();
  const double c0 = process_cpu_s();
  const double s0 = server_pid ? other_process_cpu_s(server_pid) : -1;
  const CpuSplit cs0 = process_cpu_split();
  const CpuSplit ss0 = server_pid ? stat_cpu_split("/proc/" + std::to_string(server_pid) + "/stat") : CpuSplit{};
  const double ct0 = thread_cpu_of(self, "wheel-timer");
  const double st0 = server_pid ? thread_cpu_of(server_pid, "wheel-timer") : -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
  const double c1 = process_cpu_s();
  const double s1 = server_pid ? other_process_cpu_s(server_pid) : -1;
  const CpuSplit cs1 = process_cpu_split();
  const CpuSplit ss1 = server_pid ? stat_cpu_split("/proc/" + std::to_string(server_pid) + "/stat") : CpuSplit{};
  const double ct1 = thread_cpu_of(self, "wheel-timer");
  const double st1 = server_pid ? thread_cpu_of(server_pid, "wheel-timer") : -1;
  const long client_rss_end = rss_of(0);
  const long server_rss_end = server_pid ? rss_of(server_pid) : -1;
  const std::uint64_t timer_pending = timer.stats().pending;
  const ClientTotals at_end = totals(clients, true);
  const long server_threads =
      server_pid ? proc_status_field("/proc/" + std::to_string(server_pid) + "/status", "Threads") : -1;

  const long errors = at_end.bad + (n - static_cast<long>(clients.size()));
  const double client_cpu_s = c1 - c0;
  const double server_cpu_s = s0 < 0 || s1 < 0 ? -1 : s1 - s0;
  const long established = at_end.ready;
  // User-space CPU apart from the kernel's share (the sockets' send and
  // receive): what the library itself costs per heartbeat.
  const auto span = [](double a, double b) { return a < 0 || b < 0 ? -1.0 : b - a; };
  const double client_user_s = span(cs0.user_s, cs1.user_s), client_sys_s = span(cs0.sys_s, cs1.sys_s);
  const double server_user_s = span(ss0.user_s, ss1.user_s), server_sys_s = span(ss0.sys_s, ss1.sys_s);
  const auto beats = static_cast<double>(at_end.heartbeats_sent - at_start.heartbeats_sent);
  const auto us_per_beat = [beats](double s) { return s < 0 || beats <= 0 ? -1.0 : s * 1e6 / beats; };
  JsonLine()
      .str("workload", "conn_scale")
      .num("connections", n)
      .num("heartbeat_ms", heartbeat_ms)
      .num("duration_s", duration_s, 1)
      .num("heartbeats_sent", at_end.heartbeats_sent)
      .num("client_cpu_s", client_cpu_s, 3)
      .num("server_cpu_s", server_cpu_s, 3)
      .num("client_rss_bytes_per_conn", per_conn(client_rss0, client_rss_end, established), 0)
      .num("server_rss_bytes_per_conn", per_conn(server_rss0, server_rss_end, established), 0)
      .num("timer_pending", timer_pending)
      .num("errors", errors)
      .str("system", "wheelrpc")
      .str("version", WHEELRPC_BENCH_VERSION)
      .num("established", established)
      .num("client_cpu_pct", 100 * client_cpu_s / duration_s, 2)
      .num("server_cpu_pct", server_cpu_s < 0 ? -1.0 : 100 * server_cpu_s / duration_s, 2)
      .num("heartbeats_in_window", at_end.heartbeats_sent - at_start.heartbeats_sent)
      .num("client_user_cpu_s", client_user_s, 3)
      .num("client_sys_cpu_s", client_sys_s, 3)
      .num("server_user_cpu_s", server_user_s, 3)
      .num("server_sys_cpu_s", server_sys_s, 3)
      .num("client_user_us_per_heartbeat", us_per_beat(client_user_s), 3)
      .num("server_user_us_per_heartbeat", us_per_beat(server_user_s), 3)
      .num("client_timer_thread_cpu_s", delta(ct0, ct1), 3)
      .num("server_timer_thread_cpu_s", delta(st0, st1), 3)
      .num("client_rss_bytes_per_conn_at_ready", per_conn(client_rss0, client_rss_ready, established), 0)
      .num("server_rss_bytes_per_conn_at_ready", per_conn(server_rss0, server_rss_ready, established), 0)
      .num("client_rss_before_bytes", client_rss0)
      .num("client_rss_end_bytes", client_rss_end)
      .num("server_rss_before_bytes", server_rss0)
      .num("server_rss_end_bytes", server_rss_end)
      .num("setup_s", setup_s, 2)
      .num("batch", batch)
      .num("connect_failures", at_end.connect_failures)
      .num("reconnects", at_end.reconnects)
      .num("idle_closes", at_end.idle_closes)
      .num("server_threads", server_threads)
      .print();

  for (auto& c : clients) c->close();
  clients.clear();
  work.reset();
  io_thread.join();
  return errors ? 1 : 0;
}

}  // namespace wheelrpc::bench
