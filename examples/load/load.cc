#include "load/load.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <boost/asio/post.hpp>

#include "load/report.h"

namespace wheelrpc::examples::load {

namespace asio = boost::asio;
using boost::system::error_code;

Load::Load(const Config& cfg, asio::io_context& io, rpc::Client& client, std::function<void()> after_close)
    : cfg_(cfg),
      io_(io),
      client_(client),
      after_close_(std::move(after_close)),
      report_timer_(io),
      end_timer_(io),
      drain_timer_(io),
      signals_(io, SIGINT, SIGTERM),
      connect_wait_(io, client) {}

void Load::start() {
  wait_for_signal();
  connect_wait_.start([this] { begin(); });
}

void Load::wait_for_signal() {
  signals_.async_wait([this](const error_code& ec, int signo) {
    if (ec) return;
    if (interrupted_) {
      // The user will not wait for the calls in flight: no summary, no
      // close (which could take as long), a status of its own.
      std::fprintf(stderr, "echo_client: interrupted again, exiting at once (status %d)\n", 128 + signo);
      std::fflush(nullptr);
      std::_Exit(128 + signo);
    }
    interrupted_ = true;
    if (!cfg_.json) std::fprintf(stderr, "echo_client: interrupted, waiting for the calls in flight\n");
    stop_issuing();
    connect_wait_.cancel();  // if still waiting: begin() now, and no call
    wait_for_signal();
  });
}

void Load::begin() {
  start_ = Clock::now();
  last_progress_ = start_;
  last_report_at_ = start_;
  if (!issuing_) return;  // interrupted while connecting: stop_issuing() posted finish()
  if (cfg_.duration_s) {
    end_timer_.expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*cfg_.duration_s)));
    end_timer_.async_wait([this](const error_code& ec) {
      if (!ec) stop_issuing();
    });
  }
  schedule_report();
  for (std::size_t i = 0; i < cfg_.concurrency && may_issue(); ++i) issue();
}

bool Load::may_issue() {
  if (!issuing_) return false;
  if (cfg_.calls && tally_.issued >= *cfg_.calls) {
    stop_issuing();
    return false;
  }
  return true;
}

std::string Load::make_payload(std::uint64_t id) const {
  if (cfg_.method == "sleep") return std::to_string(cfg_.sleep_ms);
  // The call id at the front (as far as it fits), so each reply is checked
  // against its own call.
  std::string p(cfg_.payload_bytes, 'x');
  const std::string tag = std::to_string(id) + ":";
  std::copy_n(tag.begin(), std::min(tag.size(), p.size()), p.begin());
  return p;
}

void Load::issue() {
  const std::uint64_t id = tally_.issued++;
  completions_.push_back(0);
  ++in_flight_;
  std::string payload = make_payload(id);
  std::string expected = cfg_.method == "sleep" ? std::string("slept") : payload;
  // The flags given are the call's own; the rest comes from a runtime rule,
  // else the built-in defaults (which are the flags' defaults).
  rpc::CallOptions options;
  options.timeout = cfg_.given.timeout;
  options.retries = cfg_.given.retries;
  options.idempotent = cfg_.given.idempotent;
  options.hedge_delay = cfg_.given.hedge_delay;
  const Clock::time_point issued_at = Clock::now();
  client_.async_call(cfg_.method, std::move(payload), std::move(options),
                     [this, id, issued_at, expected = std::move(expected)](error_code ec, rpc::Response r) {
                       on_complete(id, issued_at, expected, ec, std::move(r));
                     });
}

