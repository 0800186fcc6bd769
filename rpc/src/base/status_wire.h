#pragma once
// The native wire's status byte for a StatusCode (docs/protocol.md):
// Status::first_code + the code. The one place that adds them (errc.cc,
// beside the table that maps each errc).

#include <wheelrpc/rpc/status.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc::detail {

/// The status byte for `code`; OK (no failure) and codes out of range say
/// UNKNOWN. Thread-safe.
Status status_byte(StatusCode code) noexcept;

}  // namespace wheelrpc::rpc::detail
