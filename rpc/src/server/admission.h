#pragma once
// Who may run: the methods a server serves, and the one refusal ladder every
// request passes (read from a connection or invoked in process), with the
// overload state behind it (deadline-aware shedding, the server-wide
// concurrency limit, the handler executor's queue).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_rules.h>

#include "base/concurrency_limiter.h"
#include "base/method_metrics.h"
#include "server/reply_slot.h"
#include "server/server_method.h"
#include "server/stream_methods.h"

namespace wheelrpc::rpc::detail {

class ServerHost;
class ServerShutdown;

/// Admission and overload control of one server. admit() and dispatch() run
/// where the request arrived (a channel's strand, or the executor for an
/// in-process call); the checks of the default path (no limit, handlers
/// inline) cost a branch each and take no lock. add_method() only before
/// listening. The rest is thread-safe (atomics; the limiter's own state).
class Admission {
 public:
  /// `streams`: the server's stream methods, for the answer to a stream
  /// method called as a call.
  Admission(ServerHost& host, const ServerOptions& options, const ServerShutdown& shutdown, MethodTable& methods,
            const StreamMethods& streams, std::chrono::steady_clock::time_point now);

  /// Registers (or replaces) `name`'s handler. Before listening.
  void add_method(std::string name, Server::Handler handler, MethodOptions options);
  /// Puts `rules` in force over every method's registered limits (null:
  /// none); the library's own methods (gRPC's /grpc.* services) keep
  /// theirs. Any thread; the caller (ServerCore, under its rules lock)
  /// keeps the rules and applies them again after each add_method.
  void apply_rules(const ServerRules* rules) noexcept;
  /// Whether `name` is a method (a call's; not a stream's). Once listening, any thread.
  bool has_method(const std::string& name) const { return handlers_.count(name) != 0; }
  /// Every method's name (any order). Once listening, any thread.
  std::vector<std::string> method_names() const;
  /// A stream's opening meets the server-wide overload controls: nothing
  /// when it may open, else why not (the server at its concurrency limit).
  /// It holds no place under the limit (ServerStreamOptions::max_open).
  std::optional<std::string> stream_overloaded(const std::string& method);

  /// The refusal ladder, in order: shutting down (or, for an in-process
  /// call, not listening), offline, no such method (a stream method's
  /// answer names its kind), deadline already spent
  /// (deadline_admission; requests read from a connection), the method's
  /// max_concurrency, the server's max_concurrency. MethodOptions::timeout
  /// becomes the slot's deadline when it had none, or an earlier one. Counts the request as
  /// started in its method's metrics either way. Returns the method to run,
  /// or null once the request was answered with its refusal. `slot` is set up
  /// (method, receipt time, deadline) and not yet shared.
  const ServerMethod* admit(ReplySlot& slot, RequestOrigin origin);

  /// Readies an admitted request to run: its interceptors (ServerOptions::
  /// interceptors), then, with ServerOptions::handler_executor, queues it
  /// there (shed there if its deadline passes first; `req` and `slot` are
  /// taken): true. False: the caller runs the handler now, where it is
  /// (ServerHost::run_handler), with `req` and `slot` as they were.
  bool dispatch(const ServerMethod& method, Request& req, ReplySlotPtr& slot, std::uint64_t conn_id);

  /// Gives back the slot's place under the concurrency limit, with its
  /// latency (finish(), once).
  void release_limit(const ReplySlot& slot);
  /// Adds the time a handler took to answer, from its start, to its method's average.
  static void record_service_time(std::atomic<std::int64_t>& avg, std::chrono::nanoseconds took);
  /// Answers a request whose payload did not decode (`ec`, a StatusCode
  /// error; `message` says why) without running its handler.
  void refuse_undecodable(ReplySlot& slot, const boost::system::error_code& ec, std::string message);
  /// A stream message that did not decode (its stream ended).
  void count_undecodable() { undecodable_.fetch_add(1, std::memory_order_relaxed); }
  /// The refusal and overload counters.
  void add_stats(ServerStats& s) const;
  /// How long the last handler started from the handler executor waited
  /// there, since the last call (0: none started); kept only with
  /// ServerOptions::load_reports. Any thread.
  std::chrono::nanoseconds take_queue_wait() noexcept {
    return std::chrono::nanoseconds(last_wait_ns_.exchange(0, std::memory_order_relaxed));
  }

 private:
  /// Answers `slot` with a refusal (counted in `counter`); returns null.
  const ServerMethod* refuse(ReplySlot& slot, std::atomic<std::uint64_t>& counter, Status status, std::string message);
  /// Sheds a request whose deadline passed before it was handled; true if it did.
  bool shed_if_spent(ReplySlot& slot);
  /// Admits under the method's max_concurrency (counting it in `slot`).
  bool admit_method(const ServerMethod& method, ReplySlot& slot);
  /// Admits under the server's concurrency limit.
  bool admit_server(ReplySlot& slot) { return !limiter_.enabled() || admit_under_limit(slot); }
  bool admit_under_limit(ReplySlot& slot);
  void queue_handler(const ServerMethod& method, Request&& req, ReplySlotPtr&& slot, std::uint64_t conn_id);
  /// Why a request whose turn came at `t` on the handler executor is shed
  /// (deadline_admission: its deadline passed, too little of it is left, or
  /// it waited past queue_target in a standing queue), or nothing.
  std::optional<std::string> shed_reason(const ServerMethod& method, const ReplySlot& slot,
                                         std::chrono::steady_clock::time_point t) const;
  /// The handler executor's queue was seen empty at `t`.
  void queue_emptied(std::chrono::steady_clock::time_point t);
  void count_shed(const ReplySlot& slot);

  ServerHost& host_;  // holds this
  const ServerOptions& options_;
  const ServerShutdown& shutdown_;
  MethodTable& methods_;
  const StreamMethods& streams_;
  MethodCells* unknown_cells_ = nullptr;  // "(unknown)": requests for methods with no handler
  /// Hashes a name as std::string and std::string_view alike (lookups by a view).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
  };
  std::unordered_map<std::string, ServerMethod, NameHash, std::equal_to<>> handlers_;  // fixed once listening
  ConcurrencyLimiter limiter_;
  std::atomic<std::int64_t> queue_emptied_ns_{0};  // steady ns (the server's clock)
  std::atomic<std::int64_t> queued_{0};            // posted to the handler executor, not yet started
  std::atomic<std::int64_t> last_wait_ns_{0};      // the last started handler's queue wait (load reports only)
  std::atomic<std::uint64_t> shed_{0}, refused_shutting_down_{0}, refused_offline_{0}, refused_overloaded_{0},
      method_not_found_{0}, undecodable_{0};
};

}  // namespace wheelrpc::rpc::detail
