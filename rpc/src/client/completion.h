#pragma once
// Completing a call exactly once, on the right executor. Whoever completes a
// call (CallDriver::complete, under the call's lock) fills a Completion; the
// caller releases the call's lock and then deliver()s it, so no lock is held
// across a user handler.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/container/small_vector.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/rpc/trace.h>

#include "client/call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class ClientTransport;

/// Where a completion comes from: it decides whether the handler may run
/// inline and whether abandoned attempts are told to their servers.
enum class Origin : std::uint8_t { reply, timer, cancel_slot, other };

/// What completing a call leaves to do once its lock is released: invoke
/// the handler, tell servers about abandoned attempts.
struct Completion {
  bool armed = false;
  boost::asio::any_completion_handler<Client::Signature> handler;
  boost::system::error_code ec;
  Response response;
  bool may_run_inline = false;
  std::optional<TimePoint> context;
  std::optional<TraceContext> trace;  // put in force while the handler runs
  RoutingTag tag;                     // so is this
  /// Attempts abandoned in flight: the transport each went out on and its
  /// request id (Subchannel::abandon; each is told to its server, which
  /// drops the reply).
  boost::container::small_vector<std::pair<std::shared_ptr<ClientTransport>, std::uint64_t>, 1> abandoned;
  /// A reference to the call being worked on that its holder no longer
  /// needs: start_call's own, and the table entry of an attempt dropped.
  /// The next attempt's table entry takes it over instead of counting a new
  /// one; else it is released with the completion, after the call's lock.
  CallPtr spare;
  /// Interceptors (none without them: nothing here is used then). The
  /// attempts that ended (their on_complete, before the call's), with their
  /// error and message (`winner`: the reply that completed the call, seen
  /// as `response`); the call's own chain, ended with it; a chain to start
  /// (run) once the call's lock is released.
  struct AttemptEnd {
    std::shared_ptr<ClientInterception> chain;
    boost::system::error_code ec;
    std::string message;
    bool winner = false;
  };
  std::vector<AttemptEnd> attempt_ends;
  std::shared_ptr<ClientInterception> interception;
  std::shared_ptr<ClientInterception> run_chain;
};

/// Tells the servers of `done.abandoned`, then invokes the handler, if armed,
/// on its associated executor (default: the client's): inline when the
/// completion comes from a reply on one of the client's own threads, posted
/// otherwise (a cancellation handler must not clear its own slot while it
/// runs). The call's deadline context and trace are in force while it runs.
/// Any thread but the timer's worker; no lock held.
void deliver(Completion& done, const ClientContext& ctx);

}  // namespace wheelrpc::rpc::detail
