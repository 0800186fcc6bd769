#pragma once
// What the server makes of its ServerOptions: resolved, the options with
// their deprecated top-level fields folded into the fields that replace them
// (options.h), which the server and validate() read; and the part its
// wires read (ServerWireSettings).

#include <wheelrpc/rpc/options.h>

#include "wire/server_wire_settings.h"

namespace wheelrpc::rpc::detail {

/// `o`, with each deprecated field that was set (differs from its default)
/// copied to its new field where that is still at its default; a new field
/// set too wins. Idempotent.
ServerOptions resolved(const ServerOptions& o);

/// What a server's wires read of `o` (resolved): made once, by ServerCore.
ServerWireSettings wire_settings_for(const ServerOptions& o);

}  // namespace wheelrpc::rpc::detail
