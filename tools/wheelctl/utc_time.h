#pragma once
/// utc_now(): the time stamps of wheelctl's --watch lines.

#include <string>

namespace wheelrpc::wheelctl {

/// Now, as "2026-01-31T12:00:00.123Z" (UTC, milliseconds). Any thread.
std::string utc_now();

}  // namespace wheelrpc::wheelctl
