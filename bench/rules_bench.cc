// rules_bench: how soon a rule written to etcd is in force in every client
// following the service, and that no call fails or is lost meanwhile. Against
// a running etcd (scripts/etcd.sh start; bench/rules.sh starts its own), in
// one process:
//
//   - 2 rpc::Servers serving "echo", each announced in etcd by a registry of
//     its own (registry::announcer) as service S;
//   - --clients N rpc::Clients, each with a registry of its own, following S's
//     providers (registry::provider_source) and rules (registry::rule_source),
//     each keeping --concurrency C "echo" calls in flight for the whole run
//     (no per-call timeout, so the rule's timeout is the one in force);
//   - --changes K versions of the rule document <root>/S/rules/bench, one
//     every --interval-ms, alternating {"methods":{"echo":{"timeout_ms":2000}}}
//     and {"methods":{"echo":{"timeout_ms":3000,"retries":1}}}, each a plain
//     HTTP POST to etcd's /v3/kv/put gateway; the steady_clock time just
//     before the request is the write's time, the answer's header.revision
//     its revision.
//
// Each client's rule source is wrapped in a RuleSource that timestamps every
// report before passing it to the client (the client puts a report in force
// inside that call): a write is in force in a client at its first report
// whose CallRules::revision is >= the write's. Per write, its apply latency
// is the time until the LAST client had it in force; p50/p99/max are over
// the K writes (client_p50_ms/client_p99_ms: over the N x K client samples).
// After the last write the load stops; calls still running after a bounded
// wait (10 s) are lost. Then each client's Client::explain("echo") must name
// the last write's revision and timeout. One JSON line:
//
//   {"workload":"rule_apply","clients":4,"changes":50,"p50_ms":..,"p99_ms":..,"max_ms":..,
//    "calls":..,"failed":0,"lost":0,...,"check":"ok"}
//
//   rules_bench --etcd etcd://127.0.0.1:PORT [--clients 4] [--concurrency 8] [--changes 50]
//               [--interval-ms 200]
//
// Exit status 2 on a usage error; 1 if a call failed or was lost, a write was
// never in force in some client, explain disagrees, the p99 is over 500 ms,
// or the run could not be set up (a timeout waiting for etcd).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <wheelrpc/registry/etcd_registry.h>
#include <wheelrpc/registry/rpc_binding.h>
#include <wheelrpc/registry/rules.h>
#include <wheelrpc/rpc/call_rules.h>
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
using boost::system::error_code;
using wheelrpc::bench::UsageError;
using wheelrpc::support::JsonLine;

constexpr double kGoalMs = 500;
constexpr auto kSettle = std::chrono::seconds(10);  // bound of every wait after the writes

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return wheelrpc::bench::quantile_sorted(v, q);
}

/// Polls `pred` every millisecond until true or `limit`; false on timeout.
template <class Pred>
bool wait_until(Pred pred, Clock::duration limit) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
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

/// A RuleSource in front of another: notes the time and revision of every
/// good report, then passes it on. The client puts a report in force inside
/// the listener, so the time noted is when the client applies it.
/// Thread-safe: applied_at() and revision() from any thread.
class TimedRuleSource : public rpc::RuleSource {
 public:
  explicit TimedRuleSource(std::shared_ptr<rpc::RuleSource> inner) : inner_(std::move(inner)) {}

  void start(Listener listener) override {
    // `this` outlives the inner source's listener: it owns the inner source.
    inner_->start([this, listener = std::move(listener)](error_code ec, std::shared_ptr<const rpc::CallRules> rules,
                                                         std::string why) {
      if (!ec && rules) {
        std::lock_guard lock(mu_);
        reports_.push_back({Clock::now(), rules->revision});
      }
      listener(ec, std::move(rules), std::move(why));
    });
  }
  void stop() override { inner_->stop(); }
  std::string describe() const override { return inner_->describe(); }

  /// When the first report at `revision` or later came; nullopt if none did.
  std::optional<Clock::time_point> applied_at(std::int64_t revision) const {
    std::lock_guard lock(mu_);
    for (const auto& r : reports_) {
      if (r.revision >= revision) return r.at;
    }
    return std::nullopt;
  }
  /// The last report's revision; -1 before the first.
  std::int64_t revision() const {
    std::lock_guard lock(mu_);
    return reports_.empty() ? -1 : reports_.back().revision;
  }

 private:
  struct Report {
    Clock::time_point at;
    std::int64_t revision;
  };
  std::shared_ptr<rpc::RuleSource> inner_;
  mutable std::mutex mu_;
  std::vector<Report> reports_;
};

