#pragma once
// The guide's examples check what they demonstrate (docs/writing_a_service.md):
// a check that fails is printed, and main returns guide::status(), non-zero
// then, so the test that runs the example fails when the guide is wrong.

#include <atomic>
#include <cstdio>
#include <exception>
#include <string>

namespace guide {

inline std::atomic<int> failed_checks{0};

/// Records `ok`; prints `what` when it is false. Thread-safe.
inline bool check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "check failed: %s\n", what);
    failed_checks.fetch_add(1);
  }
  return ok;
}

/// Checks that a coroutine ended without an exception (co_spawn's completion
/// argument); prints the exception otherwise.
inline void check_no_exception(std::exception_ptr e) {
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::exception& x) {
    check(false, (std::string("the coroutine threw: ") + x.what()).c_str());
  }
}

/// The exit status: 0 if every check passed.
inline int status() { return failed_checks.load() == 0 ? 0 : 1; }

}  // namespace guide
