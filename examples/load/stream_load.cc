#include "load/stream_load.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "load/tally.h"
#include "support/json_line.h"

namespace wheelrpc::examples::load {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

/// Waits `d` on the current coroutine's executor (nothing for 0).
asio::awaitable<void> pause(std::chrono::milliseconds d) {
  if (d.count() <= 0) co_return;
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(kTuple);
}
}  // namespace

StreamLoad::StreamLoad(const Config& cfg, asio::io_context& io, rpc::Client& client, std::function<void()> after_close)
    : cfg_(cfg), io_(io), client_(client), after_close_(std::move(after_close)), signals_(io, SIGINT, SIGTERM) {}

void StreamLoad::start() {
  start_ = Clock::now();
  if (cfg_.duration_s) {
    end_at_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*cfg_.duration_s));
  }
  // A first signal stops opening streams and cancels the open ones; a second exits at once.
  signals_.async_wait([this](const error_code& ec, int signo) {
    if (ec) return;
    stopping_ = true;
    for (auto& s : live_) s.cancel();
    signals_.async_wait([](const error_code& e, int again) {
      if (!e) std::_Exit(128 + again);
    });
    (void)signo;
  });
  workers_left_ = cfg_.streams;
  for (std::size_t i = 0; i < cfg_.streams; ++i) {
    asio::co_spawn(io_, worker(), [this](std::exception_ptr) {
      if (--workers_left_ == 0) finish();
    });
  }
}

asio::awaitable<void> StreamLoad::worker() {
  do {
    co_await run_stream();
  } while (cfg_.duration_s && !stopping_ && Clock::now() < end_at_);
}

void StreamLoad::note_error(const std::string& name, const std::string& message) {
  ++errors_[name];
  examples_.emplace(name, message);
}

void StreamLoad::note_received(Clock::time_point& last) {
  const auto now = Clock::now();
  max_gap_ = std::max(max_gap_, now - last);
  last = now;
  ++messages_received_;
}

asio::awaitable<void> StreamLoad::run_stream() {
  rpc::CallOptions o;
  o.timeout = cfg_.timeout;
  o.retries = cfg_.retries;
  o.stream_timeout = cfg_.stream_timeout;
  o.message_timeout = cfg_.message_timeout;
  o.stall_timeout = cfg_.stall_timeout;
  ++streams_;
  auto ends = std::make_shared<Ends>();
  ends_.push_back(ends);
  auto [ec, s] = co_await client_.async_open_stream(cfg_.method, o, kTuple);
  // Its end, counted apart from the exchange: exactly once, whatever happens.
  s.async_finish([ends](error_code e) {
    if (ends->n++ == 0) ends->ec = e;
  });
  if (ec) {
    note_error(error_name(ec), s.error_message());
    co_return;
  }
  live_.push_back(s);
  std::string why;
  const auto opened_at = Clock::now();
  const bool data_ok = co_await exchange(s, opened_at, why);
  // Its end comes once the exchange is over (the server ends it, or a
  // timer, or the connection). Waited for within a bound: a stream that
  // never ends is reported lost, not waited for forever.
  const auto bound = Clock::now() + std::max<Clock::duration>(cfg_.timeout, std::chrono::seconds(5)) +
                     cfg_.message_timeout + cfg_.stall_timeout;
  while (ends->n == 0 && Clock::now() < bound) co_await pause(std::chrono::milliseconds(5));
  const error_code fec = ends->ec;
  live_.erase(std::find_if(live_.begin(), live_.end(), [&](const rpc::ClientStream& x) {
    return x.info().id == s.info().id && x.info().peer == s.info().peer;
  }));
  if (ends->n == 0) {
    examples_.emplace(
        "lost", "the stream did not end within " +
                    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(bound - opened_at).count()) +
                    " ms of its start");
  } else if (fec) {
    note_error(error_name(fec), s.error_message());
  } else if (!data_ok) {
    note_error("data_loss", why);
  } else {
    ++streams_ok_;
  }
}

