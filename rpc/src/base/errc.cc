// How a call ended, in one vocabulary (docs/architecture.md, "Status"):
// StatusCode (gRPC's 17) is the answer; errc the detail that says which
// timer, which limit, which phase. One table (kErrcs) gives each errc its
// message, its StatusCode, the native wire's status byte and the code
// introspection counts it under; every mapping below reads it.

#include <wheelrpc/rpc/errc.h>

#include <array>
#include <cctype>
#include <string>

#include <boost/asio/error.hpp>

#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/status_code.h>

#include "base/status_wire.h"

namespace wheelrpc::rpc {
namespace {

struct ErrcRow {
  errc e;
  const char* message;
  StatusCode code;   // the answer (status_code_of)
  int wire;          // the native status byte a server sends for it: a Status, or a StatusCode + first_code
  CallCode counted;  // introspection's and the metrics' code
};

constexpr int wire(Status s) { return static_cast<int>(s); }
constexpr int wire(StatusCode c) { return static_cast<int>(Status::first_code) + static_cast<int>(c); }

// In errc's order (checked below): errc value v is row v - 1.
constexpr std::array<ErrcRow, 17> kErrcs = {{
    {errc::timeout, "call timed out", StatusCode::deadline_exceeded, wire(Status::server_error), CallCode::timeout},
    {errc::server_timeout, "server timed out", StatusCode::deadline_exceeded, wire(Status::server_timeout),
     CallCode::server_timeout},
    {errc::connection_lost, "connection lost before the reply", StatusCode::unavailable, wire(Status::server_error),
     CallCode::connection_lost},
    {errc::unavailable, "unavailable: no server could take the call", StatusCode::unavailable,
     wire(Status::shutting_down), CallCode::unavailable},
    {errc::method_not_found, "method not found", StatusCode::unimplemented, wire(Status::method_not_found),
     CallCode::method_not_found},
    {errc::bad_request, "bad request", StatusCode::invalid_argument, wire(Status::bad_request), CallCode::bad_request},
    {errc::server_error, "server error", StatusCode::unknown, wire(Status::server_error), CallCode::server_error},
    {errc::cancelled, "call cancelled: the client was closed", StatusCode::cancelled, wire(Status::server_error),
     CallCode::cancelled},
    {errc::too_many_pending, "too many calls pending", StatusCode::resource_exhausted, wire(Status::overloaded),
     CallCode::too_many_pending},
    {errc::resource_exhausted, "resource exhausted: the server refused the call for lack of capacity",
     StatusCode::resource_exhausted, wire(Status::overloaded), CallCode::resource_exhausted},
    // A stream's timers and misuse: their gRPC codes on the wire too (the message names which).
    {errc::message_timeout, "stream message-idle timeout", StatusCode::deadline_exceeded,
     wire(StatusCode::deadline_exceeded), CallCode::timeout},
    {errc::write_stall, "stream write-stall timeout", StatusCode::deadline_exceeded,
     wire(StatusCode::deadline_exceeded), CallCode::timeout},
    {errc::first_message_timeout, "stream first-message timeout", StatusCode::deadline_exceeded,
     wire(StatusCode::deadline_exceeded), CallCode::timeout},
    {errc::stream_closed, "the stream has ended", StatusCode::failed_precondition,
     wire(StatusCode::failed_precondition), CallCode::stream_misuse},
    {errc::stream_half_closed,
     "the stream is half-closed: this side called writes_done (a server-streaming stream's client does once its "
     "request is sent), so it writes no more",
     StatusCode::failed_precondition, wire(StatusCode::failed_precondition), CallCode::stream_misuse},
    {errc::read_pending, "one read at a time: a read of this stream is already pending",
     StatusCode::failed_precondition, wire(StatusCode::failed_precondition), CallCode::stream_misuse},
    {errc::write_pending, "one write at a time: a write of this stream is already pending",
     StatusCode::failed_precondition, wire(StatusCode::failed_precondition), CallCode::stream_misuse},
}};

constexpr bool in_order() {
  for (std::size_t i = 0; i < kErrcs.size(); ++i) {
    if (static_cast<std::size_t>(kErrcs[i].e) != i + 1) return false;
  }
  return true;
}
static_assert(in_order(), "kErrcs lists every errc in order");
static_assert(kErrcs.size() == static_cast<std::size_t>(errc::write_pending));

const ErrcRow* row(int v) noexcept {
  return v >= 1 && v <= static_cast<int>(kErrcs.size()) ? &kErrcs[static_cast<std::size_t>(v - 1)] : nullptr;
}

constexpr std::array<std::string_view, kStatusCodes> kNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// boost::system::error_category's destructor is protected and non-virtual by
// design, which -Wnon-virtual-dtor flags in every derived class.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class RpcCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "wheelrpc.rpc"; }
  std::string message(int ev) const override {
    if (const ErrcRow* r = row(ev)) return r->message;
    return "unknown wheelrpc.rpc error " + std::to_string(ev);
  }
};

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

const boost::system::error_category& rpc_category() noexcept {
  static const RpcCategory category;
  return category;
}

const boost::system::error_category& status_category() noexcept {
  static const StatusCategory category;
  return category;
}

// ---- the answer -------------------------------------------------------------

StatusCode status_code_of(const boost::system::error_code& ec) noexcept {
  if (!ec) return StatusCode::ok;
  if (ec.category() == status_category()) {
    const int v = ec.value();
    return v >= 0 && v < kStatusCodes ? static_cast<StatusCode>(v) : StatusCode::unknown;
  }
  if (ec.category() == rpc_category()) {
    const ErrcRow* r = row(ec.value());
    return r ? r->code : StatusCode::unknown;
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

// ---- the native wire's status byte ------------------------------------------

namespace detail {
Status status_byte(StatusCode code) noexcept {
  // OK is no failure: a failure said with it answers UNKNOWN.
  const int v = static_cast<int>(code) > 0 && static_cast<int>(code) < kStatusCodes
                    ? static_cast<int>(code)
                    : static_cast<int>(StatusCode::unknown);
  return static_cast<Status>(static_cast<int>(Status::first_code) + v);
}
}  // namespace detail

boost::system::error_code status_error(Status status) noexcept {
  switch (status) {
    case Status::ok: return {};
    case Status::server_timeout: return make_error_code(errc::server_timeout);
    case Status::method_not_found: return make_error_code(errc::method_not_found);
    case Status::bad_request: return make_error_code(errc::bad_request);
    case Status::overloaded: return make_error_code(errc::resource_exhausted);
    case Status::shutting_down: return make_error_code(errc::unavailable);
    case Status::server_error: break;
    default:
      if (status >= Status::first_code && status <= Status::last_code) {
        return make_error_code(
            static_cast<StatusCode>(static_cast<int>(status) - static_cast<int>(Status::first_code)));
      }
      break;
  }
  return make_error_code(errc::server_error);
}

Status error_status(errc e) noexcept {
  const ErrcRow* r = row(static_cast<int>(e));
  return r ? static_cast<Status>(r->wire) : Status::server_error;
}

Status error_status(const boost::system::error_code& ec) noexcept {
  if (!ec) return Status::server_error;  // a failure without an error
  if (ec.category() == rpc_category()) return error_status(static_cast<errc>(ec.value()));
  if (ec.category() == status_category()) return detail::status_byte(static_cast<StatusCode>(ec.value()));
  return Status::server_error;
}

// ---- what introspection counts ----------------------------------------------

// Each errc counts under its row's code, whose status is the row's own
// (tests/rpc/errc_table_test.cc checks call_status(counted) == code); a
// status the application chose, under that status with no detail.
CallCode call_code(const boost::system::error_code& ec) noexcept {
  if (!ec) return CallCode::ok;
  if (ec.category() == rpc_category()) {
    const ErrcRow* r = row(ec.value());
    return r ? r->counted : CallCode::other;
  }
  if (ec.category() == status_category()) return application_code(status_code_of(ec));
  if (ec == boost::asio::error::operation_aborted) return CallCode::aborted;
  return CallCode::other;
}

}  // namespace wheelrpc::rpc
