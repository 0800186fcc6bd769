// registry_bench: what a user of the etcd registry waits for, and what it
// costs etcd. Three workloads against a running etcd (scripts/etcd.sh start),
// one JSON line each:
//
//   {"workload":"registration_to_first_call",...}  a provider registers while a
//       client keeps calling the service: from the registration being in
//       etcd (the put answered) to the provider's first request; p50/max
//       over --trials providers, each with its own registry (a process's).
//   {"workload":"kill_to_removal",...}  an echo_server process registered with
//       --lease-ttl-s T is killed with SIGKILL: from the kill to the
//       subscriber's set no longer listing it; per TTL in --kill-ttls.
//   {"workload":"etcd_requests",...}  --providers providers registered, (a) all
//       by one registry (one process), (b) each by its own registry (one
//       process each): etcd requests per second over --window-s once settled,
//       and per provider per TTL/3 (the keepalive period).
//
//   registry_bench --etcd etcd://127.0.0.1:PORT --echo-server build/release/examples/echo_server
//                  [--trials 20] [--kill-ttls 2,10] [--kill-trials 5] [--providers 1000] [--window-s 30]
//                  [--only NAME]
//
// Linux only (fork/exec, kill). Exit status 2 on a usage error, 1 if a
// workload could not run (a timeout waiting for etcd or a process).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "bench_flags.h"
#include "bench_util.h"

namespace {

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace reg = wheelrpc::registry;
using Clock = std::chrono::steady_clock;
using wheelrpc::bench::UsageError;
using wheelrpc::support::JsonLine;

double ms_since(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return wheelrpc::bench::quantile_sorted(v, q);
}

/// Polls `pred` every millisecond until true or `limit`; throws on timeout.
template <class Pred>
void wait_for(Pred pred, std::chrono::milliseconds limit, const char* what) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > end) throw std::runtime_error(std::string("timed out waiting for ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// The io_context run by two threads, and the one shared timer.
struct Runtime {
  Runtime() : guard(asio::make_work_guard(io)) {
    for (int i = 0; i < 2; ++i) threads.emplace_back([this] { io.run(); });
  }
  ~Runtime() {
    guard.reset();
    for (auto& t : threads) t.join();
  }
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::vector<std::thread> threads;
};

/// Keeps `concurrency` calls in flight on `client` until stopped.
class CallLoop {
 public:
  CallLoop(rpc::Client& client, int concurrency) : client_(client) {
    for (int i = 0; i < concurrency; ++i) issue();
  }
  void stop() {
    stopping_ = true;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return running_ == 0; });
  }

 private:
  void issue() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      ++running_;
    }
    rpc::CallOptions o;
    o.timeout = std::chrono::seconds(2);
    o.wait_for_ready = true;
    client_.async_call("echo", "x", o, [this](boost::system::error_code, rpc::Response) {
      {
        std::lock_guard lock(mu_);
        --running_;
        cv_.notify_all();
      }
      issue();
    });
  }
  rpc::Client& client_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
};

/// A provider in this process: a Server registered by a registry of its own.
struct Provider {
  Provider(Runtime& rt, const std::string& etcd, const std::string& service) {
    registry = reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd);
    reg::ServiceInstance inst;
    inst.service = service;
    reg::AnnounceOptions ao;
    ao.on_state = [this](boost::system::error_code ec, const std::string&) {
      if (!ec && registered_at.load() == 0) registered_at = Clock::now().time_since_epoch().count();
    };
    rpc::ServerOptions so;
    so.announcer = reg::announcer(registry, inst, ao);
    so.unregister_grace = std::chrono::milliseconds(0);
    server = std::make_unique<rpc::Server>(rt.io.get_executor(), rt.timer, so);
    server->handle("echo", [this](rpc::Request req, rpc::Responder r) {
      std::int64_t zero = 0;
      first_call_at.compare_exchange_strong(zero, Clock::now().time_since_epoch().count());
      r.reply(std::move(req.payload));
    });
    if (auto ec = server->listen({asio::ip::make_address("127.0.0.1"), 0})) {
      throw std::runtime_error("listen: " + ec.message());
    }
  }
  ~Provider() {
    server->stop();
    registry->close();
  }
  std::shared_ptr<reg::EtcdRegistry> registry;
  std::unique_ptr<rpc::Server> server;
  std::atomic<std::int64_t> registered_at{0}, first_call_at{0};
};

