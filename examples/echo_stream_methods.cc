#include "echo_stream_methods.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <wheelrpc/rpc/status_code.h>

#include "support/flags.h"

namespace wheelrpc::examples {

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

/// Waits until `at`, in slices of at most kCancelCheck; false as soon as the
/// stream ended (then nothing more is to be written on it).
asio::awaitable<bool> wait_until(asio::steady_timer& timer, const rpc::ServerStream& s, Clock::time_point at) {
  while (!s.cancelled()) {
    const auto now = Clock::now();
    if (now >= at) co_return true;
    timer.expires_at(std::min(at, now + kCancelCheck));
    co_await timer.async_wait(kTuple);
  }
  co_return false;
}

asio::awaitable<void> count(rpc::ServerStream s) {
  auto [ec, request] = co_await s.async_read(kTuple);
  if (ec) co_return;  // it ended before its request came
  const auto spec = request ? parse_count_request(*request) : std::nullopt;
  if (!spec) {
    s.finish(rpc::StatusCode::invalid_argument, "count: the request must be \"COUNT INTERVAL_MS\", e.g. \"20 5\"");
    co_return;
  }
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (std::uint64_t i = 0; i < spec->count; ++i) {
    if (i > 0 && spec->interval.count() > 0 && !co_await wait_until(timer, s, Clock::now() + spec->interval)) {
      co_return;
    }
    auto [write_ec] = co_await s.async_write(std::to_string(i), kTuple);
    if (write_ec) co_return;  // it ended: the client sees why
  }
  s.finish();
}

asio::awaitable<void> sum(rpc::ServerStream s) {
  long long total = 0;
  for (;;) {
    auto [ec, message] = co_await s.async_read(kTuple);
    if (ec) co_return;
    if (!message) break;  // the client half-closed
    const auto n = parse_int(*message, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max());
    if (!n) {
      s.finish(rpc::StatusCode::invalid_argument, "sum: '" + message->substr(0, 32) + "' is not a decimal integer");
      co_return;
    }
    if (__builtin_add_overflow(total, *n, &total)) {
      s.finish(rpc::StatusCode::out_of_range, "sum: the sum does not fit in 64 bits");
      co_return;
    }
  }
  auto [write_ec] = co_await s.async_write(std::to_string(total), kTuple);
  if (!write_ec) s.finish();
}

asio::awaitable<void> chat(rpc::ServerStream s) {
  for (;;) {
    auto [ec, message] = co_await s.async_read(kTuple);
    if (ec) co_return;
    if (!message) break;
    auto [write_ec] = co_await s.async_write(std::move(*message), kTuple);
    if (write_ec) co_return;
  }
  s.finish();
}

}  // namespace

std::optional<CountRequest> parse_count_request(std::string_view text) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto n = parse_int(text.substr(0, space), 0, 1'000'000'000'000LL);
  const auto ms = parse_int(text.substr(space + 1), 0, 86'400'000);
  if (!n || !ms) return std::nullopt;
  return CountRequest{static_cast<std::uint64_t>(*n), std::chrono::milliseconds(*ms)};
}

void register_stream_methods(rpc::Server& server) {
  server.handle_stream("count", [](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, count(std::move(s)), asio::detached);
  });
  server.handle_stream("sum", [](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, sum(std::move(s)), asio::detached);
  });
  server.handle_stream("chat", [](rpc::ServerStream s) {
    auto ex = s.get_executor();
    asio::co_spawn(ex, chat(std::move(s)), asio::detached);
  });
}

}  // namespace wheelrpc::examples
