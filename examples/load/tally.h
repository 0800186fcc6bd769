#pragma once
/// Tally: what happened to the load generator's calls, counted by outcome.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include <boost/system/error_code.hpp>

#include "support/latency_histogram.h"

namespace wheelrpc::examples::load {

/// A name for an error that does not depend on message wording: "timeout",
/// "connection_lost", ... for the library's errors (rpc::errc), "aborted",
/// else "<category>:<value>".
std::string error_name(const boost::system::error_code& ec);

/// Name of the outcome of a call that succeeded with a reply other than the
/// one expected (not an error code: the load generator checks the payload).
inline constexpr const char* kWrongReply = "wrong_reply";

/// The counts of one run. Only the thread that runs the load touches it.
struct Tally {
  std::uint64_t issued = 0;                            ///< calls started
  std::uint64_t ok = 0;                                ///< with the expected reply
  std::uint64_t timeouts = 0;                          ///< failed with "timeout" (also in `errors`)
  std::uint64_t completed_twice = 0;                   ///< completions of a call that had completed already
  std::map<std::string, std::uint64_t> errors;         ///< failed calls per error_name (or kWrongReply)
  std::map<std::string, std::string> examples;         ///< per error name, the message of its first failed call
  std::chrono::steady_clock::duration max_overrun{0};  ///< latest completion after its deadline
  support::LatencyHistogram latency_us;                ///< of the calls with the expected reply

  /// Counts a failed call; keeps its message as the example of its error
  /// name if it is the first of that name.
  void note_error(const std::string& name, const std::string& message);
  /// Failed calls of every kind.
  std::uint64_t total_errors() const;
};

}  // namespace wheelrpc::examples::load
