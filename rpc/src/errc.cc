#include <wheelrpc/rpc/errc.h>

#include <string>

#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc {
namespace {

// boost::system::error_category's destructor is protected and non-virtual by
// design, which -Wnon-virtual-dtor flags in every derived class.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class RpcCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "wheelrpc.rpc"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::timeout: return "call timed out";
      case errc::server_timeout: return "server timed out";
      case errc::connection_lost: return "connection lost before the reply";
      case errc::unavailable: return "unavailable: no server could take the call";
      case errc::method_not_found: return "method not found";
      case errc::bad_request: return "bad request";
      case errc::server_error: return "server error";
      case errc::cancelled: return "call cancelled: the client was closed";
      case errc::too_many_pending: return "too many calls pending";
      case errc::resource_exhausted: return "resource exhausted: the server refused the call for lack of capacity";
      case errc::message_timeout: return "stream message-idle timeout";
      case errc::write_stall: return "stream write-stall timeout";
      case errc::first_message_timeout: return "stream first-message timeout";
      case errc::stream_closed: return "the stream has ended";
    }
    return "unknown wheelrpc.rpc error " + std::to_string(ev);
  }
};
#pragma GCC diagnostic pop

}  // namespace

const boost::system::error_category& rpc_category() noexcept {
  static const RpcCategory category;
  return category;
}

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

namespace {
Status code_status(StatusCode c) noexcept {
  return static_cast<Status>(static_cast<int>(Status::first_code) + static_cast<int>(c));
}
}  // namespace

Status error_status(errc e) noexcept {
  switch (e) {
    case errc::server_timeout: return Status::server_timeout;
    case errc::method_not_found: return Status::method_not_found;
    case errc::bad_request: return Status::bad_request;
    case errc::too_many_pending: return Status::overloaded;
    case errc::resource_exhausted: return Status::overloaded;
    case errc::unavailable: return Status::shutting_down;
    // A stream's timers and misuse: their gRPC codes (the message names which).
    case errc::message_timeout:
    case errc::write_stall:
    case errc::first_message_timeout: return code_status(StatusCode::deadline_exceeded);
    case errc::stream_closed: return code_status(StatusCode::failed_precondition);
    default: return Status::server_error;
  }
}

Status error_status(const boost::system::error_code& ec) noexcept {
  if (!ec) return Status::server_error;  // a failure without an error
  if (ec.category() == rpc_category()) return error_status(static_cast<errc>(ec.value()));
  if (ec.category() == status_category()) {
    // ok is no failure: a handler that fails with it answers unknown.
    const int v = ec.value() > 0 && ec.value() < kStatusCodes ? ec.value() : static_cast<int>(StatusCode::unknown);
    return static_cast<Status>(static_cast<int>(Status::first_code) + v);
  }
  return Status::server_error;
}

}  // namespace wheelrpc::rpc