void registration_to_first_call(const std::string& etcd, int trials) {
  Runtime rt;
  const std::string service = "bench-first-call-" + std::to_string(::getpid());
  auto client_registry = reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd);
  std::vector<std::unique_ptr<Provider>> providers;
  providers.push_back(std::make_unique<Provider>(rt, etcd, service));  // the one calls go to meanwhile
  rpc::ClientOptions co;
  rpc::Client client(rt.io.get_executor(), rt.timer, reg::provider_source(client_registry, service), co);
  CallLoop loop(client, 4);
  wait_for([&] { return providers[0]->first_call_at.load() != 0; }, std::chrono::seconds(30), "the first provider");
  std::vector<double> ms;
  for (int i = 0; i < trials; ++i) {
    auto& p = providers.emplace_back(std::make_unique<Provider>(rt, etcd, service));
    wait_for([&] { return p->registered_at.load() != 0 && p->first_call_at.load() != 0; }, std::chrono::seconds(30),
             "a new provider's first call");
    ms.push_back(static_cast<double>(p->first_call_at.load() - p->registered_at.load()) / 1e6);
  }
  loop.stop();
  client.close();
  providers.clear();
  client_registry->close();
  JsonLine()
      .str("workload", "registration_to_first_call")
      .num("trials", trials)
      .num("p50_ms", quantile(ms, 0.5), 1)
      .num("max_ms", *std::max_element(ms.begin(), ms.end()), 1)
      .num("min_ms", *std::min_element(ms.begin(), ms.end()), 1)
      .print();
}

/// Starts echo_server registered as `service`; returns its pid and the read
/// end of its stdout (kept open until it is killed) once it is registered
/// (its "registered ..." line).
std::pair<pid_t, int> spawn_server(const std::string& bin, const std::string& etcd, const std::string& service,
                                   int ttl) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const std::string ttl_s = std::to_string(ttl);
    ::execl(bin.c_str(), bin.c_str(), "--port", "0", "--registry", etcd.c_str(), "--service", service.c_str(),
            "--lease-ttl-s", ttl_s.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  while (out.find("registered ") == std::string::npos) {
    const auto n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) {
      ::close(fds[0]);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw std::runtime_error("echo_server ended before registering: " + out);
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return {pid, fds[0]};
}

void kill_to_removal(const std::string& etcd, const std::string& server_bin, const std::vector<int>& ttls, int trials) {
  Runtime rt;
  auto sub_registry = reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd);
  for (const int ttl : ttls) {
    const std::string service = "bench-kill-" + std::to_string(::getpid()) + "-" + std::to_string(ttl);
    std::mutex mu;
    std::size_t listed = 0;
    const auto id = sub_registry->subscribe(service, [&](const std::vector<reg::ServiceInstance>& set) {
      std::lock_guard lock(mu);
      listed = set.size();
    });
    const auto count = [&] {
      std::lock_guard lock(mu);
      return listed;
    };
    std::vector<double> ms;
    for (int i = 0; i < trials; ++i) {
      const auto [pid, out] = spawn_server(server_bin, etcd, service, ttl);
      wait_for([&] { return count() == 1; }, std::chrono::seconds(30), "the subscriber to see the server");
      const auto t0 = Clock::now();
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      ::close(out);
      wait_for([&] { return count() == 0; }, std::chrono::seconds(ttl + 30), "the killed server's removal");
      ms.push_back(ms_since(t0, Clock::now()));
    }
    sub_registry->unsubscribe(id);
    JsonLine()
        .str("workload", "kill_to_removal")
        .num("lease_ttl_s", ttl)
        .num("trials", trials)
        .num("p50_ms", quantile(ms, 0.5), 0)
        .num("max_ms", *std::max_element(ms.begin(), ms.end()), 0)
        .num("goal_ms", static_cast<double>(ttl * 1000 + 1000), 0)
        .print();
  }
  sub_registry->close();
}

