#pragma once
/// What a call completes with.

#include <string>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

struct Response {
  /// The handler's reply (empty when the call failed).
  std::string payload;
  /// Attachments the handler replied with.
  transport::Attachments attachments;
  /// When the call failed: what happened, for humans and logs — e.g.
  /// "timeout (sent, waiting for the reply) after 50 ms calling 'sleep' on
  /// 127.0.0.1:41391", with " (attempt 2 of 3)" and the reason no retry was
  /// made appended when there were retries. Empty on success.
  std::string error_message;
};

}  // namespace wheelrpc::rpc