/// Keeps `concurrency` "echo" calls in flight on `client` until stopped,
/// counting the calls that completed, with or without an error.
class CallLoop {
 public:
  CallLoop(rpc::Client& client, int concurrency) : client_(client) {
    for (int i = 0; i < concurrency; ++i) issue();
  }
  /// Issues no new call from now on.
  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  /// Waits until no call runs, or `until`; false then.
  bool wait(Clock::time_point until) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, until, [&] { return running_ == 0; });
  }
  std::uint64_t ok() const { return ok_.load(); }
  std::uint64_t failed() const { return failed_.load(); }
  std::uint64_t running() const {
    std::lock_guard lock(mu_);
    return running_;
  }

 private:
  void issue() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      ++running_;
    }
    rpc::CallOptions o;
    o.wait_for_ready = true;  // the first calls wait for the first provider set
    client_.async_call("echo", std::string(64, 'x'), o, [this](error_code ec, rpc::Response) {
      if (ec) {
        if (failed_++ == 0) std::fprintf(stderr, "rules_bench: a call failed: %s\n", ec.message().c_str());
      } else {
        ++ok_;
      }
      {
        std::lock_guard lock(mu_);
        --running_;
        cv_.notify_all();
      }
      issue();
    });
  }
  rpc::Client& client_;
  std::atomic<std::uint64_t> ok_{0}, failed_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::uint64_t running_ = 0;
};

/// Puts keys through etcd's JSON gateway (POST /v3/kv/put), one connection per put.
class EtcdPutter {
 public:
  /// `etcd`: "etcd://HOST:PORT[,...]" (also http:// or no scheme): the first endpoint.
  explicit EtcdPutter(std::string_view etcd) {
    for (const std::string_view scheme : {"etcd://", "http://"}) {
      if (etcd.substr(0, scheme.size()) == scheme) etcd.remove_prefix(scheme.size());
    }
    etcd = etcd.substr(0, etcd.find(','));
    const auto colon = etcd.rfind(':');
    if (colon == std::string_view::npos)
      throw UsageError("--etcd: expected HOST:PORT, got '" + std::string(etcd) + "'");
    host_ = etcd.substr(0, colon);
    port_ = etcd.substr(colon + 1);
  }

  /// Puts `value` at `key`; returns the revision of the put (header.revision).
  /// Throws std::runtime_error on any failure.
  std::int64_t put(std::string_view key, std::string_view value) {
    const std::string body = R"({"key":")" + base64(key) + R"(","value":")" + base64(value) + R"("})";
    const std::string request = "POST /v3/kv/put HTTP/1.1\r\nHost: " + host_ + ":" + port_ +
                                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\nConnection: close\r\n\r\n" + body;
    asio::ip::tcp::resolver resolver(io_);
    asio::ip::tcp::socket socket(io_);
    asio::connect(socket, resolver.resolve(host_, port_));
    asio::write(socket, asio::buffer(request));
    std::string answer;
    error_code ec;
    asio::read(socket, asio::dynamic_buffer(answer), ec);  // to the end: Connection: close
    if (ec && ec != asio::error::eof) throw std::runtime_error("etcd put: " + ec.message());
    if (answer.compare(0, 12, "HTTP/1.1 200") != 0) {
      throw std::runtime_error("etcd put answered: " + answer.substr(0, answer.find("\r\n")));
    }
    // The body is one JSON object (possibly in one chunk): from its first '{' to its last '}'.
    const auto head_end = answer.find("\r\n\r\n");
    const auto open = answer.find('{', head_end);
    const auto close = answer.rfind('}');
    if (head_end == std::string::npos || open == std::string::npos || close == std::string::npos || close < open) {
      throw std::runtime_error("etcd put: no JSON in the answer");
    }
    const auto doc = boost::json::parse(std::string_view(answer).substr(open, close - open + 1));
    const auto& rev = doc.at("header").at("revision");  // int64 fields are JSON strings in the gateway
    return rev.is_string() ? std::stoll(std::string(rev.as_string())) : rev.to_number<std::int64_t>();
  }

 private:
  static std::string base64(std::string_view in) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (const unsigned char c : in) {
      acc = (acc << 8) | c;
      bits += 8;
      while (bits >= 6) {
        bits -= 6;
        out += kAlphabet[(acc >> bits) & 0x3F];
      }
    }
    if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3F];
    while (out.size() % 4 != 0) out += '=';
    return out;
  }

  asio::io_context io_;
  std::string host_, port_;
};

