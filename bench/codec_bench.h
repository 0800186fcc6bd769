#pragma once
/// rpc_bench's `codec` mode: the compression codecs alone (transport::
/// compress and decompress), single thread, on the payload generator's
/// realistic content: ratio, compress and decompress MB/s per algorithm and
/// level, content and size. See codec_bench.cc for the method and fields.

#include "bench_flags.h"

namespace wheelrpc::bench {

/// `rpc_bench codec ...`: one JSON line (workload "codec") per algorithm and
/// level, content and size. Exit status 0, 1 when a round trip did not give
/// the input back (field "check"), 2 on a usage error.
int codec_bench(const Flags& flags);

}  // namespace wheelrpc::bench
