#pragma once
/// rpc_bench's `conn_scale` workload: what idle connections cost. One client
/// process (this one) holds N connections, each a wheelrpc::rpc::Client with
/// heartbeats, to one `rpc_bench server` process; after all are ready it
/// measures, over a window, each process's CPU and resident memory per
/// connection. See conn_scale.cc for the method and the JSON fields.

#include <sys/types.h>

#include "bench_flags.h"
#include "support/open_files.h"

namespace wheelrpc::bench {

using examples::raise_open_file_limit;

/// Open files a conn_scale process needs besides its connections: the
/// listening socket, epoll, eventfds, timers, stdio, /proc reads, the loader.
inline constexpr long kOpenFileMargin = 64;

/// `rpc_bench conn_scale ...`: runs the workload, prints one JSON line.
/// Exit status 0, 1 when a connection failed or was lost, 2 on a usage error
/// or when N connections do not fit under the open-file limit.
int conn_scale(const Flags& flags);

}  // namespace wheelrpc::bench
