// A load-generating client for echo_server: keeps C calls in flight (closed
// loop) and reports what happened to every one of them.
//
//   echo_client --server HOST:PORT[,HOST:PORT...] (--calls N | --duration-s S)
//               [--concurrency C] [--timeout-ms T] [--payload-bytes B]
//               [--method echo|sleep] [--sleep-ms X] [--report-interval-ms I]
//               [--json] [--heartbeat-ms H] [--idle-timeout-ms I]
//               [--retries N] [--idempotent] [--lb round_robin|least_active|p2c]
//               [--hedge-ms H]
//
// Every call has a deadline of T ms (the client's wheel timer). Each attempt
// goes to a ready server chosen by --lb; a failed attempt is retried (up to
// --retries more, within the deadline and the client's retry budget), and with
// --idempotent --hedge-ms H a call with no reply after H ms gets a backup
// attempt on another server (first reply wins). Outcomes are
// counted by error code; each call must complete exactly once: "lost" counts
// calls that never completed (within T + 5 s after the last one was issued) and
// "completed_twice" calls that completed more than once. Both must be 0: the
// exit status is 1 otherwise, 2 on a usage error, 0 else (failed calls are
// reported, not fatal).
//
// With --json, one line per interval {"t_ms":..,"ok":..,"errors":{..}}
// (cumulative) and a final summary line, which also carries the client's
// attempts, retries, hedges and budget refusals, the load balancing policy and
// per server {"peer","attempts","failures"}; otherwise readable progress
// lines, a summary (the same counters included) and the first few distinct
// error messages.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>
#include <wheelrpc/transport/connector.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "example_support.h"

namespace {

using wheelrpc::examples::parse_int;

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- flags

struct Config {
  std::vector<asio::ip::tcp::endpoint> servers;
  std::optional<std::uint64_t> calls;
  std::optional<double> duration_s;
  std::size_t concurrency = 1;
  std::chrono::milliseconds timeout{1000};
  std::size_t payload_bytes = 64;
  std::string method = "echo";
  long long sleep_ms = 0;
  std::chrono::milliseconds report_interval{1000};
  bool json = false;
  std::chrono::milliseconds heartbeat{15000};
  std::chrono::milliseconds idle_timeout{0};
  int retries = rpc::CallOptions{}.retries;
  bool idempotent = false;
  rpc::LoadBalance load_balance = rpc::ClientOptions{}.load_balance;
  std::chrono::milliseconds hedge_delay{0};  // 0 = no hedging
};

int usage(const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "echo_client: %s\n", problem.c_str());
  std::fprintf(
      stderr,
      "usage: echo_client --server HOST:PORT[,HOST:PORT...] (--calls N | --duration-s S)\n"
      "                   [--concurrency C] [--timeout-ms T] [--payload-bytes B]\n"
      "                   [--method echo|sleep] [--sleep-ms X] [--report-interval-ms I]\n"
      "                   [--json] [--heartbeat-ms H] [--idle-timeout-ms I]\n"
      "                   [--retries N] [--idempotent] [--lb round_robin|least_active|p2c]\n"
      "                   [--hedge-ms H]\n"
      "  --server          servers to call, chosen per attempt by --lb\n"
      "                    (e.g. 127.0.0.1:7001,127.0.0.1:7002)\n"
      "  --calls N         issue N calls in total, or\n"
      "  --duration-s S    keep issuing for S seconds (decimals allowed)\n"
      "  --concurrency C   calls in flight at once (default 1)\n"
      "  --timeout-ms T    deadline of each call (default 1000)\n"
      "  --payload-bytes B size of an echo payload (default 64)\n"
      "  --method M        echo (default) or sleep (payload = --sleep-ms)\n"
      "  --sleep-ms X      how long the server sleeps per sleep call (default 0)\n"
      "  --report-interval-ms I  progress every I ms (default 1000)\n"
      "  --json            JSON lines instead of text\n"
      "  --heartbeat-ms H  heartbeat interval proposed to the server (default 15000)\n"
      "  --idle-timeout-ms I  reconnect a connection that read nothing for I ms\n"
      "                    (default 0 = 3 x the agreed heartbeat; else at least 2 x H)\n"
      "  --retries N       further attempts after a failed one, 0..16 (default 2)\n"
      "  --idempotent      calls may run more than once: timeouts are retried, hedging allowed\n"
      "  --lb P            how each attempt picks its server: round_robin (default),\n"
      "                    least_active or p2c\n"
      "  --hedge-ms H      with --idempotent: start a backup attempt on another server\n"
      "                    when no reply came within H ms (default 0 = off)\n"
      "Exit status: 0 ok (failed calls included), 1 if a call was lost or completed twice, 2 usage.\n");
  return 2;
}

