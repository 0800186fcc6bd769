#pragma once
/// rpc_bench's `stream` workload: wheelrpc's untyped streams against gRPC C++
/// bidi streaming (bench/peers/grpc_stream.cc: the same modes, measurement
/// and JSON fields). The server side is two stream methods registered by
/// `rpc_bench server`; the client side is `rpc_bench client --stream MODE`.
/// See stream_bench.cc for the method and the fields.

#include <string>

#include "bench_flags.h"

namespace wheelrpc::rpc {
class Server;
}  // namespace wheelrpc::rpc

namespace wheelrpc::bench {

/// The server's stream methods, in the handler form `form` ("callback", the
/// default, or "coroutine"; anything else is a UsageError):
///   stream_echo  writes every message back (read, write it, read the next),
///                finishes with success once the client half-closed;
///   stream_sink  counts the messages; once the client half-closed, writes
///                the count (decimal) and finishes with success.
void register_stream_methods(rpc::Server& server, const std::string& form);

/// `rpc_bench client --stream echo|oneway|idle ...`: runs the workload,
/// prints one JSON line. Exit status 0, 1 when a stream failed or the
/// self-check did not pass, 2 on a usage error.
int stream_client(const Flags& flags);

}  // namespace wheelrpc::bench
