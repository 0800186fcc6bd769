#include "load/stream_load.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "load/report.h"
#include "load/stream_exchange.h"

namespace wheelrpc::examples::load {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
}  // namespace

/// One stream's end, as its async_finish handler saw it. The handler holds
/// it (not the stream: that would keep the stream alive through its own
/// handler); so does run_stream while the stream runs.
struct StreamLoad::End {
  std::atomic<int> completions{0};       // atomic although one thread runs them: a check, not a trust
  error_code ec;                         // of the first completion
  asio::steady_timer* waiter = nullptr;  // run_stream's wait for the end, while it waits
};

StreamLoad::StreamLoad(const Config& cfg, asio::io_context& io, rpc::Client& client, std::function<void()> after_close)
    : cfg_(cfg),
      io_(io),
      client_(client),
      after_close_(std::move(after_close)),
      signals_(io, SIGINT, SIGTERM),
      report_timer_(io),
      connect_wait_(io, client) {}

void StreamLoad::start() {
  wait_for_signal();
  connect_wait_.start([this] { begin(); });
}

void StreamLoad::wait_for_signal() {
  signals_.async_wait([this](const error_code& ec, int signo) {
    if (ec) return;
    if (stopping_) {
      std::fprintf(stderr, "echo_client: interrupted again, exiting at once (status %d)\n", 128 + signo);
      std::fflush(nullptr);
      std::_Exit(128 + signo);
    }
    stopping_ = true;
    if (!cfg_.json) std::fprintf(stderr, "echo_client: interrupted, cancelling the open streams\n");
    for (auto& [id, s] : live_) s.cancel();
    connect_wait_.cancel();  // if still waiting: begin() now, and no stream
    wait_for_signal();
  });
}

void StreamLoad::begin() {
  start_ = Clock::now();
  if (cfg_.duration_s) {
    end_at_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*cfg_.duration_s));
  }
  if (stopping_) {
    asio::post(io_, [this] { finish(); });
    return;
  }
  schedule_report();
  workers_left_ = cfg_.streams;
  for (std::size_t i = 0; i < cfg_.streams; ++i) {
    asio::co_spawn(io_, worker(), [this](std::exception_ptr e) {
      if (e) {
        tally_.note_error("exception", "a stream's coroutine threw");
      }
      if (--workers_left_ == 0) finish();
    });
  }
}

asio::awaitable<void> StreamLoad::worker() {
  do {
    co_await run_stream();
  } while (cfg_.duration_s && !stopping_ && Clock::now() < end_at_);
}

rpc::CallOptions StreamLoad::call_options() const {
  // The flags given are the stream's own (the timeout bounds the opening);
  // the rest comes from a runtime rule, else the built-in defaults.
  rpc::CallOptions o;
  o.timeout = cfg_.given.timeout;
  o.retries = cfg_.given.retries;
  o.stream_timeout = cfg_.given.stream_timeout;
  o.message_timeout = cfg_.given.message_timeout;
  o.stall_timeout = cfg_.given.stall_timeout;
  return o;
}

asio::awaitable<void> StreamLoad::run_stream() {
  ++tally_.streams;
  ++unended_;
  auto end = std::make_shared<End>();
  auto [open_ec, s] = co_await client_.async_open_stream(cfg_.method, call_options(), kTuple);
  // Its end, counted apart from the exchange: exactly once, whatever happens
  // (a failed opening's stream has ended already, and completes at once).
  s.async_finish(asio::bind_executor(io_, [this, end](error_code ec) {
    if (end->completions.fetch_add(1) > 0) {
      ++tally_.completed_twice;
      return;
    }
    end->ec = ec;
    --unended_;
    if (end->waiter) end->waiter->cancel();
  }));
  if (open_ec) {
    tally_.note_error(error_name(open_ec), s.error_message().empty() ? open_ec.message() : s.error_message());
    co_return;
  }
  const std::uint64_t id = next_id_++;
  live_.emplace(id, s);
  if (stopping_) s.cancel();  // a signal came while it opened
  Exchange x;
  x.totals = &tally_;  // counted as they go: the progress lines show them while the stream runs
  co_await exchange(s, cfg_, x);
  tally_.max_gap = std::max(tally_.max_gap, x.max_gap);
  if (end->completions.load() == 0) {  // the end is due: the server ends the stream once the exchange is over
    asio::steady_timer wait(io_, kEndBound);
    end->waiter = &wait;
    co_await wait.async_wait(kTuple);
    end->waiter = nullptr;
  }
  live_.erase(id);
  if (end->completions.load() == 0) {
    tally_.note_error(kNoEnd, "stream '" + cfg_.method + "' to " + s.info().peer + " did not end within " +
                                  std::to_string(kEndBound.count()) + " s after its exchange" +
                                  (x.incomplete.empty() ? std::string() : " (" + x.incomplete + ")") +
                                  "; dropped, which cancels it");
  } else if (!x.wrong.empty()) {
    tally_.note_error(kDataLoss, "stream '" + cfg_.method + "' to " + s.info().peer + ": " + x.wrong);
  } else if (end->ec) {
    tally_.note_error(error_name(end->ec), s.error_message().empty() ? end->ec.message() : s.error_message());
  } else if (!x.incomplete.empty()) {
    tally_.note_error(kDataLoss, "stream '" + cfg_.method + "' to " + s.info().peer + ": " + x.incomplete);
  } else {
    ++tally_.ok;
  }
}

void StreamLoad::schedule_report() {
  report_timer_.expires_after(cfg_.report_interval);
  report_timer_.async_wait([this](const error_code& ec) {
    if (ec || finished_) return;
    StreamProgress p;
    p.elapsed = Clock::now() - start_;
    p.open = live_.size();
    print_stream_progress(cfg_, tally_, p);
    schedule_report();
  });
}

void StreamLoad::finish() {
  if (finished_) return;
  finished_ = true;
  report_timer_.cancel();
  // From here a signal has its default effect (ends the process).
  signals_.cancel();
  error_code ignored;
  signals_.clear(ignored);
  // Every worker waited for its stream's end (bounded): one still missing
  // now never came, even after its handles were dropped (which cancels it).
  tally_.lost = unended_;
  const double elapsed_s = std::max(std::chrono::duration<double>(Clock::now() - start_).count(), 1e-9);
  print_stream_summary(cfg_, tally_, elapsed_s);
  const bool failed = tally_.ok == 0 || tally_.total_errors() > 0;
  exit_status_ = failed || tally_.lost > 0 || tally_.completed_twice > 0 ? 1 : 0;
  client_.close();
  if (after_close_) after_close_();
}

}  // namespace wheelrpc::examples::load
