#include "base/bad_input.h"

#include <chrono>

#include <wheelrpc/transport/errc.h>

#include "base/log.h"

namespace wheelrpc::rpc::detail {

const char* bad_input_name(BadInput kind) noexcept {
  switch (kind) {
    case BadInput::bad_magic: return "bad_magic";
    case BadInput::bad_version: return "bad_version";
    case BadInput::oversize_frame: return "oversize_frame";
    case BadInput::malformed_frame: return "malformed_frame";
    case BadInput::no_hello: return "no_hello";
    case BadInput::hello_timeout: return "hello_timeout";
    case BadInput::http2: return "http2";
  }
  return "unknown";
}

std::optional<BadInput> bad_input_of(const boost::system::error_code& ec) noexcept {
  using transport::errc;
  if (ec.category() != transport::transport_category()) return std::nullopt;
  switch (static_cast<errc>(ec.value())) {
    case errc::bad_magic: return BadInput::bad_magic;
    case errc::unsupported_version: return BadInput::bad_version;
    case errc::body_too_large: return BadInput::oversize_frame;
    case errc::malformed_frame: return BadInput::malformed_frame;
    default: return std::nullopt;
  }
}

void BadInputLog::note(BadInput kind, std::uint64_t conn, std::string_view peer, std::string_view reason) {
  counts_[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  // One line a second at most: a scanner hitting the port must not flood the
  // log, and the count in the line says how many there were in all.
  const std::int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  std::int64_t last = last_log_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now_ns - last < 1'000'000'000) return;
  if (!last_log_ns_.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) return;
  // The channel's reason for a decoder error starts "bad input: "; the line says that already.
  constexpr std::string_view kPrefix = "bad input: ";
  if (reason.starts_with(kPrefix)) reason.remove_prefix(kPrefix.size());
  logger()->warn(
      "conn={} peer={} closed for bad input ({}): {} ({} connections closed for bad input so far; "
      "at most one such line a second)",
      conn, peer, bad_input_name(kind), reason, total());
}

std::uint64_t BadInputLog::total() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : counts_) n += c.load(std::memory_order_relaxed);
  return n;
}

}  // namespace wheelrpc::rpc::detail