void Load::on_complete(std::uint64_t id, Clock::time_point issued_at, const std::string& expected, const error_code& ec,
                       rpc::Response r) {
  const Clock::time_point now = Clock::now();
  if (id >= completions_.size() || completions_[id]++ > 0) {
    ++tally_.completed_twice;
    if (!cfg_.json)
      std::fprintf(stderr, "echo_client: call #%llu completed again\n", static_cast<unsigned long long>(id));
    return;
  }
  if (finished_) return;  // gave up on it already: it counts as lost
  --in_flight_;
  last_progress_ = now;
  last_completion_ = now;
  tally_.max_overrun = std::max(tally_.max_overrun, now - (issued_at + cfg_.timeout));

  if (cfg_.warmup_s && !warm_ && now - start_ >= std::chrono::duration<double>(*cfg_.warmup_s)) {
    warm_ = true;  // from here the summary's after_warmup counts
    warm_at_ = now;
    warm_ok_ = tally_.ok;
    warm_providers_ = client_.providers();
  }
  const bool warming = cfg_.warmup_s && !warm_;
  if (!ec && r.payload == expected) {
    ++tally_.ok;
    if (!warming)
      tally_.latency_us.record(
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - issued_at).count()));
  } else if (!ec) {
    tally_.note_error(kWrongReply, "wrong reply to call #" + std::to_string(id) + ": " +
                                       std::to_string(r.payload.size()) + " bytes, not the expected " +
                                       std::to_string(expected.size()));
  } else {
    tally_.note_error(error_name(ec), r.error_message.empty() ? ec.message() : r.error_message);
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

void Load::stop_issuing() {
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

void Load::schedule_report() {
  report_timer_.expires_after(cfg_.report_interval);
  report_timer_.async_wait([this](const error_code& ec) {
    if (ec || finished_) return;
    report();
    // A stall (nothing completes for T + 5 s with calls in flight) ends the
    // run: those calls are lost.
    if (in_flight_ > 0 && Clock::now() - last_progress_ > cfg_.timeout + std::chrono::seconds(5)) {
      if (!cfg_.json)
        std::fprintf(stderr, "echo_client: no call completed for %lld ms; giving up\n",
                     static_cast<long long>((cfg_.timeout + std::chrono::seconds(5)).count()));
      issuing_ = false;
      finish();
      return;
    }
    schedule_report();
  });
}

void Load::report() {
  const auto now = Clock::now();
  Progress p;
  p.elapsed = now - start_;
  p.in_flight = in_flight_;
  const auto providers = client_.providers();
  p.providers_now = static_cast<std::size_t>(
      std::count_if(providers.begin(), providers.end(), [](const rpc::ProviderStats& x) { return !x.removed; }));
  if (!cfg_.json) {
    const double dt = std::chrono::duration<double>(now - last_report_at_).count();
    p.ok_per_s = dt > 0 ? static_cast<double>(tally_.ok - last_report_ok_) / dt : 0;
    // Connections made so far: a reconnect shows up as this number growing.
    p.connects = client_.stats().connects;
  }
  print_progress(cfg_, tally_, p);
  last_report_at_ = now;
  last_report_ok_ = tally_.ok;
}

void Load::finish() {
  if (finished_) return;
  finished_ = true;
  issuing_ = false;
  report_timer_.cancel();
  end_timer_.cancel();
  drain_timer_.cancel();
  // From here a signal has its default effect (ends the process): nothing is
  // left to wait for but the client's close.
  signals_.cancel();
  error_code ignored;
  signals_.clear(ignored);

  const Clock::time_point end =
      in_flight_ == 0 && tally_.ok + tally_.total_errors() > 0 ? last_completion_ : Clock::now();
  Summary s;
  s.elapsed_s = std::max(std::chrono::duration<double>(end - start_).count(), 1e-9);
  s.lost = in_flight_;
  s.stats = client_.stats();
  s.providers = client_.providers();  // those that left included
  if (warm_) {
    Summary::Warm w;
    w.elapsed_s = std::max(std::chrono::duration<double>(end - warm_at_).count(), 1e-9);
    w.ok = tally_.ok - warm_ok_;
    for (const auto& p : s.providers) {
      std::uint64_t before = 0;
      for (const auto& q : warm_providers_) {
        if (q.peer == p.peer) before = q.attempts;
      }
      w.attempts.emplace_back(p.peer, p.attempts - std::min(before, p.attempts));
    }
    s.warm = std::move(w);
  }
  s.proposed_heartbeat = cfg_.heartbeat;
  for (const auto& c : client_.connections()) {
    if (c.heartbeat.count() > 0 &&
        std::find(s.heartbeats.begin(), s.heartbeats.end(), c.heartbeat) == s.heartbeats.end())
      s.heartbeats.push_back(c.heartbeat);
  }
  std::sort(s.heartbeats.begin(), s.heartbeats.end());
  print_summary(cfg_, tally_, s);
  // A run in which no call succeeded is a failed run, whatever the flags: a
  // script that checks only the status must not take it for a working service.
  const bool failed = tally_.ok == 0 || (cfg_.fail_on_error && tally_.total_errors() > 0);
  exit_status_ = s.lost > 0 || tally_.completed_twice > 0 || failed ? 1 : 0;
  // Fails whatever is still pending (errc::cancelled) and releases the
  // io_context, so run() returns.
  client_.close();
  if (after_close_) after_close_();
}

}  // namespace wheelrpc::examples::load
