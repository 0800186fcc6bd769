#include "policy_check.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/stubs/strutil.h>

namespace wheelrpc::protobuf::compiler {
namespace {

namespace pb = google::protobuf;

/// CallOptions::kMaxRetries: more is refused here rather than at every call.
constexpr std::uint32_t kMaxRetries = 16;

/// The names `compression` takes: transport::parse_compression's, each the
/// transport::Compression enumerator of that name.
constexpr std::array<std::string_view, 5> kCompressionNames = {"identity", "zstd", "lz4", "gzip", "deflate"};

/// Where the source sets the option's field `field_number` (0: the option
/// itself), as "file:line:column: " (1-based, as protoc's own messages), then
/// the method's full name. The most precise position protoc recorded wins:
/// the field (`option (wheelrpc.method).retries = 17;`), the option (an
/// aggregate `= { ... }` records only the whole statement), the method.
std::string where(const pb::MethodDescriptor* method, int field_number) {
  std::vector<int> path = {pb::FileDescriptorProto::kServiceFieldNumber, method->service()->index(),
                           pb::ServiceDescriptorProto::kMethodFieldNumber, method->index()};
  const std::size_t method_path = path.size();
  path.insert(path.end(), {pb::MethodDescriptorProto::kOptionsFieldNumber, wheelrpc::method.number()});
  if (field_number != 0) path.push_back(field_number);
  // The field's path, then the option's, the options', the method's.
  for (pb::SourceLocation location; path.size() >= method_path; path.pop_back()) {
    if (method->file()->GetSourceLocation(path, &location)) {
      return method->file()->name() + ":" + std::to_string(location.start_line + 1) + ":" +
             std::to_string(location.start_column + 1) + ": " + method->full_name();
    }
  }
  return method->full_name();
}

/// The problem with one method's option, or empty.
std::string check_method(const pb::MethodDescriptor* method, const wheelrpc::MethodPolicy& policy) {
  using P = wheelrpc::MethodPolicy;
  const bool streaming = method->client_streaming() || method->server_streaming();
  const auto refuse = [method](int field, const std::string& what) {
    return where(method, field) + ": (wheelrpc.method)." + what;
  };

  if (policy.has_retries() && policy.retries() > kMaxRetries) {
    return refuse(P::kRetriesFieldNumber, "retries is " + std::to_string(policy.retries()) + ", over the maximum of " +
                                              std::to_string(kMaxRetries));
  }
  if (policy.has_compression() &&
      std::ranges::find(kCompressionNames, policy.compression()) == kCompressionNames.end()) {
    std::string names;
    for (std::string_view name : kCompressionNames) names += (names.empty() ? "" : ", ") + std::string(name);
    return refuse(P::kCompressionFieldNumber,
                  "compression is \"" + pb::CEscape(policy.compression()) + "\", not one of " + names);
  }

  if (streaming) {
    // A stream's opening is bounded by timeout_ms and retried up to retries,
    // but never abandoned per attempt nor hedged (docs/streams.md).
    if (policy.has_attempt_timeout_ms()) {
      return refuse(P::kAttemptTimeoutMsFieldNumber,
                    "attempt_timeout_ms is for unary methods; a stream's opening has no per-attempt budget "
                    "(timeout_ms bounds it)");
    }
    if (policy.has_hedge_delay_ms()) {
      return refuse(P::kHedgeDelayMsFieldNumber, "hedge_delay_ms is for unary methods; a stream is never hedged");
    }
    return {};
  }

  struct StreamTimer {
    bool set;
    int number;
    const char* name;
  };
  for (const StreamTimer& timer :
       {StreamTimer{policy.has_stream_timeout_ms(), P::kStreamTimeoutMsFieldNumber, "stream_timeout_ms"},
        StreamTimer{policy.has_message_timeout_ms(), P::kMessageTimeoutMsFieldNumber, "message_timeout_ms"},
        StreamTimer{policy.has_stall_timeout_ms(), P::kStallTimeoutMsFieldNumber, "stall_timeout_ms"},
        StreamTimer{policy.has_first_message_timeout_ms(), P::kFirstMessageTimeoutMsFieldNumber,
                    "first_message_timeout_ms"}}) {
    if (timer.set) {
      return refuse(timer.number, std::string(timer.name) +
                                      " is a stream timer, for stream methods; this one is unary (timeout_ms "
                                      "bounds it)");
    }
  }
  // hedge_delay_ms: 0 turns hedging off, which any unary method may ask for.
  if (policy.hedge_delay_ms() > 0 && !policy.idempotent()) {
    return refuse(P::kHedgeDelayMsFieldNumber,
                  "hedge_delay_ms needs idempotent: true (a hedge runs the method again while the first attempt "
                  "may still run; a hedged call that is not idempotent fails with bad_request)");
  }
  return {};
}

}  // namespace

wheelrpc::MethodPolicy read_policy(const pb::MethodDescriptor* method) {
  // protoc hands the options over serialized; the plugin's descriptor pool
  // parses them into the generated MethodOptions, which knows the extension
  // because options.pb.cc is linked in (tests/protobuf's policy goldens show
  // it).
  return method->options().GetExtension(wheelrpc::method);
}

bool check_policies(const pb::FileDescriptor* file, std::string* error) {
  for (int s = 0; s < file->service_count(); ++s) {
    const pb::ServiceDescriptor* service = file->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      std::string problem = check_method(service->method(m), read_policy(service->method(m)));
      if (!problem.empty()) {
        *error = std::move(problem);
        return false;
      }
    }
  }
  return true;
}

}  // namespace wheelrpc::protobuf::compiler