std::optional<double> parse_seconds(std::string_view s) {
  try {
    std::size_t used = 0;
    const std::string text(s);
    const double v = std::stod(text, &used);
    if (used != text.size() || !(v > 0) || v > 86'400) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// "a:1,b:2" -> endpoints; the bad entry in `bad` on failure.
bool parse_servers(std::string_view list, std::vector<asio::ip::tcp::endpoint>& out, std::string& bad) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item(list.substr(start, comma - start));
    asio::ip::tcp::endpoint ep;
    if (!wheelrpc::transport::parse_endpoint(item, ep) || ep.port() == 0) {
      bad = item;
      return false;
    }
    out.push_back(ep);
    start = comma + 1;
  }
  return !out.empty();
}

std::optional<int> parse_args(int argc, char** argv, Config& cfg) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "-h" || name == "--help") return usage("");
    if (name == "--json") {
      cfg.json = true;
      continue;
    }
    if (name == "--idempotent") {
      cfg.idempotent = true;
      continue;
    }
    if (i + 1 >= argc) return usage("missing value after " + std::string(name));
    const std::string_view value = argv[++i];
    if (name == "--server") {
      std::string bad;
      if (!parse_servers(value, cfg.servers, bad)) {
        std::fprintf(stderr,
                     "echo_client: invalid server endpoint '%s': expected HOST:PORT with an IPv4/IPv6 "
                     "literal or localhost and a port 1..65535, e.g. 127.0.0.1:7001 or [::1]:7001\n",
                     bad.c_str());
        return 2;
      }
    } else if (name == "--calls") {
      const auto v = parse_int(value, 1, 1'000'000'000'000LL);
      if (!v) return usage("--calls must be a positive number");
      cfg.calls = static_cast<std::uint64_t>(*v);
    } else if (name == "--duration-s") {
      cfg.duration_s = parse_seconds(value);
      if (!cfg.duration_s) return usage("--duration-s must be a positive number of seconds (at most 86400)");
    } else if (name == "--concurrency") {
      const auto v = parse_int(value, 1, 1'000'000);
      if (!v) return usage("--concurrency must be 1..1000000");
      cfg.concurrency = static_cast<std::size_t>(*v);
    } else if (name == "--timeout-ms") {
      const auto v = parse_int(value, 1, 86'400'000);
      if (!v) return usage("--timeout-ms must be a positive number of milliseconds");
      cfg.timeout = std::chrono::milliseconds(*v);
    } else if (name == "--payload-bytes") {
      const auto v = parse_int(value, 0, 64LL << 20);
      if (!v) return usage("--payload-bytes must be 0..67108864");
      cfg.payload_bytes = static_cast<std::size_t>(*v);
    } else if (name == "--method") {
      if (value != "echo" && value != "sleep") return usage("--method must be echo or sleep");
      cfg.method = std::string(value);
    } else if (name == "--sleep-ms") {
      const auto v = parse_int(value, 0, 86'400'000);
      if (!v) return usage("--sleep-ms must be 0..86400000");
      cfg.sleep_ms = *v;
    } else if (name == "--report-interval-ms") {
      const auto v = parse_int(value, 1, 86'400'000);
      if (!v) return usage("--report-interval-ms must be a positive number of milliseconds");
      cfg.report_interval = std::chrono::milliseconds(*v);
    } else if (name == "--heartbeat-ms") {
      const auto v = parse_int(value, 1, 86'400'000);
      if (!v) return usage("--heartbeat-ms must be a positive number of milliseconds");
      cfg.heartbeat = std::chrono::milliseconds(*v);
    } else if (name == "--idle-timeout-ms") {
      const auto v = parse_int(value, 1, 86'400'000);
      if (!v) return usage("--idle-timeout-ms must be a positive number of milliseconds");
      cfg.idle_timeout = std::chrono::milliseconds(*v);
    } else if (name == "--retries") {
      const auto v = parse_int(value, 0, rpc::CallOptions::kMaxRetries);
      if (!v) return usage("--retries must be 0.." + std::to_string(rpc::CallOptions::kMaxRetries));
      cfg.retries = static_cast<int>(*v);
    } else if (name == "--lb") {
      const auto lb = rpc::parse_load_balance(value);
      if (!lb) return usage("--lb must be round_robin, least_active or p2c, not '" + std::string(value) + "'");
      cfg.load_balance = *lb;
    } else if (name == "--hedge-ms") {
      const auto v = parse_int(value, 0, 86'400'000);
      if (!v) return usage("--hedge-ms must be 0..86400000 milliseconds (0 = no hedging)");
      cfg.hedge_delay = std::chrono::milliseconds(*v);
    } else {
      return usage("unknown flag " + std::string(name));
    }
  }
  if (cfg.servers.empty()) return usage("--server is required");
  if (cfg.calls.has_value() == cfg.duration_s.has_value()) return usage("give exactly one of --calls and --duration-s");
  // The library fails every hedged call that is not idempotent (bad_request).
  if (cfg.hedge_delay.count() > 0 && !cfg.idempotent) {
    return usage("--hedge-ms needs --idempotent: only idempotent calls may be hedged (run more than once)");
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- helpers

/// A name for an error that does not depend on message wording.
std::string error_name(const error_code& ec) {
  if (ec.category() == rpc::rpc_category()) {
    switch (static_cast<rpc::errc>(ec.value())) {
      case rpc::errc::timeout: return "timeout";
      case rpc::errc::server_timeout: return "server_timeout";
      case rpc::errc::connection_lost: return "connection_lost";
      case rpc::errc::unavailable: return "unavailable";
      case rpc::errc::method_not_found: return "method_not_found";
      case rpc::errc::bad_request: return "bad_request";
      case rpc::errc::server_error: return "server_error";
      case rpc::errc::cancelled: return "cancelled";
      case rpc::errc::too_many_pending: return "too_many_pending";
    }
  }
  if (ec == asio::error::operation_aborted) return "aborted";
  return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}

/// Name of the outcome of a call that succeeded with a reply other than the
/// one expected (not an error code: the client checks the payload itself).
constexpr const char* kWrongReply = "wrong_reply";

/// Log-linear histogram of microseconds: 32 sub-buckets per power of two
/// (< 3.2 % error), fixed size, no allocation per sample.
class Histogram {
 public:
  void record(std::uint64_t v) {
    ++buckets_[index(v)];
    ++count_;
    max_ = std::max(max_, v);
  }
  std::uint64_t count() const noexcept { return count_; }
  /// Nearest-rank quantile: the middle of the bucket holding it, at most max().
  double quantile(double q) const {
    if (count_ == 0) return 0;
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(q * static_cast<double>(count_) + 0.999999));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) {
        const double mid = (static_cast<double>(lower(i)) + static_cast<double>(lower(i + 1)) - 1) / 2;
        return std::min(mid, static_cast<double>(max_));
      }
    }
    return static_cast<double>(max_);
  }

 private:
  static constexpr int kSub = 5;
  static std::size_t index(std::uint64_t v) {
    if (v < (1u << kSub)) return static_cast<std::size_t>(v);
    const int e = 63 - __builtin_clzll(v);
    return (static_cast<std::size_t>(e - kSub + 1) << kSub) +
           static_cast<std::size_t>((v >> (e - kSub)) & ((1u << kSub) - 1));
  }
  static std::uint64_t lower(std::size_t i) {
    if (i < (1u << kSub)) return i;
    const int e = static_cast<int>(i >> kSub) + kSub - 1;
    return (std::uint64_t{1} << e) + (static_cast<std::uint64_t>(i & ((1u << kSub) - 1)) << (e - kSub));
  }

  std::array<std::uint64_t, (64 - kSub + 1) << kSub> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

