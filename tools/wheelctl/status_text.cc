#include "status_text.h"

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::wheelctl {

namespace rpc = wheelrpc::rpc;

std::string status_text(const boost::system::error_code& ec, const std::string& message) {
  return std::string(rpc::to_string(rpc::status_code_of(ec))) + ": " + (message.empty() ? ec.message() : message);
}

Failure call_failure(const boost::system::error_code& ec, const std::string& message, bool connected) {
  const bool not_there = ec == rpc::errc::unavailable || ec == rpc::errc::timeout || ec == rpc::errc::connection_lost ||
                         ec == rpc::errc::first_message_timeout;
  return Failure{!connected && not_there ? kExitUnreachable : kExitFailed, status_text(ec, message), true};
}

}  // namespace wheelrpc::wheelctl
