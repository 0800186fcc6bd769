#pragma once
/// rpc_bench's `overload` workload: a server whose handler costs a fixed CPU
/// time, offered 1x, 2x, 4x its capacity at an open-loop rate with a 100 ms
/// deadline per call. See overload.cc for the method and the JSON fields.

#include "bench_flags.h"

namespace wheelrpc::bench {

/// `rpc_bench overload ...`: one JSON line per load factor. Exit status 0,
/// 1 when the run could not be measured (a stall), 2 on a usage error.
int overload(const Flags& flags);

}  // namespace wheelrpc::bench
