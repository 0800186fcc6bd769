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
  /// "timeout after 1000 ms (sent, waiting for the reply) calling 'sleep' on
  /// 127.0.0.1:7001". Empty on success.
  std::string error_message;
};

}  // namespace wheelrpc::rpc
