#pragma once
/// CallError: a failed call as an exception, with the call's full message.

#include <string>
#include <utility>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

namespace wheelrpc::rpc {

/// A failed call as an exception: thrown by the blocking `call()`, and by
/// `async_call` with `use_awaitable` or `use_future`. `code()` is the call's
/// error (a wheelrpc::rpc::errc, or boost::asio::error::operation_aborted) and
/// `what()` the full message of Response::error_message: the phase, elapsed
/// time, method and server, e.g. "timeout (sent, waiting for the reply) after
/// 50 ms calling 'slow' on 127.0.0.1:7001". A boost::system::system_error, so
/// catch sites written for that keep working.
class CallError : public boost::system::system_error {
 public:
  /// `message` empty: the code's own message.
  CallError(boost::system::error_code ec, std::string message)
      : boost::system::system_error(ec), message_(message.empty() ? ec.message() : std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace wheelrpc::rpc
