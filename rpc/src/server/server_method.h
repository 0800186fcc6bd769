#pragma once
// The method table's entry: what a server runs for one method, and where a
// request came from. Shared by admission, the interceptors and the engine.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <wheelrpc/rpc/server.h>

#include "base/method_metrics.h"
#include "server/method_limits.h"

namespace wheelrpc::rpc::detail {

/// A method the server serves: its handler and its limits. Fixed once
/// listening (Admission owns the table); read from any thread after that,
/// but for the limits a provider rule changes (MethodLimits).
struct ServerMethod {
  Server::Handler handler;
  MethodCells* cells = nullptr;
  // MethodOptions::max_concurrency and timeout, and a rule's over them.
  std::unique_ptr<MethodLimits> limits;
  // Calls running now, counted only under a limit (shared by the threads
  // that run the method: the price of the limit); a call counted gives its
  // place back through its slot, whatever the limit is by then.
  std::unique_ptr<std::atomic<std::size_t>> running;
  // With a handler executor: the time (ns) its handler has recently taken
  // to answer, from its start, a moving average; 0: none yet.
  std::unique_ptr<std::atomic<std::int64_t>> service_ns;
};

/// Where a request came from: read from a connection (ServerCore::on_request)
/// or a call from inside the process (ServerCore::invoke, async_invoke).
enum class RequestOrigin : std::uint8_t { channel, local };

}  // namespace wheelrpc::rpc::detail
