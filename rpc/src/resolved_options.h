#pragma once
// resolved: ServerOptions with its deprecated top-level fields folded into the
// fields that replace them (options.h); what the server and validate() read.

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc::detail {

/// `o`, with each deprecated field that was set (differs from its default)
/// copied to its new field where that is still at its default; a new field
/// set too wins. Idempotent.
ServerOptions resolved(const ServerOptions& o);

}  // namespace wheelrpc::rpc::detail
