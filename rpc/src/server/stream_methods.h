#pragma once
// The stream methods a server serves (Server::handle_stream, the streaming
// methods of Server::add_service), and the places a stream holds while it
// is open: under the method's max_concurrency and the server's
// ServerStreamOptions::max_open.

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/service.h>

#include "server/method_limits.h"

namespace wheelrpc::rpc::detail {

class StreamCore;

/// A stream method of the library's own (grpc.health.v1's Watch): given the
/// accepted stream itself, so that it learns of its end (StreamCore::wait_end).
using CoreStreamHandler = std::function<void(const std::shared_ptr<StreamCore>&)>;

/// A stream method: its handler, its kind when a typed service says
/// (untyped: unknown), its limit and its timeout.
struct StreamMethod {
  StreamHandler handler;
  std::optional<MethodKind> kind;
  // Its streams open at once (0: no limit) and the stream's deadline when
  // the client sets none (0: none), as registered and as a rule sets them.
  std::unique_ptr<MethodLimits> limits;
  std::unique_ptr<std::atomic<std::size_t>> open;  // counted only under a limit
  CoreStreamHandler core_handler;                  // instead of `handler` when set (a built-in method)
};

/// "server-streaming", "client-streaming", "bidi-streaming", "unary", or
/// "stream" when unknown: for messages.
const char* kind_name(std::optional<MethodKind> kind) noexcept;

/// The answers to a method called as the kind it is not (UNIMPLEMENTED),
/// the same on every wire: "'/p.S/M' is a server-streaming method: open it
/// as a stream (...)" and "'/p.S/M' is a unary method: call it (...)".
std::string called_as_call(const std::string& method, std::optional<MethodKind> kind);
std::string opened_as_stream(const std::string& method);

/// The table (fixed once listening: add() before) and the open counts.
/// find() and the places from any thread once listening.
class StreamMethods {
 public:
  explicit StreamMethods(std::size_t max_open) : max_open_(max_open) {}

  /// Registers (or replaces) `name`.
  void add(std::string name, StreamHandler handler, const MethodOptions& options, std::optional<MethodKind> kind);
  /// Registers (or replaces) a built-in method, no limit, no timeout.
  void add(std::string name, CoreStreamHandler handler, MethodKind kind);
  const StreamMethod* find(const std::string& name) const;
  /// Every name registered (any order).
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return methods_.count(name) != 0; }

  /// Whether a stream of `m` holds a place (a limit is set now): then
  /// take() must be followed by give_back() once it ended.
  bool limited(const StreamMethod& m) const noexcept { return max_open_ != 0 || m.limits->max_concurrency() != 0; }
  /// Takes a place for a stream of `m` (`name`): nothing when taken, or the
  /// refusal's message (which limit, its value) when at a limit. `counted`:
  /// whether the method's own count holds it (give it back to give_back()).
  std::optional<std::string> take(const StreamMethod& m, const std::string& name, bool& counted);
  void give_back(const StreamMethod& m, bool counted) noexcept;
  /// Puts `rules` in force over every method's registered limits (null: none);
  /// the library's own methods (gRPC's /grpc.* services) keep theirs. Any thread.
  void apply_rules(const ServerRules* rules) noexcept;

 private:
  std::unordered_map<std::string, StreamMethod> methods_;
  const std::size_t max_open_;
  std::atomic<std::size_t> open_{0};  // counted only under max_open_
};

}  // namespace wheelrpc::rpc::detail
