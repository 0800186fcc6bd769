#pragma once
/// How wheelctl prints a failed call: "STATUS: message", the status as gRPC
/// names it and the library's full message (phase, elapsed time, peer,
/// method, and the timeline of a timed-out call), as the examples print it.

#include <string>

#include <boost/system/error_code.hpp>

#include "failure.h"

namespace wheelrpc::wheelctl {

/// "UNIMPLEMENTED: <message>" (the code's own message when `message` is empty).
std::string status_text(const boost::system::error_code& ec, const std::string& message);

/// The Failure of a call that ended with `ec`: kExitUnreachable when no
/// connection was ever made (`connected` false) and the error is one of not
/// getting there (unavailable, a timeout before sending, a lost connection),
/// else kExitFailed; the message is status_text's.
Failure call_failure(const boost::system::error_code& ec, const std::string& message, bool connected);

}  // namespace wheelrpc::wheelctl
