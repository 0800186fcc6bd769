#pragma once
// What a Subchannel tells its owner (the client's core): that it became
// ready, failed to connect, brought a reply, lost attempts with its
// connection, found deadlines due in its table, freed a slot, or closed for
// good after leaving the provider set. The owner's side of each event runs
// on the thread named; none is called with the subchannel's lock held.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/attempt_policy.h"
#include "client/call.h"
#include "wire/client_transport.h"

namespace wheelrpc::rpc::detail {

class Subchannel;

/// Attempts a subchannel lost: each call with its attempt's request id.
using LostAttempts = std::vector<std::pair<CallPtr, std::uint64_t>>;

class SubchannelListener {
 public:
  /// It became ready (its strand): calls waiting for a provider may go.
  virtual void on_subchannel_ready() = 0;
  /// A connect attempt failed (the executor, or its strand for a failed
  /// handshake); `refused`: the TCP connect itself failed.
  virtual void on_connect_failed(Subchannel& sub, bool refused) = 0;
  /// A reply (its strand); `received`: when the read that brought it completed.
  virtual void on_reply(Subchannel& sub, IncomingReply& reply, TimePoint received) = 0;
  /// Attempts lost with its connection (its strand): `what` says how.
  virtual void on_attempts_lost(Subchannel& sub, LostAttempts& lost, const std::string& what) = 0;
  /// Calls whose deadlines its sweep found due at `fired` (the executor).
  virtual void on_deadlines_due(std::vector<CallPtr>& due, TimePoint fired) = 0;
  /// A slot came free on it under max_active_per_provider (the executor).
  virtual void on_slot_freed() = 0;
  /// It left the provider set and its channel closed, or never had one.
  virtual void on_retired_closed(Subchannel& sub) = 0;
  /// Calls are waiting for a ready provider (it then reconnects at once).
  virtual bool calls_waiting() = 0;

 protected:
  ~SubchannelListener() = default;
};

}  // namespace wheelrpc::rpc::detail
