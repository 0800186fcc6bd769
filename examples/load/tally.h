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

/// Name of the outcome of a stream whose data came back wrong or short (an
/// echo or a sum that differs, a count out of order, fewer messages than
/// asked for before a successful end): not an error code, the load
/// generator checks the data.
inline constexpr const char* kDataLoss = "data_loss";
/// Name of the outcome of a stream whose end did not come within
/// StreamLoad::kEndBound after its exchange was over.
inline constexpr const char* kNoEnd = "no_end";

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

/// The counts of a run of streams (--method count|sum|chat). Every stream
/// started counts once in `ok` or in `errors`; `lost` and `completed_twice`
/// count ends that never came or came again (the library's exactly-once
/// promise broken), whatever else the stream counted as. Only the thread
/// that runs the load touches it.
struct StreamTally {
  std::uint64_t streams = 0;            ///< streams started (opens attempted)
  std::uint64_t ok = 0;                 ///< ended with success, their data right
  std::uint64_t messages_sent = 0;      ///< writes completed, on every stream, counted as each completes
  std::uint64_t messages_received = 0;  ///< messages read, on every stream, counted as each is read
  /// The longest wait between two consecutive messages read on one stream
  /// (count: from the opening for the first).
  std::chrono::steady_clock::duration max_gap{0};
  std::uint64_t lost = 0;                       ///< streams whose end never completed
  std::uint64_t completed_twice = 0;            ///< completions of an end that had completed already
  std::map<std::string, std::uint64_t> errors;  ///< failed streams per error_name (or kDataLoss, kNoEnd)
  std::map<std::string, std::string> examples;  ///< per error name, the message of its first failed stream

  /// Counts a failed stream; keeps `message` as the example of `name` if
  /// it is the first of that name.
  void note_error(const std::string& name, const std::string& message);
  /// Failed streams of every kind.
  std::uint64_t total_errors() const;
};

}  // namespace wheelrpc::examples::load
