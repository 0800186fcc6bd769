#pragma once
// The state of one HTTP/2 stream of a GrpcClientTransport (a unary call or
// a stream), and what a read hands on after the transport's lock. Guarded
// by the transport's `mu_`.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

#include "wire/grpc/grpc_wire.h"
#include "wire/grpc/http2_session.h"

namespace wheelrpc::rpc::detail {

class StreamCore;

/// GrpcClientTransport::Call: one HTTP/2 stream's state.
struct GrpcClientCall {
  GrpcClientCall(std::int32_t sid, std::uint64_t rid, std::uint32_t max_message)
      : stream_id(sid), request_id(rid), reader(max_message) {}
  std::int32_t stream_id;
  std::uint64_t request_id;
  std::shared_ptr<StreamCore> stream;  // a stream's; null for a unary call
  // Going out.
  std::string out;
  std::size_t out_pos = 0;
  LazyQueue<std::pair<std::size_t, std::uint64_t>> out_costs;  // stream: (end of a message in out, its cost)
  bool out_end = false;                                        // END_STREAM once `out` is sent
  // Coming in.
  int http_status = 0;
  bool grpc_content = false;
  transport::Compression encoding = transport::Compression::identity;
  bool bad_encoding = false;
  transport::Attachments metadata;  // the initial metadata, then kTrailersMarker and the trailing
  bool marker_added = false;
  bool initial_given = false;  // stream: the initial metadata went with a message (or the END)
  std::optional<int> grpc_status;
  std::string grpc_message;
  GrpcMessageReader reader;
  bool has_message = false;
  bool message_compressed = false;
  std::string message;
  std::string problem;  // a reply we cannot take (a second message, a bad prefix)
  LazyQueue<std::pair<std::uint64_t, std::size_t>> unconsumed;  // stream: (cost, HTTP/2 bytes) not yet credited
  std::uint64_t credit = 0;
  std::size_t partial_taken = 0;  // bytes of the incomplete message already given back to the window
  std::size_t held = 0;
  bool finished = false;
};

/// GrpcClientTransport::Delivery: what a read hands on.
struct GrpcClientDelivery {
  enum class Kind : std::uint8_t { handshake, reply, stream_message, stream_end };
  explicit GrpcClientDelivery(Kind k) noexcept : kind(k) {}
  Kind kind;
  std::uint64_t request_id = 0;
  Status status = Status::ok;
  std::string payload;
  transport::Attachments metadata;
  std::size_t wire_size = 0;
  bool compressed = false;
  transport::Compression encoding = transport::Compression::identity;
  std::shared_ptr<StreamCore> stream;
};

}  // namespace wheelrpc::rpc::detail
