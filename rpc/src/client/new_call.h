#pragma once
// Making a call from async_call's arguments: the options checked, the
// deadline worked out (its own, or the one inherited from the request being
// served), the pending limit applied, and its trace chosen.

#include <string>

#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/client.h>

#include "client/call.h"

namespace wheelrpc::rpc::detail {

struct ClientContext;
class MethodCells;

/// The call, or why it cannot start (a message for the caller).
struct NewCall {
  CallPtr call;
  boost::system::error_code ec;
  std::string error;
};

/// Makes a call of `method` (its fields but the payload, attachments and
/// handler, which the driver takes under the call's lock). Counts it pending
/// on success. `cells`: its method's metric cells, or null. Any thread.
NewCall make_call(ClientContext& ctx, MethodCells* cells, std::string& method, std::string& payload,
                  CallOptions& options);

}  // namespace wheelrpc::rpc::detail
