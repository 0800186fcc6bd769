#pragma once
// The open-file limit of a process whose connections are files (servers,
// load generators, tests that open many sockets).

#include <sys/resource.h>

#include <climits>

namespace wheelrpc::examples {

/// Raises this process's open-file soft limit to its hard limit
/// (RLIMIT_NOFILE) and returns the soft limit now in force (-1 if it cannot
/// be read).
inline long raise_open_file_limit() noexcept {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : static_cast<long>(rl.rlim_cur);
}

}  // namespace wheelrpc::examples
