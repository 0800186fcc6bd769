#pragma once
/// What a call completes with.

#include <string>
#include <utility>

#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc {

struct Response {
  /// Everything empty. The constructor keeps `Response{payload, attachments,
  /// error_message}` meaning what it meant before the fields after them.
  Response() = default;
  Response(std::string body, transport::Attachments metadata, std::string error = {})
      : payload(std::move(body)), attachments(std::move(metadata)), error_message(std::move(error)) {}

  /// The handler's reply (empty when the call failed).
  std::string payload;
  /// The reply's initial metadata: what the handler replied with
  /// (ServerContext::reply_metadata(), Responder::reply's attachments), in
  /// the order sent; gRPC's response headers.
  transport::Attachments attachments;
  /// When the call failed: what happened, for humans and logs — e.g.
  /// "timeout (sent, waiting for the reply) after 50 ms calling 'sleep' on
  /// 127.0.0.1:41391", with " (attempt 2 of 3)" and the reason no retry was
  /// made appended when there were retries. Empty on success.
  std::string error_message;
  /// The reply's trailing metadata (ServerContext::add_trailing_metadata();
  /// gRPC's trailers), in the order sent. Empty when the handler added none.
  transport::Attachments trailers;
  /// True when the reply's payload came compressed (docs/compression.md:
  /// the server chose an algorithm, the payload passed its threshold and
  /// shrank); false for an uncompressed one and on failure.
  bool compressed = false;
};

}  // namespace wheelrpc::rpc
