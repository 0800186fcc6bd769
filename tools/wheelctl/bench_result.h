#pragma once
/// BenchResult: what one `wheelctl bench` run measured, merged over its I/O
/// threads; what the report (bench_report.h) prints.

#include <array>
#include <cstdint>
#include <string>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/status_code.h>

#include "histogram.h"

namespace wheelrpc::wheelctl {

/// The figures of one run. Plain data: distinct objects safe, shared unsafe.
struct BenchResult {
  std::uint64_t calls = 0;   ///< calls that completed, succeeded or failed
  std::uint64_t ok = 0;      ///< of which succeeded
  std::uint64_t errors = 0;  ///< of which failed
  /// Failed calls by StatusCode (rpc::status_code_of their error), indexed by
  /// the code's number.
  std::array<std::uint64_t, rpc::kStatusCodes> errors_by_status{};
  /// Latency of the calls that succeeded, in nanoseconds: completion minus
  /// the call's intended start (closed loop: its actual start).
  Histogram latency;
  double duration_s = 0;       ///< first call's start to the last completion
  unsigned concurrency = 0;    ///< BenchOptions::concurrency
  double rate = 0;             ///< BenchOptions::rate (0: closed loop)
  unsigned threads = 0;        ///< I/O threads used
  unsigned max_in_flight = 0;  ///< open loop: the in-flight cap (0 in a closed loop)
  std::uint64_t cap_hits = 0;  ///< open loop: calls that waited for the cap
  std::uint64_t unsent = 0;    ///< open loop: calls due but not started by the end
  bool interrupted = false;    ///< stopped early (SIGINT, BenchRun::interrupt)
  rpc::WireProtocol protocol = rpc::WireProtocol::native;
  std::string first_error;  ///< the message of one failed call ("" when none failed)

  double calls_per_s() const noexcept { return duration_s > 0 ? static_cast<double>(calls) / duration_s : 0; }
};

}  // namespace wheelrpc::wheelctl
