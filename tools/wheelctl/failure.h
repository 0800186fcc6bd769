#pragma once
/// Failure and ExitCode: how a wheelctl verb ends when it does not succeed.

#include <string>

namespace wheelrpc::wheelctl {

/// wheelctl's exit statuses (`wheelctl --help` lists them).
enum ExitCode : int {
  kExitOk = 0,             ///< done; health: SERVING
  kExitFailed = 1,         ///< the call (or the check's RPC) failed: its status was printed
  kExitUsage = 2,          ///< bad flags or arguments, a malformed JSON request, a .proto that does not compile
  kExitUnreachable = 3,    ///< cannot resolve the host, connect, or finish the TLS handshake
  kExitNotServing = 4,     ///< health: the server answered, and not SERVING
  kExitUnknownSymbol = 5,  ///< no such service, method or symbol, or no reflection and no --proto
};

/// Why a verb stopped: its exit status and the text for stderr (without a
/// trailing newline). Distinct objects: safe.
struct Failure {
  int exit_code = kExitFailed;
  std::string message;
  /// The message is a call's status line ("UNIMPLEMENTED: ..."), printed as
  /// it is; other messages get "wheelctl VERB: " in front.
  bool status_line = false;
};

}  // namespace wheelrpc::wheelctl
