#include <wheelrpc/rpc/status_code.h>

#include <array>
#include <cctype>

#include <boost/asio/error.hpp>

#include <wheelrpc/rpc/errc.h>

namespace wheelrpc::rpc {
namespace {

constexpr std::array<std::string_view, kStatusCodes> kNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class StatusCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "wheelrpc.status"; }
  std::string message(int ev) const override {
    if (ev < 0 || ev >= kStatusCodes) return "unknown wheelrpc.status " + std::to_string(ev);
    std::string out(kNames[static_cast<std::size_t>(ev)]);
    for (char& c : out) c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
};
#pragma GCC diagnostic pop

}  // namespace

const boost::system::error_category& status_category() noexcept {
  static const StatusCategory category;
  return category;
}

StatusCode status_code_of(const boost::system::error_code& ec) noexcept {
  if (!ec) return StatusCode::ok;
  if (ec.category() == status_category()) {
    const int v = ec.value();
    return v >= 0 && v < kStatusCodes ? static_cast<StatusCode>(v) : StatusCode::unknown;
  }
  if (ec.category() == rpc_category()) {
    switch (static_cast<errc>(ec.value())) {
      case errc::timeout: return StatusCode::deadline_exceeded;
      case errc::server_timeout: return StatusCode::deadline_exceeded;
      case errc::connection_lost: return StatusCode::unavailable;
      case errc::unavailable: return StatusCode::unavailable;
      case errc::method_not_found: return StatusCode::unimplemented;
      case errc::bad_request: return StatusCode::invalid_argument;
      case errc::server_error: return StatusCode::unknown;
      case errc::cancelled: return StatusCode::cancelled;
      case errc::too_many_pending: return StatusCode::resource_exhausted;
      case errc::resource_exhausted: return StatusCode::resource_exhausted;
      case errc::message_timeout: return StatusCode::deadline_exceeded;
      case errc::write_stall: return StatusCode::deadline_exceeded;
      case errc::first_message_timeout: return StatusCode::deadline_exceeded;
      case errc::stream_closed: return StatusCode::failed_precondition;
    }
    return StatusCode::unknown;
  }
  if (ec == boost::asio::error::operation_aborted) return StatusCode::cancelled;
  return StatusCode::unknown;
}

std::string_view to_string(StatusCode code) noexcept {
  const int v = static_cast<int>(code);
  return v >= 0 && v < kStatusCodes ? kNames[static_cast<std::size_t>(v)] : std::string_view("UNKNOWN");
}

bool parse_status_code(std::string_view text, StatusCode& out) noexcept {
  for (int i = 0; i < kStatusCodes; ++i) {
    const std::string_view name = kNames[static_cast<std::size_t>(i)];
    if (name.size() != text.size()) continue;
    bool same = true;
    for (std::size_t k = 0; k < name.size() && same; ++k) {
      same = text[k] == name[k] || text[k] == static_cast<char>(std::tolower(static_cast<unsigned char>(name[k])));
    }
    if (same) {
      out = static_cast<StatusCode>(i);
      return true;
    }
  }
  return false;
}

}  // namespace wheelrpc::rpc
