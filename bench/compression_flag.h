#pragma once
/// rpc_bench's `--compression ALG[:LEVEL]`: an algorithm (identity or none,
/// zstd, lz4, gzip, deflate) and an optional level, as CallOptions::
/// compression and compression_level take them, and the label the JSON
/// lines carry.

#include <string>
#include <string_view>

#include <wheelrpc/transport/compression.h>

#include "bench_flags.h"

namespace wheelrpc::bench {

struct CompressionFlag {
  transport::Compression algorithm = transport::Compression::identity;
  int level = 0;  ///< 0: the algorithm's default

  /// "identity", "zstd" (its default level) or "zstd:3": field "compression".
  std::string label() const {
    std::string s(transport::to_string(algorithm));
    if (level != 0 && algorithm != transport::Compression::identity) s += ":" + std::to_string(level);
    return s;
  }
};

/// Parses one `--compression` value; a UsageError when it names no algorithm.
inline CompressionFlag parse_compression_flag(std::string_view text) {
  CompressionFlag f;
  if (!transport::parse_compression_spec(text, f.algorithm, f.level)) {
    throw UsageError("--compression takes identity|none|zstd|lz4|gzip|deflate[:LEVEL], got '" + std::string(text) +
                     "'");
  }
  return f;
}

}  // namespace wheelrpc::bench
