#pragma once
/// MessageCodec: protobuf JSON to a method's request bytes, and reply
/// bytes to JSON, with dynamic messages over any descriptor pool.

#include <optional>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>

#include "failure.h"

namespace wheelrpc::wheelctl {

/// The pool of `method` must outlive the codec. One thread.
class MessageCodec {
 public:
  explicit MessageCodec(const google::protobuf::MethodDescriptor& method);

  /// Request number `n` (from 1, for messages) as JSON into its bytes;
  /// kExitUsage naming the message type and protobuf's reason (the field)
  /// when `json` is not a valid request.
  std::optional<Failure> request_bytes(const std::string& json, int n, std::string& out);
  /// A reply's bytes as one line of JSON (no trailing newline); kExitFailed
  /// when they are not a valid reply.
  std::optional<Failure> reply_json(const std::string& bytes, int n, std::string& out);

 private:
  const google::protobuf::MethodDescriptor& method_;
  google::protobuf::DynamicMessageFactory factory_;
};

}  // namespace wheelrpc::wheelctl
