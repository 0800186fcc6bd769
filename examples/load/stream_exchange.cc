#include "load/stream_exchange.h"

#include <algorithm>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace wheelrpc::examples::load {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

/// Waits `d` on the coroutine's executor (not at all for 0).
asio::awaitable<void> pause(std::chrono::milliseconds d) {
  if (d.count() <= 0) co_return;
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(kTuple);
}

std::string quote(const std::string& m) { return "'" + m.substr(0, 32) + (m.size() > 32 ? "...'" : "'"); }

std::string of(std::uint64_t k, std::uint64_t n) { return std::to_string(k) + " of " + std::to_string(n); }

/// Writes `m`; false (with `x.incomplete`) when the write failed.
asio::awaitable<bool> write(rpc::ClientStream& s, std::string m, Exchange& x, const std::string& what) {
  auto [ec] = co_await s.async_write(std::move(m), kTuple);
  if (ec) {
    x.incomplete = "the write of " + what + " failed: " + ec.message();
    co_return false;
  }
  x.note_sent();
  co_return true;
}

asio::awaitable<bool> writes_done(rpc::ClientStream& s, Exchange& x) {
  auto [ec] = co_await s.async_writes_done(kTuple);
  if (ec) x.incomplete = "the half-close failed: " + ec.message();
  co_return !ec;
}

/// Reads the next message: set, or nothing with `x.incomplete` saying why
/// (an error, or the server's successful end).
asio::awaitable<std::optional<std::string>> read(rpc::ClientStream& s, Exchange& x, const std::string& what) {
  auto [ec, m] = co_await s.async_read(kTuple);
  if (ec) {
    x.incomplete = "the read of " + what + " failed: " + ec.message();
  } else if (m) {
    x.note_received(Exchange::Clock::now());
  } else {
    x.incomplete = "the server ended the stream with success before " + what + " came";
  }
  co_return m;
}

asio::awaitable<void> count(rpc::ClientStream& s, const Config& cfg, Exchange& x) {
  x.last = Exchange::Clock::now();  // the first gap is from the opening
  if (!co_await write(s, std::to_string(cfg.count) + " " + std::to_string(cfg.interval.count()), x, "the request")) {
    co_return;
  }
  if (!co_await writes_done(s, x)) co_return;
  for (std::uint64_t i = 0;; ++i) {
    auto [ec, m] = co_await s.async_read(kTuple);
    if (ec) {
      x.incomplete = "the read of message " + std::to_string(i) + " failed: " + ec.message();
      co_return;
    }
    if (!m) {
      if (i != cfg.count) x.incomplete = of(i, cfg.count) + " messages came before the server's successful end";
      co_return;
    }
    x.note_received(Exchange::Clock::now());
    if (*m != std::to_string(i)) {
      x.wrong = "message " + std::to_string(i) + " came as " + quote(*m);
      s.cancel();
      co_return;
    }
  }
}

asio::awaitable<void> sum(rpc::ClientStream& s, const Config& cfg, Exchange& x) {
  unsigned long long total = 0;
  for (std::uint64_t i = 1; i <= cfg.count; ++i) {
    if (i > 1) co_await pause(cfg.interval);
    if (!co_await write(s, std::to_string(i), x, "number " + std::to_string(i))) co_return;
    total += i;
  }
  if (!co_await writes_done(s, x)) co_return;
  auto m = co_await read(s, x, "the sum");
  if (!m) co_return;
  if (*m != std::to_string(total)) {
    x.wrong = "the sum came as " + quote(*m) + ", not " + std::to_string(total);
    s.cancel();
  }
}

asio::awaitable<void> chat(rpc::ClientStream& s, const Config& cfg, Exchange& x) {
  for (std::uint64_t i = 0; i < cfg.count; ++i) {
    if (i > 0) co_await pause(cfg.interval);
    const std::string text = "m" + std::to_string(i);
    if (!co_await write(s, text, x, "message " + std::to_string(i))) co_return;
    auto m = co_await read(s, x, "echo " + of(i + 1, cfg.count));
    if (!m) co_return;
    if (*m != text) {
      x.wrong = "the echo of '" + text + "' came as " + quote(*m);
      s.cancel();
      co_return;
    }
  }
  if (!co_await writes_done(s, x)) co_return;
  // After the half-close the server ends the stream: nothing more may come.
  auto [ec, extra] = co_await s.async_read(kTuple);
  if (extra) {
    x.note_received(Exchange::Clock::now());
    x.wrong = "a message after the last echo: " + quote(*extra);
    s.cancel();
  } else if (ec) {
    x.incomplete = "the read of the end failed: " + ec.message();
  }
}

}  // namespace

void Exchange::note_sent() {
  ++sent;
  if (totals) ++totals->messages_sent;
}

void Exchange::note_received(Clock::time_point now) {
  if (last) max_gap = std::max(max_gap, now - *last);
  last = now;
  ++received;
  if (totals) ++totals->messages_received;
}

asio::awaitable<void> exchange(rpc::ClientStream& s, const Config& cfg, Exchange& x) {
  if (cfg.method == "count") {
    co_await count(s, cfg, x);
  } else if (cfg.method == "sum") {
    co_await sum(s, cfg, x);
  } else {
    co_await chat(s, cfg, x);
  }
}

}  // namespace wheelrpc::examples::load