/// Replaces every run of digits by '#', so that messages differing only in
/// numbers ("after 50 ms" / "after 51 ms") count as one.
std::string digits_folded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string json_escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// ---------------------------------------------------------------- the load

/// Everything runs on the one thread that runs `io_`, so nothing here is
/// shared between threads.
class Load {
 public:
  Load(const Config& cfg, asio::io_context& io, rpc::Client& client)
      : cfg_(cfg), io_(io), client_(client), report_timer_(io), end_timer_(io), drain_timer_(io),
        signals_(io, SIGINT, SIGTERM) {}

  void start() {
    start_ = Clock::now();
    last_progress_ = start_;
    last_report_at_ = start_;
    if (cfg_.duration_s) {
      end_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*cfg_.duration_s)));
      end_timer_.async_wait([this](const error_code& ec) {
        if (!ec) stop_issuing();
      });
    }
    signals_.async_wait([this](const error_code& ec, int) {
      if (ec) return;
      if (!cfg_.json) std::fprintf(stderr, "echo_client: interrupted, waiting for the calls in flight\n");
      stop_issuing();
    });
    schedule_report();
    for (std::size_t i = 0; i < cfg_.concurrency && may_issue(); ++i) issue();
  }

  int exit_status() const { return exit_status_; }

 private:
  bool may_issue() {
    if (!issuing_) return false;
    if (cfg_.calls && issued_ >= *cfg_.calls) {
      stop_issuing();
      return false;
    }
    return true;
  }

  std::string make_payload(std::uint64_t id) const {
    if (cfg_.method == "sleep") return std::to_string(cfg_.sleep_ms);
    // The call id at the front (as far as it fits), so each reply is checked
    // against its own call.
    std::string p(cfg_.payload_bytes, 'x');
    const std::string tag = std::to_string(id) + ":";
    std::copy_n(tag.begin(), std::min(tag.size(), p.size()), p.begin());
    return p;
  }

  void issue() {
    const std::uint64_t id = issued_++;
    completions_.push_back(0);
    ++in_flight_;
    std::string payload = make_payload(id);
    std::string expected = cfg_.method == "sleep" ? std::string("slept") : payload;
    rpc::CallOptions options;
    options.timeout = cfg_.timeout;
    options.retries = cfg_.retries;
    options.idempotent = cfg_.idempotent;
    options.hedge_delay = cfg_.hedge_delay;
    const Clock::time_point issued_at = Clock::now();
    client_.async_call(cfg_.method, std::move(payload), std::move(options),
                       [this, id, issued_at, expected = std::move(expected)](error_code ec, rpc::Response r) {
                         on_complete(id, issued_at, expected, ec, std::move(r));
                       });
  }

  void on_complete(std::uint64_t id, Clock::time_point issued_at, const std::string& expected,
                   const error_code& ec, rpc::Response r) {
    const Clock::time_point now = Clock::now();
    if (id >= completions_.size() || completions_[id]++ > 0) {
      ++completed_twice_;
      if (!cfg_.json) std::fprintf(stderr, "echo_client: call #%llu completed again\n", static_cast<unsigned long long>(id));
      return;
    }
    if (finished_) return;  // gave up on it already: it counts as lost
    --in_flight_;
    last_progress_ = now;
    last_completion_ = now;
    const auto overrun = now - (issued_at + cfg_.timeout);
    if (overrun > max_overrun_) max_overrun_ = overrun;

    if (!ec && r.payload == expected) {
      ++ok_;
      hist_.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(now - issued_at).count()));
    } else if (!ec) {
      note_error(kWrongReply, "wrong reply to call #" + std::to_string(id) + ": " +
                                  std::to_string(r.payload.size()) + " bytes, not the expected " +
                                  std::to_string(expected.size()));
    } else {
      note_error(error_name(ec), r.error_message.empty() ? ec.message() : r.error_message);
    }

    if (may_issue()) {
      if (cfg_.duration_s && now - start_ >= std::chrono::duration<double>(*cfg_.duration_s)) {
        stop_issuing();
      } else {
        issue();
      }
    }
    if (!issuing_ && in_flight_ == 0) finish();
  }

  void note_error(const std::string& name, const std::string& message) {
    ++errors_[name];
    if (name == "timeout") ++timeouts_;
    if (first_messages_.size() < 3 && seen_messages_.insert(name + "|" + digits_folded(message)).second) {
      first_messages_.push_back(name + ": " + message);
    }
  }

  /// No more calls; waits (bounded) for those in flight.
  void stop_issuing() {
    if (!issuing_) return;
    issuing_ = false;
    end_timer_.cancel();
    if (in_flight_ == 0) {
      asio::post(io_, [this] { finish(); });
      return;
    }
    drain_timer_.expires_after(cfg_.timeout + std::chrono::seconds(5));
    drain_timer_.async_wait([this](const error_code& ec) {
      if (!ec) finish();
    });
  }

  void schedule_report() {
    report_timer_.expires_after(cfg_.report_interval);
    report_timer_.async_wait([this](const error_code& ec) {
      if (ec || finished_) return;
      report();
      // A stall (nothing completes for T + 5 s with calls in flight) ends the
      // run: those calls are lost.
      if (in_flight_ > 0 && Clock::now() - last_progress_ > cfg_.timeout + std::chrono::seconds(5)) {
        if (!cfg_.json) std::fprintf(stderr, "echo_client: no call completed for %lld ms; giving up\n",
                                     static_cast<long long>((cfg_.timeout + std::chrono::seconds(5)).count()));
        issuing_ = false;
        finish();
        return;
      }
      schedule_report();
    });
  }

  double elapsed_s(Clock::time_point t) const { return std::chrono::duration<double>(t - start_).count(); }

  std::string errors_json() const {
    std::string s = "{";
    for (const auto& [name, n] : errors_) {
      if (s.size() > 1) s += ',';
      // Appends: `"\"" + str` trips g++ 12's bogus -Wrestrict at -O3 (GCC bug 105329).
      s.append("\"").append(json_escaped(name)).append("\":").append(std::to_string(n));
    }
    return s + "}";
  }

  /// [{"peer":"ip:port","attempts":N,"failures":N},...], in --server order.
  static std::string providers_json(const std::vector<rpc::ProviderStats>& providers) {
    std::string s = "[";
    for (const auto& p : providers) {
      if (s.size() > 1) s += ',';
      s.append("{\"peer\":\"")
          .append(json_escaped(p.peer))
          .append("\",\"attempts\":")
          .append(std::to_string(p.attempts))
          .append(",\"failures\":")
          .append(std::to_string(p.failures))
          .append("}");
    }
    return s + "]";
  }

  void report() {
    const auto now = Clock::now();
    if (cfg_.json) {
      std::printf("{\"t_ms\":%lld,\"ok\":%llu,\"errors\":%s}\n",
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count()),
                  static_cast<unsigned long long>(ok_), errors_json().c_str());
    } else {
      const std::uint64_t failed = total_errors();
      const double dt = std::chrono::duration<double>(now - last_report_at_).count();
      const double rate = dt > 0 ? static_cast<double>(ok_ - last_report_ok_) / dt : 0;
      // Connections made so far: a reconnect shows up as this number growing.
      const auto st = client_.stats();
      std::printf("[%6.1f s] %llu ok, %llu failed, %zu in flight, %.0f ok calls/s, %llu connects\n",
                  elapsed_s(now), static_cast<unsigned long long>(ok_), static_cast<unsigned long long>(failed),
                  in_flight_, rate, static_cast<unsigned long long>(st.connects));
    }
    std::fflush(stdout);
    last_report_at_ = now;
    last_report_ok_ = ok_;
  }

  std::uint64_t total_errors() const {
    std::uint64_t n = 0;
    for (const auto& [name, count] : errors_) n += count;
    return n;
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    issuing_ = false;
    report_timer_.cancel();
    end_timer_.cancel();
    drain_timer_.cancel();
    signals_.cancel();

    const Clock::time_point end = in_flight_ == 0 && ok_ + total_errors() > 0 ? last_completion_ : Clock::now();
    const double secs = std::max(elapsed_s(end), 1e-9);
    const std::uint64_t lost = in_flight_;
    const std::uint64_t failed = total_errors() - timeouts_;
    const double overrun_ms = std::chrono::duration<double, std::milli>(max_overrun_).count();
    const double rate = static_cast<double>(ok_) / secs;
    const rpc::ClientStats st = client_.stats();
    const std::vector<rpc::ProviderStats> providers = client_.providers();
    const char* lb = rpc::to_string(cfg_.load_balance);
    if (cfg_.json) {
      std::printf("{\"calls\":%llu,\"ok\":%llu,\"timeout\":%llu,\"failed\":%llu,\"errors\":%s,\"lost\":%llu,"
                  "\"completed_twice\":%llu,\"max_overrun_ms\":%.3f,\"calls_per_s\":%.0f,\"p50_us\":%.0f,"
                  "\"p99_us\":%.0f,\"elapsed_s\":%.3f,\"method\":\"%s\",\"concurrency\":%zu,\"timeout_ms\":%lld,"
                  "\"attempts\":%llu,\"retries\":%llu,\"hedges\":%llu,\"budget_refusals\":%llu,\"lb\":\"%s\","
                  "\"providers\":%s}\n",
                  static_cast<unsigned long long>(issued_), static_cast<unsigned long long>(ok_),
                  static_cast<unsigned long long>(timeouts_), static_cast<unsigned long long>(failed),
                  errors_json().c_str(), static_cast<unsigned long long>(lost),
                  static_cast<unsigned long long>(completed_twice_), overrun_ms, rate, hist_.quantile(0.50),
                  hist_.quantile(0.99), secs, cfg_.method.c_str(), cfg_.concurrency,
                  static_cast<long long>(cfg_.timeout.count()), static_cast<unsigned long long>(st.attempts),
                  static_cast<unsigned long long>(st.retries), static_cast<unsigned long long>(st.hedges),
                  static_cast<unsigned long long>(st.budget_refusals), lb, providers_json(providers).c_str());
    } else {
      std::printf("\n%llu calls in %.2f s: %llu ok, %llu timed out, %llu failed otherwise, %llu lost, "
                  "%llu completed twice\n",
                  static_cast<unsigned long long>(issued_), secs, static_cast<unsigned long long>(ok_),
                  static_cast<unsigned long long>(timeouts_), static_cast<unsigned long long>(failed),
                  static_cast<unsigned long long>(lost), static_cast<unsigned long long>(completed_twice_));
      if (ok_ > 0) {
        std::printf("  ok calls: %.0f/s, latency p50 %.0f us, p99 %.0f us\n", rate, hist_.quantile(0.50),
                    hist_.quantile(0.99));
      }
      if (!errors_.empty()) {
        std::printf("  errors by code:");
        for (const auto& [name, n] : errors_) std::printf(" %s=%llu", name.c_str(), static_cast<unsigned long long>(n));
        std::printf("\n");
      }
      std::printf("  latest completion after its deadline: %.1f ms\n", overrun_ms);
      std::printf("  attempts: %llu (%llu retries, %llu hedges, %llu budget refusals), lb %s\n",
                  static_cast<unsigned long long>(st.attempts), static_cast<unsigned long long>(st.retries),
                  static_cast<unsigned long long>(st.hedges), static_cast<unsigned long long>(st.budget_refusals), lb);
      for (const auto& p : providers) {
        std::printf("  provider %s: %llu attempts, %llu failed\n", p.peer.c_str(),
                    static_cast<unsigned long long>(p.attempts), static_cast<unsigned long long>(p.failures));
      }
      if (!first_messages_.empty()) {
        std::printf("  first distinct errors:\n");
        for (const auto& m : first_messages_) std::printf("    %s\n", m.c_str());
      }
      if (lost > 0) std::printf("  LOST: %llu calls never completed\n", static_cast<unsigned long long>(lost));
      if (completed_twice_ > 0) {
        std::printf("  BUG: %llu calls completed more than once\n", static_cast<unsigned long long>(completed_twice_));
      }
    }
    std::fflush(stdout);
    exit_status_ = lost > 0 || completed_twice_ > 0 ? 1 : 0;
    // Fails whatever is still pending (errc::cancelled) and releases the
    // io_context, so run() returns.
    client_.close();
  }

  const Config& cfg_;
  asio::io_context& io_;
  rpc::Client& client_;
  asio::steady_timer report_timer_, end_timer_, drain_timer_;
  asio::signal_set signals_;

  Clock::time_point start_, last_progress_, last_completion_, last_report_at_;
  bool issuing_ = true;
  bool finished_ = false;
  std::uint64_t issued_ = 0;
  std::size_t in_flight_ = 0;
  std::vector<std::uint8_t> completions_;  // per call id: how many times it completed
  std::uint64_t ok_ = 0, timeouts_ = 0, completed_twice_ = 0, last_report_ok_ = 0;
  std::map<std::string, std::uint64_t> errors_;
  std::set<std::string> seen_messages_;
  std::vector<std::string> first_messages_;
  Clock::duration max_overrun_{0};
  Histogram hist_;
  int exit_status_ = 0;
};

int run(const Config& cfg) {
  wheelrpc::examples::install_loggers({"wheelrpc.rpc", "wheelrpc.transport", "wheelrpc.timer"});
  asio::io_context io(1);
  wheelrpc::timer::HashedWheelTimer timer;  // must outlive the client
  rpc::ClientOptions options;
  options.heartbeat = cfg.heartbeat;
  options.idle_timeout = cfg.idle_timeout;
  options.load_balance = cfg.load_balance;
  rpc::Client client(io.get_executor(), timer, cfg.servers, options);
  Load load(cfg, io, client);
  asio::post(io, [&load] { load.start(); });
  io.run();
  return load.exit_status();
}

}  // namespace

int main(int argc, char** argv) {
  return wheelrpc::examples::run_main<Config>("echo_client", argc, argv, parse_args, run);
}
