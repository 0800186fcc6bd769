#pragma once
/// The report of `wheelctl bench`: the text a person reads, or one JSON line.

#include <iosfwd>
#include <string>

#include "bench_result.h"

namespace wheelrpc::wheelctl {

/// The text report: summary, errors by status name, percentiles and the
/// latency histogram with ASCII bars, in microseconds.
void print_bench_text(const BenchResult& result, std::ostream& out);

/// Exactly one JSON object on one line, without the newline (fields: see
/// run_bench in bench.h).
std::string bench_json_line(const BenchResult& result);

/// "native" or "grpc".
const char* protocol_name(rpc::WireProtocol protocol) noexcept;

}  // namespace wheelrpc::wheelctl