/// A provider: a Server serving "echo", announced by a registry of its own.
struct Provider {
  Provider(Runtime& rt, const std::string& etcd, const std::string& service) {
    registry = reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd);
    reg::ServiceInstance inst;
    inst.service = service;
    reg::AnnounceOptions ao;
    ao.on_state = [this](error_code ec, const std::string&) {
      if (!ec) registered = true;
    };
    rpc::ServerOptions so;
    so.announcer = reg::announcer(registry, inst, ao);
    so.unregister_grace = std::chrono::milliseconds(0);
    server = std::make_unique<rpc::Server>(rt.io.get_executor(), rt.timer, so);
    server->handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
    if (auto ec = server->listen({asio::ip::make_address("127.0.0.1"), 0})) {
      throw std::runtime_error("listen: " + ec.message());
    }
  }
  std::shared_ptr<reg::EtcdRegistry> registry;
  std::unique_ptr<rpc::Server> server;
  std::atomic<bool> registered{false};
};

/// A client following the service, with a registry of its own.
struct Follower {
  Follower(Runtime& rt, const std::string& etcd, const std::string& service) {
    registry = reg::EtcdRegistry::create(rt.io.get_executor(), rt.timer, etcd);
    rules = std::make_shared<TimedRuleSource>(reg::rule_source(registry, service));
    rpc::ClientOptions co;
    co.rules = rules;
    client = std::make_unique<rpc::Client>(rt.io.get_executor(), rt.timer, reg::provider_source(registry, service),
                                           std::move(co));
  }
  std::shared_ptr<reg::EtcdRegistry> registry;
  std::shared_ptr<TimedRuleSource> rules;
  std::unique_ptr<rpc::Client> client;
};

struct Config {
  std::string etcd;
  int clients = 4;
  int concurrency = 8;
  int changes = 50;
  std::chrono::milliseconds interval{200};
};

/// The two rule documents the writes alternate between, and the timeout each sets.
struct Version {
  const char* json;
  const char* timeout_ms;
};
constexpr Version kVersions[] = {
    {R"({"methods":{"echo":{"timeout_ms":2000}}})", "2000"},
    {R"({"methods":{"echo":{"timeout_ms":3000,"retries":1}}})", "3000"},
};

