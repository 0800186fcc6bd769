#pragma once
/// The `(wheelrpc.method)` option as protoc-gen-wheelrpc reads it, and what
/// it refuses.

#include <string>

#include <google/protobuf/descriptor.h>

#include <wheelrpc/options.pb.h>

namespace wheelrpc::protobuf::compiler {

/// The method's `(wheelrpc.method)` option, empty when it has none.
wheelrpc::MethodPolicy read_policy(const google::protobuf::MethodDescriptor* method);

/// Checks every method's `(wheelrpc.method)` option of `file` and refuses,
/// with the first problem in `*error`, one that cannot work:
/// - `retries` over 16 (CallOptions::kMaxRetries);
/// - a `compression` that names no codec;
/// - `hedge_delay_ms` above 0 without `idempotent: true` (a hedge runs the
///   method again while the first attempt may still run; the runtime would
///   fail every call with errc::bad_request);
/// - a stream timer (`stream_timeout_ms`, `message_timeout_ms`,
///   `stall_timeout_ms`, `first_message_timeout_ms`) on a unary method;
/// - `attempt_timeout_ms` or `hedge_delay_ms` on a streaming method (a
///   stream's opening is retried, never abandoned per attempt nor hedged).
/// The message reads `file:line:column: package.Service.Method:
/// (wheelrpc.method).field ...`, the position that of the field where the
/// source says it (`option (wheelrpc.method).field = ...`), else of the
/// option, else of the method (protoc hands plugins the source positions);
/// without one it starts with the method's full name.
bool check_policies(const google::protobuf::FileDescriptor* file, std::string* error);

}  // namespace wheelrpc::protobuf::compiler