asio::awaitable<bool> StreamLoad::exchange(rpc::ClientStream& s, Clock::time_point opened, std::string& why) {
  Clock::time_point last = opened;
  const std::string& m = cfg_.method;
  if (m == "count") {
    // The request: "COUNT INTERVAL_MS"; the server answers "0", "1", ... then ends.
    auto [wec] =
        co_await s.async_write(std::to_string(cfg_.count) + " " + std::to_string(cfg_.interval.count()), kTuple);
    if (wec) co_return true;  // the stream's end says why
    ++messages_sent_;
    co_await s.async_writes_done(kTuple);
    std::uint64_t expected = 0;
    for (;;) {
      auto [rec, msg] = co_await s.async_read(kTuple);
      if (rec || !msg) break;
      note_received(last);
      if (*msg != std::to_string(expected)) {
        why = "message " + std::to_string(expected) + " came as '" + msg->substr(0, 32) + "'";
        s.cancel();
        co_return false;
      }
      ++expected;
    }
    if (expected != cfg_.count && why.empty()) {
      why = std::to_string(expected) + " of " + std::to_string(cfg_.count) + " messages came";
    }
    co_return true;
  }
  if (m == "sum") {
    unsigned long long sum = 0;
    for (std::uint64_t i = 1; i <= cfg_.count; ++i) {
      if (i > 1) co_await pause(cfg_.interval);
      auto [wec] = co_await s.async_write(std::to_string(i), kTuple);
      if (wec) co_return true;
      ++messages_sent_;
      sum += i;
    }
    co_await s.async_writes_done(kTuple);
    auto [rec, msg] = co_await s.async_read(kTuple);
    if (rec || !msg) co_return true;
    note_received(last);
    if (*msg != std::to_string(sum)) {
      why = "the sum came as '" + msg->substr(0, 32) + "', expected " + std::to_string(sum);
      co_return false;
    }
    co_return true;
  }
  // chat: each message echoed.
  for (std::uint64_t i = 0; i < cfg_.count; ++i) {
    if (i > 0) co_await pause(cfg_.interval);
    std::string text = "m" + std::to_string(i);
    auto [wec] = co_await s.async_write(text, kTuple);
    if (wec) co_return true;
    ++messages_sent_;
    auto [rec, msg] = co_await s.async_read(kTuple);
    if (rec || !msg) co_return true;
    note_received(last);
    if (*msg != text) {
      why = "the echo of '" + text + "' came as '" + msg->substr(0, 32) + "'";
      s.cancel();
      co_return false;
    }
  }
  co_await s.async_writes_done(kTuple);
  co_return true;
}

void StreamLoad::finish() {
  elapsed_s_ = std::chrono::duration<double>(Clock::now() - start_).count();
  signals_.cancel();
  // Every stream's end has been dispatched by now (each worker awaited it);
  // one that never came is lost.
  for (const auto& e : ends_) {
    if (e->n == 0) ++lost_;
    if (e->n > 1) completed_twice_ += static_cast<std::uint64_t>(e->n - 1);
  }
  std::uint64_t failed = 0;
  for (const auto& [name, n] : errors_) failed += name == "lost" ? 0 : n;
  exit_status_ = failed > 0 || lost_ > 0 || completed_twice_ > 0 ? 1 : 0;
  print_summary();
  client_.close();
  if (after_close_) after_close_();
}

void StreamLoad::print_summary() const {
  const double max_gap_ms = std::chrono::duration<double, std::milli>(max_gap_).count();
  if (cfg_.json) {
    boost::json::object errors;
    for (const auto& [name, n] : errors_) errors[name] = n;  // "lost" is its own field
    support::JsonLine()
        .str("method", cfg_.method)
        .num("streams", static_cast<unsigned long long>(streams_))
        .num("streams_ok", static_cast<unsigned long long>(streams_ok_))
        .num("messages_sent", static_cast<unsigned long long>(messages_sent_))
        .num("messages_received", static_cast<unsigned long long>(messages_received_))
        .num("max_gap_ms", max_gap_ms)
        .value("errors", errors)
        .num("lost", static_cast<unsigned long long>(lost_))
        .num("completed_twice", static_cast<unsigned long long>(completed_twice_))
        .num("elapsed_s", elapsed_s_)
        .print();
    return;
  }
  std::printf("%s: %llu streams, %llu ok, %llu failed, %llu lost, %llu completed twice in %.2f s\n",
              cfg_.method.c_str(), static_cast<unsigned long long>(streams_),
              static_cast<unsigned long long>(streams_ok_),
              static_cast<unsigned long long>(streams_ - streams_ok_ - lost_), static_cast<unsigned long long>(lost_),
              static_cast<unsigned long long>(completed_twice_), elapsed_s_);
  std::printf("messages: %llu sent, %llu received; longest wait between two messages of a stream: %.1f ms\n",
              static_cast<unsigned long long>(messages_sent_), static_cast<unsigned long long>(messages_received_),
              max_gap_ms);
  for (const auto& [name, n] : errors_) {
    std::printf("  %s: %llu, e.g. %s\n", name.c_str(), static_cast<unsigned long long>(n), examples_.at(name).c_str());
  }
  std::fflush(stdout);
}

}  // namespace wheelrpc::examples::load