int run(const Config& cfg) {
  const std::string service = "bench-rules-" + std::to_string(::getpid());
  const std::string key = reg::EtcdRegistryOptions{}.root + "/" + service + "/rules/bench";
  wheelrpc::bench::Check check;

  // Declared before the runtime: their completions may run until its threads end.
  std::vector<std::unique_ptr<CallLoop>> loops;
  Runtime rt;
  std::vector<std::unique_ptr<Provider>> providers;
  for (int i = 0; i < 2; ++i) providers.push_back(std::make_unique<Provider>(rt, cfg.etcd, service));
  if (!wait_until(
          [&] { return std::all_of(providers.begin(), providers.end(), [](auto& p) { return p->registered.load(); }); },
          std::chrono::seconds(30))) {
    throw std::runtime_error("timed out waiting for the providers' registration");
  }
  std::vector<std::unique_ptr<Follower>> followers;
  for (int i = 0; i < cfg.clients; ++i) followers.push_back(std::make_unique<Follower>(rt, cfg.etcd, service));
  for (auto& f : followers) loops.push_back(std::make_unique<CallLoop>(*f->client, cfg.concurrency));
  // Every client has read its (empty) rules and made calls before the first write.
  if (!wait_until(
          [&] {
            for (std::size_t i = 0; i < followers.size(); ++i) {
              if (followers[i]->rules->revision() < 0 || loops[i]->ok() < 100) return false;
            }
            return true;
          },
          std::chrono::seconds(30))) {
    throw std::runtime_error("timed out waiting for every client's first rules and calls");
  }

  struct Write {
    Clock::time_point at;
    std::int64_t revision;
  };
  std::vector<Write> writes;
  EtcdPutter etcd(cfg.etcd);
  const auto t0 = Clock::now();
  for (int i = 0; i < cfg.changes; ++i) {
    std::this_thread::sleep_until(t0 + i * cfg.interval);
    const auto at = Clock::now();
    writes.push_back({at, etcd.put(key, kVersions[i % 2].json)});
  }
  const std::int64_t last = writes.back().revision;
  const bool settled = wait_until(
      [&] {
        return std::all_of(followers.begin(), followers.end(), [&](auto& f) { return f->rules->revision() >= last; });
      },
      kSettle);
  check.expect(settled, "not every client reached the last write's revision within 10 s");

  for (auto& l : loops) l->stop();
  const auto stop_until = Clock::now() + kSettle;
  std::uint64_t ok = 0, failed = 0, lost = 0;
  for (auto& l : loops) {
    l->wait(stop_until);
    ok += l->ok();
    failed += l->failed();
    lost += l->running();
  }

  // What each client says is in force now: the last write, with its timeout.
  const std::string origin = "runtime override " + key + " rev " + std::to_string(last);
  const std::string timeout = kVersions[(cfg.changes - 1) % 2].timeout_ms;
  int explain_ok = 0;
  bool told = false;
  std::uint64_t rule_updates = 0;
  for (auto& f : followers) {
    const auto e = f->client->explain("echo");
    const auto s = std::find_if(e.settings.begin(), e.settings.end(), [](auto& x) { return x.name == "timeout_ms"; });
    const bool good =
        e.rules_revision == last && s != e.settings.end() && s->winner.value == timeout && s->winner.origin == origin;
    if (!good && !std::exchange(told, true)) {
      std::fprintf(stderr,
                   "rules_bench: explain(\"echo\"): rules_revision %lld, timeout_ms %s (%s); expected %lld, %s (%s)\n",
                   static_cast<long long>(e.rules_revision), s == e.settings.end() ? "-" : s->winner.value.c_str(),
                   s == e.settings.end() ? "-" : s->winner.origin.c_str(), static_cast<long long>(last),
                   timeout.c_str(), origin.c_str());
    }
    explain_ok += good ? 1 : 0;
    rule_updates += f->client->stats().rule_updates;
  }
  check.expect(explain_ok == cfg.clients, "Client::explain does not show the last write in every client");

  for (auto& f : followers) f->client->close();
  for (auto& p : providers) p->server->stop();
  for (auto& f : followers) f->registry->close();
  for (auto& p : providers) p->registry->close();

  // Per write: each client's latency, and the last client's (the write's own).
  std::vector<double> per_write, per_client;
  int missed = 0;
  for (const auto& w : writes) {
    double worst = 0;
    for (auto& f : followers) {
      const auto at = f->rules->applied_at(w.revision);
      if (!at) {
        ++missed;
        continue;
      }
      per_client.push_back(ms_between(w.at, *at));
      worst = std::max(worst, per_client.back());
    }
    per_write.push_back(worst);
  }
  const double p99 = quantile(per_write, 0.99);
  check.expect(missed == 0, std::to_string(missed) + " client-writes never in force");
  check.expect(failed == 0, std::to_string(failed) + " calls failed");
  check.expect(lost == 0, std::to_string(lost) + " calls lost");
  check.expect(p99 <= kGoalMs, "p99 over the 500 ms goal");

  JsonLine()
      .str("workload", "rule_apply")
      .num("clients", cfg.clients)
      .num("changes", cfg.changes)
      .num("p50_ms", quantile(per_write, 0.5), 1)
      .num("p99_ms", p99, 1)
      .num("max_ms", *std::max_element(per_write.begin(), per_write.end()), 1)
      .num("calls", static_cast<unsigned long long>(ok + failed))
      .num("failed", static_cast<unsigned long long>(failed))
      .num("lost", static_cast<unsigned long long>(lost))
      .num("concurrency", cfg.concurrency)
      .num("interval_ms", static_cast<long long>(cfg.interval.count()))
      .num("client_p50_ms", quantile(per_client, 0.5), 1)
      .num("client_p99_ms", quantile(per_client, 0.99), 1)
      .num("missed", missed)
      .num("rule_updates", static_cast<unsigned long long>(rule_updates))
      .num("first_revision", static_cast<long long>(writes.front().revision))
      .num("last_revision", static_cast<long long>(last))
      .num("goal_ms", kGoalMs, 0)
      .str("check", check.text())
      .print();
  return check.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // bench_flags' Flags reads from argv[2] (after a mode): give it one.
    std::vector<char*> args{argv[0], const_cast<char*>("run")};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    wheelrpc::bench::Flags flags(static_cast<int>(args.size()), args.data(), {});
    flags.check_known({"etcd", "clients", "concurrency", "changes", "interval-ms"});
    Config cfg;
    cfg.etcd = flags.str("etcd", "");
    if (cfg.etcd.empty()) throw UsageError("--etcd etcd://HOST:PORT is required (scripts/etcd.sh start prints one)");
    cfg.clients = static_cast<int>(flags.integer("clients", 4, 1, 256));
    cfg.concurrency = static_cast<int>(flags.integer("concurrency", 8, 1, 4096));
    cfg.changes = static_cast<int>(flags.integer("changes", 50, 1, 100000));
    cfg.interval = std::chrono::milliseconds(flags.integer("interval-ms", 200, 1, 600000));
    return run(cfg);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rules_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rules_bench: %s\n", e.what());
    return 1;
  }
}