void etcd_requests(const std::string& etcd, int providers, double window_s) {
  const reg::EtcdRegistryOptions options;  // the default TTL
  const double period_s = static_cast<double>(options.lease_ttl.count()) / 3;
  const auto measure = [&](const char* layout, std::vector<std::shared_ptr<reg::EtcdRegistry>>& registries) {
    auto total = [&] {
      std::uint64_t n = 0;
      for (const auto& r : registries) n += r->stats().requests;
      return n;
    };
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the last puts' answers are in
    const auto r0 = total();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const double per_s = static_cast<double>(total() - r0) / secs;
    JsonLine()
        .str("workload", "etcd_requests")
        .str("layout", layout)
        .num("providers", providers)
        .num("registries", static_cast<long long>(registries.size()))
        .num("lease_ttl_s", static_cast<long long>(options.lease_ttl.count()))
        .num("window_s", secs, 1)
        .num("requests_per_s", per_s, 2)
        .num("per_1000_providers_per_s", per_s * 1000 / providers, 2)
        .num("per_provider_per_ttl3", per_s * period_s / providers, 3)
        .print();
  };
  const std::string service = "bench-requests-" + std::to_string(::getpid());
  {
    Runtime rt;
    std::vector<std::shared_ptr<reg::EtcdRegistry>> one{
        reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd)};
    std::atomic<int> in{0};
    for (int i = 0; i < providers; ++i) {
      reg::ServiceInstance inst;
      inst.service = service + "-a";
      inst.endpoint = "127.0.0.1:" + std::to_string(20000 + i);
      one[0]->register_instance(inst, [&in](boost::system::error_code ec, const std::string&) {
        if (!ec) ++in;
      });
    }
    wait_for([&] { return in.load() >= providers; }, std::chrono::seconds(120), "the registrations (one registry)");
    measure("one_registry", one);
    one[0]->close();
  }
  {
    Runtime rt;
    std::vector<std::shared_ptr<reg::EtcdRegistry>> many;
    std::atomic<int> in{0};
    for (int i = 0; i < providers; ++i) {
      many.push_back(reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd));
      reg::ServiceInstance inst;
      inst.service = service + "-b";
      inst.endpoint = "127.0.0.1:" + std::to_string(20000 + i);
      many.back()->register_instance(inst, [&in](boost::system::error_code ec, const std::string&) {
        if (!ec) ++in;
      });
    }
    wait_for([&] { return in.load() >= providers; }, std::chrono::seconds(300), "the registrations (one each)");
    measure("registry_per_provider", many);
    for (auto& r : many) r->close();
  }
}

std::vector<int> parse_ttls(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    try {
      const int v = std::stoi(item);
      if (v < 2 || v > 60) throw std::out_of_range("ttl");
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError("--kill-ttls: expected TTLs of 2..60 s separated by commas, got '" + item + "'");
    }
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // bench_flags' Flags reads from argv[2] (after a mode): give it one.
    std::vector<char*> args{argv[0], const_cast<char*>("run")};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    wheelrpc::bench::Flags flags(static_cast<int>(args.size()), args.data(), {});
    flags.check_known({"etcd", "echo-server", "trials", "kill-ttls", "kill-trials", "providers", "window-s", "only"});
    const std::string etcd = flags.str("etcd", "");
    if (etcd.empty()) throw UsageError("--etcd etcd://HOST:PORT is required (scripts/etcd.sh start prints one)");
    const std::string only = flags.str("only", "");
    const int trials = static_cast<int>(flags.integer("trials", 20, 1, 1000));
    const int kill_trials = static_cast<int>(flags.integer("kill-trials", 5, 1, 100));
    const int providers = static_cast<int>(flags.integer("providers", 1000, 1, 100000));
    const double window_s = flags.seconds("window-s", 30);
    const auto ttls = parse_ttls(flags.str("kill-ttls", "2,10"));
    if (only.empty() || only == "registration_to_first_call") registration_to_first_call(etcd, trials);
    if (only.empty() || only == "kill_to_removal") {
      const std::string bin = flags.str("echo-server", "");
      if (bin.empty()) throw UsageError("--echo-server PATH is required for kill_to_removal");
      kill_to_removal(etcd, bin, ttls, kill_trials);
    }
    if (only.empty() || only == "etcd_requests") etcd_requests(etcd, providers, window_s);
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "registry_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "registry_bench: %s\n", e.what());
    return 1;
  }
}
