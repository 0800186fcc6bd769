#pragma once
// Checks the options' validate() functions share, client and server
// (base/options.cc, server/server_options.cc). Pure functions; any thread.

#include <chrono>
#include <string>

#include <wheelrpc/rpc/options.h>

namespace wheelrpc::rpc::detail {

/// The longest budget or timeout an option may hold: the wire carries
/// budgets as 32-bit milliseconds (about 49.7 days), and longer ones would
/// overflow the clock's arithmetic.
inline constexpr std::chrono::milliseconds kLongestOption{0xffffffffLL};

/// What is wrong with `o` ("threshold must be ...": the field, then why),
/// or empty.
std::string compression_problem(const CompressionOptions& o);
/// What is wrong with outlier detection options ("" if nothing), with the field's name first.
std::string outlier_problem(const OutlierDetectionOptions& o);

}  // namespace wheelrpc::rpc::detail
