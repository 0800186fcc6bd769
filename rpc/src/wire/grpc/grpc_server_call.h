#pragma once
// The state of one HTTP/2 stream of a GrpcServerConnection (a unary call or
// a stream), and what a read hands on after the connection's lock. Guarded
// by the connection's `mu_`. The connection knows them as its Call and
// Delivery.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include <wheelrpc/rpc/status_code.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

#include "wire/grpc/grpc_wire.h"
#include "wire/grpc/http2_session.h"

namespace wheelrpc::rpc::detail {

struct GrpcServerCall {
  GrpcServerCall(std::int32_t stream_id, std::uint32_t max_message) : id(stream_id), reader(max_message) {}

  /// One request header (the block is within its size limit).
  void read_header(std::string_view name, std::string_view value) {
    if (name == ":path") {
      method.assign(value);
    } else if (name == ":method") {
      post = value == "POST";
    } else if (name == "content-type") {
      content_type.assign(value);
    } else if (name == "grpc-timeout") {
      timeout = parse_grpc_timeout(value);
      if (!timeout) problem_once(StatusCode::invalid_argument, "a malformed grpc-timeout '{}'", value);
    } else if (name == "grpc-encoding") {
      if (auto e = parse_grpc_encoding(value)) {
        encoding = *e;
      } else {
        problem_once(StatusCode::unimplemented, "grpc-encoding '{}' is not supported (identity, gzip, deflate)", value);
      }
    } else if (name == "grpc-accept-encoding") {
      accept = parse_grpc_accept_encoding(value);
    } else if (name == "user-agent") {
      from_wheelrpc = value.substr(0, kWheelrpcUserAgent.size()) == kWheelrpcUserAgent;
    } else if (name == kKindHeader) {
      opened_as_stream = value == "stream";
    } else if (!is_reserved_header(name)) {
      if (!valid_metadata_key(name)) {
        problem_once(StatusCode::invalid_argument, "a metadata key '{}' gRPC does not allow", name);
      } else if (is_binary_key(name)) {
        std::string bytes;
        if (!base64_decode(value, bytes)) {
          problem_once(StatusCode::invalid_argument, "the value of the binary metadata '{}' is not base64", name);
        }
        metadata.emplace_back(std::string(name), std::move(bytes));
      } else {
        metadata.emplace_back(std::string(name), std::string(value));
      }
    }
  }

  /// After the headers: what makes the call one the server will not take.
  void check_headers() {
    if (header_overflow) return;
    if (!post) {
      problem_status = 405;
      problem_code = StatusCode::unimplemented;
      problem = "gRPC calls are POST requests";
    } else if (content_type.rfind("application/grpc", 0) != 0 ||
               (content_type.size() > 16 && content_type[16] != '+' && content_type[16] != ';')) {
      problem_status = 415;
      problem_code = StatusCode::internal;
      problem = fmt::format("content-type '{}' is not application/grpc", content_type);
    } else if (method.size() < 2 || method[0] != '/') {
      problem_status = 200;
      problem_code = StatusCode::unimplemented;
      problem = fmt::format("malformed :path '{}' (/package.Service/Method)", method);
    } else if (method.find('/', 1) == std::string::npos) {
      method.erase(0, 1);  // "/echo": a method without a service, as a native client names it ("echo")
    }
  }

  template <class... Args>
  void problem_once(StatusCode code, fmt::format_string<Args...> text, Args&&... args) {
    if (problem_status != 0) return;
    problem_status = 200;
    problem_code = code;
    problem = fmt::format(text, std::forward<Args>(args)...);
  }

  std::int32_t id;
  // The request's headers.
  std::string method;  // :path, "/package.Service/Method"
  std::string content_type;
  bool post = false;
  transport::Attachments metadata;
  std::optional<std::chrono::milliseconds> timeout;
  transport::Compression encoding = transport::Compression::identity;
  transport::CompressionSet accept;  // what the client decodes (identity always)
  bool from_wheelrpc = false;        // a wheelrpc client's user-agent
  bool opened_as_stream = false;     // kKindHeader said "stream"
  std::size_t header_bytes = 0;
  bool header_overflow = false;
  int problem_status = 0;  // non-zero: refused once the headers end (HTTP status; 200: a gRPC status)
  StatusCode problem_code = StatusCode::ok;
  std::string problem;

  // The request's messages.
  GrpcMessageReader reader;
  bool is_stream = false;
  bool has_request = false;  // unary: its one message
  bool request_compressed = false;
  std::string request;
  std::size_t held = 0;  // stream: bytes received and not yet given back to the window
  // stream: each message received and not yet credited: (its cost, its HTTP/2 bytes)
  LazyQueue<std::pair<std::uint64_t, std::size_t>> unconsumed;
  std::uint64_t credit = 0;       // credited by the stream, not yet matched to whole messages
  std::size_t partial_taken = 0;  // bytes of the incomplete message already given back to the window

  // The call's course.
  bool remote_closed = false;    // the client's END_STREAM
  bool dispatched = false;       // handed to the server (a request, or a stream's open)
  bool refused = false;          // answered here (what follows is dropped)
  bool reset_by_client = false;  // RST_STREAM from the client
  bool ended_here = false;       // its trailers are queued

  // The response.
  bool headers_sent = false;
  transport::Compression response_encoding = transport::Compression::identity;
  std::string out;  // message bytes not yet taken by the session
  std::size_t out_pos = 0;
  LazyQueue<std::pair<std::size_t, std::uint64_t>> out_costs;  // stream: (end of a message in out, its cost)
  HeaderBlock trailers;                                        // sent once `out` is drained (ended_here)
};

struct GrpcServerDelivery {
  enum class Kind : std::uint8_t { request, open, message, half_close, reset };
  GrpcServerDelivery(Kind k, std::int32_t id) noexcept : kind(k), stream_id(id) {}
  Kind kind;
  std::int32_t stream_id;
  std::string method;
  std::string payload;  // a message; a reset's reason
  transport::Attachments metadata;
  std::chrono::milliseconds budget{0};
  bool compressed = false;
  transport::Compression encoding = transport::Compression::identity;
  transport::CompressionSet accept;
  StatusCode code = StatusCode::ok;  // a reset's
};

}  // namespace wheelrpc::rpc::detail
