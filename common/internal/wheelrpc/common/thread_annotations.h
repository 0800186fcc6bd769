#pragma once
// Clang's thread-safety analysis (-Wthread-safety), as Abseil's
// thread_annotations.h spells it: a lock type is a capability, a field says
// which lock guards it, a function which locks it needs held or takes.
// Other compilers see nothing. The `clang-tsa` preset builds the tree with
// -Wthread-safety -Werror.

#if defined(__clang__)
#define WHEELRPC_TSA(x) __attribute__((x))
#else
#define WHEELRPC_TSA(x)
#endif

#define WHEELRPC_CAPABILITY(name) WHEELRPC_TSA(capability(name))
#define WHEELRPC_SCOPED_CAPABILITY WHEELRPC_TSA(scoped_lockable)
#define WHEELRPC_GUARDED_BY(mu) WHEELRPC_TSA(guarded_by(mu))
#define WHEELRPC_PT_GUARDED_BY(mu) WHEELRPC_TSA(pt_guarded_by(mu))
#define WHEELRPC_ACQUIRED_BEFORE(...) WHEELRPC_TSA(acquired_before(__VA_ARGS__))
#define WHEELRPC_ACQUIRED_AFTER(...) WHEELRPC_TSA(acquired_after(__VA_ARGS__))
#define WHEELRPC_REQUIRES(...) WHEELRPC_TSA(requires_capability(__VA_ARGS__))
#define WHEELRPC_EXCLUDES(...) WHEELRPC_TSA(locks_excluded(__VA_ARGS__))
#define WHEELRPC_ACQUIRE(...) WHEELRPC_TSA(acquire_capability(__VA_ARGS__))
#define WHEELRPC_RELEASE(...) WHEELRPC_TSA(release_capability(__VA_ARGS__))
#define WHEELRPC_TRY_ACQUIRE(...) WHEELRPC_TSA(try_acquire_capability(__VA_ARGS__))
#define WHEELRPC_ASSERT_CAPABILITY(x) WHEELRPC_TSA(assert_capability(x))
#define WHEELRPC_RETURN_CAPABILITY(x) WHEELRPC_TSA(lock_returned(x))
#define WHEELRPC_NO_THREAD_SAFETY_ANALYSIS WHEELRPC_TSA(no_thread_safety_analysis)
