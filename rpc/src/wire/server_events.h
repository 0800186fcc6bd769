#pragma once
// The protocol seam, server side, the other way: what a server's wire tells
// the engine behind it (ServerCore), the twin of the client's
// ClientTransportEvents. A wire reports a request, a stream's opening, bad
// input and its close; the engine answers through the connection's
// ServerTransport. A wire reaches its server only through this interface
// and the settings it gives (ServerWireSettings), never its type.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/transport/channel.h>

#include "base/bad_input.h"
#include "wire/server_conn_context.h"
#include "wire/server_transport.h"
#include "wire/server_wire_settings.h"
#include "wire/stream_open.h"

namespace wheelrpc::rpc::detail {

/// What a server wire tells its engine. The engine outlives every call: each
/// connection's context holds it (ServerConnContext::events). Unless noted,
/// a function is called on the connection's strand; the counters and the
/// read-only functions from any thread.
class ServerEvents {
 public:
  /// A request arrived on `transport` (`conn`: its connection's record). The
  /// engine admits it and runs its handler, inline or queued; its answer
  /// goes back through ServerTransport::send_reply. The request path: one
  /// call per request.
  virtual void on_request(ServerTransport& transport, IncomingRequest& request, const ConnContextPtr& conn) = 0;
  /// A client opens a stream (`open` says how it is carried): admitted and
  /// accepted, its handler started; or refused, through `open.wire`.
  virtual void on_stream_open(ServerTransport& conn, StreamOpenRequest& open, const ConnContextPtr& context) = 0;
  /// Whether `method` is a stream method (Server::handle_stream). Any thread.
  virtual bool is_stream_method(const std::string& method) const = 0;
  /// A client said which kind of call it meant (`as_stream`) and `method` is
  /// of the other kind: the refusal's message (UNIMPLEMENTED), the same the
  /// native wire answers; nothing when the method is not served at all.
  /// Any thread.
  virtual std::optional<std::string> kind_mismatch(const std::string& method, bool as_stream) const = 0;
  /// The connection `id` closed (once; nothing of it follows).
  virtual void on_connection_closed(std::uint64_t id) = 0;
  /// The connection closes for bad input: counted by reason, logged.
  virtual void note_bad_input(BadInput kind, const transport::Channel& channel, std::string_view reason) = 0;

  /// Counters. Any thread.
  /// The connection stopped reading at its limit of requests in flight.
  virtual void count_read_pause() = 0;
  /// A client that reads no replies: its connection is closed.
  virtual void count_slow_reader() = 0;
  /// A reply over the client's body limit, answered server_error instead.
  virtual void count_oversize_reply() = 0;
  /// A request or stream message that did not decode (or was refused for what it sent).
  virtual void count_undecodable() = 0;
  /// A stream frame for no stream open on its connection.
  virtual void count_unknown_stream_frame() = 0;

  /// What the wires read of the server's options. Fixed; any thread.
  virtual const ServerWireSettings& wire_settings() const noexcept = 0;
  /// The heartbeat interval a handshake agrees, given the client's
  /// (std::nullopt: it names none). Any thread.
  virtual std::chrono::milliseconds agree_heartbeat(std::optional<std::chrono::milliseconds> theirs) const = 0;
  /// Entered by a wire's timer callback before it acts (a HELLO timeout):
  /// closed once the server stopped. Any thread.
  virtual common::WorkGate& timer_work() noexcept = 0;

 protected:
  ~ServerEvents() = default;
};

}  // namespace wheelrpc::rpc::detail
